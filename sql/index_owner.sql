-- Issue 28: the indexes ttl made are recorded in ttl.indexes (dumped with
-- the registry), not recognised by their comment.  ALTER EXTENSION ttl
-- UPDATE from 1.7 records the existing ones (known by their comment until
-- then); ttl.disable drops exactly the recorded ones, never a user's index
-- of the same shape; renames and drops of the index, renames of its table
-- and schema, and partitions attached or detached keep the record right.
\set SHOW_CONTEXT never
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_owner_up;
ALTER DATABASE regress_ttl_owner_up SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_owner_up
CREATE EXTENSION ttl VERSION '1.7';
CREATE SCHEMA "Up S";
CREATE TABLE "Up S".plain (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('"Up S".plain', 60) IS NOT NULL AS enabled;
CREATE INDEX user_key_idx ON "Up S".plain ((ttl.doc_purge_key(doc)));
CREATE TABLE up_log (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('up_log', 60) IS NOT NULL AS enabled;
SELECT ttl.set_append_only('up_log', true);
CREATE TABLE up_dl (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('up_dl', -1, deadline_property => 'until') IS NOT NULL AS enabled;
CREATE INDEX user_dl_idx ON up_dl ((ttl.doc_deadline_key(doc, 'until'::text)))
    WHERE ttl.doc_deadline_key(doc, 'until'::text) IS NOT NULL;
CREATE TABLE up_parted (id int, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE up_parted_1 PARTITION OF up_parted FOR VALUES FROM (0) TO (100);
SELECT ttl.enable('up_parted', 60) IS NOT NULL AS enabled;
ALTER EXTENSION ttl UPDATE TO '1.8';
-- the indexes ttl made, and only those, are recorded
SELECT relid, index_name, purpose FROM ttl.indexes ORDER BY 1::text, 2;
-- disable drops them; the user's indexes of the same shapes stay
SELECT ttl.disable('"Up S".plain'), ttl.disable('up_log'), ttl.disable('up_dl'), ttl.disable('up_parted');
SELECT c.relname AS index_left FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE NOT i.indisprimary AND i.indrelid IN ('"Up S".plain'::regclass, 'up_log'::regclass,
                                             'up_dl'::regclass, 'up_parted'::regclass, 'up_parted_1'::regclass)
 ORDER BY 1;
SELECT count(*) AS records_left FROM ttl.indexes;
\c :orig_db
DROP DATABASE regress_ttl_owner_up;

-- 1.8: enable records its index; any index of the shape serves the purge
CREATE SCHEMA own_s;
CREATE TABLE own_s.t (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('own_s.t', 60, deadline_property => 'until') IS NOT NULL AS enabled;
CREATE INDEX own_user_idx ON own_s.t ((ttl.doc_purge_key(doc)));
SELECT index_name, purpose FROM ttl.indexes WHERE relid = 'own_s.t'::regclass ORDER BY 1;
SELECT ttl._purge_index_kind('own_s.own_user_idx', 'own_s.t') AS user_index_kind,
       ttl._purge_index_kind('own_s.t_pkey', 'own_s.t') AS pkey_kind;
-- a purge index exists (the user's would do): nothing to upgrade
SELECT count(*) AS upgrade_statements FROM ttl.upgrade_purge_index_sql('own_s.t');
-- renames follow: ALTER INDEX, ALTER TABLE on an index, the table, the schema
ALTER INDEX own_s.t_ttl_purge_idx RENAME TO "Purge Idx";
ALTER TABLE own_s.t_ttl_deadline_idx RENAME TO dl_idx;
ALTER TABLE own_s.t RENAME TO t2;
ALTER SCHEMA own_s RENAME TO own_s2;
SELECT relid, index_name, purpose FROM ttl.indexes WHERE relid = 'own_s2.t2'::regclass ORDER BY 2;
-- a failed rename changes nothing
BEGIN;
ALTER INDEX own_s2.dl_idx RENAME TO own_user_idx;
ROLLBACK;
SELECT index_name FROM ttl.indexes WHERE relid = 'own_s2.t2'::regclass ORDER BY 1;
-- DROP INDEX forgets it: a user's index made later under the same name is
-- the user's
DROP INDEX own_s2.dl_idx;
SELECT index_name FROM ttl.indexes WHERE relid = 'own_s2.t2'::regclass ORDER BY 1;
CREATE INDEX dl_idx ON own_s2.t2 ((ttl.doc_deadline_key(doc, 'until'::text)))
    WHERE ttl.doc_deadline_key(doc, 'until'::text) IS NOT NULL;
SELECT ttl.disable('own_s2.t2');
SELECT c.relname AS index_left FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = 'own_s2.t2'::regclass ORDER BY 1;
SELECT count(*) AS records_left FROM ttl.indexes WHERE relid = 'own_s2.t2'::regclass;
-- ttl._own_index: only an index of the right shape on a container, by its owner
SELECT ttl.enable('own_s2.t2', 60) IS NOT NULL AS enabled;
SELECT ttl._own_index('own_s2.t2', 'purge');
SELECT ttl._own_index('own_s2.t_pkey', 'purge');
SELECT ttl._own_index('own_s2.dl_idx', 'purge');
SELECT ttl._own_index('own_s2.own_user_idx', 'other');
CREATE ROLE regress_ttl_own_other;
GRANT USAGE ON SCHEMA own_s2 TO regress_ttl_own_other;
SET ROLE regress_ttl_own_other;
SELECT ttl._own_index('own_s2.own_user_idx', 'purge');
RESET ROLE;
-- a partition attached gets its copy of the partitioned purge index,
-- which disable drops with it; a detached one keeps its copy (a table of
-- its own now, no part of the container)
CREATE TABLE own_p (id int, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE own_p1 PARTITION OF own_p FOR VALUES FROM (0) TO (100);
SELECT ttl.enable('own_p', 60) IS NOT NULL AS enabled;
CREATE TABLE own_p2 (id int, doc jsonb NOT NULL);
ALTER TABLE own_p ATTACH PARTITION own_p2 FOR VALUES FROM (100) TO (200);
ALTER TABLE own_p DETACH PARTITION own_p1;
SELECT index_name FROM ttl.indexes WHERE relid = 'own_p'::regclass;
SELECT ttl.disable('own_p');
SELECT c.relname AS table_name, count(i.indexrelid) AS indexes
  FROM pg_class c LEFT JOIN pg_index i ON i.indrelid = c.oid
 WHERE c.relname IN ('own_p', 'own_p1', 'own_p2') GROUP BY 1 ORDER BY 1;
-- DROP TABLE forgets its records
SELECT ttl.enable('own_p', 60) IS NOT NULL AS enabled;
DROP TABLE own_p CASCADE;
SELECT count(*) AS records_left FROM ttl.indexes WHERE index_name LIKE 'own_p%';
DROP TABLE own_p1;
SELECT ttl.disable('own_s2.t2');
DROP SCHEMA own_s2 CASCADE;
DROP ROLE regress_ttl_own_other;
