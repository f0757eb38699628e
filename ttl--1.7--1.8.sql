/* ttl--1.7--1.8.sql: 1.7 -> 1.8, the purge pipeline and index ownership
 * (issue 28), rule 10's cost (issue 26), archives (issue 31) and legal
 * holds (issue 32). */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.8'" to load this file. \quit

-- ttl's tables are locked in one order, ttl.registry first: the purge
-- takes it before any other table of ttl's, so an update that alters them
-- never deadlocks with a purge (src/registry/registry.c).
LOCK TABLE ttl.registry IN ACCESS EXCLUSIVE MODE;

-- Every function below that runs SQL pins search_path = pg_catalog, pg_temp
-- and names its operators schema-qualified: see docs/security.md.

-- ---------------------------------------------------------------------------
-- section: purge and deadline indexes owned by the registry (issue 28)
-- ---------------------------------------------------------------------------
-- Which indexes ttl made is recorded in ttl.indexes, dumped with the
-- registry (pg_extension_config_dump), not in their COMMENT: pg_dump
-- --no-comments dropped that mark, and with it the purge's direct path,
-- and ttl.disable, ttl.set_append_only and ttl.set_deadline_property lost
-- sight of the indexes.  The key is the container and the index's name (an
-- index lives in its table's schema): index OIDs change on a restore, which
-- loads this table before it creates any index.  The library recognises a
-- purge or deadline index by its shape alone (any index of that shape
-- serves); this record only says which of them ttl.disable and the
-- functions that replace an index may drop: never a user's index of the
-- same shape.  Renames of the index follow (ttl._ddl_start, now also on
-- ALTER INDEX), DROP INDEX / DROP TABLE forget it (ttl._on_sql_drop); the
-- comments are still written, for people.  See registry/index_owner.c.
CREATE TABLE ttl.indexes (
    relid      regclass NOT NULL,
    index_name name NOT NULL,
    purpose    text NOT NULL CHECK (purpose IN ('purge', 'deadline')),
    PRIMARY KEY (relid, index_name)
);
COMMENT ON TABLE ttl.indexes IS 'the purge and deadline indexes ttl made, which ttl.disable drops; change it only through the ttl.* functions';
SELECT pg_catalog.pg_extension_config_dump('ttl.indexes', '');
REVOKE ALL ON ttl.indexes FROM PUBLIC;
GRANT SELECT ON ttl.indexes TO PUBLIC;

-- the indexes ttl made before 1.8, known by their comment until now
INSERT INTO ttl.indexes (relid, index_name, purpose)
SELECT r.relid, c.relname,
       CASE pg_catalog.obj_description(i.indexrelid, 'pg_class')
            WHEN 'ttl purge index' THEN 'purge' ELSE 'deadline' END
  FROM ttl.registry r
  JOIN pg_catalog.pg_index i ON i.indrelid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid
 WHERE pg_catalog.obj_description(i.indexrelid, 'pg_class') OPERATOR(pg_catalog.=)
       ANY (ARRAY['ttl purge index', 'ttl deadline index'])
ON CONFLICT DO NOTHING;

CREATE FUNCTION ttl._own_index(index regclass, purpose text) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_own_index'
    LANGUAGE C STRICT;
COMMENT ON FUNCTION ttl._own_index(regclass, text) IS 'record a purge or deadline index of a container as made by ttl (owner only)';

CREATE FUNCTION ttl._purge_index_kind(index regclass, container regclass) RETURNS text
    AS 'MODULE_PATHNAME', 'ttl_purge_index_kind_sql'
    LANGUAGE C STABLE STRICT;

-- The indexes of a container that ttl made (of one purpose, or all), as
-- they are now: a recorded name that is no index of the table is skipped.
CREATE FUNCTION ttl._owned_indexes(container regclass, of_purpose text) RETURNS SETOF regclass
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_class c
                    WHERE c.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid) THEN
        RAISE EXCEPTION 'relation with OID % does not exist', container::pg_catalog.oid
            USING ERRCODE = 'undefined_table';
    END IF;
    RETURN QUERY
    SELECT ic.oid::pg_catalog.regclass
      FROM ttl.indexes o
      JOIN pg_catalog.pg_class t ON t.oid OPERATOR(pg_catalog.=) o.relid::pg_catalog.oid
      JOIN pg_catalog.pg_class ic ON ic.relnamespace OPERATOR(pg_catalog.=) t.relnamespace
                                 AND ic.relname OPERATOR(pg_catalog.=) o.index_name
      JOIN pg_catalog.pg_index i ON i.indexrelid OPERATOR(pg_catalog.=) ic.oid
                                AND i.indrelid OPERATOR(pg_catalog.=) t.oid
     WHERE o.relid::pg_catalog.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid
       AND (of_purpose IS NULL OR o.purpose OPERATOR(pg_catalog.=) of_purpose)
     ORDER BY ic.relname;
END
$$;

-- a rename of an index by ALTER INDEX reaches ttl._ddl_start too
CREATE EVENT TRIGGER ttl_index_ddl_start ON ddl_command_start
    WHEN TAG IN ('ALTER INDEX') EXECUTE FUNCTION ttl._ddl_start();

-- dropped objects forget their indexes' records too: ttl._on_sql_drop, one
-- function for all of 1.8's records, is replaced at the end of this script.

-- The functions that make, replace or drop ttl's indexes keep the record:
-- ttl.enable, ttl.set_append_only and ttl.set_deadline_property record the
-- index they make; they and ttl.disable drop only recorded ones; the
-- statements of ttl.upgrade_purge_index_sql and ttl.deadline_index_sql end
-- by recording the index they build.  None of them reads a comment.
CREATE OR REPLACE FUNCTION ttl.enable(container regclass, default_ttl integer, doc_column name DEFAULT 'doc',
                                      deadline_property text DEFAULT NULL)
RETURNS regclass
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET citus.enable_unsafe_triggers = on
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
    SELECT n.nspname INTO nsp FROM pg_catalog.pg_namespace n WHERE n.oid OPERATOR(pg_catalog.=) rel.relnamespace;
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
    -- the purge index, recorded as ttl's in ttl.indexes (for ttl.disable);
    -- the comment only informs
    EXECUTE pg_catalog.format('CREATE INDEX %I ON %s ((ttl.doc_purge_key(%I)))',
                              idx_name, container, doc_column);
    EXECUTE pg_catalog.format('COMMENT ON INDEX %I.%I IS %L', nsp, idx_name, 'ttl purge index');
    PERFORM ttl._own_index(pg_catalog.format('%I.%I', nsp, idx_name)::pg_catalog.regclass, 'purge');

    -- while the table has row-level security the view runs as the reader
    -- (ttl._ddl_end keeps it so when RLS is switched later)
    IF rel.relrowsecurity THEN
        opts := opts OPERATOR(pg_catalog.||) ', security_invoker';
    END IF;
    EXECUTE pg_catalog.format('CREATE VIEW %I.%I WITH (%s) AS SELECT * FROM %s WHERE ttl.live(%I, %L::pg_catalog.regclass)',
                              nsp, view_name, opts, container, doc_column, container::pg_catalog.oid::pg_catalog.text);
    EXECUTE pg_catalog.format('ALTER VIEW %I.%I OWNER TO %I', nsp, view_name, pg_catalog.pg_get_userbyid(rel.relowner));
    EXECUTE pg_catalog.format('COMMENT ON VIEW %I.%I IS %L', nsp, view_name,
                              pg_catalog.format('live (unexpired) items of ttl container %s', container));
    v := pg_catalog.format('%I.%I', nsp, view_name)::pg_catalog.regclass;
    PERFORM ttl._set_objects(container, v);
    -- rule 9: the deadline property, its trigger argument and its index
    IF deadline_property IS NOT NULL THEN
        PERFORM ttl.set_deadline_property(container, deadline_property);
    END IF;
    RETURN v;
END
$$;

CREATE OR REPLACE FUNCTION ttl.disable(container regclass) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    view_oid regclass;
    idx      regclass;
    owned    regclass[];
BEGIN
    IF container IS NULL THEN
        RAISE EXCEPTION 'container must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT r.live_view INTO view_oid FROM ttl.registry r
     WHERE r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    -- the purge and deadline indexes ttl made, read before their record goes
    owned := ARRAY(SELECT o.o FROM ttl._owned_indexes(container, NULL) o(o));
    PERFORM ttl._unregister(container);     -- checks owner and registration
    EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS zzz_ttl_stamp ON %s', container);
    IF view_oid IS NOT NULL THEN
        EXECUTE pg_catalog.format('DROP VIEW IF EXISTS %s', view_oid);
    END IF;
    FOREACH idx IN ARRAY owned
    LOOP
        EXECUTE pg_catalog.format('DROP INDEX %s', idx);
    END LOOP;
END
$$;
ALTER FUNCTION ttl.disable(regclass) SET citus.enable_unsafe_triggers = on;
ALTER FUNCTION ttl.disable(regclass) SET citus.multi_shard_modify_mode = 'sequential';

CREATE OR REPLACE FUNCTION ttl.set_append_only(container regclass, append_only boolean, purge_index text) RETURNS void
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
    SELECT n.nspname INTO nsp FROM pg_catalog.pg_namespace n WHERE n.oid OPERATOR(pg_catalog.=) rel.relnamespace;
    idx_name := ttl._purge_index_name(rel.relname, purge_index OPERATOR(pg_catalog.=) 'brin');
    IF purge_index OPERATOR(pg_catalog.=) 'brin' THEN
        EXECUTE pg_catalog.format('CREATE INDEX %I ON %s USING brin ((ttl.doc_purge_key(%I)) pg_catalog.int8_minmax_multi_ops)'
                                  ' WITH (autosummarize = on)', idx_name, container, doc);
    ELSIF purge_index OPERATOR(pg_catalog.=) 'btree' THEN
        EXECUTE pg_catalog.format('CREATE INDEX %I ON %s ((ttl.doc_purge_key(%I)))', idx_name, container, doc);
    END IF;
    -- the old purge indexes ttl made go (after the new one is there; it is
    -- not recorded yet, but a stale record of its name must not drop it),
    -- never a user's index of the same shape
    FOR idx IN SELECT o.o FROM ttl._owned_indexes(container, 'purge') o(o)
                WHERE purge_index OPERATOR(pg_catalog.=) 'none'
                   OR o.o::pg_catalog.oid OPERATOR(pg_catalog.<>)
                      pg_catalog.to_regclass(pg_catalog.format('%I.%I', nsp, idx_name))::pg_catalog.oid
    LOOP
        EXECUTE pg_catalog.format('DROP INDEX %s', idx);
    END LOOP;
    IF purge_index OPERATOR(pg_catalog.<>) 'none' THEN
        EXECUTE pg_catalog.format('COMMENT ON INDEX %I.%I IS %L', nsp, idx_name, 'ttl purge index');
        PERFORM ttl._own_index(pg_catalog.format('%I.%I', nsp, idx_name)::pg_catalog.regclass, 'purge');
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION ttl.set_deadline_property(container regclass, property text) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET citus.enable_unsafe_triggers = on
AS $$
DECLARE
    rel      pg_catalog.pg_class;
    nsp      name;
    doc      name;
    idx      regclass;
    idx_name text;
BEGIN
    -- checks owner, registration and the name; registry and trigger
    PERFORM ttl._set_deadline_property(container, property);
    SELECT r.doc_column INTO doc FROM ttl.registry r
     WHERE r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    SELECT * INTO rel FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    SELECT n.nspname INTO nsp FROM pg_catalog.pg_namespace n WHERE n.oid OPERATOR(pg_catalog.=) rel.relnamespace;
    -- deadline indexes ttl made for another property (or for none) go
    FOR idx IN SELECT o.o FROM ttl._owned_indexes(container, 'deadline') o(o)
                WHERE NOT ttl._is_deadline_index(o.o, container)
    LOOP
        EXECUTE pg_catalog.format('DROP INDEX %s', idx);
    END LOOP;
    IF property IS NOT NULL AND NOT EXISTS (
           SELECT FROM pg_catalog.pg_index i
            WHERE i.indrelid OPERATOR(pg_catalog.=) container::pg_catalog.oid
              AND ttl._is_deadline_index(i.indexrelid, container)) THEN
        idx_name := ttl._deadline_index_name(rel.relname);
        EXECUTE pg_catalog.format('CREATE INDEX %I ON %s ((ttl.doc_deadline_key(%I, %L::pg_catalog.text)))'
                                  ' WHERE ttl.doc_deadline_key(%I, %L::pg_catalog.text) IS NOT NULL',
                                  idx_name, container, doc, property, doc, property);
        EXECUTE pg_catalog.format('COMMENT ON INDEX %I.%I IS %L', nsp, idx_name,
                                  'ttl deadline index');
        PERFORM ttl._own_index(pg_catalog.format('%I.%I', nsp, idx_name)::pg_catalog.regclass, 'deadline');
    END IF;
    -- stored items: the first malformed one fails the call (all rolls back)
    PERFORM ttl._check_deadlines(container);
END
$$;

CREATE OR REPLACE FUNCTION ttl.deadline_index_sql(container regclass, property text) RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    doc      name;
    root     pg_catalog.pg_class;
    nsp      name;
    part     record;
    key      text;
    alt      boolean;
BEGIN
    SELECT * INTO root FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation with OID % does not exist', container::pg_catalog.oid
            USING ERRCODE = 'undefined_table';
    END IF;
    -- the owner only (issue 25, item 1)
    IF NOT pg_catalog.pg_has_role(root.relowner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', root.relname
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = pg_catalog.format('Only the owner of table %s (or a member of its role) may build its deadline index.', container);
    END IF;
    SELECT n.nspname INTO nsp FROM pg_catalog.pg_namespace n WHERE n.oid OPERATOR(pg_catalog.=) root.relnamespace;
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
               n.nspname, ttl._deadline_index_name(c.relname))) IS NOT NULL)
      INTO alt
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
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
            SELECT t.relid, t.parentrelid, t.isleaf, t.level, c.relname, n.nspname AS nsp,
                   pc.relname AS parent_name, pn.nspname AS parent_nsp
              FROM pg_catalog.pg_partition_tree(container) t
              JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relid::pg_catalog.oid
              JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
              LEFT JOIN pg_catalog.pg_class pc ON pc.oid OPERATOR(pg_catalog.=) t.parentrelid::pg_catalog.oid
              LEFT JOIN pg_catalog.pg_namespace pn ON pn.oid OPERATOR(pg_catalog.=) pc.relnamespace
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
    RETURN NEXT pg_catalog.format('COMMENT ON INDEX %I.%I IS %L', nsp,
                                  ttl._deadline_index_name(root.relname, alt), 'ttl deadline index');
    -- recorded as ttl's: set_deadline_property and ttl.disable drop it
    RETURN NEXT pg_catalog.format('SELECT ttl._own_index(%L::pg_catalog.regclass, %L)',
                                  pg_catalog.format('%I.%I', nsp, ttl._deadline_index_name(root.relname, alt)),
                                  'deadline');
END
$$;

CREATE OR REPLACE FUNCTION ttl.upgrade_purge_index_sql(container regclass) RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    doc      name;
    root     pg_catalog.pg_class;
    nsp      name;
    part     record;
    idx      record;
    key      text;
    has_key  boolean;
BEGIN
    SELECT * INTO root FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation with OID % does not exist', container::pg_catalog.oid
            USING ERRCODE = 'undefined_table';
    END IF;
    SELECT n.nspname INTO nsp FROM pg_catalog.pg_namespace n WHERE n.oid OPERATOR(pg_catalog.=) root.relnamespace;
    SELECT r.doc_column INTO doc FROM ttl.registry r
     WHERE r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table % is not a ttl container', container
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Enable it with ttl.enable(); it then gets the single purge index.';
    END IF;
    key := pg_catalog.format('((ttl.doc_purge_key(%I)))', doc);
    -- any valid index of the single purge index's shape serves (whoever made it)
    SELECT pg_catalog.count(*) OPERATOR(pg_catalog.>) 0 INTO has_key
      FROM pg_catalog.pg_index i
     WHERE i.indrelid OPERATOR(pg_catalog.=) root.oid
       AND ttl._purge_index_kind(i.indexrelid, container) OPERATOR(pg_catalog.=) ANY (ARRAY['btree', 'brin']);
    IF has_key THEN
        RETURN;
    END IF;

    IF root.relkind OPERATOR(pg_catalog.=) 'p' THEN
        -- parents before children: each index is attached to its parent's
        FOR part IN
            SELECT t.relid, t.parentrelid, t.isleaf, t.level, c.relname, n.nspname AS nsp,
                   pc.relname AS parent_name, pn.nspname AS parent_nsp
              FROM pg_catalog.pg_partition_tree(container) t
              JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.relid::pg_catalog.oid
              JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
              LEFT JOIN pg_catalog.pg_class pc ON pc.oid OPERATOR(pg_catalog.=) t.parentrelid::pg_catalog.oid
              LEFT JOIN pg_catalog.pg_namespace pn ON pn.oid OPERATOR(pg_catalog.=) pc.relnamespace
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
    RETURN NEXT pg_catalog.format('COMMENT ON INDEX %I.%I IS %L', nsp,
                                  ttl._purge_index_name(root.relname), 'ttl purge index');
    -- recorded as ttl's: ttl.disable and set_append_only drop it
    RETURN NEXT pg_catalog.format('SELECT ttl._own_index(%L::pg_catalog.regclass, %L)',
                                  pg_catalog.format('%I.%I', nsp, ttl._purge_index_name(root.relname)),
                                  'purge');
    -- the 1.0-1.2 indexes ttl made go, never a user's
    FOR idx IN
        SELECT o.o AS name FROM ttl._owned_indexes(container, 'purge') o(o)
         WHERE pg_catalog.pg_get_indexdef(o.o) OPERATOR(pg_catalog.!~~) '%ttl.doc_purge_key(%'
         ORDER BY 1
    LOOP
        RETURN NEXT pg_catalog.format(CASE WHEN root.relkind OPERATOR(pg_catalog.=) 'p'
                                           THEN 'DROP INDEX %s' ELSE 'DROP INDEX CONCURRENTLY %s' END,
                                      idx.name);
    END LOOP;
END
$$;

-- (end of section: purge and deadline indexes owned by the registry)

-- ---------------------------------------------------------------------------
-- section: one policy look-up and one purge pipeline (issue 28)
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- section: rule 10's cost (issue 26)
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- section: archive before purge (issue 31)
-- ---------------------------------------------------------------------------

-- Where a container's purge moves its rows before deleting them, in the
-- same statement (C: archive.c, archive_admin.c).  A regclass like relid:
-- pg_dump writes it by name, a restore reads it back by name.  NULL: no
-- archive.  Every purge path of a container with an archive takes the
-- statement path; a purge checks the fit again before each statement.
ALTER TABLE ttl.registry ADD COLUMN archive regclass;

CREATE FUNCTION ttl.set_archive(container regclass, archive regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_set_archive'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.set_archive(regclass, regclass) IS
    'every purge of the container inserts each deleted row into archive in the same transaction; NULL stops archiving';

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
            ELSE 'brin' END::pg_catalog.text AS purge_index,
       r.replace_expired,
       r.archive
  FROM ttl.registry r;
COMMENT ON VIEW ttl.containers IS 'one row per ttl container';

-- ---------------------------------------------------------------------------
-- section: legal holds (issue 32)
-- ---------------------------------------------------------------------------
-- Legal holds: no purge path and no rule 10 write deletes an item whose
-- document contains a standing hold's match (src/registry/legal_hold.c,
-- src/purge/purge_hold.c).  A hold binds ttl only: DELETE and TRUNCATE
-- are not stopped.  The table is keyed by the container as regclass, as
-- ttl.registry is: pg_dump writes a regclass as the table's qualified
-- name and the restore reads it back as the new table's OID, so a hold
-- follows its container through dump/restore (a key by OID would point at
-- nothing, or at another table, after a restore).  Users have no privilege
-- on it: the match can be as sensitive as the documents (a case number),
-- so ttl.legal_holds shows it only to readers who may read the table.
CREATE TABLE ttl.legal_hold (
    container regclass NOT NULL,
    name      text NOT NULL CHECK (name OPERATOR(pg_catalog.<>) ''),
    match     jsonb NOT NULL CHECK (pg_catalog.jsonb_typeof(match) OPERATOR(pg_catalog.=) 'object'),
    held_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    held_by   name NOT NULL,
    PRIMARY KEY (container, name)
);
COMMENT ON TABLE ttl.legal_hold IS 'legal holds; change them only through ttl.set_legal_hold and ttl.release_legal_hold';
SELECT pg_catalog.pg_extension_config_dump('ttl.legal_hold', '');
REVOKE ALL ON ttl.legal_hold FROM PUBLIC;

-- Where each purge key range of a container with holds starts: every due
-- row below is held or gone (src/purge/purge_hold.c).  Not dumped (a
-- restored table's first walks start at the bottom once), reset by every
-- hold change and trusted for a day from "since" (src/registry/legal_hold.c);
-- written only under the container's purge lock.
CREATE TABLE ttl.legal_hold_floor (
    container oid NOT NULL,
    kind      smallint NOT NULL,
    key       bigint NOT NULL,
    since     timestamptz NOT NULL,
    PRIMARY KEY (container, kind)
);
REVOKE ALL ON ttl.legal_hold_floor FROM PUBLIC;

CREATE FUNCTION ttl.set_legal_hold(container regclass, name text, match jsonb) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_set_legal_hold'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.set_legal_hold(regclass, text, jsonb) IS
    'keep every item whose document contains match from every purge and rule 10 replacement until released (binds ttl only, not DELETE or TRUNCATE)';

CREATE FUNCTION ttl.release_legal_hold(container regclass, name text) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_release_legal_hold'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.release_legal_hold(regclass, text) IS
    'end a legal hold: its expired items are purged as usual from then on';

-- The expired items one match keeps, counted as the backlog is: NULL for
-- a caller who may not SELECT the table or to whom row-level security
-- applies there; bounded like ttl.stats (src/insight/legal_hold_backlog.c).
CREATE FUNCTION ttl._legal_hold_expired(container regclass, match jsonb) RETURNS bigint
    AS 'MODULE_PATHNAME', 'ttl_legal_hold_expired'
    LANGUAGE C STABLE STRICT;

CREATE VIEW ttl.legal_holds AS
SELECT h.container,
       h.name,
       CASE WHEN pg_catalog.has_table_privilege(h.container::pg_catalog.oid, 'SELECT')
             AND NOT pg_catalog.row_security_active(h.container)
            THEN h.match END                        AS match,
       h.held_at,
       h.held_by,
       ttl._legal_hold_expired(h.container, h.match) AS held_expired
  FROM ttl.legal_hold h
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) h.container::pg_catalog.oid;
COMMENT ON VIEW ttl.legal_holds IS
    'legal holds; match and held_expired are NULL for readers who may not read the table or to whom row-level security applies';
GRANT SELECT ON ttl.legal_holds TO PUBLIC;

-- ---------------------------------------------------------------------------
-- dropped objects (issues 28 and 32): one sql_drop function for every
-- record 1.8 keeps.  Besides the registry, stats and live views as before:
-- the record of a dropped index, or of a dropped container's indexes (an
-- index is matched by its schema and name: its table's row is gone from
-- pg_index by now); and a dropped table's legal holds and hold floors (a
-- later table that gets the same OID must not inherit them).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION ttl._on_sql_drop() RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM ttl.registry r
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
    DELETE FROM ttl.purge_stats s
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND s.relid OPERATOR(pg_catalog.=) d.objid;
    UPDATE ttl.registry r SET live_view = NULL
      FROM pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND r.live_view::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
    DELETE FROM ttl.indexes x
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND x.relid::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
    DELETE FROM ttl.indexes x
     USING pg_catalog.pg_event_trigger_dropped_objects() d, pg_catalog.pg_class t, pg_catalog.pg_namespace n
     WHERE d.object_type OPERATOR(pg_catalog.=) 'index'
       AND t.oid OPERATOR(pg_catalog.=) x.relid::pg_catalog.oid
       AND n.oid OPERATOR(pg_catalog.=) t.relnamespace
       AND n.nspname OPERATOR(pg_catalog.=) d.schema_name
       AND x.index_name OPERATOR(pg_catalog.=) d.object_name;
    DELETE FROM ttl.legal_hold h
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND h.container::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
    DELETE FROM ttl.legal_hold_floor f
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND f.container OPERATOR(pg_catalog.=) d.objid;
END
$$;
REVOKE ALL ON FUNCTION ttl._on_sql_drop() FROM PUBLIC;
