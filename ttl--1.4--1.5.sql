-- ttl 1.4 -> 1.5 (issue 14).

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.5'" to load this file. \quit

-- ==== restore guard ====
-- Automatic purge (the worker, CALL ttl.run_purge) holds a container whose
-- due backlog exceeds ttl.restore_guard_fraction of its rows after a
-- restore, a start from a base backup or point-in-time recovery, a clock
-- jump, or when it is enabled over documents mostly due already
-- (src/guard.c).  Where a container was enabled (the cluster's system
-- identifier, the database's OID) travels with its registry row through
-- pg_dump, so a restore elsewhere shows.  The containers that exist now
-- are at home.
ALTER TABLE ttl.registry
    ADD COLUMN home_system_identifier bigint,
    ADD COLUMN home_database oid,
    ADD COLUMN held_since timestamptz,
    ADD COLUMN hold_reason text,
    ADD COLUMN hold_fraction real;
UPDATE ttl.registry
   SET home_system_identifier = (SELECT s.system_identifier FROM pg_catalog.pg_control_system() s),
       home_database = (SELECT d.oid FROM pg_catalog.pg_database d
                         WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database());

-- resume also releases the guard's hold and records the current home
CREATE OR REPLACE FUNCTION ttl.resume(container regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_resume_guard'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.resume(regclass) IS 'restart automatic purge of a container, and release its restore guard hold';

-- Rows whose table is gone are skipped (the join with pg_class).
CREATE OR REPLACE VIEW ttl.stats AS
SELECT r.relid                        AS container,
       coalesce(s.rows_purged, 0)     AS rows_purged,
       s.last_purge_at,
       s.last_error,
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
COMMENT ON VIEW ttl.stats IS 'purge statistics per container; held_since, hold_reason: the restore guard''s hold';
-- ==== end restore guard ====
