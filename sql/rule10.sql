-- Rule 10 (1.7): an expired item is gone for writes too.  A write whose
-- unique key (primary key, unique constraint, expression, partial, NULLS
-- NOT DISTINCT, DEFERRABLE) is held by an expired item replaces it: the
-- item is deleted as a purge delete (as the owner, its triggers and foreign
-- keys firing, counted in ttl.stats) and the write takes effect.
\set SHOW_CONTEXT never
SET client_min_messages = warning;
CREATE ROLE r10_owner;
CREATE ROLE r10_writer;
RESET client_min_messages;
GRANT CREATE ON SCHEMA public TO r10_owner;
-- ttl.now_override is superuser-only: it is set before each SET ROLE
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET ROLE r10_owner;

-- who deleted what: the owner's trigger records current_user (a purge
-- delete runs with search_path pg_catalog, pg_temp: names are qualified)
CREATE TABLE r10_log (t text, id text, by_user name);
CREATE FUNCTION r10_log_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.r10_log VALUES (TG_TABLE_NAME, OLD.id, current_user);
    RETURN OLD;
END $$;

CREATE TABLE r10 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('r10', 60);
CREATE TRIGGER r10_log AFTER DELETE ON r10 FOR EACH ROW EXECUTE FUNCTION r10_log_delete();
GRANT SELECT, INSERT, UPDATE, DELETE ON r10, r10_live TO r10_writer;
GRANT INSERT ON r10_log TO r10_writer;
INSERT INTO r10 VALUES ('a', '{"v": "old"}'), ('b', '{"v": "old"}'), ('c', '{"v": "old"}'),
                       ('d', '{"v": "old"}'), ('e', '{"v": "old"}'), ('f', '{"v": "old"}'),
                       ('g', '{"v": "old"}'), ('h', '{"v": "old"}'),
                       ('pinned', '{"v": "old", "ttl": -1}');
-- five minutes later every item but "pinned" has expired
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:05:00+00';
SELECT id FROM r10_live ORDER BY id;

SET ROLE r10_writer;
-- INSERT of an expired id succeeds
INSERT INTO r10 VALUES ('a', '{"v": "new"}');
-- COPY
COPY r10 FROM stdin;
b	{"v": "new"}
\.
-- through the view
INSERT INTO r10_live VALUES ('c', '{"v": "new"}');
-- ON CONFLICT DO NOTHING: without a target, with one, ON CONSTRAINT
INSERT INTO r10 VALUES ('d', '{"v": "new"}') ON CONFLICT DO NOTHING;
INSERT INTO r10 VALUES ('e', '{"v": "new"}') ON CONFLICT (id) DO NOTHING;
INSERT INTO r10 VALUES ('f', '{"v": "new"}') ON CONFLICT ON CONSTRAINT r10_pkey DO NOTHING;
-- ON CONFLICT DO UPDATE never merges into the expired row: EXCLUDED alone decides
INSERT INTO r10 VALUES ('g', '{"v": "new"}')
    ON CONFLICT (id) DO UPDATE SET doc = r10.doc || jsonb_build_object('merged', true);
-- a live item conflicts as before
INSERT INTO r10 VALUES ('pinned', '{"v": "new"}');
INSERT INTO r10 VALUES ('pinned', '{"v": "new"}') ON CONFLICT DO NOTHING;
INSERT INTO r10 VALUES ('pinned', '{"v": "new"}')
    ON CONFLICT (id) DO UPDATE SET doc = r10.doc || jsonb_build_object('merged', true);
-- an UPDATE that moves a key onto an expired item's value
UPDATE r10 SET id = 'h' WHERE id = 'a';
-- ... and onto a live one's
UPDATE r10 SET id = 'pinned' WHERE id = 'h';
-- a re-created id within one statement twice: the second one conflicts
INSERT INTO r10 VALUES ('x', '{"v": 1}'), ('x', '{"v": 2}');
RESET ROLE;
SELECT id, doc - '_ts' AS doc FROM r10 ORDER BY id;
-- the deletes ran as the owner, each once
SELECT * FROM r10_log ORDER BY id;
SELECT rows_purged, last_purge_at FROM ttl.stats WHERE container = 'r10'::regclass;
-- the purge folds the pending counts into ttl.purge_stats
SELECT count(*) AS pending FROM ttl.purge_stats_pending WHERE relid = 'r10'::regclass;
SELECT ttl.purge('r10');
SELECT count(*) AS pending FROM ttl.purge_stats_pending WHERE relid = 'r10'::regclass;
SELECT rows_purged FROM ttl.purge_stats WHERE relid = 'r10'::regclass;
SELECT rows_purged FROM ttl.stats WHERE container = 'r10'::regclass;

-- UPDATE and DELETE through the view never touch an expired item
INSERT INTO r10 VALUES ('old', '{"v": "old"}');
SET ttl.now_override = '2030-01-01 00:10:00+00';
SET ROLE r10_writer;
UPDATE r10_live SET doc = '{"v": "touched"}' WHERE id = 'old';
DELETE FROM r10_live WHERE id = 'old';
RESET ROLE;
SELECT id, doc - '_ts' AS doc FROM r10 WHERE id = 'old';

-- every kind of unique index
CREATE TABLE r10u (id int PRIMARY KEY, email text, code text, slot int, doc jsonb NOT NULL,
                   CONSTRAINT r10u_code UNIQUE NULLS NOT DISTINCT (code),
                   CONSTRAINT r10u_slot UNIQUE (slot) DEFERRABLE INITIALLY DEFERRED);
CREATE UNIQUE INDEX r10u_email ON r10u (lower(email));
CREATE UNIQUE INDEX r10u_doc_key ON r10u ((doc ->> 'key')) WHERE doc ? 'key';
SELECT ttl.enable('r10u', 60);
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO r10u VALUES (1, 'A@x', 'c1', 1, '{"key": "k1"}'),
                        (2, 'b@x', 'c2', 2, '{}'),
                        (3, 'c@x', NULL, 3, '{}'),
                        (4, 'd@x', 'c4', 4, '{"key": "k4", "ttl": -1}'),
                        (5, 'e@x', 'c5', 5, '{}');
SET ttl.now_override = '2030-01-01 00:05:00+00';
INSERT INTO r10u VALUES (11, 'a@X', 'n11', 11, '{}');            -- expression key of 1
INSERT INTO r10u VALUES (12, 'n12', NULL, 12, '{}');              -- NULL code of 3
INSERT INTO r10u VALUES (13, 'n13', 'c2', 13, '{}');              -- code of 2
INSERT INTO r10u VALUES (14, 'n14', 'n14', 5, '{}');              -- deferrable slot of 5
INSERT INTO r10u VALUES (15, 'n15', 'n15', 15, '{"key": "k4"}');  -- partial key of 4, live
INSERT INTO r10u VALUES (16, 'n16', NULL, 16, '{}');              -- NULL code of 12, live
SELECT id, email, code, slot, doc - '_ts' AS doc FROM r10u ORDER BY id;
-- a partial index's key outside its predicate conflicts with nothing
SET ttl.now_override = '2030-01-01 00:10:00+00';
INSERT INTO r10u VALUES (21, 'n21', 'n21', 21, '{"key": "k21"}');
INSERT INTO r10u VALUES (22, 'n22', 'n22', 22, '{"nokey": "k21"}');
SET ttl.now_override = '2030-01-01 00:20:00+00';
INSERT INTO r10u VALUES (23, 'n23', 'n23', 23, '{"key": "k21"}');
SELECT id FROM r10u ORDER BY id;

-- a container whose default is NULL never replaces
CREATE TABLE r10n (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('r10n', NULL);
INSERT INTO r10n VALUES (1, '{"ttl": 1}');
SET ttl.now_override = '2031-01-01 00:00:00+00';
INSERT INTO r10n VALUES (1, '{}');
INSERT INTO r10n VALUES (1, '{}') ON CONFLICT DO NOTHING;
SELECT id, doc - '_ts' AS doc FROM r10n;

-- rule 9: past its deadline an item is expired, also with ttl -1
CREATE TABLE r10d (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('r10d', -1, 'doc', 'until');
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO r10d VALUES (1, '{"ttl": -1, "until": "2030-01-01T00:01:00Z"}'),
                        (2, '{"ttl": -1, "until": "2030-01-01T01:00:00Z"}');
SET ttl.now_override = '2030-01-01 00:02:00+00';
INSERT INTO r10d VALUES (1, '{"v": "new"}');
INSERT INTO r10d VALUES (2, '{"v": "new"}');
SELECT id, doc - '_ts' AS doc FROM r10d ORDER BY id;

-- a paused container replaces as usual
CREATE TABLE r10p (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('r10p', 60);
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO r10p VALUES (1, '{}'), (2, '{}');
SELECT ttl.pause('r10p');
SET ttl.now_override = '2030-01-01 00:05:00+00';
INSERT INTO r10p VALUES (1, '{"v": "new"}');
-- the restore guard's hold: nothing is replaced
UPDATE ttl.registry SET held_since = '2030-01-01 00:04:00+00', hold_reason = 'test'
 WHERE relid = 'r10p'::regclass;
INSERT INTO r10p VALUES (2, '{"v": "new"}');
-- a conflict ON CONFLICT handles stays one
INSERT INTO r10p VALUES (2, '{"v": "new"}') ON CONFLICT DO NOTHING;
INSERT INTO r10p VALUES (2, '{"v": "new"}') ON CONFLICT (id) DO UPDATE SET doc = excluded.doc || '{"updated": true}';
SELECT id, doc - '_ts' AS doc FROM r10p ORDER BY id;
-- released, the expired item is replaced
SELECT ttl.resume('r10p');
SET ttl.now_override = '2030-01-01 00:10:00+00';
INSERT INTO r10p VALUES (2, '{"v": "newer"}');
SELECT id, doc - '_ts' AS doc FROM r10p ORDER BY id;

-- foreign keys: a CASCADE child goes with the item, a RESTRICT child keeps it
CREATE TABLE r10f (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('r10f', 60);
CREATE TABLE r10f_cascade (id int REFERENCES r10f ON DELETE CASCADE);
CREATE TABLE r10f_restrict (id int REFERENCES r10f ON DELETE RESTRICT);
CREATE TABLE r10f_noaction (id int REFERENCES r10f DEFERRABLE INITIALLY DEFERRED);
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO r10f VALUES (1, '{}'), (2, '{}'), (3, '{}');
INSERT INTO r10f_cascade VALUES (1);
INSERT INTO r10f_restrict VALUES (2);
INSERT INTO r10f_noaction VALUES (3);
SET ttl.now_override = '2030-01-01 00:05:00+00';
INSERT INTO r10f VALUES (1, '{"v": "new"}');
SELECT count(*) AS cascade_children FROM r10f_cascade;
INSERT INTO r10f VALUES (2, '{"v": "new"}');
BEGIN;
INSERT INTO r10f VALUES (3, '{"v": "new"}');
COMMIT;
INSERT INTO r10f VALUES (2, '{"v": "new"}') ON CONFLICT DO NOTHING;
SELECT id, doc - '_ts' AS doc FROM r10f ORDER BY id;

-- an owner's BEFORE DELETE trigger that returns NULL refuses
CREATE TABLE r10t (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('r10t', 60);
CREATE FUNCTION r10_keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER r10_keep BEFORE DELETE ON r10t FOR EACH ROW EXECUTE FUNCTION r10_keep();
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO r10t VALUES (1, '{}');
SET ttl.now_override = '2030-01-01 00:05:00+00';
INSERT INTO r10t VALUES (1, '{"v": "new"}');
SELECT id, doc - '_ts' AS doc FROM r10t;

-- a DELETE policy that refuses (row security forced on the owner, who is
-- no superuser)
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET ROLE r10_owner;
CREATE TABLE r10r (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('r10r', 60);
ALTER TABLE r10r ENABLE ROW LEVEL SECURITY;
ALTER TABLE r10r FORCE ROW LEVEL SECURITY;
CREATE POLICY r10r_all ON r10r FOR ALL USING (true) WITH CHECK (true);
CREATE POLICY r10r_keep ON r10r AS RESTRICTIVE FOR DELETE USING (id <> 1);
GRANT SELECT, INSERT ON r10r TO r10_writer;
INSERT INTO r10r VALUES (1, '{}'), (2, '{}');
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:05:00+00';
SET ROLE r10_writer;
INSERT INTO r10r VALUES (1, '{"v": "new"}');
INSERT INTO r10r VALUES (2, '{"v": "new"}');
RESET ROLE;
SELECT id, doc - '_ts' AS doc FROM r10r ORDER BY id;

-- a partitioned container: the conflict is in the leaf
CREATE TABLE r10pt (id int, doc jsonb NOT NULL, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE r10pt_1 PARTITION OF r10pt FOR VALUES FROM (0) TO (100);
CREATE TABLE r10pt_2 PARTITION OF r10pt FOR VALUES FROM (100) TO (200);
SELECT ttl.enable('r10pt', 60);
CREATE TRIGGER r10pt_log AFTER DELETE ON r10pt FOR EACH ROW EXECUTE FUNCTION r10_log_delete();
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO r10pt VALUES (1, '{}'), (150, '{}'), (151, '{"ttl": -1}');
SET ttl.now_override = '2030-01-01 00:05:00+00';
INSERT INTO r10pt VALUES (1, '{"v": "new"}'), (150, '{"v": "new"}');
INSERT INTO r10pt VALUES (151, '{"v": "new"}');
INSERT INTO r10pt VALUES (151, '{"v": "new"}') ON CONFLICT (id) DO NOTHING;
SELECT tableoid::regclass, id, doc - '_ts' AS doc FROM r10pt ORDER BY id;
SELECT t, id, by_user FROM r10_log WHERE t LIKE 'r10pt%' ORDER BY id;
SELECT rows_purged FROM ttl.stats WHERE container = 'r10pt'::regclass;

-- statements of many rows: from the second row on, a statement probes only
-- while its leaf holds something due (looked at once)
CREATE TABLE r10m (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('r10m', 60);
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO r10m SELECT g, '{"v": "old"}' FROM generate_series(1, 5) g;
SET ttl.now_override = '2030-01-01 00:00:30+00';
INSERT INTO r10m SELECT g, '{"v": "live"}' FROM generate_series(6, 7) g;
SET ttl.now_override = '2030-01-01 00:01:10+00';
-- 1-5 are due: the third to fifth rows replace them too
INSERT INTO r10m SELECT g, '{"v": "new"}' FROM generate_series(1, 5) g;
-- nothing due now (6, 7 are live): the second row on probes no more, and
-- the conflict with a live item is the unique check's, as before
INSERT INTO r10m SELECT g, '{"v": "new"}' FROM generate_series(8, 10) g;
INSERT INTO r10m SELECT g, '{"v": "new"}'::jsonb FROM generate_series(11, 13) g UNION ALL SELECT 7, '{}';
SELECT id, doc - '_ts' AS doc FROM r10m ORDER BY id;

RESET ttl.now_override;
DROP TABLE r10, r10u, r10n, r10d, r10p, r10f_cascade, r10f_restrict, r10f_noaction, r10f,
           r10t, r10r, r10pt, r10m, r10_log CASCADE;
DROP FUNCTION r10_log_delete(), r10_keep();
REVOKE CREATE ON SCHEMA public FROM r10_owner;
DROP ROLE r10_owner;
DROP ROLE r10_writer;
