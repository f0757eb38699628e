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

-- rule 10 is exact: no BEFORE ROW trigger of a container fires after ttl's
-- stamp trigger (it could change a row after rule 10 judged its keys):
-- ttl._ddl_end refuses one at CREATE TRIGGER, ALTER TRIGGER ... RENAME (and
-- at ALTER TABLE ... ATTACH PARTITION, which it already sees), and so at
-- ttl.enable, whose CREATE TRIGGER fires it too.
CREATE EVENT TRIGGER ttl_trigger_ddl_end ON ddl_command_end
    WHEN TAG IN ('CREATE TRIGGER', 'ALTER TRIGGER') EXECUTE FUNCTION ttl._ddl_end();

-- ---------------------------------------------------------------------------
-- section: retiring whole partitions
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- section: what an operator sees (progress, windows, marking, metrics)
-- ---------------------------------------------------------------------------
