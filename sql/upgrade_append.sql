-- ALTER EXTENSION ttl UPDATE from 1.5 to 1.6 (append-only containers
-- without a purge index): containers keep their mode, indexes and items;
-- the 1.3 two-argument ttl.set_append_only keeps its meaning; the new
-- purge_index column and the index-free mode work on upgraded containers.
\set SHOW_CONTEXT never
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_append_up;
ALTER DATABASE regress_ttl_append_up SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_append_up
CREATE EXTENSION ttl VERSION '1.5';
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE v_d (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE v_a (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('v_d', 60), ttl.enable('v_a', 60);
SELECT ttl.set_append_only('v_a', true);
INSERT INTO v_d SELECT g, CASE WHEN g % 4 = 0 THEN jsonb_build_object('n', g, 'ttl', 600)
                               ELSE jsonb_build_object('n', g) END FROM generate_series(1, 40) g;
INSERT INTO v_a SELECT * FROM v_d;
CREATE TABLE before_update AS SELECT 'v_d' AS t, id, doc FROM v_d UNION ALL SELECT 'v_a', id, doc FROM v_a;
CREATE TABLE indexes_before AS
SELECT indexrelid::regclass::text AS idx, pg_get_indexdef(indexrelid) AS def FROM pg_index
 WHERE indrelid IN ('v_d'::regclass, 'v_a'::regclass);

ALTER EXTENSION ttl UPDATE TO '1.6';
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
SELECT container, append_only, purge_index FROM ttl.containers ORDER BY container::text;
SELECT count(*) AS items_changed FROM (
    SELECT * FROM before_update EXCEPT
    (SELECT 'v_d', id, doc FROM v_d UNION ALL SELECT 'v_a', id, doc FROM v_a)) d;
SELECT count(*) AS indexes_changed FROM (
    SELECT * FROM indexes_before EXCEPT
    SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index
     WHERE indrelid IN ('v_d'::regclass, 'v_a'::regclass)) d;
SELECT pg_get_function_identity_arguments(p.oid) AS set_append_only FROM pg_proc p
 WHERE p.proname = 'set_append_only' AND p.pronamespace = 'ttl'::regnamespace ORDER BY 1;
-- the two-argument form: true is BRIN, false the btree, as in 1.3
SELECT ttl.set_append_only('v_a', false);
SELECT container, append_only, purge_index FROM ttl.containers WHERE container = 'v_a'::regclass;
SELECT ttl.set_append_only('v_a', true);
SELECT container, append_only, purge_index FROM ttl.containers WHERE container = 'v_a'::regclass;
-- the index-free mode on an upgraded container: no purge index left, the
-- same rows hidden and purged as in the default-mode twin
SELECT ttl.set_append_only('v_a', true, 'none');
SELECT count(*) AS purge_indexes FROM pg_index
 WHERE indrelid = 'v_a'::regclass AND pg_get_indexdef(indexrelid) LIKE '%ttl.%';
SET ttl.now_override = '2030-01-01 00:05:00+00';
SELECT (SELECT count(*) FROM v_d_live) AS d_live, (SELECT count(*) FROM v_a_live) AS a_live,
       (SELECT expired FROM ttl.backlog('v_d')) AS d_backlog, (SELECT expired FROM ttl.backlog('v_a')) AS a_backlog;
SELECT ttl.purge('v_d') AS d, ttl.purge('v_a') AS a;
SELECT (SELECT array_agg(id ORDER BY id) FROM v_d) = (SELECT array_agg(id ORDER BY id) FROM v_a) AS same_rows_left,
       (SELECT count(*) FROM v_a) AS a_left;
-- the registry refuses an index-free container that is not append-only
-- (only ttl's own functions write it: checked as the extension's owner)
\set VERBOSITY terse
UPDATE ttl.registry SET append_only = false WHERE relid = 'v_a'::regclass;
\set VERBOSITY default
-- everything in the script is a member of the extension
SELECT count(*) AS loose_functions FROM pg_proc p
 WHERE p.pronamespace = 'ttl'::regnamespace
   AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                      AND d.objid = p.oid AND d.deptype = 'e');
\c :orig_db
DROP DATABASE regress_ttl_append_up;
