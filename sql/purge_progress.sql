-- ttl.purge_progress (1.9): SPEC's columns, in order, with their types; no
-- row for this database while nothing purges here; readable by every role
-- (what a row shows is filtered per reader, as pg_stat_activity does:
-- purge_progress_self and TAP 097 show the rows).
SELECT a.attnum, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type
  FROM pg_attribute a
 WHERE a.attrelid = 'ttl.purge_progress'::regclass AND a.attnum > 0
 ORDER BY a.attnum;
SELECT count(*) AS purges_here FROM ttl.purge_progress WHERE database = current_database();
SELECT has_table_privilege('public', 'ttl.purge_progress', 'SELECT') AS public_reads;
CREATE ROLE regress_pp_nobody;
SET ROLE regress_pp_nobody;
SELECT count(*) AS purges_here FROM ttl.purge_progress WHERE database = current_database();
RESET ROLE;
DROP ROLE regress_pp_nobody;
