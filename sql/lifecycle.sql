-- ttl.enable / ttl.disable and what happens to a container over its life:
-- errors that create nothing, pre-existing rows, DROP, RENAME, re-enable.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';

CREATE FUNCTION ttl_objects(t regclass) RETURNS text LANGUAGE sql AS $$
    SELECT concat_ws(' | ',
        (SELECT string_agg(tgname, ',') FROM pg_trigger WHERE tgrelid = t AND NOT tgisinternal),
        (SELECT string_agg(indexrelid::regclass::text, ',' ORDER BY indexrelid::regclass::text)
           FROM pg_index WHERE indrelid = t),
        (SELECT string_agg(DISTINCT ev_class::regclass::text, ',') FROM pg_rewrite r
           JOIN pg_depend d ON d.objid = r.oid AND d.refobjid = t AND d.classid = 'pg_rewrite'::regclass),
        (SELECT 'registered' FROM ttl.containers WHERE container = t))
$$;

-- errors: each one leaves nothing behind
CREATE TABLE e (id int PRIMARY KEY, doc jsonb, txt text);
CREATE VIEW e_view AS SELECT * FROM e;
CREATE SEQUENCE e_seq;
SELECT ttl.enable('e_view', 60);
DROP VIEW e_view;
SELECT ttl.enable('e_seq', 60);
SELECT ttl.enable('e', 60, 'missing');
SELECT ttl.enable('e', 60, 'txt');
SELECT ttl.enable('e', 0);
SELECT ttl.enable(NULL, 60);
SELECT ttl.enable('e', 60, NULL);
SELECT ttl.enable('no_such_table', 60);
CREATE VIEW e_live AS SELECT 1;
SELECT ttl.enable('e', 60);
DROP VIEW e_live;
SELECT ttl_objects('e');
-- pre-existing rows must be valid, and a bad one names itself
INSERT INTO e VALUES (1, '{"ttl": "1h"}');
SELECT ttl.enable('e', 60);
SELECT ttl_objects('e');
DELETE FROM e;

-- pre-existing rows: those without _ts get a full lifetime from now;
-- those with one keep it
SET ttl.now_override = '2025-06-01 00:00:00+00';
INSERT INTO e VALUES (1, '{"a": 1}'), (2, '{"a": 2, "_ts": 1767225000}'), (3, '{"a": 3, "_ts": "x"}');
SET ttl.now_override = '2026-01-01 00:00:00+00';
SELECT ttl.enable('e', 60);
SELECT id, doc FROM e ORDER BY id;
SELECT ttl_objects('e');
SELECT id FROM e_live ORDER BY id;
SELECT ttl.enable('e', 60);

-- moving and renaming the table: the view follows (e_live becomes
-- app.events_live), everything keeps working
CREATE SCHEMA app;
ALTER TABLE e SET SCHEMA app;
ALTER TABLE app.e RENAME TO events;
SET ttl.now_override = '2026-01-01 00:00:30+00';
INSERT INTO app.events VALUES (4, '{"a": 4}');
SELECT container, live_view FROM ttl.containers;
SELECT id, doc FROM app.events_live ORDER BY id;
SELECT ttl.set_default_ttl('app.events', 20);
SELECT id FROM app.events_live ORDER BY id;
SELECT ttl.purge('app.events');
SELECT id FROM app.events ORDER BY id;
ALTER SCHEMA app RENAME TO application;
SELECT ttl.purge('application.events');
SELECT container, rows_purged FROM ttl.stats;

-- disable: trigger, view, indexes and registration go, data stays
SELECT ttl_objects('application.events');
SELECT ttl.disable('application.events');
SELECT ttl_objects('application.events');
SELECT id, doc FROM application.events ORDER BY id;
INSERT INTO application.events VALUES (5, '{"_ts": 1, "ttl": "anything"}');
SELECT ttl.disable('application.events');
-- and it can be enabled again
SELECT ttl.enable('application.events', 60);
DELETE FROM application.events WHERE id = 5;
SELECT ttl.enable('application.events', 60);
SELECT ttl_objects('application.events');

-- DROP TABLE leaves no registration or statistics behind
SELECT ttl.purge('application.events');
DROP TABLE application.events CASCADE;
SELECT count(*) AS registered FROM ttl.registry;
SELECT count(*) AS stats_rows FROM ttl.purge_stats;
-- dropping only the view keeps the container; disable still works
CREATE TABLE f (doc jsonb);
SELECT ttl.enable('f', 60);
DROP VIEW f_live;
SELECT container, live_view FROM ttl.containers;
SELECT ttl.disable('f');
SELECT ttl_objects('f');

DROP TABLE f;

-- a partitioned table is a container like any other
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE part (tenant int, id int, doc jsonb NOT NULL, PRIMARY KEY (tenant, id))
    PARTITION BY LIST (tenant);
CREATE TABLE part_1 PARTITION OF part FOR VALUES IN (1);
CREATE TABLE part_2 PARTITION OF part FOR VALUES IN (2);
SELECT ttl.enable('part', 60);
INSERT INTO part VALUES (1, 1, '{}'), (1, 2, '{"ttl": -1}'), (2, 1, '{"ttl": 10}'), (2, 2, '{}');
SELECT tableoid::regclass, id, doc FROM part ORDER BY 1, 2;
SET ttl.now_override = '2026-01-01 00:00:30+00';
SELECT tenant, id FROM part_live ORDER BY 1, 2;
SET ttl.now_override = '2026-01-01 00:01:00+00';
SELECT ttl.purge('part');
SELECT tenant, id FROM part ORDER BY 1, 2;
SELECT ttl.disable('part');
SELECT count(*) AS purge_indexes_left FROM pg_class WHERE relkind IN ('i', 'I')
   AND obj_description(oid, 'pg_class') = 'ttl purge index';
DROP TABLE part;
DROP SEQUENCE e_seq;
DROP SCHEMA application;
DROP FUNCTION ttl_objects(regclass);
