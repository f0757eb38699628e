-- The C trigger: stamping and validation on every write path (INSERT,
-- UPDATE, COPY, upsert, writes through the view), a custom document column,
-- large and nested documents, and its place after the user's triggers.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE t (id int PRIMARY KEY, body jsonb, extra text);
SELECT ttl.enable('t', 3600, doc_column => 'body');
SELECT container, doc_column, default_ttl, live_view, paused FROM ttl.containers;

-- COPY
COPY t (id, body) FROM stdin;
1	{"a": 1}
2	{"a": 2, "ttl": 10, "_ts": 42}
\.
SELECT id, body FROM t ORDER BY id;

-- upsert: the conflicting row is updated and stamped again
SET ttl.now_override = '2026-01-01 00:00:07+00';
INSERT INTO t (id, body) VALUES (1, '{"a": "new"}')
    ON CONFLICT (id) DO UPDATE SET body = t.body || excluded.body;
INSERT INTO t (id, body) VALUES (3, '{"a": 3}')
    ON CONFLICT (id) DO NOTHING;
SELECT id, body FROM t ORDER BY id;

-- writes through the view
SET ttl.now_override = '2026-01-01 00:00:09+00';
INSERT INTO t_live (id, body) VALUES (4, '{"via": "view", "_ts": 1}');
UPDATE t_live SET body = body || '{"ttl": 100}' WHERE id = 4;
INSERT INTO t_live (id, body) VALUES (4, '{"via": "upsert"}')
    ON CONFLICT (id) DO UPDATE SET body = excluded.body;
SELECT id, body FROM t_live ORDER BY id;
INSERT INTO t_live (id, body) VALUES (5, '{"ttl": "bad"}');
DELETE FROM t_live WHERE id = 3;
SELECT id FROM t ORDER BY id;

-- keys are kept in jsonb order, nested values and large documents survive
INSERT INTO t (id, body) VALUES (6, '{"zz": [1, {"ttl": "x", "_ts": "y"}], "aa": {"b": {"c": null}}, "_ts_other": 1, "é": "ü"}');
SELECT body FROM t WHERE id = 6;
INSERT INTO t (id, body)
    SELECT 7, jsonb_build_object('big', repeat('x', 100000), 'arr', (SELECT jsonb_agg(g) FROM generate_series(1, 1000) g));
SELECT length(body->>'big') AS big, jsonb_array_length(body->'arr') AS arr, body->'_ts' AS ts
  FROM t WHERE id = 7;
-- an empty object gets just _ts
INSERT INTO t (id, body) VALUES (8, '{}');
SELECT body FROM t WHERE id = 8;

-- the trigger fires after the user's BEFORE triggers, so it validates and
-- stamps what they produced
CREATE FUNCTION set_bad_ttl() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.body := NEW.body || '{"ttl": "from user trigger", "_ts": 0}';
    RETURN NEW;
END $$;
CREATE TRIGGER a_user_trigger BEFORE INSERT ON t FOR EACH ROW
    WHEN (NEW.id = 9) EXECUTE FUNCTION set_bad_ttl();
INSERT INTO t (id, body) VALUES (9, '{}');
DROP TRIGGER a_user_trigger ON t;
CREATE FUNCTION set_ts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.body := NEW.body || '{"_ts": 0}';
    RETURN NEW;
END $$;
CREATE TRIGGER m_user_trigger BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION set_ts();
INSERT INTO t (id, body) VALUES (10, '{}');
SELECT body FROM t WHERE id = 10;
DROP TRIGGER m_user_trigger ON t;
SELECT tgname FROM pg_trigger WHERE tgrelid = 't'::regclass AND NOT tgisinternal;

-- the trigger function refuses to be misused
CREATE TABLE misuse (doc jsonb);
CREATE TRIGGER wrong AFTER INSERT ON misuse FOR EACH ROW EXECUTE FUNCTION ttl.stamp('doc');
INSERT INTO misuse VALUES ('{}');
DROP TRIGGER wrong ON misuse;
CREATE TRIGGER wrong BEFORE INSERT ON misuse FOR EACH ROW EXECUTE FUNCTION ttl.stamp('nope');
INSERT INTO misuse VALUES ('{}');
DROP TRIGGER wrong ON misuse;
CREATE TRIGGER wrong BEFORE INSERT ON misuse FOR EACH ROW EXECUTE FUNCTION ttl.stamp();
INSERT INTO misuse VALUES ('{}');
SELECT ttl.stamp();
DROP TABLE misuse;

DROP TABLE t CASCADE;
DROP FUNCTION set_bad_ttl(), set_ts();
