-- What ttl.stats, ttl.purge_stats and ttl.backlog show to whom (1.7, issue
-- 25 item 4).  A purge error's text (last_error) can carry row data (a
-- trigger's message): ttl.stats shows it only to roles that may SELECT the
-- table and whom row-level security does not restrict, and ttl.purge_stats
-- no longer grants that column to PUBLIC.  The backlog counts rows that
-- row-level security may hide: ttl.stats gives NULL backlog columns and
-- ttl.backlog 42501 when it applies to the reader.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE ROLE regress_sp_owner;
CREATE ROLE regress_sp_reader;			-- SELECT on the table
CREATE ROLE regress_sp_other;			-- SELECT on the live view only
CREATE ROLE regress_sp_bypass BYPASSRLS;	-- SELECT on the table, bypasses RLS
CREATE SCHEMA sp AUTHORIZATION regress_sp_owner;
GRANT USAGE ON SCHEMA sp TO regress_sp_reader, regress_sp_other, regress_sp_bypass;

-- a container whose purge fails: the owner's DELETE trigger refuses, and
-- its message carries a document's content
SET ROLE regress_sp_owner;
CREATE TABLE sp.e (id int PRIMARY KEY, doc jsonb NOT NULL, who name NOT NULL);
SELECT ttl.enable('sp.e', 60) IS NOT NULL AS enabled;
CREATE FUNCTION sp.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'will not delete the item of %', OLD.doc->>'secret';
END $$;
CREATE TRIGGER e_refuse BEFORE DELETE ON sp.e FOR EACH ROW EXECUTE FUNCTION sp.refuse();
INSERT INTO sp.e VALUES (1, '{"secret": "s3cr3t"}', 'regress_sp_owner'),
                        (2, '{}', 'regress_sp_reader'),
                        (3, '{}', 'regress_sp_bypass');
GRANT SELECT ON sp.e TO regress_sp_reader, regress_sp_bypass;
GRANT SELECT ON sp.e_live TO regress_sp_other;
RESET ROLE;
SET ttl.now_override = '2026-01-01 00:10:00+00';
CALL ttl.run_purge();
-- the rows it isolated as failing are left out of the backlog from 1.9
-- (sql/purge_window.sql): forget them (runtime state), so that the backlog
-- below counts rows that row-level security may hide
DELETE FROM ttl.purge_failure WHERE relid = 'sp.e'::regclass;

-- who sees the error's text: the superuser, the owner, a role with SELECT
-- on the table; not a role without it (last_error_at and the counters stay
-- visible to everyone)
CREATE FUNCTION pg_temp.seen() RETURNS TABLE (role name, last_error text, last_error_at_set boolean,
                                              rows_purged bigint, expired_backlog bigint)
LANGUAGE sql AS $$
SELECT current_user, last_error, last_error_at IS NOT NULL, rows_purged, expired_backlog
  FROM ttl.stats WHERE container = 'sp.e'::regclass
$$;
SELECT * FROM pg_temp.seen();
SET ROLE regress_sp_owner;
SELECT * FROM pg_temp.seen();
SET ROLE regress_sp_reader;
SELECT * FROM pg_temp.seen();
SET ROLE regress_sp_other;
SELECT * FROM pg_temp.seen();
-- ttl.purge_stats: every column but last_error, to everyone
SELECT relid::regclass, rows_purged, last_purge_at, last_error_at IS NOT NULL AS last_error_at_set
  FROM ttl.purge_stats WHERE relid = 'sp.e'::regclass;
SELECT count(*) FROM ttl.purge_stats WHERE relid = 'sp.e'::regclass;
SELECT last_error FROM ttl.purge_stats;
SELECT * FROM ttl.purge_stats;
RESET ROLE;
SELECT attname, has_column_privilege('public', 'ttl.purge_stats', attname, 'SELECT') AS public_select
  FROM pg_attribute WHERE attrelid = 'ttl.purge_stats'::regclass AND attnum > 0 ORDER BY attnum;
SELECT has_table_privilege('public', 'ttl.purge_stats', 'SELECT') AS public_table_select;

-- row-level security on the table, a policy showing each role its own rows
SET ROLE regress_sp_owner;
ALTER TABLE sp.e ENABLE ROW LEVEL SECURITY;
CREATE POLICY e_own ON sp.e FOR SELECT USING (who = current_user);
RESET ROLE;
CREATE FUNCTION pg_temp.seen_rls() RETURNS TABLE (role name, last_error text, expired_backlog bigint,
                                                  oldest_expired_at timestamptz, oldest_expired_age interval)
LANGUAGE sql AS $$
SELECT current_user, last_error, expired_backlog, oldest_expired_at, oldest_expired_age
  FROM ttl.stats WHERE container = 'sp.e'::regclass
$$;
-- the reader it applies to: NULLs in ttl.stats, 42501 from ttl.backlog
SET ROLE regress_sp_reader;
SELECT count(*) AS rows_it_sees FROM sp.e;
SELECT * FROM pg_temp.seen_rls();
SELECT * FROM ttl.backlog('sp.e');
-- also with row_security off (a query RLS would filter raises for it):
-- the view still answers, ttl.backlog refuses the same way
SET row_security = off;
SELECT * FROM pg_temp.seen_rls();
SELECT * FROM ttl.backlog('sp.e');
RESET row_security;
-- the owner (RLS does not apply to it without FORCE), a BYPASSRLS role, a
-- superuser: the numbers and the text
SET ROLE regress_sp_owner;
SELECT * FROM pg_temp.seen_rls();
SELECT * FROM ttl.backlog('sp.e');
SET ROLE regress_sp_bypass;
SELECT * FROM pg_temp.seen_rls();
SELECT * FROM ttl.backlog('sp.e');
RESET ROLE;
SELECT * FROM pg_temp.seen_rls();
SELECT * FROM ttl.backlog('sp.e');
-- FORCE ROW LEVEL SECURITY: now it applies to the owner too (and the
-- walks, which run as the owner, count the rows its policies let it see:
-- 1, for those who may see numbers)
SET ROLE regress_sp_owner;
ALTER TABLE sp.e FORCE ROW LEVEL SECURITY;
SELECT * FROM pg_temp.seen_rls();
SELECT * FROM ttl.backlog('sp.e');
SET ROLE regress_sp_bypass;
SELECT * FROM pg_temp.seen_rls();
RESET ROLE;
SELECT * FROM pg_temp.seen_rls();
-- a SECURITY DEFINER function of the owner's that reads ttl.stats answers
-- for the owner (its current user), never the caller's privileges: the
-- check is made for whoever runs the query
SET ROLE regress_sp_owner;
ALTER TABLE sp.e NO FORCE ROW LEVEL SECURITY;
CREATE FUNCTION sp.owner_view() RETURNS TABLE (last_error text, expired_backlog bigint)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
SELECT last_error, expired_backlog FROM ttl.stats WHERE container = 'sp.e'::regclass
$$;
GRANT EXECUTE ON FUNCTION sp.owner_view() TO regress_sp_other;
SET ROLE regress_sp_other;
SELECT * FROM sp.owner_view();
SELECT last_error, expired_backlog FROM ttl.stats WHERE container = 'sp.e'::regclass;
RESET ROLE;

-- the whole view in one query (RLS on one table, none on the other, no
-- SELECT at all): nobody gets an error
SET ROLE regress_sp_owner;
CREATE TABLE sp.plain (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('sp.plain', 60) IS NOT NULL AS enabled;
GRANT SELECT ON sp.plain TO regress_sp_reader;
RESET ROLE;
SET ROLE regress_sp_reader;
SELECT container, last_error IS NOT NULL AS error_shown, expired_backlog FROM ttl.stats
 WHERE container::text LIKE 'sp.%' ORDER BY container::text;
SET ROLE regress_sp_other;
SELECT container, last_error IS NOT NULL AS error_shown, expired_backlog FROM ttl.stats
 WHERE container::text LIKE 'sp.%' ORDER BY container::text;
RESET ROLE;

DROP SCHEMA sp CASCADE;
DROP ROLE regress_sp_owner, regress_sp_reader, regress_sp_other, regress_sp_bypass;

-- ALTER EXTENSION ttl UPDATE from 1.6 to 1.7 brings the same: before it,
-- PUBLIC reads ttl.purge_stats.last_error and ttl.stats shows it to
-- everyone; after it, neither
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_stats_privacy;
ALTER DATABASE regress_ttl_stats_privacy SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_stats_privacy
\set SHOW_CONTEXT never
CREATE EXTENSION ttl VERSION '1.6';
CREATE ROLE regress_sp_nobody;
CREATE TABLE e (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('e', 60) IS NOT NULL AS enabled;
CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'will not delete the item of %', OLD.doc->>'secret';
END $$;
CREATE TRIGGER e_refuse BEFORE DELETE ON e FOR EACH ROW EXECUTE FUNCTION refuse();
SET ttl.now_override = '2026-01-01 00:00:00+00';
INSERT INTO e VALUES (1, '{"secret": "s3cr3t"}');
SET ttl.now_override = '2026-01-01 00:10:00+00';
CALL ttl.run_purge();
SET ROLE regress_sp_nobody;
SELECT last_error FROM ttl.stats;
SELECT last_error FROM ttl.purge_stats;
RESET ROLE;
ALTER EXTENSION ttl UPDATE TO '1.7';
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
SET ROLE regress_sp_nobody;
SELECT last_error, last_error_at IS NOT NULL AS last_error_at_set FROM ttl.stats;
SELECT last_error FROM ttl.purge_stats;
SELECT rows_purged, last_error_at IS NOT NULL AS last_error_at_set FROM ttl.purge_stats;
RESET ROLE;
SELECT last_error FROM ttl.stats;
\c :orig_db
DROP DATABASE regress_ttl_stats_privacy;
DROP ROLE regress_sp_nobody;
