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
