/* ttl--1.5--1.6.sql: 1.5 -> 1.6, append-only containers without an index (issue 15, item 3). */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.6'" to load this file. \quit

-- ttl's tables are locked in one order, ttl.registry first: the purge
-- takes it before any other table of ttl's, so an update that alters them
-- never deadlocks with a purge (src/registry/registry.c).
LOCK TABLE ttl.registry IN ACCESS EXCLUSIVE MODE;

-- Every function below that runs SQL pins search_path = pg_catalog, pg_temp
-- and names its operators schema-qualified: see README, "Security model".

-- ---------------------------------------------------------------------------
-- section: append-only containers without a purge index
-- ---------------------------------------------------------------------------
-- An append-only container may drop its purge index altogether
-- (purge_index 'none'): a write then costs the stamp trigger and nothing
-- else, and the purge sweeps every page of the table, re-checking each row
-- (src/purge_walk.c), so its cost follows the table, not the due rows.
-- The registry records the choice: a container without a purge index by
-- choice is not one whose index went missing.

ALTER TABLE ttl.registry ADD COLUMN index_free boolean NOT NULL DEFAULT false;
ALTER TABLE ttl.registry ADD CONSTRAINT registry_index_free_check
    CHECK (append_only OR NOT index_free);

CREATE OR REPLACE VIEW ttl.containers AS
SELECT r.relid        AS container,
       r.doc_column,
       r.default_ttl,
       r.live_view,
       r.paused,
       r.enabled_at,
       r.append_only,
       r.deadline_property,
       CASE WHEN NOT r.append_only THEN 'btree'
            WHEN r.index_free THEN 'none'
            ELSE 'brin' END::pg_catalog.text AS purge_index
  FROM ttl.registry r;
COMMENT ON VIEW ttl.containers IS 'one row per ttl container';

-- The C half: checks owner, registration and values, then records the mode
-- under the purge lock (never in the middle of a batch).
CREATE FUNCTION ttl._set_append_only(container regclass, append_only boolean, purge_index text) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_set_append_only'
    LANGUAGE C;

-- purge_index: 'btree' (the default mode; append_only must be false),
-- 'brin' (append-only, BRIN purge index) or 'none' (append-only, no index:
-- the purge sweeps the table).  The new index, if any, is built before the
-- old one goes (CREATE INDEX: writes wait for the build).
CREATE FUNCTION ttl.set_append_only(container regclass, append_only boolean, purge_index text) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel      pg_catalog.pg_class;
    nsp      name;
    doc      name;
    was      text;
    idx_name text;
    idx      regclass;
BEGIN
    IF container IS NULL THEN
        RAISE EXCEPTION 'container must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT CASE WHEN NOT r.append_only THEN 'btree' WHEN r.index_free THEN 'none' ELSE 'brin' END,
           r.doc_column INTO was, doc FROM ttl.registry r
     WHERE r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    -- checks owner, registration and the values; holds the purge lock
    PERFORM ttl._set_append_only(container, append_only, purge_index);
    IF was OPERATOR(pg_catalog.=) purge_index THEN
        RETURN;
    END IF;
    SELECT * INTO rel FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    nsp := rel.relnamespace::pg_catalog.regnamespace::name;
    idx_name := ttl._purge_index_name(rel.relname, purge_index OPERATOR(pg_catalog.=) 'brin');
    IF purge_index OPERATOR(pg_catalog.=) 'brin' THEN
        EXECUTE pg_catalog.format('CREATE INDEX %I ON %s USING brin ((ttl.doc_purge_key(%I)) pg_catalog.int8_minmax_multi_ops)'
                                  ' WITH (autosummarize = on)', idx_name, container, doc);
    ELSIF purge_index OPERATOR(pg_catalog.=) 'btree' THEN
        EXECUTE pg_catalog.format('CREATE INDEX %I ON %s ((ttl.doc_purge_key(%I)))', idx_name, container, doc);
    END IF;
    -- the old purge indexes go (after the new one is there; it has no comment yet)
    FOR idx IN SELECT i.indexrelid FROM pg_catalog.pg_index i
                WHERE i.indrelid OPERATOR(pg_catalog.=) container::pg_catalog.oid
                  AND pg_catalog.obj_description(i.indexrelid, 'pg_class') OPERATOR(pg_catalog.=) 'ttl purge index'
    LOOP
        EXECUTE pg_catalog.format('DROP INDEX %s', idx);
    END LOOP;
    IF purge_index OPERATOR(pg_catalog.<>) 'none' THEN
        EXECUTE pg_catalog.format('COMMENT ON INDEX %I.%I IS %L', nsp, idx_name, 'ttl purge index');
    END IF;
END
$$;
COMMENT ON FUNCTION ttl.set_append_only(regclass, boolean, text) IS 'the purge index of a container: btree (default mode), brin (append-only) or none (append-only; the purge sweeps the table)';

-- The two-argument form of 1.3 keeps its meaning: true = BRIN, false = btree.
CREATE OR REPLACE FUNCTION ttl.set_append_only(container regclass, append_only boolean) RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ttl.set_append_only(container, append_only,
                               CASE WHEN append_only THEN 'brin' WHEN NOT append_only THEN 'btree' END)
$$;
COMMENT ON FUNCTION ttl.set_append_only(regclass, boolean) IS 'append-only mode (true): purge through a BRIN index instead of a btree, for logs whose rows are written once; false: the default btree (the three-argument form also offers no index)';

-- (end of section: append-only containers without a purge index)
