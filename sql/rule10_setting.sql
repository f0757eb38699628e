-- Rule 10's container setting (1.7): ttl.set_replace_expired(container,
-- replace_expired).  Off, a write conflicts with an expired item that holds
-- its key until the purge removes it, as before 1.7; on (the default) it
-- replaces it.  And the backend's cache of a leaf's unique indexes (kept
-- across statements) follows index changes.
\set SHOW_CONTEXT never
SET client_min_messages = warning;
CREATE ROLE r10s_owner;
CREATE ROLE r10s_other;
RESET client_min_messages;
GRANT CREATE ON SCHEMA public TO r10s_owner;
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET ROLE r10s_owner;
CREATE TABLE r10s (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('r10s', 60);
GRANT SELECT, INSERT, UPDATE ON r10s TO r10s_other;
INSERT INTO r10s VALUES ('a', '{"v": "old"}'), ('b', '{"v": "old"}'), ('c', '{"v": "old"}'),
                        ('d', '{"v": "old"}');
-- the default is on, and ttl.containers shows it
SELECT container, purge_index, replace_expired FROM ttl.containers WHERE container::text LIKE 'r10s%';
SELECT ttl.set_replace_expired('r10s', false);
SELECT container, replace_expired FROM ttl.containers WHERE container::text LIKE 'r10s%';
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:05:00+00';
SET ROLE r10s_other;
-- off: the expired items conflict as before 1.7
INSERT INTO r10s VALUES ('a', '{"v": "new"}');
INSERT INTO r10s VALUES ('b', '{"v": "new"}') ON CONFLICT DO NOTHING;
INSERT INTO r10s VALUES ('c', '{"v": "new"}') ON CONFLICT (id) DO UPDATE SET doc = r10s.doc || '{"merged": true}';
RESET ROLE;
SELECT id, doc - '_ts' AS doc FROM r10s ORDER BY id;
SELECT rows_purged FROM ttl.stats WHERE container = 'r10s'::regclass;

-- owner only; NULL and tables that are not containers are refused
SET ROLE r10s_other;
SELECT ttl.set_replace_expired('r10s', true);
RESET ROLE;
SET ROLE r10s_owner;
SELECT ttl.set_replace_expired('r10s', NULL);
SELECT ttl.set_replace_expired(NULL, true);
CREATE TABLE r10s_plain (id int);
SELECT ttl.set_replace_expired('r10s_plain', true);

-- on again: replaced (in the same session, whose caches hold the old value)
SELECT ttl.set_replace_expired('r10s', true);
RESET ROLE;
SET ROLE r10s_other;
INSERT INTO r10s VALUES ('a', '{"v": "new"}');
INSERT INTO r10s VALUES ('b', '{"v": "new"}') ON CONFLICT DO NOTHING;
RESET ROLE;
SELECT id, doc - '_ts' AS doc FROM r10s ORDER BY id;
SELECT rows_purged FROM ttl.stats WHERE container = 'r10s'::regclass;

-- a partitioned container: the setting is the container's, for every leaf
SET ROLE r10s_owner;
CREATE TABLE r10sp (id int PRIMARY KEY, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE r10sp_1 PARTITION OF r10sp FOR VALUES FROM (0) TO (100);
SELECT ttl.enable('r10sp', 60);
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO r10sp VALUES (1, '{}'), (2, '{}');
SET ttl.now_override = '2030-01-01 00:05:00+00';
INSERT INTO r10sp VALUES (1, '{"v": "new"}');
SET ROLE r10s_owner;
SELECT ttl.set_replace_expired('r10sp', false);
RESET ROLE;
INSERT INTO r10sp VALUES (2, '{"v": "new"}');
SELECT id, doc - '_ts' AS doc FROM r10sp ORDER BY id;

-- the leaf's cache: a unique index created after this session's statements
-- cached the leaf is probed by the next one, a dropped one is forgotten
SET ROLE r10s_owner;
CREATE TABLE r10c (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('r10c', 60);
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO r10c VALUES (1, '{"email": "x@example.com"}'), (2, '{"email": "y@example.com"}');
SET ttl.now_override = '2030-01-01 00:05:00+00';
INSERT INTO r10c VALUES (10, '{"email": "z@example.com"}');
CREATE UNIQUE INDEX r10c_email ON r10c ((doc ->> 'email'));
-- a fresh id whose e-mail an expired item holds: it goes
INSERT INTO r10c VALUES (11, '{"email": "x@example.com"}');
DROP INDEX r10c_email;
INSERT INTO r10c VALUES (12, '{"email": "y@example.com"}');
-- an index made and used in a transaction that rolls back is forgotten too
BEGIN;
CREATE UNIQUE INDEX r10c_code ON r10c ((doc ->> 'code'));
INSERT INTO r10c VALUES (13, '{"code": "q"}');
ROLLBACK;
INSERT INTO r10c VALUES (14, '{"code": "q"}');
SELECT id, doc - '_ts' AS doc FROM r10c ORDER BY id;

-- a statement of many rows whose leaf holds due items, with a unique index
-- whose equal keys may differ in image (numeric: 1.0 and 1.00): every key
-- is probed as the index compares it
CREATE TABLE r10f (id text PRIMARY KEY, doc jsonb NOT NULL);
CREATE UNIQUE INDEX r10f_n ON r10f (((doc ->> 'n')::numeric));
SELECT ttl.enable('r10f', 60);
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO r10f SELECT 'x' || g, jsonb_build_object('n', g) FROM generate_series(1, 100) g;
SET ttl.now_override = '2030-01-01 00:05:00+00';
-- rows 1500 and 1800 of 2000 meet expired items: one by its id, one by its
-- number written differently (50.0 = 50)
INSERT INTO r10f
SELECT CASE g WHEN 1500 THEN 'x7' ELSE 'y' || g END,
       CASE g WHEN 1800 THEN '{"n": 50.0}'::jsonb ELSE jsonb_build_object('n', 1000 + g) END
  FROM generate_series(1, 2000) g;
SELECT count(*), count(*) FILTER (WHERE id LIKE 'x%') AS old FROM r10f;
SELECT id, doc - '_ts' AS doc FROM r10f WHERE id IN ('x7', 'x50', 'y1500', 'y1800') ORDER BY id;
-- and a key held by a live item still conflicts
INSERT INTO r10f SELECT CASE g WHEN 900 THEN 'y3' ELSE 'z' || g END, jsonb_build_object('n', 5000 + g)
  FROM generate_series(1, 1000) g;

RESET ttl.now_override;
DROP TABLE r10s, r10s_plain, r10sp, r10c, r10f CASCADE;
REVOKE CREATE ON SCHEMA public FROM r10s_owner;
DROP ROLE r10s_owner;
DROP ROLE r10s_other;
