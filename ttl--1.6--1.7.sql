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


-- ---------------------------------------------------------------------------
-- section: schema and table names that need quoting (issue 25, item 3)
-- ---------------------------------------------------------------------------


-- ---------------------------------------------------------------------------
-- section: last_error, RLS in stats/backlog, marking, regclass errors
-- (issue 25, item 4)
-- ---------------------------------------------------------------------------

-- A purge error's text can carry row data (an owner's trigger may put a
-- document in its message): ttl.purge_stats no longer shows last_error to
-- PUBLIC (the other columns stay readable: ttl._placement_stats and
-- monitoring read them), and ttl.stats shows it only to a reader who may
-- SELECT the table and whom row-level security does not restrict (the
-- reader's own privileges: a view's functions run as the current user;
-- has_table_privilege(oid) gives NULL, row_security_active(oid) false, for
-- a table dropped meanwhile, so the view never raises).  The backlog
-- columns are NULL under row-level security too (ttl._backlog, stats.c).
REVOKE SELECT ON ttl.purge_stats FROM PUBLIC;
GRANT SELECT (relid, rows_purged, last_purge_at, last_error_at) ON ttl.purge_stats TO PUBLIC;

CREATE OR REPLACE VIEW ttl.stats AS
SELECT r.relid                        AS container,
       coalesce(s.rows_purged, 0)     AS rows_purged,
       s.last_purge_at,
       CASE WHEN pg_catalog.has_table_privilege(c.oid, 'SELECT')
             AND NOT pg_catalog.row_security_active(c.oid)
            THEN s.last_error END     AS last_error,
       s.last_error_at,
       b.expired                      AS expired_backlog,
       b.oldest_expired_at,
       ttl.now() OPERATOR(pg_catalog.-) b.oldest_expired_at AS oldest_expired_age,
       r.held_since,
       r.hold_reason
  FROM ttl.registry r
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  LEFT JOIN ttl.purge_stats s ON s.relid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  CROSS JOIN LATERAL ttl._backlog(r.relid) b;
COMMENT ON VIEW ttl.stats IS 'purge statistics per container; last_error only for readers who may SELECT every row of the table; held_since, hold_reason: the restore guard''s hold';
COMMENT ON FUNCTION ttl._backlog(regclass) IS 'ttl.backlog for ttl.stats: NULLs for tables the caller cannot SELECT or whose rows row-level security filters for the caller, gone, or temporary tables of other sessions';
COMMENT ON FUNCTION ttl.backlog(regclass) IS 'expired items not yet purged (each purge index walked up to 1,000,000 rows, as the table''s owner) and when the oldest expired; 42501 when row-level security applies to the caller';


-- ---------------------------------------------------------------------------
-- section: rule 10, an expired item is gone for writes too (issue 26)
-- ---------------------------------------------------------------------------

