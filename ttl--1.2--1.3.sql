/* ttl--1.2--1.3.sql: 1.2 -> 1.3, the write path (issue 15). */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.3'" to load this file. \quit

-- ttl's tables are locked in one order, ttl.registry first: the purge
-- takes it before any other table of ttl's, so an update that alters them
-- never deadlocks with a purge (src/registry/registry.c).
LOCK TABLE ttl.registry IN ACCESS EXCLUSIVE MODE;

-- Every function below that runs SQL pins search_path = pg_catalog, pg_temp
-- and names its operators schema-qualified: see README, "Security model".

-- ---------------------------------------------------------------------------
-- section: one purge index per container (issue 15, item 2)
-- ---------------------------------------------------------------------------

-- The key of the single purge index: items inheriting the default ordered
-- by _ts, items with a positive own ttl by _ts + ttl, in two disjoint ranges
-- of one bigint (src/purge_key.c).  One expression and one index entry per
-- row, where 1.0-1.2 evaluated two partial-index predicates and two
-- expressions.
CREATE FUNCTION ttl.doc_purge_key(doc jsonb) RETURNS bigint
    AS 'MODULE_PATHNAME', 'ttl_doc_purge_key_sql'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ttl.doc_purge_key(jsonb) IS 'the key of a container''s purge index: _ts (inheriting items) or _ts + ttl (own ttl) in disjoint ranges, NULL when the item never expires by itself';

-- The name of the purge index of a table: at most 48 bytes of its name
-- (cut between characters) and _ttl_purge_idx (_ttl_brin_idx for the BRIN
-- index of an append-only container).
CREATE FUNCTION ttl._purge_index_name(relname name, brin boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n text := relname;
BEGIN
    WHILE pg_catalog.octet_length(n) OPERATOR(pg_catalog.>) 48 LOOP
        n := pg_catalog.left(n, -1);
    END LOOP;
    RETURN n OPERATOR(pg_catalog.||) CASE WHEN brin THEN '_ttl_brin_idx' ELSE '_ttl_purge_idx' END;
END
$$;

CREATE OR REPLACE FUNCTION ttl.enable(container regclass, default_ttl integer, doc_column name DEFAULT 'doc')
RETURNS regclass
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel       pg_catalog.pg_class;
    nsp       name;
    view_name text;
    idx_name  text;
    opts      text := 'security_barrier';
    v         regclass;
BEGIN
    -- checks and the registry row; raises before anything is created
    PERFORM ttl._register(container, default_ttl, doc_column);

    SELECT * INTO rel FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    nsp := rel.relnamespace::pg_catalog.regnamespace::name;
    view_name := rel.relname::text OPERATOR(pg_catalog.||) '_live';
    idx_name := ttl._purge_index_name(rel.relname);
    IF pg_catalog.octet_length(view_name) OPERATOR(pg_catalog.>) 63 THEN
        RAISE EXCEPTION 'view name "%" for container % is too long', view_name, container
            USING ERRCODE = 'name_too_long',
                  HINT = 'Rename the table to at most 58 bytes.';
    END IF;
    IF pg_catalog.to_regclass(pg_catalog.format('%I.%I', nsp, view_name)) IS NOT NULL THEN
        RAISE EXCEPTION 'relation "%.%" already exists', nsp, view_name
            USING ERRCODE = 'duplicate_table',
                  DETAIL = pg_catalog.format('ttl.enable creates the view %I.%I for container %s.', nsp, view_name, container);
    END IF;

    -- existing documents must be valid before the trigger guards new ones
    PERFORM ttl._existing_rows(container, doc_column, false);
    EXECUTE pg_catalog.format('CREATE TRIGGER zzz_ttl_stamp BEFORE INSERT OR UPDATE ON %s'
                              ' FOR EACH ROW EXECUTE FUNCTION ttl.stamp(%L)', container, doc_column);
    -- rows without _ts get a full lifetime from now, never a mass expiry
    PERFORM ttl._existing_rows(container, doc_column, true);
    -- the purge index; the comment marks it as ours for ttl.disable (index
    -- OIDs cannot live in the registry: a restore creates indexes after data)
    EXECUTE pg_catalog.format('CREATE INDEX %I ON %s ((ttl.doc_purge_key(%I)))',
                              idx_name, container, doc_column);
    EXECUTE pg_catalog.format('COMMENT ON INDEX %I.%I IS %L', nsp, idx_name, 'ttl purge index');

    -- while the table has row-level security the view runs as the reader
    -- (ttl._ddl_end keeps it so when RLS is switched later)
    IF rel.relrowsecurity THEN
        opts := opts OPERATOR(pg_catalog.||) ', security_invoker';
    END IF;
    EXECUTE pg_catalog.format('CREATE VIEW %I.%I WITH (%s) AS SELECT * FROM %s WHERE ttl.live(%I, %L::pg_catalog.regclass)',
                              nsp, view_name, opts, container, doc_column, container::pg_catalog.oid::pg_catalog.text);
    EXECUTE pg_catalog.format('ALTER VIEW %I.%I OWNER TO %I', nsp, view_name, rel.relowner::pg_catalog.regrole::name);
    EXECUTE pg_catalog.format('COMMENT ON VIEW %I.%I IS %L', nsp, view_name,
                              pg_catalog.format('live (unexpired) items of ttl container %s', container));
    v := pg_catalog.format('%I.%I', nsp, view_name)::pg_catalog.regclass;
    PERFORM ttl._set_objects(container, v);
    RETURN v;
END
$$;

-- Containers enabled before 1.3 keep their two partial purge indexes (purge
-- and the backlog use them as before): the update builds nothing, so it
-- never holds a big table's writes.  This gives the statements that move
-- one container to the single index without blocking its writes for long,
-- to run outside a transaction block (psql: SELECT ... \gexec):
--   plain table: CREATE INDEX CONCURRENTLY, COMMENT, DROP INDEX CONCURRENTLY
--   partitioned: CREATE INDEX ON ONLY each partitioned table, CREATE INDEX
--     CONCURRENTLY on each leaf, ATTACH PARTITION, COMMENT, then DROP INDEX
--     of the old partitioned indexes (a short ACCESS EXCLUSIVE lock: a
--     partitioned index cannot be dropped concurrently).
-- Purge uses the new index as soon as it is valid and marked, the old ones
-- until then.  No rows: the container has the single index already.
CREATE FUNCTION ttl.upgrade_purge_index_sql(container regclass) RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    doc      name;
    root     pg_catalog.pg_class;
    part     record;
    idx      record;
    key      text;
    has_key  boolean;
BEGIN
    SELECT r.doc_column INTO doc FROM ttl.registry r
     WHERE r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table % is not a ttl container', container
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Enable it with ttl.enable(); it then gets the single purge index.';
    END IF;
    SELECT * INTO root FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    key := pg_catalog.format('((ttl.doc_purge_key(%I)))', doc);
    SELECT pg_catalog.count(*) OPERATOR(pg_catalog.>) 0 INTO has_key
      FROM pg_catalog.pg_index i
     WHERE i.indrelid OPERATOR(pg_catalog.=) root.oid AND i.indisvalid
       AND pg_catalog.obj_description(i.indexrelid, 'pg_class') OPERATOR(pg_catalog.=) 'ttl purge index'
       AND pg_catalog.pg_get_indexdef(i.indexrelid) OPERATOR(pg_catalog.~~) '%ttl.doc_purge_key(%';
    IF has_key THEN
        RETURN;
    END IF;

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
            IF part.isleaf THEN
                RETURN NEXT pg_catalog.format('CREATE INDEX CONCURRENTLY %I ON %I.%I %s',
                                              ttl._purge_index_name(part.relname), part.nsp, part.relname, key);
            ELSE
                RETURN NEXT pg_catalog.format('CREATE INDEX %I ON ONLY %I.%I %s',
                                              ttl._purge_index_name(part.relname), part.nsp, part.relname, key);
            END IF;
            IF part.parentrelid IS NOT NULL THEN
                RETURN NEXT pg_catalog.format('ALTER INDEX %I.%I ATTACH PARTITION %I.%I',
                                              part.parent_nsp, ttl._purge_index_name(part.parent_name),
                                              part.nsp, ttl._purge_index_name(part.relname));
            END IF;
        END LOOP;
    ELSE
        RETURN NEXT pg_catalog.format('CREATE INDEX CONCURRENTLY %I ON %s %s',
                                      ttl._purge_index_name(root.relname), container, key);
    END IF;
    RETURN NEXT pg_catalog.format('COMMENT ON INDEX %I.%I IS %L', root.relnamespace::pg_catalog.regnamespace::name,
                                  ttl._purge_index_name(root.relname), 'ttl purge index');
    FOR idx IN
        SELECT i.indexrelid::pg_catalog.regclass AS name FROM pg_catalog.pg_index i
         WHERE i.indrelid OPERATOR(pg_catalog.=) root.oid
           AND pg_catalog.obj_description(i.indexrelid, 'pg_class') OPERATOR(pg_catalog.=) 'ttl purge index'
           AND pg_catalog.pg_get_indexdef(i.indexrelid) OPERATOR(pg_catalog.!~~) '%ttl.doc_purge_key(%'
         ORDER BY 1
    LOOP
        RETURN NEXT pg_catalog.format(CASE WHEN root.relkind OPERATOR(pg_catalog.=) 'p'
                                           THEN 'DROP INDEX %s' ELSE 'DROP INDEX CONCURRENTLY %s' END,
                                      idx.name);
    END LOOP;
END
$$;
COMMENT ON FUNCTION ttl.upgrade_purge_index_sql(regclass) IS 'statements that move a container enabled before 1.3 to the single purge index without blocking its writes (run them with \gexec, outside a transaction block)';

-- (end of section: one purge index per container)

-- ---------------------------------------------------------------------------
-- section: append-only mode (issue 15, item 3)
-- ---------------------------------------------------------------------------

ALTER TABLE ttl.registry ADD COLUMN append_only boolean NOT NULL DEFAULT false;

CREATE OR REPLACE VIEW ttl.containers AS
SELECT r.relid        AS container,
       r.doc_column,
       r.default_ttl,
       r.live_view,
       r.paused,
       r.enabled_at,
       r.append_only
  FROM ttl.registry r;
COMMENT ON VIEW ttl.containers IS 'one row per ttl container';

CREATE FUNCTION ttl._set_append_only(container regclass, append_only boolean) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_set_append_only'
    LANGUAGE C;

-- Append-only mode: the purge index is a BRIN index (minmax-multi, so the
-- two key ranges of ttl.doc_purge_key stay apart in each page range's
-- summary) instead of the btree.  Writes then cost no btree entry; purge
-- reads every page range whose summary may hold a due key and re-checks
-- each row, so its cost follows the page ranges of due rows, which in a
-- log (rows written once, _ts rising with physical order) are the oldest.
-- The new index is built before the old one goes (CREATE INDEX: writes
-- wait for the build; switch a container while it is small).
CREATE FUNCTION ttl.set_append_only(container regclass, append_only boolean) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel      pg_catalog.pg_class;
    nsp      name;
    doc      name;
    was      boolean;
    idx_name text;
    idx      regclass;
BEGIN
    IF container IS NULL THEN
        RAISE EXCEPTION 'container must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT r.append_only, r.doc_column INTO was, doc FROM ttl.registry r
     WHERE r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    -- checks owner, registration and the value; holds the purge lock
    PERFORM ttl._set_append_only(container, append_only);
    IF was OPERATOR(pg_catalog.=) append_only THEN
        RETURN;
    END IF;
    SELECT * INTO rel FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    nsp := rel.relnamespace::pg_catalog.regnamespace::name;
    idx_name := ttl._purge_index_name(rel.relname, append_only);
    IF append_only THEN
        EXECUTE pg_catalog.format('CREATE INDEX %I ON %s USING brin ((ttl.doc_purge_key(%I)) pg_catalog.int8_minmax_multi_ops)'
                                  ' WITH (autosummarize = on)', idx_name, container, doc);
    ELSE
        EXECUTE pg_catalog.format('CREATE INDEX %I ON %s ((ttl.doc_purge_key(%I)))', idx_name, container, doc);
    END IF;
    -- the old purge indexes go (after the new one is there)
    FOR idx IN SELECT i.indexrelid FROM pg_catalog.pg_index i
                WHERE i.indrelid OPERATOR(pg_catalog.=) container::pg_catalog.oid
                  AND pg_catalog.obj_description(i.indexrelid, 'pg_class') OPERATOR(pg_catalog.=) 'ttl purge index'
    LOOP
        EXECUTE pg_catalog.format('DROP INDEX %s', idx);
    END LOOP;
    EXECUTE pg_catalog.format('COMMENT ON INDEX %I.%I IS %L', nsp, idx_name, 'ttl purge index');
END
$$;
COMMENT ON FUNCTION ttl.set_append_only(regclass, boolean) IS 'append-only mode (true): purge through a BRIN index instead of a btree, for logs whose rows are written once; false: the default btree';

-- (end of section: append-only mode)
