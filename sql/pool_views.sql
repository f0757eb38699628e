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
ALTER DATABASE regress_ttl_pool SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_pool
CREATE EXTENSION ttl VERSION '1.1';
SELECT to_regclass('ttl.databases'), to_regclass('ttl.worker_pool');
ALTER EXTENSION ttl UPDATE;
SELECT to_regclass('ttl.databases'), to_regclass('ttl.worker_pool');
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
\c :orig_db
DROP DATABASE regress_ttl_pool;
-- 1.7 (issue 30): the background purge waiting for replicas.  Without the
-- preload nobody waits: NULLs.  Both settings are for postgresql.conf.
SELECT replication_wait_since, replication_wait_for, replication_lag_bytes FROM ttl.worker_pool;
SHOW ttl.max_replication_lag;
SHOW ttl.replication_lag_ignore;
SET ttl.max_replication_lag = '1GB';
SET ttl.replication_lag_ignore = 'standby1';
-- ALTER EXTENSION ttl UPDATE from 1.6 brings the columns
CREATE DATABASE regress_ttl_pool_lag;
ALTER DATABASE regress_ttl_pool_lag SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_pool_lag
CREATE EXTENSION ttl VERSION '1.6';
SELECT count(*) FROM pg_attribute WHERE attrelid = 'ttl.worker_pool'::regclass AND attname LIKE 'replication%';
ALTER EXTENSION ttl UPDATE TO '1.7';
SELECT attname FROM pg_attribute WHERE attrelid = 'ttl.worker_pool'::regclass AND attname LIKE 'replication%' ORDER BY attnum;
SELECT attname FROM pg_attribute WHERE attrelid = 'ttl.databases'::regclass AND attname LIKE 'replication%' ORDER BY attnum;
SELECT replication_wait_for FROM ttl.worker_pool;
\c :orig_db
DROP DATABASE regress_ttl_pool_lag;
