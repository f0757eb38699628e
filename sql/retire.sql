-- Retiring whole partitions (1.9): ttl.set_retire, ttl.containers.retire,
-- ttl.retired, and the purge's retire step (src/purge/purge_retire.c,
-- src/purge/retire_check.c).  The clock is ttl.now_override.
\set SHOW_CONTEXT never
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE ROLE regress_ttl_rt_owner;
CREATE ROLE regress_ttl_rt_other;
CREATE SCHEMA rt AUTHORIZATION regress_ttl_rt_owner;
GRANT USAGE ON SCHEMA rt TO regress_ttl_rt_other;
SET ROLE regress_ttl_rt_owner;

-- a session store partitioned by a write-time column, one leaf a day
CREATE TABLE rt.sessions (
    id bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT ttl.now(),
    doc jsonb NOT NULL
) PARTITION BY RANGE (created_at);
CREATE TABLE rt.sessions_d1 PARTITION OF rt.sessions
    FOR VALUES FROM ('2029-12-01') TO ('2029-12-02');
CREATE TABLE rt.sessions_d2 PARTITION OF rt.sessions
    FOR VALUES FROM ('2029-12-02') TO ('2029-12-03');
CREATE TABLE rt.plain (id bigint, doc jsonb NOT NULL);
SELECT ttl.enable('rt.sessions', 3600);
SELECT ttl.enable('rt.plain', 3600);

-- the mode: off by default, at the end of ttl.containers
SELECT container, retire FROM ttl.containers WHERE container::text LIKE 'rt.%' ORDER BY 1;
SELECT attname FROM pg_attribute
 WHERE attrelid = 'ttl.containers'::regclass AND attnum > 0
 ORDER BY attnum DESC LIMIT 1;
SELECT ttl.set_retire('rt.sessions', 'drop');
SELECT ttl.set_retire('rt.sessions', 'detach');
SELECT container, retire FROM ttl.containers WHERE container::text LIKE 'rt.%' ORDER BY 1;
-- bad input: named, nothing written
SELECT ttl.set_retire('rt.sessions', 'DROP');
SELECT ttl.set_retire('rt.sessions', '');
SELECT ttl.set_retire('rt.sessions', NULL);
SELECT ttl.set_retire(NULL, 'drop');
-- a plain container has no leaves to retire (0A000); off is always fine
SELECT ttl.set_retire('rt.plain', 'drop');
SELECT ttl.set_retire('rt.plain', 'off');
SELECT container, retire FROM ttl.containers WHERE container::text LIKE 'rt.%' ORDER BY 1;
-- not a container, not the owner
SELECT ttl.set_retire('rt.sessions_d1', 'drop');
RESET ROLE;
SET ROLE regress_ttl_rt_other;
SELECT ttl.set_retire('rt.sessions', 'off');
RESET ROLE;
-- ttl.retired: readable by everyone, empty so far
SELECT * FROM ttl.retired;
SELECT has_table_privilege('regress_ttl_rt_other', 'ttl.retired', 'SELECT') AS public_reads,
       has_table_privilege('regress_ttl_rt_other', 'ttl.retired_leaf', 'SELECT') AS table_private;
-- ttl.stats ends with the retirement counters (and then whether
-- expired_backlog stopped at its cap)
SELECT array_agg(attname ORDER BY attnum) FILTER (WHERE attnum > (SELECT max(attnum) - 3 FROM pg_attribute WHERE attrelid = 'ttl.stats'::regclass))
  FROM pg_attribute WHERE attrelid = 'ttl.stats'::regclass AND attnum > 0;

-- The retire step.  Leaves of 2029-12-01 .. 2029-12-07, items written on
-- 2030-01-01 (created_at is set by the writer: rows are routed by it, and
-- _ts is stamped after), the purge a day later: every item inheriting
-- the hour's default has expired by then.
SET ROLE regress_ttl_rt_owner;
CREATE TABLE rt.sessions_d3 PARTITION OF rt.sessions FOR VALUES FROM ('2029-12-03') TO ('2029-12-04');
CREATE TABLE rt.sessions_d4 PARTITION OF rt.sessions FOR VALUES FROM ('2029-12-04') TO ('2029-12-05');
CREATE TABLE rt.sessions_d5 PARTITION OF rt.sessions FOR VALUES FROM ('2029-12-05') TO ('2029-12-06');
CREATE TABLE rt.sessions_d6 PARTITION OF rt.sessions FOR VALUES FROM ('2029-12-06') TO ('2029-12-07');
CREATE TABLE rt.sessions_d7 PARTITION OF rt.sessions FOR VALUES FROM ('2029-12-07') TO ('2029-12-08');
SELECT ttl.set_deadline_property('rt.sessions', 'until');
INSERT INTO rt.sessions (id, created_at, doc)
SELECT g, '2029-12-01 12:00+00', '{"user": "a"}' FROM generate_series(1, 50) g;
-- d2: one item that never expires among expired ones
INSERT INTO rt.sessions (id, created_at, doc) VALUES
    (101, '2029-12-02 12:00+00', '{"user": "b"}'),
    (102, '2029-12-02 12:00+00', '{"user": "b", "ttl": -1}');
-- d3: one item with a longer own ttl (a week)
INSERT INTO rt.sessions (id, created_at, doc) VALUES
    (201, '2029-12-03 12:00+00', '{"user": "c"}'),
    (202, '2029-12-03 12:00+00', '{"user": "c", "ttl": 604800}');
-- d4: one item whose deadline is not yet due (and no lifetime end)
INSERT INTO rt.sessions (id, created_at, doc) VALUES
    (301, '2029-12-04 12:00+00', '{"user": "d"}'),
    (302, '2029-12-04 12:00+00', '{"user": "d", "ttl": -1, "until": "2030-06-01T00:00:00Z"}');
-- d5: one held item (the hold below), d6: all expired, d7: empty
INSERT INTO rt.sessions (id, created_at, doc) VALUES
    (401, '2029-12-05 12:00+00', '{"user": "e"}'),
    (402, '2029-12-05 12:00+00', '{"user": "e", "case": 7}');
INSERT INTO rt.sessions (id, created_at, doc)
SELECT 500 + g, '2029-12-06 12:00+00', '{"user": "f"}' FROM generate_series(1, 5) g;
CREATE INDEX sessions_doc_gin ON rt.sessions USING gin (doc jsonb_path_ops);
SELECT ttl.set_legal_hold('rt.sessions', 'case 7', '{"case": 7}');
SELECT ttl.set_retire('rt.sessions', 'drop');
RESET ROLE;

SET ttl.now_override = '2030-01-02 00:00:00+00';
-- ttl.preview counts the leaves whose every item has expired under each
-- default (before the obstacles: d5's held item counts): d1, d5, d6 now,
-- none under a default of 10 days; NULL for a plain container
SELECT scenario, default_ttl, leaves_due FROM ttl.preview('rt.sessions', 864000) ORDER BY scenario;
SELECT scenario, leaves_due FROM ttl.preview('rt.plain', 60) ORDER BY scenario;
SELECT ttl.purge('rt.sessions');
-- d1 and d6 are gone; the others keep their leaf, and their expired
-- items were purged one by one
SELECT c.relname, (SELECT count(*) FROM rt.sessions s WHERE s.tableoid = c.oid) AS items
  FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid
 WHERE i.inhparent = 'rt.sessions'::regclass ORDER BY 1;
SELECT to_regclass('rt.sessions_d1') AS d1, to_regclass('rt.sessions_d6') AS d6;
SELECT container, leaf, mode, retired_at, items FROM ttl.retired ORDER BY leaf;
SELECT rows_purged, leaves_retired, rows_retired, last_error FROM ttl.stats WHERE container = 'rt.sessions'::regclass;
-- the live view and rule 10 after a retire: writes and reads go on
SELECT count(*) FROM rt.sessions_live;
INSERT INTO rt.sessions (id, created_at, doc) VALUES (601, '2029-12-07 12:00+00', '{"user": "g"}');
SELECT id, doc ->> 'user' AS u FROM rt.sessions_live WHERE id = 601;

-- a leaf another role owns is never touched: not retired, not purged
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET ROLE regress_ttl_rt_owner;
CREATE TABLE rt.sessions_d8 PARTITION OF rt.sessions FOR VALUES FROM ('2029-12-08') TO ('2029-12-09');
INSERT INTO rt.sessions (id, created_at, doc)
SELECT 800 + g, '2029-12-08 12:00+00', '{"user": "h"}' FROM generate_series(1, 3) g;
RESET ROLE;
ALTER TABLE rt.sessions_d8 OWNER TO regress_ttl_rt_other;
SET ttl.now_override = '2030-01-02 00:00:00+00';
SELECT ttl.purge('rt.sessions');
SELECT count(*) AS d8_items FROM rt.sessions_d8;
SELECT leaf FROM ttl.retired WHERE leaf = 'rt.sessions_d8';
ALTER TABLE rt.sessions_d8 OWNER TO regress_ttl_rt_owner;

-- with a legal hold and no GIN index to probe it, no leaf is retired: d9
-- is fully expired, and purged one by one
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET ROLE regress_ttl_rt_owner;
DROP INDEX rt.sessions_doc_gin;
CREATE TABLE rt.sessions_d9 PARTITION OF rt.sessions FOR VALUES FROM ('2029-12-09') TO ('2029-12-10');
INSERT INTO rt.sessions (id, created_at, doc)
SELECT 900 + g, '2029-12-09 12:00+00', '{"user": "i"}' FROM generate_series(1, 3) g;
RESET ROLE;
SET ttl.now_override = '2030-01-02 00:00:00+00';
SELECT ttl.purge('rt.sessions');
SELECT to_regclass('rt.sessions_d9') IS NOT NULL AS d9_kept, (SELECT count(*) FROM rt.sessions_d9) AS d9_items;
SELECT count(*) AS retired FROM ttl.retired WHERE container = 'rt.sessions'::regclass;

-- a leaf that comes fully due within one default lifetime keeps its
-- expired rows (hidden) until it retires with them, instead of losing them
-- one by one: d10 has items written at 00:00 and at 00:30, the hour's
-- default; at 01:10 the first are due, the last within the hour
-- (the GIN index that probes the legal hold is back)
SET ttl.now_override = '2030-01-05 00:00:00+00';
SET ROLE regress_ttl_rt_owner;
CREATE INDEX sessions_doc_gin ON rt.sessions USING gin (doc jsonb_path_ops);
CREATE TABLE rt.sessions_d10 PARTITION OF rt.sessions FOR VALUES FROM ('2029-12-10') TO ('2029-12-11');
INSERT INTO rt.sessions (id, created_at, doc)
SELECT 1000 + g, '2029-12-10 12:00+00', '{"user": "j"}' FROM generate_series(1, 4) g;
RESET ROLE;
SET ttl.now_override = '2030-01-05 00:30:00+00';
INSERT INTO rt.sessions (id, created_at, doc) VALUES (1005, '2029-12-10 12:00+00', '{"user": "j"}');
RESET ROLE;
SET ttl.now_override = '2030-01-05 01:10:00+00';
SELECT ttl.purge('rt.sessions');
SELECT count(*) AS d10_rows, count(*) FILTER (WHERE ttl.is_expired('rt.sessions', doc)) AS d10_expired
  FROM rt.sessions_d10;
SELECT count(*) AS d10_live FROM rt.sessions_live WHERE id > 1000;
SET ttl.now_override = '2030-01-05 01:40:00+00';
SELECT ttl.purge('rt.sessions');
SELECT to_regclass('rt.sessions_d10') AS d10, (SELECT items FROM ttl.retired WHERE leaf = 'rt.sessions_d10') AS items;

-- detach mode, through the round (CALL ttl.run_purge): the leaf stays,
-- detached, under its name, with its rows
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET ROLE regress_ttl_rt_owner;
CREATE TABLE rt.logs (created_at timestamptz NOT NULL, doc jsonb NOT NULL) PARTITION BY RANGE (created_at);
CREATE TABLE rt.logs_a PARTITION OF rt.logs FOR VALUES FROM ('2029-12-01') TO ('2029-12-02');
CREATE TABLE rt.logs_b PARTITION OF rt.logs FOR VALUES FROM ('2029-12-02') TO ('2029-12-03');
SELECT ttl.enable('rt.logs', 600);
INSERT INTO rt.logs SELECT '2029-12-01 10:00+00', '{}' FROM generate_series(1, 7);
INSERT INTO rt.logs VALUES ('2029-12-02 10:00+00', '{"ttl": 172800}');
SELECT ttl.set_retire('rt.logs', 'detach');
RESET ROLE;
SET ttl.now_override = '2030-01-02 00:00:00+00';
CALL ttl.run_purge();
SELECT relname, relispartition, relowner::regrole, (SELECT count(*) FROM rt.logs_a) AS items
  FROM pg_class WHERE oid = 'rt.logs_a'::regclass;
SELECT count(*) AS logs_items FROM rt.logs;
SELECT container, leaf, mode, items FROM ttl.retired WHERE container = 'rt.logs'::regclass;
SELECT leaves_retired, rows_retired FROM ttl.stats WHERE container = 'rt.logs'::regclass;
-- off again: nothing more is retired; a disabled container takes its
-- records along
SELECT ttl.set_retire('rt.logs', 'off');
SELECT retire FROM ttl.containers WHERE container = 'rt.logs'::regclass;
DROP TABLE rt.logs CASCADE;
SELECT count(*) FROM ttl.retired_leaf WHERE leaf LIKE 'rt.logs%';

RESET ttl.now_override;
DROP SCHEMA rt CASCADE;
DROP ROLE regress_ttl_rt_owner;
DROP ROLE regress_ttl_rt_other;
