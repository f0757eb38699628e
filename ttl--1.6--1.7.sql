/* ttl--1.6--1.7.sql: 1.6 -> 1.7, security round 2 (issue 25) and rule 10 (issue 26). */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.7'" to load this file. \quit

-- Every function below that runs SQL pins search_path = pg_catalog, pg_temp
-- and names its operators schema-qualified: see docs/security.md.

-- ---------------------------------------------------------------------------
-- section: one gate for a user table's definitions; internal functions
-- revoked from PUBLIC (issue 25, item 1)
-- ---------------------------------------------------------------------------

-- Internal functions that no role's own SQL reaches: only tests, the
-- benchmark, an older upgrade script (all as a superuser) or nobody at all
-- call them.  Every other ttl._* function stays callable because a public
-- function calls it with the caller's rights (ttl.enable, ttl.disable,
-- ttl.set_append_only, ttl.set_deadline_property, ttl.deadline_index_sql,
-- the views ttl.stats and ttl.distributed_stats, ttl.purge on the Citus
-- nodes): those check ownership (or SELECT) first, or only compute a name
-- or read Citus's metadata.  sql/internal_privileges.sql holds the
-- classification of every one of them.
--   _validate:           1.0's ttl.enable only (it opened any relation by OID)
--   _purge_statement:    tests and bench/run, for EXPLAIN (it reads the
--                        table's index definitions)
--   _purge_plan_options: tests and bench/run, for EXPLAIN
--   _follow_table:       the 1.0 -> 1.1 upgrade script (ALTER EXTENSION)
--   _citus_sync_policy:  nothing (C calls ttl_citus_sync_policy directly)
REVOKE EXECUTE ON FUNCTION ttl._validate(regclass, jsonb, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION ttl._purge_statement(regclass, boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION ttl._purge_plan_options() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION ttl._follow_table(regclass) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION ttl._citus_sync_policy(regclass) FROM PUBLIC;

-- ttl.deadline_index_sql: the table's owner (or a member of the owning
-- role, or a superuser) only, 42501 for anyone else, as for every other
-- function that acts on a container.  The rest is 1.5's body unchanged.
CREATE OR REPLACE FUNCTION ttl.deadline_index_sql(container regclass, property text) RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    doc      name;
    root     pg_catalog.pg_class;
    part     record;
    key      text;
    alt      boolean;
BEGIN
    SELECT * INTO root FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation with OID % does not exist', container::pg_catalog.oid
            USING ERRCODE = 'undefined_table';
    END IF;
    IF NOT pg_catalog.pg_has_role(root.relowner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', root.relname
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = pg_catalog.format('Only the owner of table %s (or a member of its role) may build its deadline index.', container);
    END IF;
    SELECT r.doc_column INTO doc FROM ttl.registry r
     WHERE r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table % is not a ttl container', container
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Enable it with ttl.enable(..., deadline_property => ...).';
    END IF;
    IF EXISTS (SELECT FROM ttl.registry r
                WHERE r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid
                  AND r.deadline_property OPERATOR(pg_catalog.=) property)
       AND EXISTS (SELECT FROM pg_catalog.pg_index i
                    WHERE i.indrelid OPERATOR(pg_catalog.=) root.oid
                      AND ttl._is_deadline_index(i.indexrelid, container)) THEN
        RETURN;
    END IF;
    -- the first names are taken (the index of the present property, say):
    -- the alternative ones, which set_deadline_property keeps as well
    SELECT pg_catalog.bool_or(pg_catalog.to_regclass(pg_catalog.format('%I.%I',
               c.relnamespace::pg_catalog.regnamespace::name, ttl._deadline_index_name(c.relname))) IS NOT NULL)
      INTO alt
      FROM pg_catalog.pg_class c
     WHERE c.oid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT t.relid::pg_catalog.oid
                                                     FROM pg_catalog.pg_partition_tree(container) t))
        OR c.oid OPERATOR(pg_catalog.=) root.oid;
    alt := coalesce(alt, false);
    key := pg_catalog.format('((ttl.doc_deadline_key(%1$I, %2$L::pg_catalog.text)))'
                             ' WHERE ttl.doc_deadline_key(%1$I, %2$L::pg_catalog.text) IS NOT NULL',
                             doc, property);
    IF root.relkind OPERATOR(pg_catalog.=) 'p' THEN
        -- parents before children: each index is attached to its parent's
        FOR part IN
            SELECT t.relid, t.parentrelid, t.isleaf, t.level, c.relname,
                   c.relnamespace::pg_catalog.regnamespace::name AS nsp,
                   pc.relname AS parent_name, pc.relnamespace::pg_catalog.regnamespace::name AS parent_nsp
              FROM pg_catalog.pg_partition_tree(container) t
              JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relid::pg_catalog.oid
              LEFT JOIN pg_catalog.pg_class pc ON pc.oid OPERATOR(pg_catalog.=) t.parentrelid::pg_catalog.oid
             WHERE c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['p', 'r']::"char"[])
             ORDER BY t.level, c.relname
        LOOP
            RETURN NEXT pg_catalog.format(CASE WHEN part.isleaf THEN 'CREATE INDEX CONCURRENTLY %I ON %I.%I %s'
                                               ELSE 'CREATE INDEX %I ON ONLY %I.%I %s' END,
                                          ttl._deadline_index_name(part.relname, alt), part.nsp, part.relname, key);
            IF part.parentrelid IS NOT NULL THEN
                RETURN NEXT pg_catalog.format('ALTER INDEX %I.%I ATTACH PARTITION %I.%I',
                                              part.parent_nsp, ttl._deadline_index_name(part.parent_name, alt),
                                              part.nsp, ttl._deadline_index_name(part.relname, alt));
            END IF;
        END LOOP;
    ELSE
        RETURN NEXT pg_catalog.format('CREATE INDEX CONCURRENTLY %I ON %s %s',
                                      ttl._deadline_index_name(root.relname, alt), container, key);
    END IF;
    RETURN NEXT pg_catalog.format('COMMENT ON INDEX %I.%I IS %L', root.relnamespace::pg_catalog.regnamespace::name,
                                  ttl._deadline_index_name(root.relname, alt), 'ttl deadline index');
END
$$;


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

