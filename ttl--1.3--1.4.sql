-- ttl 1.3 -> 1.4: containers on Citus distributed tables (issue 13).

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.4'" to load this file. \quit

-- ttl's tables are locked in one order, ttl.registry first: the purge
-- takes it before any other table of ttl's, so an update that alters them
-- never deadlocks with a purge (src/registry/registry.c).
LOCK TABLE ttl.registry IN ACCESS EXCLUSIVE MODE;

-- ---------------------------------------------------------------------------
-- section: Citus (src/citus.c; Citus is found at run time, never required)
-- ---------------------------------------------------------------------------

-- Citus refuses triggers on distributed tables unless this setting is on;
-- ttl's trigger rewrites only the row it fires for, so ttl.enable and
-- ttl.disable turn it on for their own DDL (a placeholder without Citus).
ALTER FUNCTION ttl.enable(regclass, integer, name) SET citus.enable_unsafe_triggers = on;
ALTER FUNCTION ttl.disable(regclass) SET citus.enable_unsafe_triggers = on;
-- ttl.disable drops the view after the trigger and the indexes: Citus runs
-- a distributed view's DDL only over one connection per node, so the
-- function's DDL on the shards runs sequentially too.
ALTER FUNCTION ttl.disable(regclass) SET citus.multi_shard_modify_mode = 'sequential';

-- What Citus makes of a table: 'h' hash-distributed, 'r' reference, 'o'
-- other, NULL not a Citus table (or no Citus).
CREATE FUNCTION ttl._citus_kind(container regclass) RETURNS "char"
    AS 'MODULE_PATHNAME', 'ttl_citus_kind_sql'
    LANGUAGE C STABLE STRICT;

-- Put the registry's policy into a distributed container's stamp trigger,
-- which Citus replaces on every shard and node (caller must own the table).
CREATE FUNCTION ttl._citus_sync_policy(container regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_citus_sync_policy_sql'
    LANGUAGE C STRICT;

-- This node's active placements (shards) of a distributed container.
CREATE FUNCTION ttl._local_placements(container regclass) RETURNS SETOF regclass
    AS 'MODULE_PATHNAME', 'ttl_local_placements'
    LANGUAGE C STABLE STRICT;

-- Purge this node's placements of a distributed container now, as their
-- owner (the caller must own the table); ttl.purge() on the coordinator
-- runs it on every node.
CREATE FUNCTION ttl._purge_placements(container regclass, max_rows bigint DEFAULT NULL)
RETURNS bigint
    AS 'MODULE_PATHNAME', 'ttl_purge_placements'
    LANGUAGE C;

-- This node's purge counters of a distributed container's placements.
CREATE FUNCTION ttl._placement_stats(container regclass,
                                     OUT rows_purged bigint, OUT last_purge_at timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT COALESCE(pg_catalog.sum(s.rows_purged), 0)::pg_catalog.int8,
       pg_catalog.max(s.last_purge_at)
  FROM ttl._local_placements(container) p
  JOIN ttl.purge_stats s ON s.relid OPERATOR(pg_catalog.=) p::pg_catalog.oid
$$;

-- The purge counters of every distributed container, summed over the nodes
-- (read on the coordinator; each node is asked in parallel).
CREATE FUNCTION ttl._distributed_stats(OUT container regclass, OUT rows_purged bigint,
                                       OUT last_purge_at timestamptz)
RETURNS SETOF record
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c regclass;
BEGIN
    FOR c IN SELECT r.relid FROM ttl.registry r
              WHERE ttl._citus_kind(r.relid) OPERATOR(pg_catalog.=) 'h'
              ORDER BY r.relid::pg_catalog.oid
    LOOP
        container := c;
        SELECT pg_catalog.sum((n.result::pg_catalog.json OPERATOR(pg_catalog.->>) 'rows_purged')::pg_catalog.int8),
               pg_catalog.max((n.result::pg_catalog.json OPERATOR(pg_catalog.->>) 'last_purge_at')::pg_catalog.timestamptz)
          INTO rows_purged, last_purge_at
          FROM pg_catalog.run_command_on_all_nodes(pg_catalog.format(
                 'SELECT pg_catalog.row_to_json(s) FROM ttl._placement_stats(%L::pg_catalog.regclass) s',
                 c::pg_catalog.text)) n
         WHERE n.success;
        RETURN NEXT;
    END LOOP;
END
$$;

CREATE VIEW ttl.distributed_stats AS SELECT * FROM ttl._distributed_stats();
COMMENT ON VIEW ttl.distributed_stats IS 'purge statistics of each distributed container, summed over the Citus nodes';
GRANT SELECT ON ttl.distributed_stats TO PUBLIC;

-- (end of section: Citus)
