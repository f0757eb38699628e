/* ttl--1.6--1.7.sql: 1.6 -> 1.7, security round 2 (issue 25) and rule 10 (issue 26). */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.7'" to load this file. \quit

-- Every function below that runs SQL pins search_path = pg_catalog, pg_temp
-- and names its operators schema-qualified: see README, "Security model".

-- ---------------------------------------------------------------------------
-- section: one gate for a user table's definitions; internal functions
-- revoked from PUBLIC (issue 25, item 1)
-- ---------------------------------------------------------------------------


-- ---------------------------------------------------------------------------
-- section: the visit bound, the in-flight record, durable back-off
-- (issue 25, item 2)
-- ---------------------------------------------------------------------------

-- The durable back-off of a container whose statements overran their bound
-- in the background worker (src/backoff.c): a batch or backlog walk
-- cancelled by ttl.batch_timeout, or a worker the launcher terminated after
-- ttl.max_visit_time while it was in the container.  A table, so that any
-- number of containers fit and a restart keeps it.
ALTER TABLE ttl.purge_stats
    ADD COLUMN overruns integer NOT NULL DEFAULT 0,
    ADD COLUMN retry_after timestamptz;
COMMENT ON COLUMN ttl.purge_stats.overruns IS 'statements of the background worker on this container that overran their time bound since it was last served within them';
COMMENT ON COLUMN ttl.purge_stats.retry_after IS 'the background worker leaves the container out until then (ttl.naptime x 2^overruns, at most an hour)';

-- ttl.databases: the container a database's worker is in now and what it
-- does there; the visits the launcher terminated.  ttl.worker_pool: their
-- count.  New columns at the end; the functions' result types change, so
-- the views are made again (with the grants of 1.2).
DROP VIEW ttl.databases;
DROP FUNCTION ttl._databases();
CREATE FUNCTION ttl._databases(OUT datid oid, OUT datname text, OUT has_ttl boolean,
                               OUT worker_pid integer, OUT last_served timestamptz,
                               OUT due_rows bigint, OUT oldest_due timestamptz,
                               OUT last_error text, OUT visits bigint,
                               OUT container oid, OUT step text,
                               OUT terminated_visits bigint, OUT last_termination text)
RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'ttl_databases'
    LANGUAGE C VOLATILE;

CREATE VIEW ttl.databases AS
SELECT datid, datname, has_ttl, worker_pid, last_served, due_rows, oldest_due,
       ttl.now() OPERATOR(pg_catalog.-) oldest_due AS oldest_due_age,
       last_error, visits, container, step, terminated_visits, last_termination
  FROM ttl._databases();
COMMENT ON VIEW ttl.databases IS 'per database: whether it has ttl (NULL: not visited yet), its worker now, when it was last served, the backlog its last worker left (due rows, counted up to 10000 per purge index; oldest due item), the error that ended a visit, how many workers visited it, the container its worker is in now (OID in that database) and its step there (batch, backlog walk, restore guard estimate), and the visits the launcher terminated after ttl.max_visit_time';

DROP VIEW ttl.worker_pool;
DROP FUNCTION ttl._worker_pool();
CREATE FUNCTION ttl._worker_pool(OUT max_workers integer, OUT running integer,
                                 OUT high_water integer, OUT terminated_visits bigint)
    AS 'MODULE_PATHNAME', 'ttl_worker_pool'
    LANGUAGE C VOLATILE;

CREATE VIEW ttl.worker_pool AS SELECT * FROM ttl._worker_pool();
COMMENT ON VIEW ttl.worker_pool IS 'the pool of purge workers: ttl.max_workers, workers running now, the most that ever ran at once, the visits the launcher terminated after ttl.max_visit_time';

REVOKE ALL ON FUNCTION ttl._databases() FROM PUBLIC;
REVOKE ALL ON FUNCTION ttl._worker_pool() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ttl._databases() TO pg_read_all_stats;
GRANT EXECUTE ON FUNCTION ttl._worker_pool() TO pg_read_all_stats;
GRANT SELECT ON ttl.databases, ttl.worker_pool TO pg_read_all_stats;

-- (end of section: the visit bound)


-- ---------------------------------------------------------------------------
-- section: schema and table names that need quoting (issue 25, item 3)
-- ---------------------------------------------------------------------------


-- ---------------------------------------------------------------------------
-- section: last_error, RLS in stats/backlog, marking, regclass errors
-- (issue 25, item 4)
-- ---------------------------------------------------------------------------


-- ---------------------------------------------------------------------------
-- section: rule 10, an expired item is gone for writes too (issue 26)
-- ---------------------------------------------------------------------------

