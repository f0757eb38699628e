-- ttl 1.4 -> 1.5: after 1.0, deadlines and previews (issue 14).

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.5'" to load this file. \quit

-- ttl's tables are locked in one order, ttl.registry first: the purge
-- takes it before any other table of ttl's, so an update that alters them
-- never deadlocks with a purge (src/registry/registry.c).
LOCK TABLE ttl.registry IN ACCESS EXCLUSIVE MODE;

-- Every function below that runs SQL pins search_path = pg_catalog, pg_temp
-- and names its operators schema-qualified: see README, "Security model".

-- ==== deadline ====
-- Rule 9: a container may name a root property that holds an absolute
-- deadline (src/deadline.c).  The registry keeps its name; the stamp
-- trigger carries it in one more argument and validates it on write; the
-- live view's filter, ttl.state and purge read it from the registry (on
-- Citus from the trigger, as the rest of the policy).  A container with a
-- deadline property has a second, partial btree next to its purge index,
-- <table>_ttl_deadline_idx on ttl.doc_deadline_key(doc, '<property>'),
-- which purge walks in deadline order up to now; containers without one
-- keep exactly the indexes, writes and purges of 1.4.

ALTER TABLE ttl.registry ADD COLUMN deadline_property text;

CREATE OR REPLACE VIEW ttl.containers AS
SELECT r.relid        AS container,
       r.doc_column,
       r.default_ttl,
       r.live_view,
       r.paused,
       r.enabled_at,
       r.append_only,
       r.deadline_property
  FROM ttl.registry r;
COMMENT ON VIEW ttl.containers IS 'one row per ttl container';

-- The key of the deadline index: the deadline in Unix seconds, NULL for
-- none, -9223372036854775808 for a malformed value (only a row written
-- around the trigger can hold one: ttl.set_deadline_property finds them
-- through the index).
CREATE FUNCTION ttl.doc_deadline_key(doc jsonb, property text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'ttl_doc_deadline_key_sql'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ttl.doc_deadline_key(jsonb, text) IS 'the deadline (rule 9) at doc -> property in Unix seconds, NULL for none, the smallest bigint for a malformed one';

-- Rules 5 and 9 for one document: purge's DELETE re-checks it on the row
-- version it removes when the container has a deadline property.
CREATE FUNCTION ttl.doc_expired(doc jsonb, default_ttl integer, now_seconds bigint,
                                deadline_property text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'ttl_doc_expired_deadline_sql'
    LANGUAGE C IMMUTABLE PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ttl.doc_expired(jsonb, integer, bigint, text) IS 'rules 5 and 9: whether the item has expired at now_seconds (Unix) under this default and deadline property';

-- ttl.calculate with the deadline; the 1.0 signature goes (its C symbol
-- stays for databases not yet updated).
DROP FUNCTION ttl.calculate(integer, integer, bigint, timestamptz);
CREATE FUNCTION ttl.calculate(default_ttl integer, item_ttl integer, ts bigint, at timestamptz,
                              deadline timestamptz DEFAULT NULL,
                              OUT is_enabled boolean, OUT expires boolean,
                              OUT effective_ttl integer, OUT expires_at timestamptz,
                              OUT remaining interval)
    AS 'MODULE_PATHNAME', 'ttl_calculate_deadline'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION ttl.calculate(integer, integer, bigint, timestamptz, timestamptz) IS 'the expiry rules on plain values; with a deadline, rule 9 (the earlier of the lifetime expiry and the deadline, to the whole second)';

CREATE FUNCTION ttl._set_deadline_property(container regclass, property text) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_set_deadline_property'
    LANGUAGE C;
CREATE FUNCTION ttl._check_deadlines(container regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_check_deadlines'
    LANGUAGE C STRICT;
CREATE FUNCTION ttl._is_deadline_index(index regclass, container regclass) RETURNS boolean
    AS 'MODULE_PATHNAME', 'ttl_is_deadline_index_sql'
    LANGUAGE C STABLE STRICT;

-- The name of the deadline index of a table: at most 46 bytes of its name
-- (cut between characters) and _ttl_deadline_idx; alt: at most 45 bytes
-- and _ttl_deadline2_idx (ttl.deadline_index_sql, while the index of the
-- previous property still has the first name).
CREATE FUNCTION ttl._deadline_index_name(relname name, alt boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n text := relname;
BEGIN
    WHILE pg_catalog.octet_length(n) OPERATOR(pg_catalog.>) CASE WHEN alt THEN 45 ELSE 46 END LOOP
        n := pg_catalog.left(n, -1);
    END LOOP;
    RETURN n OPERATOR(pg_catalog.||) CASE WHEN alt THEN '_ttl_deadline2_idx' ELSE '_ttl_deadline_idx' END;
END
$$;

-- Sets, changes or (NULL) removes the deadline property.  It applies to
-- the stored items at once (the filter and purge read the registry); the
-- stamp trigger is replaced first, so no write runs until the end, the
-- deadline index of the new property is built unless a valid one is there
-- already (ttl.deadline_index_sql builds it beforehand without blocking
-- writes), and stored items with a malformed value make the call fail,
-- naming the first, with nothing changed.
CREATE FUNCTION ttl.set_deadline_property(container regclass, property text) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET citus.enable_unsafe_triggers = on
AS $$
DECLARE
    rel      pg_catalog.pg_class;
    doc      name;
    idx      regclass;
    idx_name text;
BEGIN
    -- checks owner, registration and the name; registry and trigger
    PERFORM ttl._set_deadline_property(container, property);
    SELECT r.doc_column INTO doc FROM ttl.registry r
     WHERE r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    SELECT * INTO rel FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    -- deadline indexes of another property (or of none) go
    FOR idx IN SELECT i.indexrelid FROM pg_catalog.pg_index i
                WHERE i.indrelid OPERATOR(pg_catalog.=) container::pg_catalog.oid
                  AND pg_catalog.obj_description(i.indexrelid, 'pg_class') OPERATOR(pg_catalog.=) 'ttl deadline index'
                  AND NOT ttl._is_deadline_index(i.indexrelid, container)
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
        EXECUTE pg_catalog.format('COMMENT ON INDEX %I.%I IS %L',
                                  rel.relnamespace::pg_catalog.regnamespace::name, idx_name,
                                  'ttl deadline index');
    END IF;
    -- stored items: the first malformed one fails the call (all rolls back)
    PERFORM ttl._check_deadlines(container);
END
$$;
COMMENT ON FUNCTION ttl.set_deadline_property(regclass, text) IS 'rule 9: name the root property that holds an item''s absolute deadline (NULL: none); applies to stored items at once';

-- Builds the deadline index of a property without blocking writes for
-- long, before ttl.set_deadline_property(container, property) (which then
-- finds it valid and builds nothing).  Run outside a transaction block
-- (psql: SELECT ... \gexec):
--   plain table: CREATE INDEX CONCURRENTLY, COMMENT
--   partitioned: CREATE INDEX ON ONLY each partitioned table, CREATE INDEX
--     CONCURRENTLY on each leaf, ATTACH PARTITION, COMMENT.
-- No rows: the container has that index already.
CREATE FUNCTION ttl.deadline_index_sql(container regclass, property text) RETURNS SETOF text
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
    SELECT r.doc_column INTO doc FROM ttl.registry r
     WHERE r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table % is not a ttl container', container
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Enable it with ttl.enable(..., deadline_property => ...).';
    END IF;
    SELECT * INTO root FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
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
COMMENT ON FUNCTION ttl.deadline_index_sql(regclass, text) IS 'statements that build a container''s deadline index for that property without blocking its writes (run them with \gexec, outside a transaction block, before ttl.set_deadline_property)';

-- ttl.enable gains the deadline property (a new signature: the old one goes).
DROP FUNCTION ttl.enable(regclass, integer, name);
CREATE FUNCTION ttl.enable(container regclass, default_ttl integer, doc_column name DEFAULT 'doc',
                           deadline_property text DEFAULT NULL)
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
    -- rule 9: the deadline property, its trigger argument and its index
    IF deadline_property IS NOT NULL THEN
        PERFORM ttl.set_deadline_property(container, deadline_property);
    END IF;
    RETURN v;
END
$$;

COMMENT ON FUNCTION ttl.enable(regclass, integer, name, text) IS 'make a table a ttl container; returns its <table>_live view';
ALTER FUNCTION ttl.enable(regclass, integer, name, text) SET citus.enable_unsafe_triggers = on;

-- ttl.disable drops the deadline index too.
CREATE OR REPLACE FUNCTION ttl.disable(container regclass) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    view_oid regclass;
    idx regclass;
BEGIN
    IF container IS NULL THEN
        RAISE EXCEPTION 'container must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT r.live_view INTO view_oid FROM ttl.registry r
     WHERE r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    PERFORM ttl._unregister(container);     -- checks owner and registration
    EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS zzz_ttl_stamp ON %s', container);
    IF view_oid IS NOT NULL THEN
        EXECUTE pg_catalog.format('DROP VIEW IF EXISTS %s', view_oid);
    END IF;
    FOR idx IN SELECT i.indexrelid FROM pg_catalog.pg_index i
                WHERE i.indrelid OPERATOR(pg_catalog.=) container::pg_catalog.oid
                  AND pg_catalog.obj_description(i.indexrelid, 'pg_class') OPERATOR(pg_catalog.=)
                      ANY (ARRAY['ttl purge index', 'ttl deadline index'])
    LOOP
        EXECUTE pg_catalog.format('DROP INDEX %s', idx);
    END LOOP;
END
$$;
ALTER FUNCTION ttl.disable(regclass) SET citus.enable_unsafe_triggers = on;
ALTER FUNCTION ttl.disable(regclass) SET citus.multi_shard_modify_mode = 'sequential';

-- ==== end deadline ====

-- ==== preview ====
-- ttl.preview and ttl.expiring (src/preview.c, src/index_count.c): figures
-- under the present and a proposed default, and the items expiring within a
-- window, from the purge index where it applies.  They run with the
-- caller's rights (SELECT on the table needed) and change nothing.

-- One row of ttl.preview (a type of its own: its column default_ttl has the
-- name of the function's argument).
CREATE TYPE ttl.preview_row AS (
    scenario text,
    default_ttl integer,
    items bigint,
    hidden bigint,
    expiring_1h bigint,
    expiring_1d bigint,
    expiring_7d bigint,
    expiring_30d bigint
);

CREATE FUNCTION ttl.preview(container regclass, default_ttl integer,
                            at timestamptz DEFAULT ttl.now())
    RETURNS SETOF ttl.preview_row
    AS 'MODULE_PATHNAME', 'ttl_preview'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION ttl.preview(regclass, integer, timestamptz) IS
    'items, hidden and expiring within 1h/1d/7d/30d at "at", under the current and a proposed default; exact, changes nothing';

CREATE FUNCTION ttl.expiring(container regclass, within interval,
                             at timestamptz DEFAULT ttl.now())
    RETURNS TABLE (doc jsonb, expires_at timestamptz)
    AS 'MODULE_PATHNAME', 'ttl_expiring'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION ttl.expiring(regclass, interval, timestamptz) IS
    'items not expired at "at" that expire within "within" after it, soonest first';
-- ==== end preview ====

-- ==== restore guard ====
-- Automatic purge (the worker, CALL ttl.run_purge) holds a container whose
-- due backlog exceeds ttl.restore_guard_fraction of its rows after a
-- restore, a start from a base backup or point-in-time recovery, a clock
-- jump, or when it is enabled over documents mostly due already
-- (src/guard.c).  Where a container was enabled (the cluster's system
-- identifier, the database's OID) travels with its registry row through
-- pg_dump, so a restore elsewhere shows.  The containers that exist now
-- are at home.
ALTER TABLE ttl.registry
    ADD COLUMN home_system_identifier bigint,
    ADD COLUMN home_database oid,
    ADD COLUMN held_since timestamptz,
    ADD COLUMN hold_reason text,
    ADD COLUMN hold_fraction real;
UPDATE ttl.registry
   SET home_system_identifier = (SELECT s.system_identifier FROM pg_catalog.pg_control_system() s),
       home_database = (SELECT d.oid FROM pg_catalog.pg_database d
                         WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database());

-- resume also releases the guard's hold and records the current home
CREATE OR REPLACE FUNCTION ttl.resume(container regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_resume_guard'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.resume(regclass) IS 'restart automatic purge of a container, and release its restore guard hold';

-- Rows whose table is gone are skipped (the join with pg_class).
CREATE OR REPLACE VIEW ttl.stats AS
SELECT r.relid                        AS container,
       coalesce(s.rows_purged, 0)     AS rows_purged,
       s.last_purge_at,
       s.last_error,
       s.last_error_at,
       b.expired                      AS expired_backlog,
       b.oldest_expired_at,
       ttl.now() OPERATOR(pg_catalog.-) b.oldest_expired_at AS oldest_expired_age,
       r.held_since,
       r.hold_reason
  FROM ttl.registry r
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  LEFT JOIN ttl.purge_stats s ON s.relid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  CROSS JOIN LATERAL ttl._backlog(r.relid) b;
COMMENT ON VIEW ttl.stats IS 'purge statistics per container; held_since, hold_reason: the restore guard''s hold';
-- ==== end restore guard ====
