/* ttl--1.8--1.9.sql: 1.8 -> 1.9, one section per change of this round:
 * ownership and failing rows (security round 3), rule 10 with one
 * mechanism (the trigger-arguments codec, the version read), retiring
 * partitions, and what an operator sees. */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.9'" to load this file. \quit

-- ttl's tables are locked in one order, ttl.registry first: the purge
-- takes it before any other table of ttl's, so an update that alters them
-- never deadlocks with a purge (src/registry/registry.c).
LOCK TABLE ttl.registry IN ACCESS EXCLUSIVE MODE;

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
       CASE WHEN pg_catalog.has_table_privilege(f.relid, 'SELECT')
             AND NOT pg_catalog.row_security_active(f.relid)
            THEN f.key END          AS key,
       f.sqlstate,
       CASE WHEN pg_catalog.has_table_privilege(f.relid, 'SELECT')
             AND NOT pg_catalog.row_security_active(f.relid)
            THEN f.message END      AS message,
       f.first_failed_at,
       f.attempts,
       f.retry_after
  FROM ttl.purge_failure f
 -- the table still exists (NULL for an OID that names none); not a join
 -- with pg_class, which Citus filters of its shards
 WHERE pg_catalog.has_table_privilege(f.relid, 'SELECT') IS NOT NULL;
COMMENT ON VIEW ttl.purge_failures IS
    'rows a purge isolated as failing, left in place and retried after retry_after; key and message only for readers who may SELECT every row of the table';
GRANT SELECT ON ttl.purge_failures TO PUBLIC;

-- (No join with ttl.registry: on a Citus node the failing rows are a
-- shard's, which has no registry row.)  A dropped table or partition takes
-- its failure records with it, as it takes its registry row, statistics,
-- indexes, holds and floors: ttl._on_sql_drop, defined once for this
-- version in the retire section below (it also takes retirement records).

-- ---------------------------------------------------------------------------
-- section: rule 10 with one mechanism; the trigger-arguments codec
-- ---------------------------------------------------------------------------

-- The stamp trigger's arguments have one codec (src/registry/trigger_args.h
-- describes the formats): from 1.9 on they are written as 'format=2' and
-- key=value arguments (ttl.stamp('format=2', 'doc=doc'), with a deadline
-- property 'deadline=expiresAt'; a distributed container's piece also
-- 'default=3600', 'state=active' and 'archive=...'), so that later
-- per-container state travels as new keys.  The lists of 1.0 to 1.8 are
-- read as before: no trigger is rewritten here, a container's trigger takes
-- the new format the next time ttl writes it (a policy change, a deadline
-- property, a renamed document column).  The library writes the old format
-- while a database's SQL is older than 1.9.

-- the codec as SQL, for tests: the list the C writers write for these
-- fields (format NULL: the installed version's), and what the readers read
CREATE FUNCTION ttl._trigger_args(doc_column name, deadline_property text DEFAULT NULL,
                                  has_policy boolean DEFAULT false, default_ttl integer DEFAULT NULL,
                                  paused boolean DEFAULT false, archive text DEFAULT NULL,
                                  format integer DEFAULT NULL)
RETURNS text[]
    AS 'MODULE_PATHNAME', 'ttl_trigger_args_encode_sql'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION ttl._trigger_args(name, text, boolean, integer, boolean, text, integer) IS 'the stamp trigger''s argument list for these fields, as ttl writes it (internal)';
REVOKE ALL ON FUNCTION ttl._trigger_args(name, text, boolean, integer, boolean, text, integer) FROM PUBLIC;

CREATE FUNCTION ttl._trigger_args_decode(args text[], OUT format integer, OUT doc_column name,
                                         OUT deadline_property text, OUT has_policy boolean,
                                         OUT default_ttl integer, OUT paused boolean, OUT archive text)
RETURNS record
    AS 'MODULE_PATHNAME', 'ttl_trigger_args_decode_sql'
    LANGUAGE C IMMUTABLE STRICT;
COMMENT ON FUNCTION ttl._trigger_args_decode(text[]) IS 'what ttl reads from a stamp trigger''s argument list (internal)';
REVOKE ALL ON FUNCTION ttl._trigger_args_decode(text[]) FROM PUBLIC;

-- ttl.enable's trigger, written by the codec in C (owner only)
CREATE FUNCTION ttl._stamp_trigger(container regclass, doc_column name) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_stamp_trigger'
    LANGUAGE C;
COMMENT ON FUNCTION ttl._stamp_trigger(regclass, name) IS 'create the stamp trigger of a container ttl.enable makes (owner only)';

-- ttl.enable as in 1.8, but its trigger is created by ttl._stamp_trigger
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
    PERFORM ttl._stamp_trigger(container, doc_column);
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

-- rule 10 is exact: no BEFORE ROW trigger of a container fires after ttl's
-- stamp trigger (it could change a row after rule 10 judged its keys):
-- ttl._ddl_end refuses one at CREATE TRIGGER, ALTER TRIGGER ... RENAME (and
-- at ALTER TABLE ... ATTACH PARTITION, which it already sees), and so at
-- ttl.enable, whose CREATE TRIGGER fires it too.
CREATE EVENT TRIGGER ttl_trigger_ddl_end ON ddl_command_end
    WHEN TAG IN ('CREATE TRIGGER', 'ALTER TRIGGER') EXECUTE FUNCTION ttl._ddl_end();

-- rule 10's due floor (src/stamp/replace_floor.c): the rows of this
-- database's containers that probed their unique indexes and that skipped
-- the probe because nothing of their leaf could be expired, since the
-- server started (with the preload; zeros without it)
CREATE FUNCTION ttl._rule10_counts(OUT probes bigint, OUT skipped bigint)
RETURNS record
    AS 'MODULE_PATHNAME', 'ttl_rule10_counts'
    LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION ttl._rule10_counts() IS 'rows of this database that probed, and that skipped the probe, for rule 10 since the server started (internal)';
REVOKE ALL ON FUNCTION ttl._rule10_counts() FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- section: retiring whole partitions
-- ---------------------------------------------------------------------------

-- A leaf of a partitioned container whose every item has expired is
-- retired whole by the purge instead of deleted row by row (issue 42;
-- src/purge/retire_check.c says when, src/purge/purge_retire.c how):
-- detached from its parent, then dropped ('drop') or left detached and
-- recorded ('detach').  Per container, 'off' by default; configuration,
-- so dumped with the rest of the registry.
ALTER TABLE ttl.registry ADD COLUMN retire text NOT NULL DEFAULT 'off'
    CONSTRAINT registry_retire_check
    CHECK (retire OPERATOR(pg_catalog.=) ANY (ARRAY['off', 'drop', 'detach']::pg_catalog.text[]));

CREATE FUNCTION ttl.set_retire(container regclass, mode text) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_set_retire'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.set_retire(regclass, text) IS
    'off (default), drop or detach: a leaf of a partitioned container whose every item has expired is retired whole by the purge (detached, then dropped or kept detached and recorded in ttl.retired) instead of deleted row by row';

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
       r.archive,
       r.retire
  FROM ttl.registry r;
COMMENT ON VIEW ttl.containers IS 'one row per ttl container';

-- Every leaf retired: a history, dumped like the registry (a detached leaf
-- still exists under leaf, a qualified name as text: it is no longer a
-- partition of anything ttl knows, and a dropped one names nothing).  The
-- container as regclass, like ttl.legal_hold, so a restore keeps the link;
-- a dropped container takes its rows with it (ttl._on_sql_drop).  items:
-- the leaf's rows as its statistics last counted them (reltuples; a
-- count(*) for a leaf never counted).  Written by the
-- purge as the extension's owner only (C).
CREATE TABLE ttl.retired_leaf (
    container  regclass NOT NULL,
    leaf       text NOT NULL,
    mode       text NOT NULL CHECK (mode OPERATOR(pg_catalog.=) ANY (ARRAY['drop', 'detach']::pg_catalog.text[])),
    retired_at timestamptz NOT NULL,
    items      bigint NOT NULL
);
CREATE INDEX retired_leaf_container ON ttl.retired_leaf (container);
COMMENT ON TABLE ttl.retired_leaf IS 'leaves retired by the purge; read ttl.retired';
SELECT pg_catalog.pg_extension_config_dump('ttl.retired_leaf', '');
REVOKE ALL ON ttl.retired_leaf FROM PUBLIC;

CREATE VIEW ttl.retired AS
SELECT l.container, l.leaf, l.mode, l.retired_at, l.items
  FROM ttl.retired_leaf l;
COMMENT ON VIEW ttl.retired IS
    'leaves retired whole by the purge (ttl.set_retire): dropped, or detached and still there under leaf';
GRANT SELECT ON ttl.retired TO PUBLIC;

-- What the purge retired, per container: counted in ttl.purge_stats and
-- shown at the end of ttl.stats (the rows retired are not in rows_purged).
ALTER TABLE ttl.purge_stats
    ADD COLUMN leaves_retired bigint NOT NULL DEFAULT 0,
    ADD COLUMN rows_retired bigint NOT NULL DEFAULT 0;

-- (ttl.stats shows them at its end: the view is defined once, in the
-- operator section below, with every column this version adds.)

-- ttl.preview: per scenario, the leaf partitions whose every item has
-- expired at `at` under that default (what ttl.set_retire would retire,
-- before the obstacles docs/retire.md lists); NULL for a container that is
-- not partitioned (src/insight/preview.c).
ALTER TYPE ttl.preview_row ADD ATTRIBUTE leaves_due bigint;

-- A dropped container takes its retirement history with it, as it takes
-- its registry row, and a dropped table or partition its failure records
-- (first section): ttl._on_sql_drop as in 1.8, plus those.
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
    DELETE FROM ttl.purge_failure p
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND (p.relid OPERATOR(pg_catalog.=) d.objid OR p.leaf OPERATOR(pg_catalog.=) d.objid);
    DELETE FROM ttl.retired_leaf l
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND l.container::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
END
$$;
REVOKE ALL ON FUNCTION ttl._on_sql_drop() FROM PUBLIC;

-- A leaf retired from a container with an archive goes into the archive
-- (src/purge/retire_archive.c): 'attach' (attached to the partitioned
-- archive as it is, still there under leaf) or 'copy' (its rows inserted
-- into the archive, then dropped), whatever the retire mode.
ALTER TABLE ttl.retired_leaf DROP CONSTRAINT retired_leaf_mode_check;
ALTER TABLE ttl.retired_leaf ADD CONSTRAINT retired_leaf_mode_check
    CHECK (mode OPERATOR(pg_catalog.=) ANY (ARRAY['drop', 'detach', 'attach', 'copy']::pg_catalog.text[]));
COMMENT ON VIEW ttl.retired IS
    'leaves retired whole by the purge (ttl.set_retire): dropped, detached and still there under leaf, attached to the container''s archive, or copied into it and dropped (mode)';

-- ---------------------------------------------------------------------------
-- section: what an operator sees (progress, windows, marking, metrics)
-- ---------------------------------------------------------------------------

-- operator: change-stream marking per container, metrics

-- Per container, the marking of purge deletes in the change stream
-- (docs/change-stream.md): true 'on', false 'off', NULL 'default' (follow
-- the setting ttl.mark_purge_deletes).  A column of the registry, so it is
-- dumped with it (pg_extension_config_dump of 1.0).  Superuser only, like
-- the setting (C, src/admin/mark_admin.c); a distributed container carries
-- it to its shards in its stamp trigger (the key mark=).
ALTER TABLE ttl.registry ADD COLUMN mark_purge_deletes boolean;

CREATE FUNCTION ttl.set_mark_purge_deletes(container regclass, mode text) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_set_mark_purge_deletes'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.set_mark_purge_deletes(regclass, text) IS
    'mark the purge deletes of a container in the change stream: ''on'', ''off'' or ''default'' (follow ttl.mark_purge_deletes); superuser only';

-- operator: windows and falling behind

-- Purge windows (src/base/purge_window.c parses them, one parser for the
-- setting ttl.purge_window and for the function below): times of day
-- outside which the worker and ttl.run_purge() leave a container (hiding
-- and rule 10 go on; ttl.purge() ignores windows).  Per container in the
-- registry, so it is dumped with it (pg_extension_config_dump of 1.0).
ALTER TABLE ttl.registry ADD COLUMN purge_window text;
COMMENT ON COLUMN ttl.registry.purge_window IS
    'ttl.set_purge_window: times of day outside which the worker and ttl.run_purge() leave the container; NULL: ttl.purge_window';

-- Owner only; NULL removes the container's own window; a bad value is
-- refused (22023) and nothing is written; 0A000 on a Citus distributed
-- container (its nodes purge by the policy the shards' triggers carry).
CREATE FUNCTION ttl.set_purge_window(container regclass, purge_window text) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_set_purge_window'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.set_purge_window(regclass, text) IS
    'times of day (''01:00-05:00'', several comma-separated, an optional time zone name last) outside which the worker and ttl.run_purge leave the container; NULL removes it';

-- the parser's two questions as SQL, for tests: is this instant inside,
-- and when does the window next open (at itself when inside)
CREATE FUNCTION ttl._in_purge_window(purge_window text, at timestamptz) RETURNS boolean
    AS 'MODULE_PATHNAME', 'ttl_in_purge_window_sql'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION ttl._in_purge_window(text, timestamptz) IS 'whether at falls inside the purge window (internal, for tests)';
REVOKE ALL ON FUNCTION ttl._in_purge_window(text, timestamptz) FROM PUBLIC;

CREATE FUNCTION ttl._next_purge_window(purge_window text, at timestamptz) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'ttl_next_purge_window_sql'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION ttl._next_purge_window(text, timestamptz) IS 'when the purge window next opens at or after at (internal, for tests)';
REVOKE ALL ON FUNCTION ttl._next_purge_window(text, timestamptz) FROM PUBLIC;

-- Falling behind (src/insight/behind.c): whether the worker has said that a
-- container is behind (its one WARNING; cleared with its one LOG line on
-- catching up), so that the pool's workers, which exit after each visit,
-- say it once.  Runtime state in the runtime table: not dumped.
ALTER TABLE ttl.purge_stats ADD COLUMN behind_since timestamptz;
COMMENT ON COLUMN ttl.purge_stats.behind_since IS
    'set when the worker logged that the container fell behind (ttl.backlog_alert_age), cleared when it logged that it caught up';

-- behind, behind_since and next_window_at of ttl.stats: computed from the
-- backlog's oldest item (held items and rows in ttl.purge_failures left
-- out) and the window that applies, with the caller's rights
CREATE FUNCTION ttl._behind(container regclass, oldest_expired_at timestamptz,
                            OUT behind boolean, OUT behind_since timestamptz,
                            OUT next_window_at timestamptz)
RETURNS record
    AS 'MODULE_PATHNAME', 'ttl_behind_sql'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION ttl._behind(regclass, timestamptz) IS 'behind, behind_since and next_window_at of ttl.stats (internal)';

-- the backlog of ttl.stats (1.9): as ttl._backlog, but the count stops at
-- 1,000 rows for the container, in all its key ranges and leaves, and says
-- whether it stopped there (capped; the count is then a lower bound); the
-- oldest item is exact (a probe of each range).  A view over every
-- container answers in a time that follows the number of containers, not
-- their backlogs (src/insight/stats.c; bench row 19).
CREATE FUNCTION ttl._stats_backlog(container regclass,
                                   OUT expired bigint, OUT oldest_expired_at timestamptz,
                                   OUT capped boolean)
    AS 'MODULE_PATHNAME', 'ttl_stats_backlog'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION ttl._stats_backlog(regclass) IS 'the backlog of ttl.stats: NULLs for tables the caller cannot SELECT or whose row-level security applies to the caller, gone, or temporary of another session; counted up to 1,000 rows per container (internal)';

-- ttl.stats as in 1.7, with this version's columns at its end: the three
-- of falling behind and windows, then the leaves and rows retired whole,
-- then whether expired_backlog stopped at its cap
CREATE OR REPLACE VIEW ttl.stats AS
SELECT r.relid                        AS container,
       coalesce(s.rows_purged, 0) OPERATOR(pg_catalog.+) coalesce(p.rows_purged, 0)
                                      AS rows_purged,
       GREATEST(s.last_purge_at, p.purged_at) AS last_purge_at,
       CASE WHEN pg_catalog.has_table_privilege(c.oid, 'SELECT')
             AND NOT pg_catalog.row_security_active(c.oid)
            THEN s.last_error END     AS last_error,
       s.last_error_at,
       b.expired                      AS expired_backlog,
       b.oldest_expired_at,
       ttl.now() OPERATOR(pg_catalog.-) b.oldest_expired_at AS oldest_expired_age,
       r.held_since,
       r.hold_reason,
       coalesce(s.overruns, 0)        AS overruns,
       s.retry_after,
       a.behind,
       a.behind_since,
       a.next_window_at,
       coalesce(s.leaves_retired, 0)  AS leaves_retired,
       coalesce(s.rows_retired, 0)    AS rows_retired,
       b.capped                       AS expired_backlog_capped
  FROM ttl.registry r
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  LEFT JOIN ttl.purge_stats s ON s.relid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  LEFT JOIN LATERAL (SELECT pg_catalog.sum(q.rows_purged)::pg_catalog.int8 AS rows_purged,
                            pg_catalog.max(q.purged_at) AS purged_at
                       FROM ttl.purge_stats_pending q
                      WHERE q.relid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid) p ON true
  CROSS JOIN LATERAL ttl._stats_backlog(r.relid) b
  CROSS JOIN LATERAL ttl._behind(r.relid, b.oldest_expired_at) a;
COMMENT ON VIEW ttl.stats IS 'purge statistics per container (rule 10 replacements included); last_error only for readers who may SELECT every row of the table; held_since, hold_reason: the restore guard''s hold; overruns, retry_after: the worker''s back-off; behind, behind_since: the oldest deletable expired item is older than ttl.backlog_alert_age; next_window_at: when the purge window next opens; leaves_retired, rows_retired: leaves retired whole (ttl.set_retire); expired_backlog is counted up to 1,000 rows per container, expired_backlog_capped says when it stopped there (oldest_expired_at is exact)';

-- Metrics for a monitoring role (contrib/postgres_exporter/ttl.yaml,
-- docs/monitoring.md): a role with pg_monitor (so pg_read_all_stats) and no
-- right on any table reads, per container, the figures an operator alerts
-- on; ttl.stats shows it NULL backlog and no last_error, as the backlog is
-- computed for readers of the table.  Counts and times only, never a
-- document, a key or an error's words: failing says whether last_error is
-- set.  The backlog is walked as each table's owner (as for ttl.stats),
-- up to 1,000 rows per container (expired_backlog_capped says when it
-- stopped there) and a probe of each range for the oldest, at each read: no
-- SECURITY DEFINER anywhere; ttl._monitor_backlog checks pg_read_all_stats
-- itself.  behind and behind_since as in ttl.stats.  (Defined after
-- ttl.stats, whose ttl._behind it reads.)
CREATE FUNCTION ttl._monitor_backlog(container regclass,
                                     OUT expired bigint, OUT oldest_expired_at timestamptz,
                                     OUT capped boolean)
    AS 'MODULE_PATHNAME', 'ttl_monitor_backlog'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION ttl._monitor_backlog(regclass) IS 'ttl._backlog for ttl.container_metrics: for roles with the privileges of pg_read_all_stats, without table rights (internal)';
REVOKE ALL ON FUNCTION ttl._monitor_backlog(regclass) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ttl._monitor_backlog(regclass) TO pg_read_all_stats;

CREATE VIEW ttl.container_metrics AS
SELECT r.relid                        AS container,
       b.expired                      AS expired_backlog,
       b.oldest_expired_at,
       coalesce(s.rows_purged, 0) OPERATOR(pg_catalog.+) coalesce(p.rows_purged, 0)
                                      AS rows_purged,
       GREATEST(s.last_purge_at, p.purged_at) AS last_purge_at,
       s.last_error IS NOT NULL       AS failing,
       s.last_error_at,
       r.paused,
       r.held_since IS NOT NULL       AS held,
       coalesce(s.retry_after OPERATOR(pg_catalog.>) ttl.now(), false) AS backed_off,
       b.capped                       AS expired_backlog_capped,
       a.behind,
       a.behind_since
  FROM ttl.registry r
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  LEFT JOIN ttl.purge_stats s ON s.relid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  LEFT JOIN LATERAL (SELECT pg_catalog.sum(q.rows_purged)::pg_catalog.int8 AS rows_purged,
                            pg_catalog.max(q.purged_at) AS purged_at
                       FROM ttl.purge_stats_pending q
                      WHERE q.relid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid) p ON true
  CROSS JOIN LATERAL ttl._monitor_backlog(r.relid) b
  CROSS JOIN LATERAL ttl._behind(r.relid, b.oldest_expired_at) a;
COMMENT ON VIEW ttl.container_metrics IS 'per container, for monitoring roles (pg_read_all_stats, pg_monitor): the backlog (counted up to 1,000 rows per container, expired_backlog_capped says when it stopped there) and its oldest item, rows purged, whether the last purge failed (never its words), pause, restore guard hold, back-off, and whether it is behind (ttl.backlog_alert_age) since when';
REVOKE ALL ON ttl.container_metrics FROM PUBLIC;
GRANT SELECT ON ttl.container_metrics TO pg_read_all_stats;

-- operator: progress and log lines
--
-- ttl.purge_progress: one row per running purge (the worker's visit, CALL
-- ttl.run_purge(), ttl.purge()), read from ttl's own shared memory without
-- a lock the purge takes (src/purge/progress.c).  Like pg_stat_activity,
-- every role may read it and sees pid and database of every purge; the
-- other columns only of purges run by a role whose privileges it has, or
-- with pg_read_all_stats (the worker's are the bootstrap superuser's).
-- container is NULL for a purge in another database (its OID means nothing
-- here).  Without shared_preload_libraries the view shows the purges on 17
-- and later (the DSM registry), nothing on 15 and 16.
CREATE FUNCTION ttl._purge_progress(OUT pid integer, OUT database name,
    OUT container pg_catalog.regclass, OUT phase text, OUT rows_done bigint,
    OUT rows_due bigint, OUT rows_per_second double precision,
    OUT started_at timestamptz)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'ttl_purge_progress'
    LANGUAGE C VOLATILE STRICT;

CREATE VIEW ttl.purge_progress AS
SELECT pid, database, container, phase, rows_done, rows_due, rows_per_second, started_at
  FROM ttl._purge_progress();
COMMENT ON VIEW ttl.purge_progress IS
    'one row per running purge: the container it is in now, its phase (walking, deleting, archiving, retiring, throttled, waiting for replicas), rows deleted from it by this purge, rows due when this purge reached it (counted as ttl.stats counts expired_backlog; NULL for ttl.purge()), the rate, and since when';
GRANT SELECT ON ttl.purge_progress TO PUBLIC;

-- operator: the worker's backlog figure says when it is a lower bound
--
-- ttl.databases.due_rows is counted by the worker as it leaves a database,
-- up to 10,000 rows per purge index; due_rows_capped (new, at the end) is
-- true when one of those counts stopped there.  The function's result type
-- changes, so the view is made again, with the grants of 1.2.
DROP VIEW ttl.databases;
DROP FUNCTION ttl._databases();
CREATE FUNCTION ttl._databases(OUT datid oid, OUT datname text, OUT has_ttl boolean,
                               OUT worker_pid integer, OUT last_served timestamptz,
                               OUT due_rows bigint, OUT oldest_due timestamptz,
                               OUT last_error text, OUT visits bigint,
                               OUT container oid, OUT step text,
                               OUT terminated_visits bigint, OUT last_termination text,
                               OUT replication_wait_since timestamptz,
                               OUT replication_wait_for text,
                               OUT replication_lag_bytes bigint,
                               OUT due_rows_capped boolean)
RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'ttl_databases'
    LANGUAGE C VOLATILE;

CREATE VIEW ttl.databases AS
SELECT datid, datname, has_ttl, worker_pid, last_served, due_rows, oldest_due,
       ttl.now() OPERATOR(pg_catalog.-) oldest_due AS oldest_due_age,
       last_error, visits, container, step, terminated_visits, last_termination,
       replication_wait_since, replication_wait_for, replication_lag_bytes,
       due_rows_capped
  FROM ttl._databases();
COMMENT ON VIEW ttl.databases IS 'per database: whether it has ttl (NULL: not visited yet), its worker now, when it was last served, the backlog its last worker left (due rows, counted up to 10000 per purge index, due_rows_capped says when a count stopped there; oldest due item), the error that ended a visit, how many workers visited it, the container its worker is in now (OID in that database) and its step there (batch, backlog walk, restore guard estimate), the visits the launcher terminated after ttl.max_visit_time, and, while its purge waits for a replica further behind than ttl.max_replication_lag, since when, which standby or slot, and how many bytes behind';
REVOKE ALL ON FUNCTION ttl._databases() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ttl._databases() TO pg_read_all_stats;
GRANT SELECT ON ttl.databases TO pg_read_all_stats;
