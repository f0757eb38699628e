/* ttl--1.0.sql: Cosmos DB style time-to-live for JSONB document tables. */

\echo Use "CREATE EXTENSION ttl" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Registry.  Users have no write privilege: every change goes through the
-- functions below, which check ownership of the table.
-- ---------------------------------------------------------------------------
CREATE TABLE ttl.registry (
    relid        regclass PRIMARY KEY,
    doc_column   name NOT NULL,
    default_ttl  integer CHECK (default_ttl = -1 OR default_ttl > 0),
    paused       boolean NOT NULL DEFAULT false,
    live_view    regclass,
    enabled_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE ttl.registry IS 'ttl containers; change it only through the ttl.* functions';
SELECT pg_catalog.pg_extension_config_dump('ttl.registry', '');

CREATE TABLE ttl.purge_stats (
    relid         oid PRIMARY KEY,
    rows_purged   bigint NOT NULL DEFAULT 0,
    last_purge_at timestamptz,
    last_error    text,
    last_error_at timestamptz
);
COMMENT ON TABLE ttl.purge_stats IS 'purge counters per container; read ttl.stats';

REVOKE ALL ON ttl.registry, ttl.purge_stats FROM PUBLIC;
GRANT SELECT ON ttl.registry, ttl.purge_stats TO PUBLIC;

-- ---------------------------------------------------------------------------
-- The clock and the document accessors (never raise on any document).
-- ---------------------------------------------------------------------------
CREATE FUNCTION ttl.now() RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'ttl_now'
    LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION ttl.now() IS 'the clock of every ttl rule: statement timestamp, or ttl.now_override';

CREATE FUNCTION ttl.doc_ts(doc jsonb) RETURNS bigint
    AS 'MODULE_PATHNAME', 'ttl_doc_ts_sql'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ttl.doc_ts(jsonb) IS 'the integer _ts of a document, or NULL';

CREATE FUNCTION ttl.doc_ttl(doc jsonb) RETURNS integer
    AS 'MODULE_PATHNAME', 'ttl_doc_ttl_sql'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ttl.doc_ttl(jsonb) IS 'the valid root ttl of a document, or NULL';

CREATE FUNCTION ttl.doc_expiry(doc jsonb) RETURNS bigint
    AS 'MODULE_PATHNAME', 'ttl_doc_expiry_sql'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ttl.doc_expiry(jsonb) IS '_ts + ttl (Unix seconds) for items with their own positive ttl, else NULL';

CREATE FUNCTION ttl.doc_expired(doc jsonb, default_ttl integer, now_seconds bigint) RETURNS boolean
    AS 'MODULE_PATHNAME', 'ttl_doc_expired_sql'
    LANGUAGE C IMMUTABLE PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ttl.doc_expired(jsonb, integer, bigint) IS 'rule 5: whether the item has expired at now_seconds (Unix) under this default';

CREATE FUNCTION ttl.live(doc jsonb, container regclass) RETURNS boolean
    AS 'MODULE_PATHNAME', 'ttl_live'
    LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION ttl.live(jsonb, regclass) IS 'filter of <table>_live: false when the item has expired';

-- ---------------------------------------------------------------------------
-- Leak-free accessors: filters built from them are pushed below the view's
-- security barrier, so expression and GIN indexes work through <table>_live.
-- ---------------------------------------------------------------------------
CREATE FUNCTION ttl.field(doc jsonb, key text) RETURNS text
    AS 'MODULE_PATHNAME', 'ttl_field'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ttl.field(jsonb, text) IS 'doc ->> key, leakproof: index it and filter <table>_live with it';

CREATE FUNCTION ttl.field_bigint(doc jsonb, key text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'ttl_field_bigint'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ttl.field_bigint(jsonb, text) IS 'the integer at doc -> key, else NULL; leakproof';

CREATE FUNCTION ttl.field_float(doc jsonb, key text) RETURNS double precision
    AS 'MODULE_PATHNAME', 'ttl_field_float'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ttl.field_float(jsonb, text) IS 'the number at doc -> key as float8, else NULL; leakproof';

CREATE FUNCTION ttl.path(doc jsonb, VARIADIC path text[]) RETURNS text
    AS 'MODULE_PATHNAME', 'ttl_path'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ttl.path(jsonb, text[]) IS 'doc #>> path, leakproof';

CREATE FUNCTION ttl.contains(doc jsonb, query jsonb) RETURNS boolean
    AS 'MODULE_PATHNAME', 'ttl_contains'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION ttl.contains(jsonb, jsonb) IS 'doc @> query, leakproof; operator ttl.@>';

CREATE OPERATOR ttl.@> (
    LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = ttl.contains,
    RESTRICT = matchingsel, JOIN = matchingjoinsel
);
COMMENT ON OPERATOR ttl.@> (jsonb, jsonb) IS 'leakproof jsonb containment, GIN-indexable with ttl.jsonb_path_ops';

-- jsonb_path_ops with the leakproof operator: same support functions.
CREATE OPERATOR CLASS ttl.jsonb_path_ops FOR TYPE jsonb USING gin AS
    OPERATOR 7 ttl.@> (jsonb, jsonb),
    FUNCTION 1 pg_catalog.btint4cmp(integer, integer),
    FUNCTION 2 pg_catalog.gin_extract_jsonb_path(jsonb, internal, internal),
    FUNCTION 3 pg_catalog.gin_extract_jsonb_query_path(jsonb, internal, smallint, internal, internal, internal, internal),
    FUNCTION 4 pg_catalog.gin_consistent_jsonb_path(internal, smallint, jsonb, integer, internal, internal, internal, internal),
    FUNCTION 6 pg_catalog.gin_triconsistent_jsonb_path(internal, smallint, jsonb, integer, internal, internal, internal),
    STORAGE integer;

-- ---------------------------------------------------------------------------
-- Item functions.
-- ---------------------------------------------------------------------------
CREATE FUNCTION ttl.calculate(default_ttl integer, item_ttl integer, ts bigint, at timestamptz,
                              OUT is_enabled boolean, OUT expires boolean,
                              OUT effective_ttl integer, OUT expires_at timestamptz,
                              OUT remaining interval)
    AS 'MODULE_PATHNAME', 'ttl_calculate'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION ttl.calculate(integer, integer, bigint, timestamptz) IS 'the expiry rules on plain values';

CREATE FUNCTION ttl.state(container regclass, doc jsonb,
                          OUT is_enabled boolean, OUT expires boolean,
                          OUT effective_ttl integer, OUT expires_at timestamptz,
                          OUT remaining interval)
    AS 'MODULE_PATHNAME', 'ttl_state'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION ttl.state(regclass, jsonb) IS 'expiry state of a document of a container at ttl.now()';

CREATE FUNCTION ttl.expires_at(container regclass, doc jsonb) RETURNS timestamptz
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    AS $$ SELECT s.expires_at FROM ttl.state(container, doc) s $$;
COMMENT ON FUNCTION ttl.expires_at(regclass, jsonb) IS 'when the item expires; NULL when it never does';

CREATE FUNCTION ttl.is_expired(container regclass, doc jsonb) RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    AS $$ SELECT s.expires AND coalesce(s.remaining = interval '0', false) FROM ttl.state(container, doc) s $$;
COMMENT ON FUNCTION ttl.is_expired(regclass, jsonb) IS 'whether the item has expired at ttl.now()';

-- ---------------------------------------------------------------------------
-- The trigger and the registry functions (C; they check ownership).
-- ---------------------------------------------------------------------------
CREATE FUNCTION ttl.stamp() RETURNS trigger
    AS 'MODULE_PATHNAME', 'ttl_stamp'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.stamp() IS 'container trigger: validates ttl and stamps _ts';

CREATE FUNCTION ttl._validate(container regclass, doc jsonb, doc_column name DEFAULT 'doc') RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_validate_sql'
    LANGUAGE C STABLE;

CREATE FUNCTION ttl._register(container regclass, default_ttl integer, doc_column name) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_register'
    LANGUAGE C;

CREATE FUNCTION ttl._set_objects(container regclass, live_view regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_set_objects'
    LANGUAGE C;

CREATE FUNCTION ttl._unregister(container regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_unregister'
    LANGUAGE C STRICT;

CREATE FUNCTION ttl.set_default_ttl(container regclass, default_ttl integer) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_set_default_ttl'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.set_default_ttl(regclass, integer) IS 'change the container default (NULL: off, -1: no default, n seconds)';

CREATE FUNCTION ttl.pause(container regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_pause'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.pause(regclass) IS 'stop automatic purge of a container (hiding goes on)';

CREATE FUNCTION ttl.resume(container regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_resume'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.resume(regclass) IS 'restart automatic purge of a container';

-- ---------------------------------------------------------------------------
-- enable / disable: run as the caller, who must own the table, so the
-- objects and the stamping UPDATE are the owner's own work.
-- ---------------------------------------------------------------------------
CREATE FUNCTION ttl.enable(container regclass, default_ttl integer, doc_column name DEFAULT 'doc')
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
    bad_found boolean;
    bad_doc   jsonb;
    v         regclass;
BEGIN
    -- checks and the registry row; raises before anything is created
    PERFORM ttl._register(container, default_ttl, doc_column);

    SELECT * INTO rel FROM pg_catalog.pg_class WHERE oid = container;
    nsp := rel.relnamespace::regnamespace::name;
    view_name := rel.relname || '_live';
    ts_name := left(rel.relname, 48) || '_ttl_ts_idx';
    exp_name := left(rel.relname, 44) || '_ttl_expiry_idx';
    IF length(view_name) > 63 THEN
        RAISE EXCEPTION 'view name "%" for container % is too long', view_name, container
            USING ERRCODE = 'name_too_long',
                  HINT = 'Rename the table to at most 58 characters.';
    END IF;
    IF to_regclass(format('%I.%I', nsp, view_name)) IS NOT NULL THEN
        RAISE EXCEPTION 'relation "%.%" already exists', nsp, view_name
            USING ERRCODE = 'duplicate_table',
                  DETAIL = format('ttl.enable creates the view %I.%I for container %s.', nsp, view_name, container);
    END IF;

    -- existing documents must be valid before the trigger guards new ones
    EXECUTE format('SELECT true, %1$I FROM %2$s WHERE %1$I IS NULL'
                   ' OR pg_catalog.jsonb_typeof(%1$I) <> ''object'''
                   ' OR (%1$I ? ''ttl'' AND ttl.doc_ttl(%1$I) IS NULL) LIMIT 1',
                   doc_column, container) INTO bad_found, bad_doc;
    IF bad_found THEN
        PERFORM ttl._validate(container, bad_doc, doc_column);
    END IF;

    EXECUTE format('CREATE TRIGGER zzz_ttl_stamp BEFORE INSERT OR UPDATE ON %s'
                   ' FOR EACH ROW EXECUTE FUNCTION ttl.stamp(%L)', container, doc_column);
    -- rows without _ts get a full lifetime from now, never a mass expiry
    EXECUTE format('UPDATE %1$s SET %2$I = %2$I WHERE ttl.doc_ts(%2$I) IS NULL',
                   container, doc_column);
    -- purge indexes; the comment marks them as ours for ttl.disable (index
    -- OIDs cannot live in the registry: a restore creates indexes after data)
    EXECUTE format('CREATE INDEX %I ON %s ((ttl.doc_ts(%I))) WHERE ttl.doc_ttl(%I) IS NULL',
                   ts_name, container, doc_column, doc_column);
    EXECUTE format('COMMENT ON INDEX %I.%I IS %L', nsp, ts_name, 'ttl purge index');
    EXECUTE format('CREATE INDEX %I ON %s ((ttl.doc_expiry(%I))) WHERE ttl.doc_expiry(%I) IS NOT NULL',
                   exp_name, container, doc_column, doc_column);
    EXECUTE format('COMMENT ON INDEX %I.%I IS %L', nsp, exp_name, 'ttl purge index');

    IF rel.relrowsecurity THEN
        opts := opts || ', security_invoker';
    END IF;
    EXECUTE format('CREATE VIEW %I.%I WITH (%s) AS SELECT * FROM %s WHERE ttl.live(%I, %L::regclass)',
                   nsp, view_name, opts, container, doc_column, container::oid::regclass::text);
    EXECUTE format('ALTER VIEW %I.%I OWNER TO %I', nsp, view_name, rel.relowner::regrole::name);
    EXECUTE format('COMMENT ON VIEW %I.%I IS %L', nsp, view_name,
                   format('live (unexpired) items of ttl container %s', container));
    v := format('%I.%I', nsp, view_name)::regclass;
    PERFORM ttl._set_objects(container, v);
    RETURN v;
END
$$;
COMMENT ON FUNCTION ttl.enable(regclass, integer, name) IS 'make a table a ttl container; returns its <table>_live view';

CREATE FUNCTION ttl.disable(container regclass) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r ttl.registry;
    idx regclass;
BEGIN
    SELECT * INTO r FROM ttl.registry WHERE relid = container;
    PERFORM ttl._unregister(container);     -- checks owner and registration
    EXECUTE format('DROP TRIGGER IF EXISTS zzz_ttl_stamp ON %s', container);
    IF r.live_view IS NOT NULL THEN
        EXECUTE format('DROP VIEW IF EXISTS %s', r.live_view);
    END IF;
    FOR idx IN SELECT i.indexrelid FROM pg_catalog.pg_index i
                WHERE i.indrelid = container
                  AND pg_catalog.obj_description(i.indexrelid, 'pg_class') = 'ttl purge index'
    LOOP
        EXECUTE format('DROP INDEX %s', idx);
    END LOOP;
END
$$;
COMMENT ON FUNCTION ttl.disable(regclass) IS 'remove trigger, view, indexes and registration; data untouched';

-- ---------------------------------------------------------------------------
-- Purge.
-- ---------------------------------------------------------------------------
CREATE FUNCTION ttl.purge(container regclass DEFAULT NULL, max_rows bigint DEFAULT NULL)
RETURNS bigint
    AS 'MODULE_PATHNAME', 'ttl_purge'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.purge(regclass, bigint) IS 'delete expired items now, in this transaction; returns the count';

CREATE FUNCTION ttl._purge_statement(container regclass, own_ttl boolean) RETURNS text
    AS 'MODULE_PATHNAME', 'ttl_purge_statement'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION ttl._purge_statement(regclass, boolean) IS 'the batch DELETE purge runs ($1 lower key, $2 cutoff, $3 limit), for EXPLAIN';

CREATE FUNCTION ttl._purge_plan_options() RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_purge_plan_options'
    LANGUAGE C;
COMMENT ON FUNCTION ttl._purge_plan_options() IS 'apply the planner settings of purge batches to this transaction, for EXPLAIN';

CREATE PROCEDURE ttl.run_purge()
    AS 'MODULE_PATHNAME', 'ttl_run_purge'
    LANGUAGE C;
COMMENT ON PROCEDURE ttl.run_purge() IS 'purge every due container in committed batches within the cost budget (for pg_cron)';

CREATE FUNCTION ttl.backlog(container regclass,
                            OUT expired bigint, OUT oldest_expired_at timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r       ttl.registry;
    now_s   bigint := floor(extract(epoch FROM ttl.now()))::bigint;
    n       bigint := 0;
    first_s bigint;
    k       bigint;
BEGIN
    SELECT * INTO r FROM ttl.registry WHERE relid = container;
    expired := 0;
    IF NOT FOUND OR r.default_ttl IS NULL THEN
        RETURN;
    END IF;
    -- both walks use the purge indexes and stop at 1,000,000 rows each
    IF r.default_ttl > 0 THEN
        EXECUTE format('SELECT count(*), min(k) FROM (SELECT ttl.doc_ts(%1$I) AS k FROM %2$s'
                       ' WHERE ttl.doc_ttl(%1$I) IS NULL AND ttl.doc_ts(%1$I) <= $1'
                       ' ORDER BY 1 LIMIT 1000000) s', r.doc_column, container)
            INTO n, k USING now_s - r.default_ttl;
        expired := n;
        first_s := k + r.default_ttl;
    END IF;
    EXECUTE format('SELECT count(*), min(k) FROM (SELECT ttl.doc_expiry(%1$I) AS k FROM %2$s'
                   ' WHERE ttl.doc_expiry(%1$I) <= $1 ORDER BY 1 LIMIT 1000000) s',
                   r.doc_column, container)
        INTO n, k USING now_s;
    expired := expired + n;
    first_s := least(first_s, k);
    oldest_expired_at := to_timestamp(first_s);
END
$$;
COMMENT ON FUNCTION ttl.backlog(regclass) IS 'expired items not yet purged (each purge index walked up to 1,000,000 rows) and when the oldest expired';

-- ---------------------------------------------------------------------------
-- pg_cron scheduling (pg_cron stays optional: nothing here requires it).
-- ---------------------------------------------------------------------------
CREATE FUNCTION ttl.schedule_purge(schedule text DEFAULT '* * * * *',
                                   database name DEFAULT current_database())
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job_name text := 'ttl-purge-' || database;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'pg_cron') THEN
        RAISE EXCEPTION 'pg_cron is not installed in database "%"', current_database()
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Call ttl.schedule_purge(schedule, database) in the database named by cron.database_name, '
                         'where CREATE EXTENSION pg_cron was run; or preload ttl (shared_preload_libraries) '
                         'and let its background worker purge.';
    END IF;
    IF database = current_database() THEN
        RETURN cron.schedule(job_name, schedule, 'CALL ttl.run_purge()');
    END IF;
    RETURN cron.schedule_in_database(job_name, schedule, 'CALL ttl.run_purge()', database);
END
$$;
COMMENT ON FUNCTION ttl.schedule_purge(text, name) IS 'schedule CALL ttl.run_purge() with pg_cron (job ttl-purge-<database>)';

CREATE FUNCTION ttl.unschedule_purge(database name DEFAULT current_database())
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'pg_cron') THEN
        RAISE EXCEPTION 'pg_cron is not installed in database "%"', current_database()
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    RETURN cron.unschedule('ttl-purge-' || database);
END
$$;
COMMENT ON FUNCTION ttl.unschedule_purge(name) IS 'remove the pg_cron job of ttl.schedule_purge()';

-- ---------------------------------------------------------------------------
-- Views.
-- ---------------------------------------------------------------------------
CREATE VIEW ttl.containers AS
SELECT r.relid        AS container,
       r.doc_column,
       r.default_ttl,
       r.live_view,
       r.paused,
       r.enabled_at
  FROM ttl.registry r;
COMMENT ON VIEW ttl.containers IS 'one row per ttl container';

CREATE VIEW ttl.stats AS
SELECT r.relid                        AS container,
       coalesce(s.rows_purged, 0)     AS rows_purged,
       s.last_purge_at,
       s.last_error,
       s.last_error_at,
       b.expired                      AS expired_backlog,
       b.oldest_expired_at,
       ttl.now() - b.oldest_expired_at AS oldest_expired_age
  FROM ttl.registry r
  LEFT JOIN ttl.purge_stats s ON s.relid = r.relid::oid
  LEFT JOIN LATERAL ttl.backlog(r.relid) b
         ON pg_catalog.has_table_privilege(r.relid, 'SELECT');
COMMENT ON VIEW ttl.stats IS 'purge statistics per container';

GRANT USAGE ON SCHEMA ttl TO PUBLIC;
GRANT SELECT ON ttl.containers, ttl.stats TO PUBLIC;

-- ---------------------------------------------------------------------------
-- Dropped tables and views leave nothing behind in the registry.
-- ---------------------------------------------------------------------------
CREATE FUNCTION ttl._on_sql_drop() RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM ttl.registry r
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objsubid = 0
       AND r.relid::oid = d.objid;
    DELETE FROM ttl.purge_stats s
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objsubid = 0
       AND s.relid = d.objid;
    UPDATE ttl.registry r SET live_view = NULL
      FROM pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objsubid = 0
       AND r.live_view::oid = d.objid;
END
$$;
REVOKE ALL ON FUNCTION ttl._on_sql_drop() FROM PUBLIC;

CREATE EVENT TRIGGER ttl_sql_drop ON sql_drop EXECUTE FUNCTION ttl._on_sql_drop();
