/* ttl--1.0--1.1.sql: 1.0 -> 1.1, security and schema-change fixes. */

\echo Use "ALTER EXTENSION ttl UPDATE TO '1.1'" to load this file. \quit

-- Every function below that runs SQL pins search_path = pg_catalog, pg_temp
-- and names its operators schema-qualified: see README, "Security model".

-- ---------------------------------------------------------------------------
-- section: purge (elevated SQL, locks, snapshots)
-- ---------------------------------------------------------------------------

-- (end of section: purge)

-- ---------------------------------------------------------------------------
-- section: statistics (ttl.stats, ttl.backlog)
-- ---------------------------------------------------------------------------

-- The backlog is computed in C as the table's owner, in a
-- security-restricted operation with search_path = pg_catalog, pg_temp
-- (src/stats.c): planning a query on a table runs the IMMUTABLE functions
-- of its index expressions, which are the owner's code and must never run
-- as the reader.  Readers without SELECT on the table get NULL backlog
-- columns from ttl.stats (ttl._backlog) and 42501 from ttl.backlog; a table
-- that is gone, or another session's temporary table, gives NULLs.
CREATE OR REPLACE FUNCTION ttl.backlog(container regclass,
                                       OUT expired bigint, OUT oldest_expired_at timestamptz)
    AS 'MODULE_PATHNAME', 'ttl_backlog'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION ttl.backlog(regclass) IS 'expired items not yet purged (each purge index walked up to 1,000,000 rows, as the table''s owner) and when the oldest expired';

CREATE FUNCTION ttl._backlog(container regclass,
                             OUT expired bigint, OUT oldest_expired_at timestamptz)
    AS 'MODULE_PATHNAME', 'ttl_backlog_if_readable'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION ttl._backlog(regclass) IS 'ttl.backlog for ttl.stats: NULLs for tables the caller cannot SELECT, gone, or temporary tables of other sessions';

-- Rows whose table is gone are skipped (the join with pg_class).
CREATE OR REPLACE VIEW ttl.stats AS
SELECT r.relid                        AS container,
       coalesce(s.rows_purged, 0)     AS rows_purged,
       s.last_purge_at,
       s.last_error,
       s.last_error_at,
       b.expired                      AS expired_backlog,
       b.oldest_expired_at,
       ttl.now() OPERATOR(pg_catalog.-) b.oldest_expired_at AS oldest_expired_age
  FROM ttl.registry r
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  LEFT JOIN ttl.purge_stats s ON s.relid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  CROSS JOIN LATERAL ttl._backlog(r.relid) b;
COMMENT ON VIEW ttl.stats IS 'purge statistics per container';

-- (end of section: statistics)

-- ---------------------------------------------------------------------------
-- section: containers follow their table (RLS, schema changes, enable/disable)
-- ---------------------------------------------------------------------------

-- (end of section: containers follow their table)

-- ---------------------------------------------------------------------------
-- section: dropped objects (event trigger, SECURITY DEFINER)
-- ---------------------------------------------------------------------------
-- It runs as the extension's owner: every operator is schema-qualified, on
-- top of the pinned search_path, so no object of a user can stand in.
CREATE OR REPLACE FUNCTION ttl._on_sql_drop() RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM ttl.registry r
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
    DELETE FROM ttl.purge_stats s
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND s.relid OPERATOR(pg_catalog.=) d.objid;
    UPDATE ttl.registry r SET live_view = NULL
      FROM pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND r.live_view::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
END
$$;
REVOKE ALL ON FUNCTION ttl._on_sql_drop() FROM PUBLIC;

-- (end of section: dropped objects)
