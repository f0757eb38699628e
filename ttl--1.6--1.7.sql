/* ttl--1.6--1.7.sql: 1.6 -> 1.7, security round 2 (issue 25) and rule 10 (issue 26). */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.7'" to load this file. \quit

-- Every function below that runs SQL pins search_path = pg_catalog, pg_temp
-- and names its operators schema-qualified: see docs/security.md.

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


-- ---------------------------------------------------------------------------
-- section: rule 10, an expired item is gone for writes too (issue 26)
-- ---------------------------------------------------------------------------

