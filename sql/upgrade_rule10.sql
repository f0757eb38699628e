-- Rule 10 takes effect in a database once ALTER EXTENSION ttl UPDATE
-- reaches 1.7: the library serves a database at 1.6 as 1.6 did (a write of
-- an expired item's id conflicts), and the same session sees the change at
-- once after the update.
\set SHOW_CONTEXT never
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_rule10_up;
ALTER DATABASE regress_ttl_rule10_up SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_rule10_up
CREATE EXTENSION ttl VERSION '1.6';
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE u10 (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('u10', 60);
INSERT INTO u10 VALUES (1, '{"v": "old"}'), (2, '{"v": "old"}'), (3, '{"v": "old"}');
SET ttl.now_override = '2030-01-01 00:05:00+00';
-- 1.6: expired items still conflict, ON CONFLICT sees them
INSERT INTO u10 VALUES (1, '{"v": "new"}');
INSERT INTO u10 VALUES (2, '{"v": "new"}') ON CONFLICT DO NOTHING;
INSERT INTO u10 VALUES (3, '{"v": "new"}') ON CONFLICT (id) DO UPDATE SET doc = u10.doc || '{"merged": true}';
SELECT id, doc - '_ts' AS doc FROM u10 ORDER BY id;
SELECT rows_purged FROM ttl.stats;

ALTER EXTENSION ttl UPDATE TO '1.7';
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
SET ttl.now_override = '2030-01-01 00:10:00+00';
-- 1.7: they are replaced
INSERT INTO u10 VALUES (1, '{"v": "new"}');
INSERT INTO u10 VALUES (2, '{"v": "new"}') ON CONFLICT DO NOTHING;
INSERT INTO u10 VALUES (3, '{"v": "new"}') ON CONFLICT (id) DO UPDATE SET doc = u10.doc || '{"merged": true}';
SELECT id, doc - '_ts' AS doc FROM u10 ORDER BY id;
SELECT rows_purged FROM ttl.stats;
-- the container setting arrives with 1.7, on for containers enabled before
SELECT container, replace_expired FROM ttl.containers;
SELECT ttl.set_replace_expired('u10', false);
SELECT container, replace_expired FROM ttl.containers;
\c :orig_db
DROP DATABASE regress_ttl_rule10_up;
