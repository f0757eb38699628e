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


-- The container follows its table through ALTER TABLE (src/ddl_events.c):
-- columns added or renamed appear in <table>_live, a dropped or retyped
-- column rebuilds it, the document column can be renamed but not dropped or
-- retyped, the view follows renames, schema and owner changes, and is
-- security_invoker exactly while the table has row-level security.
CREATE FUNCTION ttl._ddl_start() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'ttl_ddl_start'
    LANGUAGE C;
REVOKE ALL ON FUNCTION ttl._ddl_start() FROM PUBLIC;
CREATE FUNCTION ttl._ddl_end() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'ttl_ddl_end'
    LANGUAGE C;
REVOKE ALL ON FUNCTION ttl._ddl_end() FROM PUBLIC;
CREATE EVENT TRIGGER ttl_ddl_start ON ddl_command_start
    WHEN TAG IN ('ALTER TABLE') EXECUTE FUNCTION ttl._ddl_start();
CREATE EVENT TRIGGER ttl_ddl_end ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE') EXECUTE FUNCTION ttl._ddl_end();

CREATE FUNCTION ttl._follow_table(container regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_follow_table'
    LANGUAGE C STRICT;

-- Containers enabled under 1.0 whose table got RLS, columns or a new owner
-- since: bring their live views in line now.
SELECT ttl._follow_table(r.relid) FROM ttl.registry r;

-- (end of section: containers follow their table)
