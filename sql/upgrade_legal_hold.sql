-- Legal holds arrive with ALTER EXTENSION ttl UPDATE to 1.8: containers
-- made under 1.7 (a plain one and a partitioned one) take holds after the
-- update, purge keeps their items, and the hold table is a configuration
-- table (pg_dump writes its rows, so holds survive a dump and restore).
\set SHOW_CONTEXT never
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_hold_up;
ALTER DATABASE regress_ttl_hold_up SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_hold_up
CREATE EXTENSION ttl VERSION '1.7';
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE uh (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('uh', 60);
CREATE TABLE uhp (id int PRIMARY KEY, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE uhp_1 PARTITION OF uhp FOR VALUES FROM (0) TO (10);
CREATE TABLE uhp_2 PARTITION OF uhp FOR VALUES FROM (10) TO (20);
SELECT ttl.enable('uhp', 60);
INSERT INTO uh SELECT g, jsonb_build_object('case', CASE WHEN g <= 2 THEN 'X' ELSE 'Y' END)
  FROM generate_series(1, 6) g;
INSERT INTO uhp SELECT g, jsonb_build_object('case', CASE WHEN g IN (1, 15) THEN 'X' ELSE 'Y' END)
  FROM generate_series(1, 19) g;
-- 1.7 has no legal holds
SELECT to_regproc('ttl.set_legal_hold') IS NULL AS no_holds_yet;

ALTER EXTENSION ttl UPDATE TO '1.8';
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
SELECT ttl.set_legal_hold('uh', 'case X', '{"case": "X"}');
SELECT ttl.set_legal_hold('uhp', 'case X', '{"case": "X"}');
SET ttl.now_override = '2030-01-01 01:00:00+00';
SELECT container, name, match, held_expired FROM ttl.legal_holds ORDER BY container::text;
SELECT ttl.purge('uh', 100), ttl.purge('uhp', 100);
SELECT id FROM uh ORDER BY id;
SELECT id FROM uhp ORDER BY id;
INSERT INTO uh VALUES (1, '{}');
SELECT ttl.disable('uh');
-- a configuration table of the extension: pg_dump writes its rows
SELECT c.relname
  FROM pg_extension e, unnest(e.extconfig) x(oid) JOIN pg_class c ON c.oid = x.oid
 WHERE e.extname = 'ttl' AND c.relname = 'legal_hold';
SELECT ttl.release_legal_hold('uh', 'case X');
SELECT ttl.purge('uh');
SELECT count(*) FROM uh;
\c :orig_db
DROP DATABASE regress_ttl_hold_up;
