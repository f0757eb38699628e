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

-- Failing rows (issue 38, item 4).  A purge batch that fails on a row is
-- split until the failing rows are isolated (src/purge/purge_split.c); each
-- one is left in place and recorded here, and purges and rule 10 leave it
-- out until retry_after (now + ttl.naptime x 2^attempts, at most an hour).
-- A row is named by its place (the leaf and the ctid of the version that
-- failed), which is what a batch sees first, and that version's xmin (which
-- tells it from a row put at the same place after a TRUNCATE or a VACUUM);
-- key is what a reader is shown:
-- the primary key as text, or "leaf (block,offset)" for a container without
-- one.  Runtime state, not configuration: places change with a dump and
-- restore, so the table is not dumped (no pg_extension_config_dump).
-- Written as the extension's owner only (C); nobody reads it directly.
CREATE TABLE ttl.purge_failure (
    relid           oid NOT NULL,
    leaf            oid NOT NULL,
    tid             tid NOT NULL,
    row_xmin        xid NOT NULL,
    key             text,
    sqlstate        text NOT NULL,
    message         text NOT NULL,
    first_failed_at timestamptz NOT NULL,
    attempts        integer NOT NULL,
    retry_after     timestamptz NOT NULL,
    PRIMARY KEY (relid, leaf, tid)
);
COMMENT ON TABLE ttl.purge_failure IS
    'rows a purge isolated as failing (runtime state, not dumped); read ttl.purge_failures';
REVOKE ALL ON ttl.purge_failure FROM PUBLIC;

-- key and message can carry row data: shown, like ttl.stats.last_error,
-- only to a reader who may SELECT the table and whom row-level security does
-- not restrict (the reader's own privileges: a view's functions run as the
-- current user).  Containers disabled since are left out.
CREATE VIEW ttl.purge_failures AS
SELECT f.relid::pg_catalog.regclass AS container,
       CASE WHEN pg_catalog.has_table_privilege(c.oid, 'SELECT')
             AND NOT pg_catalog.row_security_active(c.oid)
            THEN f.key END          AS key,
       f.sqlstate,
       CASE WHEN pg_catalog.has_table_privilege(c.oid, 'SELECT')
             AND NOT pg_catalog.row_security_active(c.oid)
            THEN f.message END      AS message,
       f.first_failed_at,
       f.attempts,
       f.retry_after
  FROM ttl.purge_failure f
  JOIN ttl.registry r ON r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) f.relid
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) f.relid;
COMMENT ON VIEW ttl.purge_failures IS
    'rows a purge isolated as failing, left in place and retried after retry_after; key and message only for readers who may SELECT every row of the table';
GRANT SELECT ON ttl.purge_failures TO PUBLIC;

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
