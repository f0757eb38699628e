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
