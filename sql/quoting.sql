-- Schema, table and role names that need quoting (issue 25, item 3): every
-- public function and view of the extension on containers in schemas named
-- with capitals, a hyphen, a space, a double quote, a dot, non-ASCII
-- letters and 63 bytes, with table names likewise (up to the 58 bytes
-- ttl.enable allows; 59 bytes is 42622), owned by a role whose name needs
-- quoting too.  Each name must be quoted exactly once: 1.0-1.6 quoted the
-- text of ::regnamespace / ::regrole again, so ttl.enable('"Sales".orders')
-- failed, deadline_index_sql / upgrade_purge_index_sql emitted statements
-- aimed at a schema literally named "Sales" and the to_regclass checks
-- missed.  The statements ttl.deadline_index_sql emits are executed
-- (\gexec); those of ttl.upgrade_purge_index_sql are executed on containers
-- enabled under 1.2 in sql/upgrade_quoting.sql.  At the end the test checks
-- from pg_stat_user_functions that it called every public function of the
-- extension, and that it read every view, so a function added later cannot
-- be left out.
\set SHOW_CONTEXT never
SET ttl.now_override = '2030-01-01 00:00:00+00';
-- count every call of the extension's functions (C, SQL and PL/pgSQL)
SET track_functions = 'all';
SELECT pg_stat_force_next_flush();
CREATE TABLE quoting_calls_before AS
SELECT funcid, calls FROM pg_stat_user_functions WHERE schemaname = 'ttl';

\set owner 'regress_ttl Quote-Öwner'
\set s0 quoting_plain
\set t0 plain_t
\set s1 Sales
\set t1 Orders
\set s2 sales-eu
\set t2 or-ders
\set s3 'sales eu'
\set t3 'or ders'
\set s4 'sa"les'
\set t4 'or"ders'
\set s5 sales.eu
\set t5 or.ders
\set s6 ünïcødé
\set t6 ördérs
\set t1r 'Orders "Renamed".x'
\set s3r 'sales eu "renamed"'
\set s5r 'sales.eu "2"'
SELECT 'Ünï "Sa.les"- ' || repeat('x', 63 - octet_length('Ünï "Sa.les"- ')) AS s7,
       'Ör "d.e"-rs ' || repeat('y', 58 - octet_length('Ör "d.e"-rs ')) AS t7,
       'Ör "d.e"-rs ' || repeat('y', 59 - octet_length('Ör "d.e"-rs ')) AS t8 \gset
SELECT octet_length(:'s7') AS s7_bytes, octet_length(:'t7') AS t7_bytes, octet_length(:'t8') AS t8_bytes;

CREATE ROLE :"owner";
GRANT CREATE ON DATABASE :"DBNAME" TO :"owner";
SET ROLE :"owner";
CREATE SCHEMA quoting_help;
-- containers 0-7: one schema and one table name each (0: plain names, so
-- that the owner's name alone is tested there); 8: a partitioned table in
-- schema 4 whose partitions live in schemas 5, 6 (a partitioned one) and 7
CREATE TABLE quoting_help.names (k int PRIMARY KEY, nsp name, rel name);
INSERT INTO quoting_help.names VALUES
    (0, :'s0', :'t0'), (1, :'s1', :'t1'), (2, :'s2', :'t2'), (3, :'s3', :'t3'),
    (4, :'s4', :'t4'), (5, :'s5', :'t5'), (6, :'s6', :'t6'), (7, :'s7', :'t7'),
    (8, :'s4', 'Parted "P"');
CREATE SCHEMA :"s0";
CREATE SCHEMA :"s1";
CREATE SCHEMA :"s2";
CREATE SCHEMA :"s3";
CREATE SCHEMA :"s4";
CREATE SCHEMA :"s5";
CREATE SCHEMA :"s6";
CREATE SCHEMA :"s7";
SELECT k, format('%I.%I', nsp, rel) AS container FROM quoting_help.names ORDER BY k;
DO $$
DECLARE
    n record;
BEGIN
    FOR n IN SELECT * FROM quoting_help.names WHERE k < 8 LOOP
        EXECUTE format('CREATE TABLE %I.%I (id int PRIMARY KEY, doc jsonb NOT NULL)', n.nsp, n.rel);
    END LOOP;
END $$;
CREATE TABLE :"s4"."Parted ""P""" (id int PRIMARY KEY, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE :"s5"."part-1.a" PARTITION OF :"s4"."Parted ""P""" FOR VALUES FROM (0) TO (1000);
CREATE TABLE :"s6"."Mid pärt" PARTITION OF :"s4"."Parted ""P""" FOR VALUES FROM (1000) TO (2000)
    PARTITION BY RANGE (id);
CREATE TABLE :"s7"."leaf ""2""" PARTITION OF :"s6"."Mid pärt" FOR VALUES FROM (1000) TO (2000);
-- the containers by OID: they stay the same through the renames below
CREATE TABLE quoting_help.c AS
SELECT k, format('%I.%I', nsp, rel)::regclass AS c FROM quoting_help.names;
-- the number of rows a live view shows
CREATE FUNCTION quoting_help.live_count(v regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM %s', v) INTO n;
    RETURN n;
END $$;
-- the ttl indexes of a container (partitions included): name, method, comment
CREATE FUNCTION quoting_help.ttl_indexes(t regclass) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(format('%s %s%s', i.indexrelid::regclass, a.amname,
                             CASE WHEN d.description IS NOT NULL THEN ' (' || d.description || ')' ELSE '' END),
                      ', ' ORDER BY i.indexrelid::regclass::text COLLATE "C")
      FROM pg_index i
      JOIN pg_class ic ON ic.oid = i.indexrelid
      JOIN pg_am a ON a.oid = ic.relam
      LEFT JOIN pg_description d ON d.objoid = i.indexrelid AND d.classoid = 'pg_class'::regclass
     WHERE (i.indrelid = t OR i.indrelid IN (SELECT relid FROM pg_partition_tree(t)))
       AND pg_get_indexdef(i.indexrelid) LIKE '%ttl.%'
$$;

-- <table>_live already there: 42P07 with the names quoted once (the
-- to_regclass check found nothing in 1.6 and the call failed further on)
DO $$
DECLARE
    n record;
    st text; msg text; det text;
BEGIN
    FOR n IN SELECT * FROM quoting_help.names WHERE k < 8 ORDER BY k LOOP
        EXECUTE format('CREATE TABLE %I.%I (x int)', n.nsp, n.rel || '_live');
        BEGIN
            PERFORM ttl.enable(format('%I.%I', n.nsp, n.rel)::regclass, 3600);
            RAISE NOTICE '%: enabled', n.k;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
            RAISE NOTICE '%: % % / %', n.k, st, msg, det;
        END;
        EXECUTE format('DROP TABLE %I.%I', n.nsp, n.rel || '_live');
    END LOOP;
END $$;
SELECT count(*) AS containers FROM ttl.containers c JOIN quoting_help.c q ON q.c = c.container;

-- 59 bytes: the view name would not fit (42622), nothing is created
CREATE TABLE :"s7".:"t8" (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable(format('%I.%I', :'s7', :'t8')::regclass, 3600);
SELECT count(*) AS containers FROM ttl.containers WHERE container = format('%I.%I', :'s7', :'t8')::regclass;
DROP TABLE :"s7".:"t8";

-- ttl.enable, by the owner (0-4) and by a superuser (5-8, the view is then
-- given to the owner); the objects it creates carry names quoted once
SELECT k, ttl.enable(c, 3600) AS live_view FROM quoting_help.c WHERE k <= 4 ORDER BY k;
RESET ROLE;
SELECT k, ttl.enable(c, 3600) AS live_view FROM quoting_help.c WHERE k > 4 ORDER BY k;
SET ROLE :"owner";
SELECT q.k, c.live_view, c.default_ttl, c.purge_index, v.relowner::regrole AS view_owner,
       obj_description(c.live_view, 'pg_class') AS view_comment
  FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c
  JOIN pg_class v ON v.oid = c.live_view ORDER BY q.k;
SELECT k, quoting_help.ttl_indexes(c) FROM quoting_help.c ORDER BY k;
SELECT k, count(*) AS stamp_triggers FROM quoting_help.c q
  JOIN pg_trigger t ON (t.tgrelid = q.c OR t.tgrelid IN (SELECT relid FROM pg_partition_tree(q.c)))
                   AND t.tgname = 'zzz_ttl_stamp'
 GROUP BY k ORDER BY k;

-- rule 9: a deadline property on every container (ttl.set_deadline_property
-- builds the deadline index and comments it)
SELECT k, ttl.set_deadline_property(c, 'expiresAt') FROM quoting_help.c ORDER BY k;
SELECT k, quoting_help.ttl_indexes(c) FROM quoting_help.c ORDER BY k;

-- items, written through the live views (the stamp trigger fires): id 1
-- inherits the default (expires at +3600 s), 2 has ttl 60, 3 ttl -1 (never),
-- 4 a deadline at +120 s, 5 ttl 86400
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT q.k, c.live_view FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c LOOP
        EXECUTE format('INSERT INTO %s (id, doc) SELECT g, d FROM (VALUES'
                       ' (1, ''{}''::jsonb), (2, ''{"ttl": 60}''), (3, ''{"ttl": -1}''),'
                       ' (4, ''{"expiresAt": "2030-01-01T00:02:00Z"}''), (5, ''{"ttl": 86400}'')) v(g, d)',
                       r.live_view);
        IF r.k = 8 THEN
            EXECUTE format('INSERT INTO %s (id, doc) SELECT id + 1000, doc FROM %s', r.live_view, r.live_view);
        END IF;
    END LOOP;
END $$;
SELECT k, quoting_help.live_count(c.live_view) AS live
  FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c ORDER BY k;

-- the item functions
SELECT k, (ttl.state(c, '{"_ts": 1893456000, "ttl": 60}')).*,
       ttl.expires_at(c, '{"_ts": 1893456000, "expiresAt": 1893456030}'),
       ttl.is_expired(c, '{"_ts": 1893456000, "ttl": 60}')
  FROM quoting_help.c ORDER BY k;

-- 90 s later: item 2 expired (ttl.now_override is for superusers)
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:01:30+00';
SET ROLE :"owner";
SELECT q.k, quoting_help.live_count(c.live_view) AS live,
       (SELECT expired FROM ttl.backlog(q.c)) AS backlog,
       s.expired_backlog AS stats_backlog,
       (SELECT hidden FROM ttl.preview(q.c, 60) WHERE scenario = 'proposed') AS hidden_at_60,
       (SELECT count(*) FROM ttl.expiring(q.c, '1 hour')) AS expiring_1h
  FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c
  JOIN ttl.stats s ON s.container = q.c ORDER BY q.k;
-- the view's filter called directly
DO $$
DECLARE
    r record;
    n bigint;
BEGIN
    FOR r IN SELECT * FROM quoting_help.c ORDER BY k LOOP
        EXECUTE format('SELECT count(*) FROM %s WHERE ttl.live(doc, %L)', r.c, r.c) INTO n;
        RAISE NOTICE '%: % live by ttl.live', r.k, n;
    END LOOP;
END $$;
-- purge: 0-3 by ttl.purge(container), the rest by CALL ttl.run_purge()
SELECT k, ttl.purge(c) FROM quoting_help.c WHERE k <= 3 ORDER BY k;
CALL ttl.run_purge();
SELECT q.k, s.rows_purged, s.last_error, s.held_since
  FROM quoting_help.c q JOIN ttl.stats s ON s.container = q.c ORDER BY q.k;

-- pause / resume / set_default_ttl
SELECT k, ttl.pause(c) FROM quoting_help.c ORDER BY k;
SELECT k, c.paused FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c ORDER BY k;
SELECT k, ttl.resume(c), ttl.set_default_ttl(c, 7200) FROM quoting_help.c ORDER BY k;
SELECT k, c.paused, c.default_ttl FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c ORDER BY k;

-- rule 10 off and on again (1.7)
SELECT k, ttl.set_replace_expired(c, false) FROM quoting_help.c ORDER BY k;
SELECT k, c.replace_expired FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c ORDER BY k;
SELECT k, ttl.set_replace_expired(c, true) FROM quoting_help.c ORDER BY k;

-- a purge window and none again (1.9)
SELECT k, ttl.set_purge_window(c, '01:00-05:00 UTC') FROM quoting_help.c ORDER BY k;
SELECT k, r.purge_window FROM quoting_help.c q JOIN ttl.registry r ON r.relid = q.c ORDER BY k;
SELECT k, ttl.set_purge_window(c, NULL) FROM quoting_help.c ORDER BY k;
-- change-stream marking per container (1.9, superuser only) and the
-- monitoring view (1.9, pg_read_all_stats: the superuser here)
RESET ROLE;
SELECT k, ttl.set_mark_purge_deletes(c, 'on') FROM quoting_help.c ORDER BY k;
SELECT q.k, m.rows_purged, m.expired_backlog, m.failing, m.paused
  FROM quoting_help.c q JOIN ttl.container_metrics m ON m.container = q.c ORDER BY q.k;
SELECT k, ttl.set_mark_purge_deletes(c, 'default') FROM quoting_help.c ORDER BY k;
SET ROLE :"owner";

-- archives (1.8): each container archives into a table of its own schema
-- whose name needs quoting too; a purge in the far future moves its rows
-- there (the INSERT names the archive and its columns quoted once), rolled
-- back; then archiving stops
DO $$
DECLARE
    n record;
BEGIN
    FOR n IN SELECT * FROM quoting_help.names ORDER BY k LOOP
        EXECUTE format('CREATE TABLE %I.%I (id int, doc jsonb NOT NULL)', n.nsp, 'Arch "' || n.k || '".a');
    END LOOP;
END $$;
SELECT k, ttl.set_archive(c, format('%I.%I', n.nsp, 'Arch "' || n.k || '".a')::regclass)
  FROM quoting_help.c JOIN quoting_help.names n USING (k) ORDER BY k;
SELECT k, c.archive FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c ORDER BY k;
BEGIN;
RESET ROLE;
SET LOCAL ttl.now_override = '2100-01-01 00:00:00+00';
SET ROLE :"owner";
SELECT k, ttl.purge(c) AS purged, quoting_help.live_count(c.archive) AS archived
  FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c ORDER BY k;
ROLLBACK;
SET ROLE :"owner";
SELECT k, ttl.set_archive(c, NULL) FROM quoting_help.c ORDER BY k;
SELECT count(*) AS archived FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c
 WHERE c.archive IS NOT NULL;

-- retiring whole partitions (1.9): the partitioned container retires its
-- leaves in a purge in the far future, rolled back (DETACH and DROP name
-- the parent and the leaf quoted once, at any depth; ttl.retired records
-- the leaf's name quoted once); the others are set off
SELECT k, ttl.set_retire(c, CASE WHEN (SELECT relkind FROM pg_class WHERE oid = c) = 'p'
                                 THEN 'drop' ELSE 'off' END)
  FROM quoting_help.c ORDER BY k;
SELECT k, c.retire FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c ORDER BY k;
BEGIN;
RESET ROLE;
SET LOCAL ttl.now_override = '2100-01-01 00:00:00+00';
SET ROLE :"owner";
-- the items that never expire ("ttl": -1) would keep their leaves: gone
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT c FROM quoting_help.c WHERE k = 8 LOOP
        EXECUTE format('DELETE FROM %s WHERE doc @> ''{"ttl": -1}''', r.c);
    END LOOP;
END $$;
SELECT k, ttl.purge(c) AS purged FROM quoting_help.c ORDER BY k;
SELECT q.k, r.leaf, r.mode, r.items FROM ttl.retired r JOIN quoting_help.c q ON q.c = r.container
 ORDER BY r.leaf COLLATE "C";
ROLLBACK;
SET ROLE :"owner";
SELECT k, ttl.set_retire(c, 'off') FROM quoting_help.c ORDER BY k;

-- every purge index mode, in both forms of ttl.set_append_only
SELECT k, ttl.set_append_only(c, true) FROM quoting_help.c ORDER BY k;
SELECT k, quoting_help.ttl_indexes(c) FROM quoting_help.c ORDER BY k;
SELECT k, ttl.set_append_only(c, true, 'none') FROM quoting_help.c ORDER BY k;
SELECT k, c.purge_index, quoting_help.ttl_indexes(q.c)
  FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c ORDER BY k;
SELECT k, ttl.set_append_only(c, false, 'btree') FROM quoting_help.c ORDER BY k;
SELECT k, ttl.set_append_only(c, true, 'brin') FROM quoting_help.c ORDER BY k;
SELECT k, c.purge_index FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c ORDER BY k;
SELECT k, ttl.set_append_only(c, false) FROM quoting_help.c ORDER BY k;
SELECT k, c.purge_index, quoting_help.ttl_indexes(q.c)
  FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c ORDER BY k;

-- the deadline index of another property built beforehand: the first name
-- is taken by the present property's index (the to_regclass check), so
-- the statements use the alternative one; they run (\gexec), then
-- ttl.set_deadline_property finds the index and builds nothing
SELECT s FROM quoting_help.c, ttl.deadline_index_sql(c, 'dueBy') s WHERE k IN (1, 8);
SELECT s FROM quoting_help.c, ttl.deadline_index_sql(c, 'dueBy') s \gexec
SELECT k, ttl.set_deadline_property(c, 'dueBy') FROM quoting_help.c ORDER BY k;
SELECT k, quoting_help.ttl_indexes(c) FROM quoting_help.c ORDER BY k;
SELECT count(*) AS statements_left FROM quoting_help.c, ttl.deadline_index_sql(c, 'dueBy');
-- (enabled under 1.7: nothing to move to the single purge index)
SELECT count(*) AS statements_left FROM quoting_help.c, ttl.upgrade_purge_index_sql(c);

-- the table renamed, moved to another schema, its schema renamed: the live
-- view follows, then purge, the backlog and the statements still work
ALTER TABLE :"s1".:"t1" RENAME TO :"t1r";
ALTER TABLE :"s2".:"t2" SET SCHEMA :"s6";
ALTER SCHEMA :"s3" RENAME TO :"s3r";
ALTER SCHEMA :"s5" RENAME TO :"s5r";
SELECT k, c.container, c.live_view FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c
 WHERE k IN (1, 2, 3, 5, 8) ORDER BY k;
RESET ROLE;
SET ttl.now_override = '2030-01-02 00:00:00+00';
SET ROLE :"owner";
SELECT q.k, quoting_help.live_count(c.live_view) AS live, (SELECT expired FROM ttl.backlog(q.c)) AS backlog
  FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c ORDER BY q.k;
SELECT k, ttl.purge(c) FROM quoting_help.c WHERE k <= 2 ORDER BY k;
-- a superuser's purge runs as the owner
RESET ROLE;
SELECT k, ttl.purge(c) AS purged_by_superuser FROM quoting_help.c WHERE k BETWEEN 3 AND 5 ORDER BY k;
SET ROLE :"owner";
-- ttl.purge() purges every container of the caller's
SELECT ttl.purge() AS purged_by_owner;
SELECT k, ttl.set_deadline_property(c, 'expiresAt') FROM quoting_help.c WHERE k IN (1, 2, 3, 5, 8) ORDER BY k;
SELECT s FROM quoting_help.c, ttl.deadline_index_sql(c, 'dueBy') s WHERE k IN (1, 2, 3, 5, 8) \gexec
SELECT k, quoting_help.ttl_indexes(c) FROM quoting_help.c WHERE k IN (1, 2, 3, 5, 8) ORDER BY k;
SELECT q.k, quoting_help.live_count(c.live_view) AS live, s.rows_purged
  FROM quoting_help.c q JOIN ttl.containers c ON c.container = q.c
  JOIN ttl.stats s ON s.container = q.c ORDER BY q.k;

-- a superuser's preview (the items left: those with ttl -1)
RESET ROLE;
SELECT k, (SELECT items FROM ttl.preview(c, NULL) WHERE scenario = 'current') AS items
  FROM quoting_help.c ORDER BY k;
SET ROLE :"owner";

-- the functions that name no container: once each
SELECT ttl.now(), ttl.doc_ts('{"_ts": 5}'), ttl.doc_ttl('{"ttl": 5}'), ttl.doc_expiry('{"_ts": 5, "ttl": 5}'),
       ttl.doc_expired('{"_ts": 5}', 5, 10), ttl.doc_expired('{"_ts": 5}', 5, 9, 'd'),
       ttl.doc_purge_key('{"_ts": 5}'), ttl.doc_deadline_key('{"d": 7}', 'd'),
       ttl.field('{"a": "x"}', 'a'), ttl.field_bigint('{"a": 1}', 'a'), ttl.field_float('{"a": 1.5}', 'a'),
       ttl.path('{"a": {"b": "y"}}', 'a', 'b'), ttl.contains('{"a": 1}', '{"a": 1}'),
       (ttl.calculate(60, NULL, 0, to_timestamp(30))).expires_at;
-- pg_cron is not installed: 55000 (the database name is an argument, quoted by pg_cron)
DO $$
BEGIN
    PERFORM ttl.schedule_purge('* * * * *', 'Sales "db"');
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    RAISE NOTICE 'schedule_purge: %', SQLSTATE;
END $$;
DO $$
BEGIN
    PERFORM ttl.unschedule_purge('Sales "db"');
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    RAISE NOTICE 'unschedule_purge: %', SQLSTATE;
END $$;
-- the pool's views (empty without shared_preload_libraries) and Citus's
RESET ROLE;
SELECT count(*) >= 0 AS databases_read FROM ttl.databases;
SELECT count(*) AS worker_pool_rows FROM ttl.worker_pool;
SELECT count(*) AS distributed FROM ttl.distributed_stats;
SELECT count(*) AS purge_failures FROM ttl.purge_failures f JOIN quoting_help.c q ON q.c = f.container;
SELECT count(*) AS purge_progress FROM ttl.purge_progress WHERE database = current_database();
SET ROLE :"owner";

-- legal holds (1.8): set, read and released on every container
SELECT k, ttl.set_legal_hold(c, 'case "X".1', '{"case": "X"}') FROM quoting_help.c ORDER BY k;
SELECT q.k, h.name, h.match, h.held_expired
  FROM quoting_help.c q JOIN ttl.legal_holds h ON h.container = q.c ORDER BY q.k;
SELECT k, ttl.release_legal_hold(c, 'case "X".1') FROM quoting_help.c ORDER BY k;

-- ttl.disable: nothing of ttl's is left on the tables
SELECT k, ttl.disable(c) FROM quoting_help.c ORDER BY k;
SELECT count(*) AS containers FROM ttl.containers c JOIN quoting_help.c q ON q.c = c.container;
SELECT k, quoting_help.ttl_indexes(c) AS ttl_indexes,
       (SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = q.c AND t.tgname = 'zzz_ttl_stamp') AS triggers,
       (SELECT count(*) FROM pg_depend d WHERE d.classid = 'pg_rewrite'::regclass
           AND d.refclassid = 'pg_class'::regclass AND d.refobjid = q.c) AS views
  FROM quoting_help.c q ORDER BY k;
RESET ROLE;

-- every public function of the extension was called above (a call that
-- raises is not counted: the two pg_cron functions are listed), and every
-- view read (the list of views is this test's; the catalog's must match it)
SELECT pg_stat_force_next_flush();
SELECT p.oid::regprocedure AS public_function_not_called
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
                  AND d.refclassid = 'pg_extension'::regclass
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'ttl'
  LEFT JOIN pg_stat_user_functions s ON s.funcid = p.oid
  LEFT JOIN quoting_calls_before b ON b.funcid = p.oid
 WHERE p.proname NOT LIKE '\_%'
   AND coalesce(s.calls, 0) <= coalesce(b.calls, 0)
   AND p.oid::regprocedure::text NOT IN ('ttl.schedule_purge(text,name)', 'ttl.unschedule_purge(name)')
 ORDER BY p.oid::regprocedure::text COLLATE "C";
SELECT coalesce(c.oid::regclass::text, t.v) AS view, c.oid IS NOT NULL AS in_catalog, t.v IS NOT NULL AS in_test
  FROM (SELECT c.oid FROM pg_class c
          JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
                          AND d.refclassid = 'pg_extension'::regclass
          JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'ttl'
         WHERE c.relkind = 'v') c
  FULL JOIN (VALUES ('ttl.containers'), ('ttl.stats'), ('ttl.databases'), ('ttl.worker_pool'),
                    ('ttl.distributed_stats'), ('ttl.legal_holds'), ('ttl.purge_failures'),
                    ('ttl.retired'), ('ttl.container_metrics'), ('ttl.purge_progress'))
            t(v) ON t.v = c.oid::regclass::text
 WHERE c.oid IS NULL OR t.v IS NULL;

DROP TABLE quoting_calls_before;
SET ROLE :"owner";
DROP SCHEMA :"s0", :"s1", :"s2", :"s3r", :"s4", :"s5r", :"s6", :"s7", quoting_help CASCADE;
RESET ROLE;
REVOKE CREATE ON DATABASE :"DBNAME" FROM :"owner";
DROP ROLE :"owner";
