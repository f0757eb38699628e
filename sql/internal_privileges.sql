-- Who may call ttl's internal functions (issue 25, item 1).  Every ttl._*
-- function is classified below: revoked from PUBLIC (only tests, the
-- benchmark, an older upgrade script or nothing call it), or left callable
-- because a public function or view calls it with the caller's rights, and
-- then it checks ownership (or SELECT) first, or only computes a name, or
-- reads catalogs without evaluating anything of a table's owner.  The
-- classification must match the catalog: a new internal function fails
-- this test until it is classified here.  ttl.deadline_index_sql needs
-- ownership of the table.  The same after ALTER EXTENSION ttl UPDATE from
-- 1.6.
\set SHOW_CONTEXT never
CREATE TEMP TABLE internal_class (sig text PRIMARY KEY, public_execute boolean NOT NULL, why text NOT NULL);
INSERT INTO internal_class VALUES
    -- revoked: no role's own SQL has any business with them
    ('ttl._validate(regclass,jsonb,name)', false, 'only 1.0''s ttl.enable called it'),
    ('ttl._purge_statement(regclass,boolean)', false, 'tests and bench/run (superuser), for EXPLAIN'),
    ('ttl._purge_plan_options()', false, 'tests and bench/run (superuser), for EXPLAIN'),
    ('ttl._follow_table(regclass)', false, 'the 1.0 -> 1.1 upgrade script (ALTER EXTENSION, superuser)'),
    ('ttl._citus_sync_policy(regclass)', false, 'no SQL caller'),
    ('ttl._on_sql_drop()', false, 'event trigger (SECURITY DEFINER)'),
    ('ttl._ddl_start()', false, 'event trigger'),
    ('ttl._ddl_end()', false, 'event trigger'),
    ('ttl._databases()', false, 'the view ttl.databases, granted to pg_read_all_stats'),
    ('ttl._worker_pool()', false, 'the view ttl.worker_pool, granted to pg_read_all_stats'),
    ('ttl._monitor_backlog(regclass)', false, 'the view ttl.container_metrics, granted to pg_read_all_stats; checks pg_read_all_stats itself, walks as the owner'),
    ('ttl._trigger_args(name,text,boolean,integer,boolean,text,integer)', false, 'tests: the trigger arguments'' codec'),
    ('ttl._trigger_args_decode(text[])', false, 'tests: the trigger arguments'' codec'),
    ('ttl._in_purge_window(text,timestamp with time zone)', false, 'tests: the purge window parser'),
    ('ttl._next_purge_window(text,timestamp with time zone)', false, 'tests: the purge window parser'),
    ('ttl._rule10_counts()', false, 'tests and bench: rule 10''s probes and skips in this database'),
    -- callable: called with the caller's rights by a public function or view
    ('ttl._register(regclass,integer,name)', true, 'ttl.enable; checks ownership first'),
    ('ttl._existing_rows(regclass,name,boolean)', true, 'ttl.enable; checks ownership first, works as the owner'),
    ('ttl._set_objects(regclass,regclass)', true, 'ttl.enable; checks ownership first'),
    ('ttl._stamp_trigger(regclass,name)', true, 'ttl.enable; checks ownership first, CREATE TRIGGER as the caller'),
    ('ttl._unregister(regclass)', true, 'ttl.disable; checks ownership first'),
    ('ttl._set_append_only(regclass,boolean)', true, 'ttl.set_append_only (1.3 form); checks ownership first'),
    ('ttl._set_append_only(regclass,boolean,text)', true, 'ttl.set_append_only; checks ownership first'),
    ('ttl._set_deadline_property(regclass,text)', true, 'ttl.set_deadline_property; checks ownership first'),
    ('ttl._check_deadlines(regclass)', true, 'ttl.set_deadline_property; checks ownership first, scans as the owner'),
    ('ttl._is_deadline_index(regclass,regclass)', true, 'ttl.set_deadline_property and ttl.deadline_index_sql, after their ownership check; checks ownership itself; reads index definitions as stored'),
    ('ttl._purge_index_name(name,boolean)', true, 'ttl.enable, ttl.set_append_only, ttl.upgrade_purge_index_sql; a name only'),
    ('ttl._deadline_index_name(name,boolean)', true, 'ttl.set_deadline_property, ttl.deadline_index_sql; a name only'),
    ('ttl._backlog(regclass)', true, 'the view ttl.stats; checks SELECT, walks as the owner'),
    ('ttl._stats_backlog(regclass)', true, 'the view ttl.stats (1.9); checks SELECT, walks as the owner'),
    ('ttl._behind(regclass,timestamp with time zone)', true, 'the view ttl.stats; reads the registry and the settings, runs nothing of a table''s owner'),
    ('ttl._legal_hold_expired(regclass,jsonb)', true, 'the view ttl.legal_holds; checks SELECT and row security, walks as the owner'),
    ('ttl._distributed_stats()', true, 'the view ttl.distributed_stats; ttl.purge_stats and Citus metadata'),
    ('ttl._citus_kind(regclass)', true, 'ttl._distributed_stats; Citus metadata only'),
    ('ttl._placement_stats(regclass)', true, 'ttl._distributed_stats on every node; ttl.purge_stats and Citus metadata'),
    ('ttl._local_placements(regclass)', true, 'ttl._placement_stats; Citus metadata only'),
    ('ttl._purge_placements(regclass,bigint)', true, 'ttl.purge of a distributed container, on every node; checks ownership first'),
    ('ttl._own_index(regclass,text)', true, 'ttl.enable, ttl.set_append_only, ttl.set_deadline_property and the statements of ttl.upgrade_purge_index_sql / ttl.deadline_index_sql; checks ownership first'),
    ('ttl._owned_indexes(regclass,text)', true, 'ttl.disable, ttl.set_append_only, ttl.set_deadline_property, ttl.upgrade_purge_index_sql; reads catalogs and ttl.indexes only'),
    ('ttl._purge_index_kind(regclass,regclass)', true, 'ttl.upgrade_purge_index_sql; reads index definitions as stored, evaluates nothing'),
    ('ttl._purge_progress()', true, 'the view ttl.purge_progress; reads shared memory only, and shows each row as pg_stat_activity shows a session to the reader');

CREATE VIEW internal_catalog AS
SELECT p.oid::regprocedure::text AS sig, has_function_privilege('public', p.oid, 'EXECUTE') AS public_execute
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'ttl'
 WHERE p.proname LIKE '\_%';

-- differences between the catalog and the classification: none
SELECT coalesce(c.sig, k.sig) AS function, c.public_execute AS in_catalog, k.public_execute AS classified
  FROM internal_catalog c FULL JOIN internal_class k ON k.sig = c.sig
 WHERE c.public_execute IS DISTINCT FROM k.public_execute
 ORDER BY 1;
SELECT sig AS revoked_from_public FROM internal_catalog WHERE NOT public_execute ORDER BY 1;
SELECT count(*) AS internal_functions, string_agg(sig, ', ' ORDER BY sig) FILTER (WHERE NOT public_execute) AS revoked
  FROM internal_catalog \gset fresh_

CREATE ROLE regress_ttl_ip_owner;
CREATE ROLE regress_ttl_ip_member IN ROLE regress_ttl_ip_owner;
CREATE ROLE regress_ttl_ip_plain;
CREATE SCHEMA ip AUTHORIZATION regress_ttl_ip_owner;
GRANT USAGE ON SCHEMA ip TO regress_ttl_ip_plain, regress_ttl_ip_member;
CREATE FUNCTION pg_temp.try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- the owner does everything through the public functions (the internal
-- ones they call as the owner still work)
SET ROLE regress_ttl_ip_owner;
CREATE TABLE ip.docs (id int PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO ip.docs VALUES (1, '{"until": 4070908800}');
SELECT ttl.enable('ip.docs', 60, deadline_property => 'until');
SELECT ttl.set_deadline_property('ip.docs', 'until');
SELECT ttl.set_append_only('ip.docs', true);
SELECT ttl.deadline_index_sql('ip.docs', 'other');
SELECT count(*) AS rows_left FROM ip.docs;
RESET ROLE;

-- every revoked function: 42501, for the owner too, and for a role
-- that owns nothing
SELECT format('SELECT %s(%s)', p.oid::regproc,
              CASE WHEN p.pronargs = 0 THEN ''
                   ELSE array_to_string(ARRAY(
                            SELECT CASE t WHEN 'regclass'::regtype THEN '''ip.docs'''
                                          WHEN 'jsonb'::regtype THEN '''{}'''
                                          WHEN 'name'::regtype THEN '''doc'''
                                          WHEN 'boolean'::regtype THEN 'false'
                                          WHEN 'text'::regtype THEN '''x'''
                                          WHEN 'integer'::regtype THEN '1'
                                          WHEN 'text[]'::regtype THEN '''{doc}''::text[]'
                                          WHEN 'timestamptz'::regtype THEN 'now()' END
                              FROM unnest(p.proargtypes::regtype[]) t), ', ') END) AS q
  INTO TEMP revoked_calls
  FROM internal_catalog c JOIN pg_proc p ON p.oid = c.sig::regprocedure
 WHERE NOT c.public_execute AND p.prorettype <> 'event_trigger'::regtype;
GRANT SELECT ON revoked_calls TO PUBLIC;
SET ROLE regress_ttl_ip_owner;
SELECT q, pg_temp.try(q) FROM revoked_calls ORDER BY q;
SET ROLE regress_ttl_ip_plain;
SELECT q, pg_temp.try(q) FROM revoked_calls ORDER BY q;
RESET ROLE;
-- the superuser still may (tests and the benchmark EXPLAIN the purge statement)
SELECT ttl._purge_statement('ip.docs', false) IS NOT NULL AS superuser_gets_statement;

-- ttl.deadline_index_sql: the owner, a member of its role or a superuser
SET ROLE regress_ttl_ip_plain;
SELECT pg_temp.try('SELECT ttl.deadline_index_sql(''ip.docs'', ''other'')') AS plain;
SELECT ttl.deadline_index_sql('ip.docs', 'other');
SET ROLE regress_ttl_ip_member;
SELECT ttl.deadline_index_sql('ip.docs', 'other') AS member;
RESET ROLE;
SELECT ttl.deadline_index_sql('ip.docs', 'other') AS superuser;

-- ttl._is_deadline_index: callable, but the owner's (or a superuser's) only
SET ROLE regress_ttl_ip_plain;
SELECT pg_temp.try('SELECT ttl._is_deadline_index(''ip.docs_pkey'', ''ip.docs'')') AS plain;
SET ROLE regress_ttl_ip_member;
SELECT ttl._is_deadline_index('ip.docs_pkey', 'ip.docs') AS member;
RESET ROLE;
SELECT ttl._is_deadline_index('ip.docs_pkey', 'ip.docs') AS superuser;
SELECT pg_temp.try('SELECT ttl.deadline_index_sql(4294967295::oid::regclass, ''other'')') AS no_such_table;

DROP SCHEMA ip CASCADE;

-- ALTER EXTENSION ttl UPDATE from 1.6: the same privileges and checks
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_ip_up;
ALTER DATABASE regress_ttl_ip_up SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_ip_up
\set SHOW_CONTEXT never
CREATE EXTENSION ttl VERSION '1.6';
CREATE SCHEMA ip AUTHORIZATION regress_ttl_ip_owner;
GRANT USAGE ON SCHEMA ip TO regress_ttl_ip_plain;
SET ROLE regress_ttl_ip_owner;
CREATE TABLE ip.docs (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('ip.docs', 60, deadline_property => 'until');
SET ROLE regress_ttl_ip_plain;
-- 1.6: anybody could
SELECT count(*) AS plain_gets_statements_16 FROM ttl.deadline_index_sql('ip.docs', 'other');
SELECT ttl._purge_statement('ip.docs', false) IS NOT NULL AS plain_purge_statement_16;
RESET ROLE;
ALTER EXTENSION ttl UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
CREATE TEMP TABLE internal_class AS
SELECT p.oid::regprocedure::text AS sig, has_function_privilege('public', p.oid, 'EXECUTE') AS public_execute
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'ttl'
 WHERE p.proname LIKE '\_%';
-- the same internal functions, the same revoked as a fresh install
SELECT count(*) = :fresh_internal_functions AS same_functions,
       string_agg(sig, ', ' ORDER BY sig) FILTER (WHERE NOT public_execute) = :'fresh_revoked' AS same_revoked
  FROM internal_class;
CREATE FUNCTION pg_temp.try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SET ROLE regress_ttl_ip_plain;
SELECT pg_temp.try('SELECT ttl.deadline_index_sql(''ip.docs'', ''other'')') AS plain_deadline_index_sql,
       pg_temp.try('SELECT ttl._purge_statement(''ip.docs'', false)') AS plain_purge_statement;
SET ROLE regress_ttl_ip_owner;
SELECT count(*) AS owner_gets_statements FROM ttl.deadline_index_sql('ip.docs', 'other');
SELECT ttl.set_deadline_property('ip.docs', 'other');
RESET ROLE;
\c :orig_db
DROP DATABASE regress_ttl_ip_up;
DROP ROLE regress_ttl_ip_owner, regress_ttl_ip_member, regress_ttl_ip_plain;
