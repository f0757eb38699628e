/* ttl--1.0--1.1.sql: 1.0 -> 1.1, security and schema-change fixes. */

\echo Use "ALTER EXTENSION ttl UPDATE TO '1.1'" to load this file. \quit

-- ttl's tables are locked in one order, ttl.registry first: the purge
-- takes it before any other table of ttl's, so an update that alters them
-- never deadlocks with a purge (src/registry/registry.c).
LOCK TABLE ttl.registry IN ACCESS EXCLUSIVE MODE;

-- Every function below that runs SQL pins search_path = pg_catalog, pg_temp
-- and names its operators schema-qualified: see README, "Security model".

-- ---------------------------------------------------------------------------
-- section: purge (elevated SQL, locks, snapshots)
-- ---------------------------------------------------------------------------

-- (end of section: purge)

-- ---------------------------------------------------------------------------
-- section: statistics (ttl.stats, ttl.backlog)
-- ---------------------------------------------------------------------------

-- The backlog is computed in C as the table's owner, in a
-- security-restricted operation with search_path = pg_catalog, pg_temp
-- (src/stats.c): planning a query on a table runs the IMMUTABLE functions
-- of its index expressions, which are the owner's code and must never run
-- as the reader.  Readers without SELECT on the table get NULL backlog
-- columns from ttl.stats (ttl._backlog) and 42501 from ttl.backlog; a table
-- that is gone, or another session's temporary table, gives NULLs.
CREATE OR REPLACE FUNCTION ttl.backlog(container regclass,
                                       OUT expired bigint, OUT oldest_expired_at timestamptz)
    AS 'MODULE_PATHNAME', 'ttl_backlog'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION ttl.backlog(regclass) IS 'expired items not yet purged (each purge index walked up to 1,000,000 rows, as the table''s owner) and when the oldest expired';

CREATE FUNCTION ttl._backlog(container regclass,
                             OUT expired bigint, OUT oldest_expired_at timestamptz)
    AS 'MODULE_PATHNAME', 'ttl_backlog_if_readable'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION ttl._backlog(regclass) IS 'ttl.backlog for ttl.stats: NULLs for tables the caller cannot SELECT, gone, or temporary tables of other sessions';

-- Rows whose table is gone are skipped (the join with pg_class).
CREATE OR REPLACE VIEW ttl.stats AS
SELECT r.relid                        AS container,
       coalesce(s.rows_purged, 0)     AS rows_purged,
       s.last_purge_at,
       s.last_error,
       s.last_error_at,
       b.expired                      AS expired_backlog,
       b.oldest_expired_at,
       ttl.now() OPERATOR(pg_catalog.-) b.oldest_expired_at AS oldest_expired_age
  FROM ttl.registry r
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  LEFT JOIN ttl.purge_stats s ON s.relid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  CROSS JOIN LATERAL ttl._backlog(r.relid) b;
COMMENT ON VIEW ttl.stats IS 'purge statistics per container';

-- (end of section: statistics)

-- ---------------------------------------------------------------------------
-- section: containers follow their table (RLS, schema changes, enable/disable)
-- ---------------------------------------------------------------------------


-- ttl.enable refuses temporary tables (ttl._register) and computes the names
-- of its objects by bytes; the work on existing rows (validation scan,
-- stamping UPDATE) runs as the table's owner in a security-restricted
-- operation (ttl._existing_rows), never as a superuser who enables someone
-- else's table.
CREATE FUNCTION ttl._existing_rows(container regclass, doc_column name, stamp boolean) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_existing_rows'
    LANGUAGE C STRICT;

CREATE OR REPLACE FUNCTION ttl.enable(container regclass, default_ttl integer, doc_column name DEFAULT 'doc')
RETURNS regclass
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel       pg_catalog.pg_class;
    nsp       name;
    view_name text;
    ts_name   text;
    exp_name  text;
    opts      text := 'security_barrier';
    v         regclass;
BEGIN
    -- checks and the registry row; raises before anything is created
    PERFORM ttl._register(container, default_ttl, doc_column);

    SELECT * INTO rel FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) container::pg_catalog.oid;
    nsp := rel.relnamespace::pg_catalog.regnamespace::name;
    view_name := rel.relname::text OPERATOR(pg_catalog.||) '_live';
    -- names are limited in bytes (63): cut whole characters until they fit
    ts_name := rel.relname;
    WHILE pg_catalog.octet_length(ts_name) OPERATOR(pg_catalog.>) 48 LOOP
        ts_name := pg_catalog.left(ts_name, -1);
    END LOOP;
    exp_name := ts_name;
    WHILE pg_catalog.octet_length(exp_name) OPERATOR(pg_catalog.>) 44 LOOP
        exp_name := pg_catalog.left(exp_name, -1);
    END LOOP;
    ts_name := ts_name OPERATOR(pg_catalog.||) '_ttl_ts_idx';
    exp_name := exp_name OPERATOR(pg_catalog.||) '_ttl_expiry_idx';
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
    -- purge indexes; the comment marks them as ours for ttl.disable (index
    -- OIDs cannot live in the registry: a restore creates indexes after data)
    EXECUTE pg_catalog.format('CREATE INDEX %I ON %s ((ttl.doc_ts(%I))) WHERE ttl.doc_ttl(%I) IS NULL',
                              ts_name, container, doc_column, doc_column);
    EXECUTE pg_catalog.format('COMMENT ON INDEX %I.%I IS %L', nsp, ts_name, 'ttl purge index');
    EXECUTE pg_catalog.format('CREATE INDEX %I ON %s ((ttl.doc_expiry(%I))) WHERE ttl.doc_expiry(%I) IS NOT NULL',
                              exp_name, container, doc_column, doc_column);
    EXECUTE pg_catalog.format('COMMENT ON INDEX %I.%I IS %L', nsp, exp_name, 'ttl purge index');

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
                  AND pg_catalog.obj_description(i.indexrelid, 'pg_class') OPERATOR(pg_catalog.=) 'ttl purge index'
    LOOP
        EXECUTE pg_catalog.format('DROP INDEX %s', idx);
    END LOOP;
END
$$;

-- The container follows its table through ALTER TABLE (src/ddl_events.c):
-- columns added or renamed appear in <table>_live, a dropped or retyped
-- column rebuilds it, the document column can be renamed but not dropped or
-- retyped, the view follows renames, schema and owner changes, and is
-- security_invoker exactly while the table has row-level security.
CREATE FUNCTION ttl._ddl_start() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'ttl_ddl_start'
    LANGUAGE C;
REVOKE ALL ON FUNCTION ttl._ddl_start() FROM PUBLIC;
CREATE FUNCTION ttl._ddl_end() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'ttl_ddl_end'
    LANGUAGE C;
REVOKE ALL ON FUNCTION ttl._ddl_end() FROM PUBLIC;
CREATE EVENT TRIGGER ttl_ddl_start ON ddl_command_start
    WHEN TAG IN ('ALTER TABLE') EXECUTE FUNCTION ttl._ddl_start();
CREATE EVENT TRIGGER ttl_ddl_end ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE') EXECUTE FUNCTION ttl._ddl_end();

CREATE FUNCTION ttl._follow_table(container regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_follow_table'
    LANGUAGE C STRICT;

-- Containers enabled under 1.0 whose table got RLS, columns or a new owner
-- since: bring their live views in line now.
SELECT ttl._follow_table(r.relid) FROM ttl.registry r;

-- (end of section: containers follow their table)

-- ---------------------------------------------------------------------------
-- section: dropped objects (event trigger, SECURITY DEFINER)
-- ---------------------------------------------------------------------------
-- It runs as the extension's owner: every operator is schema-qualified, on
-- top of the pinned search_path, so no object of a user can stand in.
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
END
$$;
REVOKE ALL ON FUNCTION ttl._on_sql_drop() FROM PUBLIC;

-- (end of section: dropped objects)
