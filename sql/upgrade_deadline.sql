-- Issue 14 item 5: a database at 1.0 keeps working with the 1.5 library
-- (insert, update, the live view, ttl.purge, ttl.state, the 1.0
-- ttl.calculate), and ALTER EXTENSION ttl UPDATE from 1.0 to 1.5 keeps
-- every item, policy and statistic; then the deadline objects work on the
-- upgraded containers (whose purge indexes are still 1.0's two).
\set SHOW_CONTEXT never
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_deadline_up;
ALTER DATABASE regress_ttl_deadline_up SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_deadline_up
CREATE EXTENSION ttl VERSION '1.0';
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE u1 (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE u2 (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE u3 (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('u1', 3600), ttl.enable('u2', -1), ttl.enable('u3', NULL);
SELECT ttl.pause('u2');
-- the 1.0 SQL against the new library
INSERT INTO u1 SELECT g, jsonb_build_object('n', g) FROM generate_series(1, 6) g;
INSERT INTO u1 VALUES (7, '{"ttl": 60}'), (8, '{"ttl": -1, "expiresAt": "garbage"}');
INSERT INTO u2 VALUES (1, '{"ttl": 30}'), (2, '{}'), (3, '{"ttl": 7200}');
INSERT INTO u3 VALUES (1, '{"ttl": 1}'), (2, '{"expiresAt": 0}');
INSERT INTO u1 VALUES (9, '{"ttl": "60"}');            -- rule 3 still enforced
SET ttl.now_override = '2030-01-01 00:30:00+00';
UPDATE u1 SET doc = doc || '{"seen": true}' WHERE id IN (1, 2);
SELECT id, doc FROM u1 ORDER BY id;
SET ttl.now_override = '2030-01-01 01:00:00+00';
SELECT string_agg(id::text, ',' ORDER BY id) AS u1_live FROM u1_live;
SELECT string_agg(id::text, ',' ORDER BY id) AS u2_live FROM u2_live;
SELECT string_agg(id::text, ',' ORDER BY id) AS u3_live FROM u3_live;
SELECT * FROM ttl.state('u1', (SELECT doc FROM u1 WHERE id = 1));
SELECT * FROM ttl.calculate(3600, NULL, 1893456000, '2030-01-01 00:30:00+00');
SELECT ttl.expires_at('u1', doc), ttl.is_expired('u1', doc) FROM u1 WHERE id = 3;
SELECT ttl.purge('u1'), ttl.purge('u2');
SELECT string_agg(id::text, ',' ORDER BY id) AS u1_left FROM u1;
SELECT container, rows_purged, last_purge_at FROM ttl.stats ORDER BY container::text;
-- what the update must keep
CREATE TABLE before_update AS
SELECT 'u1' AS t, id, doc FROM u1 UNION ALL SELECT 'u2', id, doc FROM u2
UNION ALL SELECT 'u3', id, doc FROM u3;
CREATE TABLE policy_before AS SELECT container, doc_column, default_ttl, live_view, paused, enabled_at
  FROM ttl.containers;
CREATE TABLE stats_before AS SELECT container, rows_purged, last_purge_at FROM ttl.stats;

ALTER EXTENSION ttl UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
-- items, policies and statistics are all there, unchanged
SELECT count(*) AS items_changed FROM (
    SELECT * FROM before_update EXCEPT
    (SELECT 'u1', id, doc FROM u1 UNION ALL SELECT 'u2', id, doc FROM u2
     UNION ALL SELECT 'u3', id, doc FROM u3)) d;
SELECT (SELECT count(*) FROM u1) + (SELECT count(*) FROM u2) + (SELECT count(*) FROM u3)
       = (SELECT count(*) FROM before_update) AS same_count;
SELECT count(*) AS policies_changed FROM (
    SELECT * FROM policy_before EXCEPT
    SELECT container, doc_column, default_ttl, live_view, paused, enabled_at FROM ttl.containers) d;
SELECT container, default_ttl, paused, deadline_property FROM ttl.containers ORDER BY container::text;
SELECT count(*) AS stats_changed FROM (
    SELECT * FROM stats_before EXCEPT SELECT container, rows_purged, last_purge_at FROM ttl.stats) d;
-- and still behave: hiding, writes, purge through the 1.0 indexes
SELECT string_agg(id::text, ',' ORDER BY id) AS u1_live FROM u1_live;
SELECT string_agg(id::text, ',' ORDER BY id) AS u2_live FROM u2_live;
INSERT INTO u1 VALUES (10, '{"expiresAt": "not checked without a property"}');
SELECT * FROM ttl.calculate(3600, NULL, 1893456000, '2030-01-01 00:30:00+00');
SELECT * FROM ttl.calculate(3600, NULL, 1893456000, '2030-01-01 00:30:00+00', '2030-01-01 00:20:00.5+00');
SELECT * FROM ttl.calculate(NULL, NULL, 1893456000, '2030-01-01 00:30:00+00', '2030-01-01 00:20:00+00');
SELECT * FROM ttl.calculate(-1, -1, 1893456000, '2030-01-01 00:30:00+00', '2030-01-01 00:40:00+00');
SELECT ttl.resume('u2');
SET ttl.now_override = '2030-01-01 02:00:00+00';
SELECT ttl.purge('u2');
SELECT string_agg(id::text, ',' ORDER BY id) AS u2_left FROM u2;
-- the new objects on an upgraded container: a malformed stored item is
-- found, then the property applies at once and purge uses it
SELECT ttl.set_deadline_property('u1', 'expiresAt');
DELETE FROM u1 WHERE id IN (8, 10);
SELECT ttl.set_deadline_property('u1', 'expiresAt');
INSERT INTO u1 VALUES (11, '{"ttl": -1, "expiresAt": "2030-01-01T02:30:00Z"}'),
                      (12, '{"ttl": -1, "expiresAt": "2030-01-01T03:30:00Z"}');
SELECT indexrelid::regclass, obj_description(indexrelid, 'pg_class') FROM pg_index
 WHERE indrelid = 'u1'::regclass ORDER BY indexrelid::regclass::text COLLATE "C";
SET ttl.now_override = '2030-01-01 03:00:00+00';
SELECT string_agg(id::text, ',' ORDER BY id) AS u1_live FROM u1_live;
SELECT ttl.purge('u1');
SELECT string_agg(id::text, ',' ORDER BY id) AS u1_left FROM u1;
SELECT container, rows_purged FROM ttl.stats ORDER BY container::text;
-- enable with the new signature (the 1.0 one was replaced)
CREATE TABLE u4 (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('u4', 60, deadline_property => 'until');
SELECT pg_get_function_identity_arguments('ttl.enable'::regproc);
SELECT pg_get_function_identity_arguments(p.oid) FROM pg_proc p
 WHERE p.proname = 'calculate' AND p.pronamespace = 'ttl'::regnamespace;
-- everything in the script is a member of the extension
SELECT count(*) AS loose_functions FROM pg_proc p
 WHERE p.pronamespace = 'ttl'::regnamespace
   AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                      AND d.objid = p.oid AND d.deptype = 'e');
\c :orig_db
DROP DATABASE regress_ttl_deadline_up;
