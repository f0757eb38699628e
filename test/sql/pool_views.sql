-- The worker pool as SQL sees it (1.2): ttl.databases and ttl.worker_pool
-- are for superusers and members of pg_read_all_stats (they name other
-- databases and their errors); the pool's settings.  Without the preload
-- (as here) there is no pool: the launcher knows no database, and
-- ttl.max_workers (a server-start setting) is not defined.
\set SHOW_CONTEXT never
SELECT max_workers, running, high_water FROM ttl.worker_pool;
SELECT count(*) FROM ttl.databases;
SELECT attname FROM pg_attribute WHERE attrelid = 'ttl.databases'::regclass AND attnum > 0 ORDER BY attnum;
CREATE ROLE regress_pool_plain;
CREATE ROLE regress_pool_stats IN ROLE pg_read_all_stats;
SET ROLE regress_pool_plain;
SELECT count(*) FROM ttl.databases;
SELECT max_workers FROM ttl.worker_pool;
SET ROLE regress_pool_stats;
SELECT count(*) FROM ttl.databases;
SELECT max_workers FROM ttl.worker_pool;
RESET ROLE;
DROP ROLE regress_pool_plain;
DROP ROLE regress_pool_stats;
-- settings
SHOW ttl.rescan_interval;
-- ALTER EXTENSION ttl UPDATE from 1.1 brings the views
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_pool;
\c regress_ttl_pool
CREATE EXTENSION ttl VERSION '1.1';
SELECT to_regclass('ttl.databases'), to_regclass('ttl.worker_pool');
ALTER EXTENSION ttl UPDATE;
SELECT to_regclass('ttl.databases'), to_regclass('ttl.worker_pool');
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
\c :orig_db
DROP DATABASE regress_ttl_pool;
