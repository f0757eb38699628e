-- The visit bound of the purge workers (issue 25, item 2) as SQL sees it:
-- ttl.max_visit_time, the back-off columns of ttl.purge_stats and the new
-- columns of ttl.databases and ttl.worker_pool, brought by ALTER EXTENSION
-- ttl UPDATE from 1.6.  The worker's side (termination, in-flight record,
-- back-off) is test/t/013_visit_bound.pl; without the preload (as here)
-- there is no pool.
\set SHOW_CONTEXT never
SELECT max_workers, running, high_water, terminated_visits FROM ttl.worker_pool;
SELECT count(*) FROM ttl.databases;
SHOW ttl.max_visit_time;
-- a server setting: the launcher enforces its own value, no session may
-- change it
SET ttl.max_visit_time = '1h';
SELECT attname, format_type(atttypid, atttypmod) AS type, attnotnull
  FROM pg_attribute WHERE attrelid = 'ttl.purge_stats'::regclass AND attnum > 0
 ORDER BY attnum;
-- the back-off is the worker's: CALL ttl.run_purge() is the caller's own
-- statement and purges a backed-off container (its count unchanged)
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE vb (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('vb', 60) IS NOT NULL AS enabled;
INSERT INTO vb SELECT g, '{}' FROM generate_series(1, 3) g;
INSERT INTO ttl.purge_stats (relid, overruns, retry_after, last_error)
VALUES ('vb'::regclass, 3, now() + interval '1 hour', 'purge worker terminated after ttl.max_visit_time (300000 ms) while in this container (batch)');
SET ttl.now_override = '2026-01-01 00:10:00+00';
CALL ttl.run_purge();
SELECT count(*) AS left_in_vb FROM vb;
SELECT rows_purged, overruns, retry_after IS NOT NULL AS backed_off FROM ttl.purge_stats
 WHERE relid = 'vb'::regclass;
-- ttl.disable forgets it with the rest of the container's statistics
SELECT ttl.disable('vb');
SELECT count(*) FROM ttl.purge_stats WHERE relid = 'vb'::regclass;
DROP TABLE vb;
RESET ttl.now_override;

-- ALTER EXTENSION ttl UPDATE from 1.6: the columns, the views, the grants
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_visit_up;
ALTER DATABASE regress_ttl_visit_up SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_visit_up
CREATE EXTENSION ttl VERSION '1.6';
CREATE TABLE up (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('up', 60) IS NOT NULL AS enabled;
INSERT INTO ttl.purge_stats (relid, rows_purged) VALUES ('up'::regclass, 7);
SELECT attname FROM pg_attribute WHERE attrelid = 'ttl.purge_stats'::regclass AND attnum > 0 ORDER BY attnum;
SELECT count(*) AS worker_pool_columns FROM pg_attribute WHERE attrelid = 'ttl.worker_pool'::regclass AND attnum > 0;
-- the 1.6 views still work with the new library
SELECT max_workers FROM ttl.worker_pool;
SELECT count(*) FROM ttl.databases;
ALTER EXTENSION ttl UPDATE TO '1.7';
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
SELECT relid::regclass AS container, rows_purged, overruns, retry_after FROM ttl.purge_stats;
SELECT attname FROM pg_attribute WHERE attrelid = 'ttl.databases'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname FROM pg_attribute WHERE attrelid = 'ttl.worker_pool'::regclass AND attnum > 0 ORDER BY attnum;
SELECT max_workers, terminated_visits FROM ttl.worker_pool;
SELECT count(*) FROM ttl.databases;
-- still only for superusers and pg_read_all_stats
SELECT has_table_privilege('public', 'ttl.databases', 'SELECT') AS public_databases,
       has_table_privilege('pg_read_all_stats', 'ttl.databases', 'SELECT') AS stats_databases,
       has_table_privilege('public', 'ttl.worker_pool', 'SELECT') AS public_pool,
       has_table_privilege('pg_read_all_stats', 'ttl.worker_pool', 'SELECT') AS stats_pool,
       has_function_privilege('public', 'ttl._databases()', 'EXECUTE') AS public_fn;
-- members of the extension
SELECT count(*) AS loose_objects FROM pg_class c
 WHERE c.relnamespace = 'ttl'::regnamespace AND c.relname IN ('databases', 'worker_pool')
   AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                      AND d.objid = c.oid AND d.deptype = 'e');
\c :orig_db
DROP DATABASE regress_ttl_visit_up;
