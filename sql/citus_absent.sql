-- Issue 13 without Citus: ttl works unchanged and the Citus functions
-- answer "not a Citus table"; 1.3 -> 1.4 keeps containers and items.
CREATE TABLE ca (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('ca', 60);
SELECT ttl._citus_kind('ca') IS NULL AS not_citus;
SELECT count(*) FROM ttl._local_placements('ca');
SELECT count(*) FROM ttl.distributed_stats;
SELECT ttl._purge_placements('ca');
-- a table that is not distributed keeps its one-argument trigger
SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t WHERE t.tgrelid = 'ca'::regclass;
SELECT ttl.set_default_ttl('ca', 120);
SELECT ttl.pause('ca');
SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t WHERE t.tgrelid = 'ca'::regclass;
-- enable/disable turn Citus's trigger setting on only for themselves
SELECT p.proname, p.proconfig FROM pg_proc p
 WHERE p.pronamespace = 'ttl'::regnamespace AND p.proname IN ('enable', 'disable') ORDER BY 1;
SELECT current_setting('citus.enable_unsafe_triggers', true) IS DISTINCT FROM 'on' AS not_left_on;
SELECT ttl.disable('ca');
DROP TABLE ca;
-- ALTER EXTENSION ttl UPDATE from 1.3
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_citus;
ALTER DATABASE regress_ttl_citus SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_citus
CREATE EXTENSION ttl VERSION '1.3';
CREATE TABLE up (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('up', 3600);
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO up VALUES (1, '{"a": 1}'), (2, '{"ttl": 10}');
ALTER EXTENSION ttl UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
SELECT container, default_ttl, live_view, paused FROM ttl.containers;
SELECT id, doc FROM up ORDER BY id;
SET ttl.now_override = '2030-01-01 00:00:20+00';
SELECT id FROM up_live ORDER BY id;
SELECT ttl.purge('up');
SELECT id FROM up ORDER BY id;
SELECT to_regclass('ttl.distributed_stats') IS NOT NULL AS has_distributed_stats;
\c :orig_db
DROP DATABASE regress_ttl_citus;
