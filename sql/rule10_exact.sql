-- Rule 10 is exact: a unique key is judged on the row as it will be stored
-- (stored generated columns computed; expression and partial unique indexes
-- evaluated on that row), no BEFORE trigger of the owner may run after
-- ttl's (it could change the row after it was judged), and an expired item
-- whose replacement is refused makes the write conflict (23505), never merge.
\set SHOW_CONTEXT never
SET client_min_messages = warning;
CREATE ROLE rx_owner;
RESET client_min_messages;
GRANT CREATE ON SCHEMA public TO rx_owner;
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET ROLE rx_owner;

-- a unique key in a stored generated column, an expression unique index on
-- it and a partial unique index whose predicate reads it
CREATE TABLE gk (id int PRIMARY KEY, doc jsonb NOT NULL,
                 k int GENERATED ALWAYS AS ((doc->>'k')::int) STORED UNIQUE,
                 g text GENERATED ALWAYS AS (doc->>'g') STORED);
CREATE UNIQUE INDEX gk_g_lower ON gk (lower(g));
CREATE UNIQUE INDEX gk_g_partial ON gk ((doc->>'p')) WHERE g = 'part';
SELECT ttl.enable('gk', 60);
INSERT INTO gk (id, doc) VALUES (1, '{"k": 7}'), (2, '{"k": 8}'), (3, '{"g": "Lo"}'),
                                (4, '{"g": "part", "p": "x"}'), (5, '{"k": 9}');
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:05:00+00';
SET ROLE rx_owner;
-- each of these replaces the expired holder of its key
INSERT INTO gk (id, doc) VALUES (11, '{"k": 7}');
INSERT INTO gk (id, doc) VALUES (12, '{"k": 8}') ON CONFLICT DO NOTHING;
INSERT INTO gk (id, doc) VALUES (13, '{"g": "LO"}');
INSERT INTO gk (id, doc) VALUES (14, '{"g": "part", "p": "x"}');
-- an UPDATE moving its generated key onto an expired item's
INSERT INTO gk (id, doc) VALUES (15, '{"k": 100}');
UPDATE gk SET doc = '{"k": 9}' WHERE id = 15;
SELECT id, k, g FROM gk ORDER BY id;
-- a live holder of a generated key conflicts as before
INSERT INTO gk (id, doc) VALUES (21, '{"k": 7}');
INSERT INTO gk (id, doc) VALUES (21, '{"k": 7}') ON CONFLICT DO NOTHING;
SELECT count(*) FROM gk WHERE id = 21;

-- a BEFORE trigger of the owner that would run after ttl's stamp trigger
-- (triggers fire in name order): refused when created, renamed, or found
-- at enable; "~" and non-ASCII letters sort after any name ttl's could have
CREATE TABLE bt (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE FUNCTION bt_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.doc := NEW.doc || '{"ttl": 3600}';
    RETURN NEW;
END $$;
SELECT ttl.enable('bt', 60);
CREATE TRIGGER "~late" BEFORE INSERT ON bt FOR EACH ROW EXECUTE FUNCTION bt_rewrite();
CREATE TRIGGER "zzzz_late" BEFORE UPDATE OR INSERT ON bt FOR EACH ROW EXECUTE FUNCTION bt_rewrite();
CREATE TRIGGER "ÿ_late" BEFORE UPDATE ON bt FOR EACH ROW EXECUTE FUNCTION bt_rewrite();
-- earlier names, statement triggers, AFTER triggers are fine
CREATE TRIGGER "aaa_early" BEFORE INSERT ON bt FOR EACH ROW EXECUTE FUNCTION bt_rewrite();
CREATE TRIGGER "~stmt" BEFORE INSERT ON bt FOR EACH STATEMENT EXECUTE FUNCTION bt_rewrite();
CREATE TRIGGER "~after" AFTER INSERT ON bt FOR EACH ROW EXECUTE FUNCTION bt_rewrite();
-- renamed to sort after ttl's
ALTER TRIGGER aaa_early ON bt RENAME TO "~renamed";
-- a BEFORE DELETE trigger never sees a row ttl judges
CREATE TRIGGER "~del" BEFORE DELETE ON bt FOR EACH ROW EXECUTE FUNCTION bt_rewrite();
SELECT tgname FROM pg_trigger WHERE tgrelid = 'bt'::regclass AND NOT tgisinternal ORDER BY tgname COLLATE "C";
-- found at enable: the container is not enabled
CREATE TABLE bt2 (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TRIGGER "~late" BEFORE INSERT ON bt2 FOR EACH ROW EXECUTE FUNCTION bt_rewrite();
-- disabled too: it could be enabled later
ALTER TABLE bt2 DISABLE TRIGGER "~late";
SELECT ttl.enable('bt2', 60);
SELECT count(*) FROM ttl.containers WHERE container = 'bt2'::regclass;
-- a partition of a container too
CREATE TABLE btp (id int PRIMARY KEY, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE btp_1 PARTITION OF btp FOR VALUES FROM (0) TO (100);
SELECT ttl.enable('btp', 60);
CREATE TRIGGER "~late" BEFORE INSERT ON btp_1 FOR EACH ROW EXECUTE FUNCTION bt_rewrite();
CREATE TRIGGER "~late_p" BEFORE INSERT ON btp FOR EACH ROW EXECUTE FUNCTION bt_rewrite();
-- a table attached as a partition brings its own triggers
CREATE TABLE btp_2 (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TRIGGER "~late" BEFORE UPDATE ON btp_2 FOR EACH ROW EXECUTE FUNCTION bt_rewrite();
ALTER TABLE btp ATTACH PARTITION btp_2 FOR VALUES FROM (100) TO (200);
SELECT count(*) FROM pg_inherits WHERE inhparent = 'btp'::regclass;

-- a refused replacement conflicts: 23505, never a merge
CREATE TABLE rf (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE rf_child (id int REFERENCES rf ON DELETE RESTRICT);
CREATE TABLE rf_na_child (id int REFERENCES rf);
SELECT ttl.enable('rf', 60);
CREATE TABLE rt (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE FUNCTION rt_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RETURN NULL;
END $$;
SELECT ttl.enable('rt', 60);
CREATE TRIGGER rt_keep BEFORE DELETE ON rt FOR EACH ROW EXECUTE FUNCTION rt_keep();
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:10:00+00';
SET ROLE rx_owner;
INSERT INTO rf VALUES (1, '{"v": "old"}'), (2, '{"v": "old"}');
INSERT INTO rf_child VALUES (1);
INSERT INTO rf_na_child VALUES (2);
INSERT INTO rt VALUES (1, '{"v": "old"}');
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:15:00+00';
SET ROLE rx_owner;
INSERT INTO rf VALUES (1, '{"v": "new"}') ON CONFLICT (id) DO UPDATE SET doc = rf.doc || '{"merged": true}';
INSERT INTO rf VALUES (2, '{"v": "new"}') ON CONFLICT (id) DO UPDATE SET doc = rf.doc || '{"merged": true}';
INSERT INTO rf VALUES (1, '{"v": "new"}') ON CONFLICT DO NOTHING;
INSERT INTO rf VALUES (1, '{"v": "new"}');
INSERT INTO rt VALUES (1, '{"v": "new"}') ON CONFLICT (id) DO UPDATE SET doc = rt.doc || '{"merged": true}';
INSERT INTO rt VALUES (1, '{"v": "new"}');
SELECT id, doc - '_ts' AS doc FROM rf ORDER BY id;
SELECT id, doc - '_ts' AS doc FROM rt ORDER BY id;

-- one statement probes each unique index with one scan kept across its
-- rows: rows that replace an expired holder, meet a live one or find none,
-- in two unique indexes, while an earlier BEFORE trigger's ANALYZE has the
-- indexes' relcache entries rebuilt between rows; at its end nothing is
-- left pinned or referenced (core would warn of a leak)
CREATE TABLE ms (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE UNIQUE INDEX ms_k ON ms ((doc->>'k'));
CREATE FUNCTION ms_analyze() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    ANALYZE ms;
    RETURN NEW;
END $$;
SELECT ttl.enable('ms', 60);
INSERT INTO ms VALUES (1, '{"k": "a"}'), (2, '{"k": "b"}'), (3, '{"k": "c"}');
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:20:00+00';
SET ROLE rx_owner;
INSERT INTO ms VALUES (4, '{"k": "d"}');
CREATE TRIGGER a_ms_analyze BEFORE INSERT ON ms FOR EACH ROW EXECUTE FUNCTION ms_analyze();
INSERT INTO ms VALUES (1, '{"k": "a2"}'), (5, '{"k": "b"}'), (6, '{"k": "d"}'),
                      (7, '{"k": "e"}'), (3, '{"k": "c"}') ON CONFLICT DO NOTHING;
SELECT id, doc->>'k' AS k FROM ms ORDER BY id;
-- the same in one UPDATE: each row probes with its own old row left alone
UPDATE ms SET doc = jsonb_build_object('k', doc->>'k') WHERE id IN (1, 3, 5, 7);
SELECT id, doc->>'k' AS k FROM ms ORDER BY id;

RESET ROLE;
RESET ttl.now_override;
DROP TABLE gk, bt, bt2, btp, btp_2, rf_child, rf_na_child, rf, rt, ms CASCADE;
DROP FUNCTION bt_rewrite(), rt_keep(), ms_analyze();
REVOKE CREATE ON SCHEMA public FROM rx_owner;
DROP ROLE rx_owner;
