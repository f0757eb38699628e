/* ttl--1.8--1.9.sql: 1.8 -> 1.9, one section per change of this round:
 * ownership and failing rows (security round 3), rule 10 with one
 * mechanism (the trigger-arguments codec, the version read), retiring
 * partitions, and what an operator sees. */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.9'" to load this file. \quit

-- Every function below that runs SQL pins search_path = pg_catalog, pg_temp
-- and names its operators schema-qualified: see docs/security.md.

-- ---------------------------------------------------------------------------
-- section: ownership of every leaf, failing rows isolated (security round 3)
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- section: rule 10 with one mechanism; the trigger-arguments codec
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- section: retiring whole partitions
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- section: what an operator sees (progress, windows, marking, metrics)
-- ---------------------------------------------------------------------------
