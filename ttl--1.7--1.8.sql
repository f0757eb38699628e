/* ttl--1.7--1.8.sql: 1.7 -> 1.8, the purge pipeline and index ownership
 * (issue 28), rule 10's cost (issue 26), archives (issue 31) and legal
 * holds (issue 32). */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.8'" to load this file. \quit

-- Every function below that runs SQL pins search_path = pg_catalog, pg_temp
-- and names its operators schema-qualified: see docs/security.md.

-- ---------------------------------------------------------------------------
-- section: purge and deadline indexes owned by the registry (issue 28)
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- section: one policy look-up and one purge pipeline (issue 28)
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- section: rule 10's cost (issue 26)
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- section: archive before purge (issue 31)
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- section: legal holds (issue 32)
-- ---------------------------------------------------------------------------
