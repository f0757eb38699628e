/* ttl--1.6--1.7.sql: 1.6 -> 1.7, security round 2 (issue 25) and rule 10 (issue 26). */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.7'" to load this file. \quit

-- ttl's tables are locked in one order, ttl.registry first: the purge
-- takes it before any other table of ttl's, so an update that alters them
-- never deadlocks with a purge (src/registry/registry.c).
LOCK TABLE ttl.registry IN ACCESS EXCLUSIVE MODE;

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
-- function that acts on a container.  The check is in its definition in the
-- section of item 3 below (names quoted once), the last CREATE OR REPLACE
-- of it in this script.


-- ---------------------------------------------------------------------------
-- section: the visit bound, the in-flight record, durable back-off
-- (issue 25, item 2)
-- ---------------------------------------------------------------------------

-- The durable back-off of a container whose statements overran their bound
-- in the background worker (src/backoff.c): a batch or backlog walk
-- cancelled by ttl.batch_timeout, or a worker the launcher terminated after
-- ttl.max_visit_time while it was in the container.  A table, so that any
-- number of containers fit and a restart keeps it.
ALTER TABLE ttl.purge_stats
    ADD COLUMN overruns integer NOT NULL DEFAULT 0,
    ADD COLUMN retry_after timestamptz;
COMMENT ON COLUMN ttl.purge_stats.overruns IS 'statements of the background worker on this container that overran their time bound since it was last served within them';
COMMENT ON COLUMN ttl.purge_stats.retry_after IS 'the background worker leaves the container out until then (ttl.naptime x 2^overruns, at most an hour)';

-- ttl.databases: the container a database's worker is in now and what it
-- does there; the visits the launcher terminated.  ttl.worker_pool: their
-- count.  New columns at the end; the functions' result types change, so
-- the views are made again (with the grants of 1.2).
DROP VIEW ttl.databases;
DROP FUNCTION ttl._databases();
CREATE FUNCTION ttl._databases(OUT datid oid, OUT datname text, OUT has_ttl boolean,
                               OUT worker_pid integer, OUT last_served timestamptz,
                               OUT due_rows bigint, OUT oldest_due timestamptz,
                               OUT last_error text, OUT visits bigint,
                               OUT container oid, OUT step text,
                               OUT terminated_visits bigint, OUT last_termination text)
RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'ttl_databases'
    LANGUAGE C VOLATILE;

CREATE VIEW ttl.databases AS
SELECT datid, datname, has_ttl, worker_pid, last_served, due_rows, oldest_due,
       ttl.now() OPERATOR(pg_catalog.-) oldest_due AS oldest_due_age,
       last_error, visits, container, step, terminated_visits, last_termination
  FROM ttl._databases();
COMMENT ON VIEW ttl.databases IS 'per database: whether it has ttl (NULL: not visited yet), its worker now, when it was last served, the backlog its last worker left (due rows, counted up to 10000 per purge index; oldest due item), the error that ended a visit, how many workers visited it, the container its worker is in now (OID in that database) and its step there (batch, backlog walk, restore guard estimate), and the visits the launcher terminated after ttl.max_visit_time';

DROP VIEW ttl.worker_pool;
DROP FUNCTION ttl._worker_pool();
CREATE FUNCTION ttl._worker_pool(OUT max_workers integer, OUT running integer,
                                 OUT high_water integer, OUT terminated_visits bigint)
    AS 'MODULE_PATHNAME', 'ttl_worker_pool'
    LANGUAGE C VOLATILE;

CREATE VIEW ttl.worker_pool AS SELECT * FROM ttl._worker_pool();
COMMENT ON VIEW ttl.worker_pool IS 'the pool of purge workers: ttl.max_workers, workers running now, the most that ever ran at once, the visits the launcher terminated after ttl.max_visit_time';

REVOKE ALL ON FUNCTION ttl._databases() FROM PUBLIC;
REVOKE ALL ON FUNCTION ttl._worker_pool() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ttl._databases() TO pg_read_all_stats;
GRANT EXECUTE ON FUNCTION ttl._worker_pool() TO pg_read_all_stats;
GRANT SELECT ON ttl.databases, ttl.worker_pool TO pg_read_all_stats;

-- (end of section: the visit bound)


-- ---------------------------------------------------------------------------
-- section: schema and table names that need quoting (issue 25, item 3)
-- ---------------------------------------------------------------------------
-- A name is quoted exactly once, from the raw catalog name: %I on
-- pg_namespace.nspname, pg_class.relname and pg_authid.rolname
-- (pg_get_userbyid), never on the text of ::regnamespace, ::regclass or
-- ::regrole, which comes out quoted already.  1.0-1.6 quoted it again: a
-- schema such as "Sales" made ttl.enable, ttl.set_append_only and
-- ttl.set_deadline_property fail, an owner role such as "Bob" made
-- ttl.enable fail, ttl.deadline_index_sql and ttl.upgrade_purge_index_sql
-- emitted statements aimed at a schema literally named "Sales" (which
-- another role could create), and their to_regclass checks missed.  These
-- two also raise 42P01 for an OID that names no relation (item 4), as the
-- functions in C do.
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
        EXECUTE pg_catalog.format('COMMENT ON INDEX %I.%I IS %L', nsp, idx_name,
                                  'ttl deadline index');
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

-- ttl._citus_kind now raises 42P01 for a table that is gone: the view over
-- every distributed container skips a registry row whose table is gone
-- (as ttl.stats does), also one dropped while the view is read.
CREATE OR REPLACE FUNCTION ttl._distributed_stats(OUT container regclass, OUT rows_purged bigint,
                                                  OUT last_purge_at timestamptz)
RETURNS SETOF record
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c    regclass;
    kind "char";
BEGIN
    FOR c IN SELECT r.relid FROM ttl.registry r ORDER BY r.relid::pg_catalog.oid
    LOOP
        BEGIN
            kind := ttl._citus_kind(c);
        EXCEPTION WHEN undefined_table THEN
            CONTINUE;
        END;
        CONTINUE WHEN kind IS NULL OR kind OPERATOR(pg_catalog.<>) 'h';
        container := c;
        SELECT pg_catalog.sum((n.result::pg_catalog.json OPERATOR(pg_catalog.->>) 'rows_purged')::pg_catalog.int8),
               pg_catalog.max((n.result::pg_catalog.json OPERATOR(pg_catalog.->>) 'last_purge_at')::pg_catalog.timestamptz)
          INTO rows_purged, last_purge_at
          FROM pg_catalog.run_command_on_all_nodes(pg_catalog.format(
                 'SELECT pg_catalog.row_to_json(s) FROM ttl._placement_stats(%L::pg_catalog.regclass) s',
                 c::pg_catalog.text)) n
         WHERE n.success;
        RETURN NEXT;
    END LOOP;
END
$$;

-- ---------------------------------------------------------------------------
-- section: last_error, RLS in stats/backlog, marking, regclass errors
-- (issue 25, item 4)
-- ---------------------------------------------------------------------------

-- A purge error's text can carry row data (an owner's trigger may put a
-- document in its message): ttl.purge_stats no longer shows last_error to
-- PUBLIC (the other columns stay readable: ttl._placement_stats and
-- monitoring read them), and ttl.stats shows it only to a reader who may
-- SELECT the table and whom row-level security does not restrict (the
-- reader's own privileges: a view's functions run as the current user;
-- has_table_privilege(oid) gives NULL, row_security_active(oid) false, for
-- a table dropped meanwhile, so the view never raises).  The backlog
-- columns are NULL under row-level security too (ttl._backlog, stats.c).
REVOKE SELECT ON ttl.purge_stats FROM PUBLIC;
GRANT SELECT (relid, rows_purged, last_purge_at, last_error_at) ON ttl.purge_stats TO PUBLIC;

-- ttl.stats itself is defined once, with every column 1.7 gives it, in the
-- rule 10 section below (it also counts rule 10's replacements).
COMMENT ON FUNCTION ttl._backlog(regclass) IS 'ttl.backlog for ttl.stats: NULLs for tables the caller cannot SELECT or whose rows row-level security filters for the caller, gone, or temporary tables of other sessions';
COMMENT ON FUNCTION ttl.backlog(regclass) IS 'expired items not yet purged (each purge index walked up to 1,000,000 rows, as the table''s owner) and when the oldest expired; 42501 when row-level security applies to the caller';


-- ---------------------------------------------------------------------------
-- section: rule 10, an expired item is gone for writes too (issue 26)
-- ---------------------------------------------------------------------------

-- A write that conflicts with an expired item on a unique key replaces it
-- (SPEC rule 10): the stamp trigger (C) deletes the item as a purge delete
-- before the unique check.  This table is also how the library knows the
-- database is at 1.7: rule 10 takes effect with this update.
--
-- Each replacement delete is counted here, one row each, by the writer, as
-- the extension's owner.  No unique key: writers never wait for each other
-- (one ttl.purge_stats row per container would queue every replacing writer
-- behind the last one until its commit, and could deadlock writers of two
-- containers).  ttl.stats adds these rows; the purge folds them into
-- ttl.purge_stats whenever it records its own deletes.
CREATE TABLE ttl.purge_stats_pending (
    relid       oid NOT NULL,
    rows_purged bigint NOT NULL,
    purged_at   timestamptz NOT NULL
);
CREATE INDEX purge_stats_pending_relid ON ttl.purge_stats_pending (relid);
COMMENT ON TABLE ttl.purge_stats_pending IS
    'rule 10 replacement deletes not yet folded into ttl.purge_stats; read ttl.stats';
REVOKE ALL ON ttl.purge_stats_pending FROM PUBLIC;
GRANT SELECT ON ttl.purge_stats_pending TO PUBLIC;

-- rows_purged and last_purge_at count the replacements not yet folded; the
-- rest as section 4 defined it (last_error and the backlog for readers who
-- may see every row, the worker's back-off of section 2).
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
       s.retry_after
  FROM ttl.registry r
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  LEFT JOIN ttl.purge_stats s ON s.relid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  LEFT JOIN LATERAL (SELECT pg_catalog.sum(q.rows_purged)::pg_catalog.int8 AS rows_purged,
                            pg_catalog.max(q.purged_at) AS purged_at
                       FROM ttl.purge_stats_pending q
                      WHERE q.relid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid) p ON true
  CROSS JOIN LATERAL ttl._backlog(r.relid) b;
COMMENT ON VIEW ttl.stats IS 'purge statistics per container (rule 10 replacements included); last_error only for readers who may SELECT every row of the table; held_since, hold_reason: the restore guard''s hold; overruns, retry_after: the worker''s back-off (issue 25)';

-- The container setting of rule 10 (default on).  Off, a write conflicts
-- with an expired item that holds its key (23505, ON CONFLICT sees it) until
-- the purge removes it, as before 1.7, and costs no probe of the unique
-- indexes: for pure append workloads whose keys are never written twice.
-- Owner only (C); not on a Citus distributed container (0A000).
ALTER TABLE ttl.registry ADD COLUMN replace_expired boolean NOT NULL DEFAULT true;

CREATE FUNCTION ttl.set_replace_expired(container regclass, replace_expired boolean) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_set_replace_expired'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.set_replace_expired(regclass, boolean) IS
    'rule 10 for a container: true (the default) a write replaces an expired item holding its key; false it conflicts until the purge';

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
       r.replace_expired
  FROM ttl.registry r;
COMMENT ON VIEW ttl.containers IS 'one row per ttl container';

-- A Citus node counts the replacements of its shards in
-- ttl.purge_stats_pending (the shard's OID) until its purge folds them:
-- ttl.distributed_stats (through this function) adds them, as ttl.stats does.
CREATE OR REPLACE FUNCTION ttl._placement_stats(container regclass,
                                                OUT rows_purged bigint, OUT last_purge_at timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
WITH p AS (SELECT l::pg_catalog.oid AS relid FROM ttl._local_placements(container) l),
     s AS (SELECT s.rows_purged, s.last_purge_at FROM p
             JOIN ttl.purge_stats s ON s.relid OPERATOR(pg_catalog.=) p.relid
           UNION ALL
           SELECT q.rows_purged, q.purged_at FROM p
             JOIN ttl.purge_stats_pending q ON q.relid OPERATOR(pg_catalog.=) p.relid)
SELECT COALESCE(pg_catalog.sum(s.rows_purged), 0)::pg_catalog.int8,
       pg_catalog.max(s.last_purge_at)
  FROM s
$$;


-- ---------------------------------------------------------------------------
-- section: a purge that waits for lagging replicas (issue 30)
-- ---------------------------------------------------------------------------

-- ttl.max_replication_lag and ttl.replication_lag_ignore are settings (C);
-- the views show the background purge waiting for a replica: since when,
-- which standby or slot, how many bytes behind (NULLs when not waiting).
-- New columns at the end; the functions' result types change, so the views
-- are made again (with the grants of 1.2).
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
                               OUT replication_lag_bytes bigint)
RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'ttl_databases'
    LANGUAGE C VOLATILE;

CREATE VIEW ttl.databases AS
SELECT datid, datname, has_ttl, worker_pid, last_served, due_rows, oldest_due,
       ttl.now() OPERATOR(pg_catalog.-) oldest_due AS oldest_due_age,
       last_error, visits, container, step, terminated_visits, last_termination,
       replication_wait_since, replication_wait_for, replication_lag_bytes
  FROM ttl._databases();
COMMENT ON VIEW ttl.databases IS 'per database: whether it has ttl (NULL: not visited yet), its worker now, when it was last served, the backlog its last worker left (due rows, counted up to 10000 per purge index; oldest due item), the error that ended a visit, how many workers visited it, the container its worker is in now (OID in that database) and its step there (batch, backlog walk, restore guard estimate), the visits the launcher terminated after ttl.max_visit_time, and, while its purge waits for a replica further behind than ttl.max_replication_lag, since when, which standby or slot, and how many bytes behind';

DROP VIEW ttl.worker_pool;
DROP FUNCTION ttl._worker_pool();
CREATE FUNCTION ttl._worker_pool(OUT max_workers integer, OUT running integer,
                                 OUT high_water integer, OUT terminated_visits bigint,
                                 OUT replication_wait_since timestamptz,
                                 OUT replication_wait_for text,
                                 OUT replication_lag_bytes bigint)
    AS 'MODULE_PATHNAME', 'ttl_worker_pool'
    LANGUAGE C VOLATILE;

CREATE VIEW ttl.worker_pool AS SELECT * FROM ttl._worker_pool();
COMMENT ON VIEW ttl.worker_pool IS 'the pool of purge workers: ttl.max_workers, workers running now, the most that ever ran at once, the visits the launcher terminated after ttl.max_visit_time, and, while the background purge waits for a replica further behind than ttl.max_replication_lag, since when, which standby or slot, and how many bytes behind';

REVOKE ALL ON FUNCTION ttl._databases() FROM PUBLIC;
REVOKE ALL ON FUNCTION ttl._worker_pool() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ttl._databases() TO pg_read_all_stats;
GRANT EXECUTE ON FUNCTION ttl._worker_pool() TO pg_read_all_stats;
GRANT SELECT ON ttl.databases, ttl.worker_pool TO pg_read_all_stats;

-- (end of section: a purge that waits for lagging replicas)
