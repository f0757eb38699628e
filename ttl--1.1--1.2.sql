-- ttl 1.1 -> 1.2: the bounded pool of purge workers (issue 12).

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.2'" to load this file. \quit

-- ttl's tables are locked in one order, ttl.registry first: the purge
-- takes it before any other table of ttl's, so an update that alters them
-- never deadlocks with a purge (src/registry/registry.c).
LOCK TABLE ttl.registry IN ACCESS EXCLUSIVE MODE;

-- ---------------------------------------------------------------------------
-- section: the worker pool (ttl.databases, ttl.worker_pool)
-- ---------------------------------------------------------------------------

-- What the launcher knows of each database, from shared memory: the same
-- rows in every database that has the extension.  It shows other
-- databases' names and errors, so like pg_stat_activity's details it is
-- for superusers and members of pg_read_all_stats.
CREATE FUNCTION ttl._databases(OUT datid oid, OUT datname text, OUT has_ttl boolean,
                               OUT worker_pid integer, OUT last_served timestamptz,
                               OUT due_rows bigint, OUT oldest_due timestamptz,
                               OUT last_error text, OUT visits bigint)
RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'ttl_databases'
    LANGUAGE C VOLATILE;

CREATE VIEW ttl.databases AS
SELECT datid, datname, has_ttl, worker_pid, last_served, due_rows, oldest_due,
       ttl.now() OPERATOR(pg_catalog.-) oldest_due AS oldest_due_age,
       last_error, visits
  FROM ttl._databases();
COMMENT ON VIEW ttl.databases IS 'per database: whether it has ttl (NULL: not visited yet), its worker now, when it was last served, the backlog its last worker left (due rows, counted up to 10000 per purge index; oldest due item), the error that ended a visit, and how many workers visited it';

CREATE FUNCTION ttl._worker_pool(OUT max_workers integer, OUT running integer,
                                 OUT high_water integer)
    AS 'MODULE_PATHNAME', 'ttl_worker_pool'
    LANGUAGE C VOLATILE;

CREATE VIEW ttl.worker_pool AS SELECT * FROM ttl._worker_pool();
COMMENT ON VIEW ttl.worker_pool IS 'the pool of purge workers: ttl.max_workers, workers running now, the most that ever ran at once';

REVOKE ALL ON FUNCTION ttl._databases() FROM PUBLIC;
REVOKE ALL ON FUNCTION ttl._worker_pool() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ttl._databases() TO pg_read_all_stats;
GRANT EXECUTE ON FUNCTION ttl._worker_pool() TO pg_read_all_stats;
GRANT SELECT ON ttl.databases, ttl.worker_pool TO pg_read_all_stats;

-- (end of section: the worker pool)
