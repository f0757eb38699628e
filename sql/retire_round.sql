-- The round's retire step in drop mode (1.9, src/purge/purge_retire.c):
-- CALL ttl.run_purge() (and the worker) commits the DETACH first, then
-- drops the detached leaf in the container's next turn, a transaction of
-- its own, so that the DROP's commit (which truncates and unlinks the
-- leaf's files) does not hold the container's AccessExclusiveLock; until
-- then ttl.retired says 'detach'.  A leaf that cannot be dropped then (a
-- view on it) stays detached, recorded as such, with a WARNING and the
-- container's last_error.  ttl.purge() drops in its caller's transaction.
\set SHOW_CONTEXT never
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE rrd (id int NOT NULL, created_at timestamptz NOT NULL, doc jsonb NOT NULL)
    PARTITION BY RANGE (created_at);
CREATE TABLE rrd_a PARTITION OF rrd FOR VALUES FROM ('2029-12-01') TO ('2029-12-02');
CREATE TABLE rrd_b PARTITION OF rrd FOR VALUES FROM ('2029-12-02') TO ('2029-12-03');
CREATE TABLE rrd_c PARTITION OF rrd FOR VALUES FROM ('2029-12-03') TO ('2029-12-04');
SELECT ttl.enable('rrd', 3600);
SELECT ttl.set_retire('rrd', 'drop');
INSERT INTO rrd SELECT g, '2029-12-01 12:00+00', '{}' FROM generate_series(1, 6) g;
INSERT INTO rrd SELECT 10 + g, '2029-12-02 12:00+00', '{}' FROM generate_series(1, 4) g;
INSERT INTO rrd VALUES (100, '2029-12-03 12:00+00', '{"ttl": -1}');
-- a view of rrd_b's: DROP TABLE would fail on it
CREATE VIEW rrd_b_view AS SELECT id FROM rrd_b;
SET ttl.now_override = '2030-01-02 00:00:00+00';
CALL ttl.run_purge();
-- rrd_a is gone, recorded as dropped; rrd_b was detached but stays (its
-- view), recorded as detached; rrd_c keeps its item that never expires
SELECT to_regclass('rrd_a') AS a, (SELECT relispartition FROM pg_class WHERE oid = 'rrd_b'::regclass) AS b_partition,
       (SELECT count(*) FROM rrd_b) AS b_rows;
SELECT leaf, mode, items FROM ttl.retired WHERE container = 'rrd'::regclass ORDER BY leaf;
SELECT leaves_retired, rows_retired, last_error FROM ttl.stats WHERE container = 'rrd'::regclass;
SELECT count(*) AS left_in_container FROM rrd;
DROP VIEW rrd_b_view;
DROP TABLE rrd_b;
DROP TABLE rrd CASCADE;
RESET ttl.now_override;
