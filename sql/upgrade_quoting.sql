-- ALTER EXTENSION ttl UPDATE from 1.6 to 1.7 fixes the names quoted twice
-- (issue 25, item 3): containers enabled under 1.2 (two partial purge
-- indexes), whose schemas and tables are then renamed to names that need
-- quoting.  Under 1.6 ttl.upgrade_purge_index_sql and ttl.deadline_index_sql
-- aim their statements at schemas literally named "Sales" and ttl.enable /
-- ttl.set_deadline_property fail; after the update the statements are right
-- and run (\gexec), and the functions work.
\set SHOW_CONTEXT never
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_quoting_up;
ALTER DATABASE regress_ttl_quoting_up SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_quoting_up
\set SHOW_CONTEXT never
CREATE EXTENSION ttl VERSION '1.2';
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE SCHEMA q_sales;
CREATE SCHEMA q_eu;
CREATE TABLE q_sales.old (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE q_sales.oldp (id int, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE q_eu.oldp_1 PARTITION OF q_sales.oldp FOR VALUES FROM (0) TO (1000);
CREATE TABLE q_sales.oldp_2 PARTITION OF q_sales.oldp FOR VALUES FROM (1000) TO (2000) PARTITION BY RANGE (id);
CREATE TABLE q_eu.oldp_2a PARTITION OF q_sales.oldp_2 FOR VALUES FROM (1000) TO (2000);
SELECT ttl.enable('q_sales.old', 100), ttl.enable('q_sales.oldp', 100);
INSERT INTO q_sales.old SELECT g, CASE WHEN g % 2 = 0 THEN '{"ttl": 10}'::jsonb ELSE '{}' END FROM generate_series(1, 6) g;
INSERT INTO q_sales.oldp SELECT id, doc FROM q_sales.old;
INSERT INTO q_sales.oldp SELECT id + 1000, doc FROM q_sales.old;
ALTER EXTENSION ttl UPDATE TO '1.6';
ALTER TABLE q_sales.old RENAME TO "Old ""One""";
ALTER TABLE q_sales.oldp RENAME TO "Old-P";
ALTER TABLE q_eu.oldp_1 RENAME TO "part 1";
ALTER TABLE q_sales.oldp_2 RENAME TO "Part.2";
ALTER TABLE q_eu.oldp_2a RENAME TO "pärt ""2a""";
-- (in a schema with a plain name 1.6 manages a deadline property)
SELECT ttl.set_deadline_property('q_sales."Old ""One"""', 'expiresAt');
ALTER SCHEMA q_sales RENAME TO "Sales";
ALTER SCHEMA q_eu RENAME TO "sales.eu ""2""";
SELECT container, live_view FROM ttl.containers ORDER BY container::text COLLATE "C";
CREATE FUNCTION layout(t regclass) RETURNS text[] LANGUAGE sql AS $$
    SELECT array_agg(format('%s: %s', i.indexrelid::regclass,
                            regexp_replace(pg_get_indexdef(i.indexrelid), ' ON .* USING', ' USING'))
                     ORDER BY 1)
      FROM pg_index i
     WHERE i.indrelid = t AND obj_description(i.indexrelid, 'pg_class') = 'ttl purge index'
$$;

-- 1.6: the statements aim at schemas named "Sales" and "sales.eu ""2"""
-- with their quotes; deadline_index_sql misses the index name that is
-- taken (its to_regclass check looks in "Sales" with the quotes); enable,
-- set_append_only and set_deadline_property fail
SELECT ttl.upgrade_purge_index_sql('"Sales"."Old ""One"""');
SELECT ttl.upgrade_purge_index_sql('"Sales"."Old-P"');
SELECT ttl.deadline_index_sql('"Sales"."Old ""One"""', 'dueBy');
CREATE TABLE "Sales".new (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('"Sales".new', 100);
SELECT ttl.set_append_only('"Sales"."Old ""One"""', true);
SELECT ttl.set_deadline_property('"Sales"."Old-P"', 'expiresAt');
SELECT ttl.upgrade_purge_index_sql(999999999::oid::regclass);

ALTER EXTENSION ttl UPDATE TO '1.7';
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
-- the functions replaced keep their settings
SELECT p.oid::regprocedure, p.proconfig FROM pg_proc p
 WHERE p.oid IN ('ttl.enable(regclass,integer,name,text)'::regprocedure,
                 'ttl.set_append_only(regclass,boolean,text)'::regprocedure,
                 'ttl.set_deadline_property(regclass,text)'::regprocedure,
                 'ttl.deadline_index_sql(regclass,text)'::regprocedure,
                 'ttl.upgrade_purge_index_sql(regclass)'::regprocedure,
                 'ttl._distributed_stats()'::regprocedure)
 ORDER BY p.oid::regprocedure::text COLLATE "C";
-- the names are quoted once; the statements run
SELECT ttl.upgrade_purge_index_sql('"Sales"."Old ""One"""');
SELECT ttl.upgrade_purge_index_sql('"Sales"."Old ""One"""') \gexec
SELECT ttl.upgrade_purge_index_sql('"Sales"."Old-P"') \gexec
SELECT layout('"Sales"."Old ""One"""') AS old_layout, layout('"Sales"."Old-P"') AS oldp_layout;
SELECT c.relname, regexp_replace(pg_get_indexdef(i.indexrelid), ' ON .* USING', ' USING') AS def, i.indisvalid
  FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
 WHERE i.indrelid IN (SELECT relid FROM pg_partition_tree('"Sales"."Old-P"'))
   AND pg_get_indexdef(i.indexrelid) LIKE '%ttl.%'
 ORDER BY c.relname, pg_get_indexdef(i.indexrelid) COLLATE "C";
SELECT count(*) AS statements_left FROM ttl.upgrade_purge_index_sql('"Sales"."Old ""One"""');
SELECT count(*) AS statements_left FROM ttl.upgrade_purge_index_sql('"Sales"."Old-P"');
SELECT ttl.deadline_index_sql('"Sales"."Old-P"', 'expiresAt') \gexec
SELECT ttl.set_deadline_property('"Sales"."Old-P"', 'expiresAt');
-- the first name is taken: the alternative one
SELECT ttl.deadline_index_sql('"Sales"."Old ""One"""', 'dueBy');
SELECT ttl.deadline_index_sql('"Sales"."Old ""One"""', 'dueBy') \gexec
SELECT ttl.set_deadline_property('"Sales"."Old ""One"""', 'dueBy');
SELECT c.relname, i.indexrelid::regclass AS index, obj_description(i.indexrelid, 'pg_class') AS comment
  FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
 WHERE (i.indrelid IN (SELECT relid FROM pg_partition_tree('"Sales"."Old-P"')) OR i.indrelid = '"Sales"."Old ""One"""'::regclass)
   AND pg_get_indexdef(i.indexrelid) LIKE '%doc_deadline_key%'
 ORDER BY c.relname, i.indexrelid::regclass::text COLLATE "C";
SELECT ttl.enable('"Sales".new', 100);
SELECT ttl.set_append_only('"Sales".new', true, 'brin');
SELECT ttl.set_append_only('"Sales"."Old ""One"""', true);
SELECT layout('"Sales".new') AS new_layout, layout('"Sales"."Old ""One"""') AS old_layout;
SELECT ttl.upgrade_purge_index_sql(999999999::oid::regclass);
-- purge through the moved indexes
SET ttl.now_override = '2030-01-01 00:01:00+00';
SELECT ttl.purge('"Sales"."Old ""One"""') AS old_purged, ttl.purge('"Sales"."Old-P"') AS oldp_purged;
SELECT (SELECT count(*) FROM "Sales"."Old ""One""") AS old_left, (SELECT count(*) FROM "Sales"."Old-P") AS oldp_left;
\c :orig_db
DROP DATABASE regress_ttl_quoting_up;
