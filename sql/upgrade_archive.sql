-- ttl.set_archive arrives with ALTER EXTENSION ttl UPDATE TO '1.8':
-- containers made under 1.7 get archive NULL (ttl.containers shows it)
-- and purge as before until an archive is set; then they archive.
\set SHOW_CONTEXT never
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_archive_up;
ALTER DATABASE regress_ttl_archive_up SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_archive_up
CREATE EXTENSION ttl VERSION '1.7';
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE u (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE u_ao (id int, doc jsonb NOT NULL);
SELECT ttl.enable('u', 60), ttl.enable('u_ao', 60);
SELECT ttl.set_append_only('u_ao', true);
INSERT INTO u VALUES (1, '{}'), (2, '{}');
INSERT INTO u_ao VALUES (1, '{}');
ALTER EXTENSION ttl UPDATE TO '1.8';
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
SELECT container, purge_index, archive FROM ttl.containers ORDER BY container::text COLLATE "C";
CREATE TABLE u_cold (LIKE u);
SELECT ttl.set_archive('u', 'u_cold'), ttl.set_archive('u_ao', 'u_cold');
SELECT container, archive FROM ttl.containers ORDER BY container::text COLLATE "C";
SET ttl.now_override = '2030-01-01 00:02:00+00';
INSERT INTO u VALUES (1, '{"v": "new"}');
SELECT ttl.purge() AS purged;
SELECT id, doc - '_ts' AS doc FROM u ORDER BY id;
SELECT id FROM u_cold ORDER BY id;
\c :orig_db
DROP DATABASE regress_ttl_archive_up;
