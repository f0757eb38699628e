-- Rule 3: every bad ttl form and every bad document is rejected with its
-- SQLSTATE and a message naming the container and the value; nothing is
-- written.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE v (id serial PRIMARY KEY, doc jsonb);
SELECT ttl.enable('v', 60);

CREATE FUNCTION try_insert(d jsonb) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO v (doc) VALUES (d);
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

SELECT d::text AS ttl_value, try_insert(jsonb_build_object('ttl', d)) AS result
  FROM (VALUES ('null'::jsonb), ('"60"'), ('true'), ('false'), ('[60]'),
               ('{"s": 60}'), ('1.5'), ('0.5'), ('0'), ('-0'), ('-2'),
               ('-2147483648'), ('2147483648'), ('1e10'), ('1e-2'),
               ('99999999999999999999999999'), ('-1.5'), ('""'),
               ('-1'), ('1'), ('2147483647'), ('1.0'), ('1e2'), ('60')) x(d);
SELECT count(*) AS written FROM v;

-- bad documents
SELECT try_insert(NULL) AS sql_null;
SELECT try_insert('null') AS json_null;
SELECT try_insert('[]') AS json_array;
SELECT try_insert('"text"') AS json_string;
SELECT try_insert('5') AS json_number;
SELECT count(*) AS written FROM v;

-- only the root ttl counts; TTL and nested ttl are ordinary properties
SELECT try_insert('{"a": {"ttl": "nested"}, "TTL": "x", "ttlx": []}');

-- the error in full
INSERT INTO v (doc) VALUES ('{"ttl": "60", "user": "u1"}');
INSERT INTO v (doc) VALUES ('[1, 2, 3]');
INSERT INTO v (doc) VALUES (NULL);
INSERT INTO v (doc) VALUES (jsonb_build_object('ttl', repeat('x', 500)));

-- UPDATE, COPY and upsert are validated too, and leave the data as it was
SELECT count(*) AS before FROM v;
UPDATE v SET doc = doc || '{"ttl": 0}';
COPY v (doc) FROM stdin;
{"ok": 1}
{"ttl": false}
\.
INSERT INTO v (id, doc) VALUES ((SELECT min(id) FROM v), '{}')
    ON CONFLICT (id) DO UPDATE SET doc = '{"ttl": 1.25}';
SELECT count(*) AS after, count(*) FILTER (WHERE doc ? 'ok') AS copied FROM v;
SELECT count(*) AS unchanged FROM v WHERE doc->'ttl' IS DISTINCT FROM '0';

-- a default_ttl that is not valid at enable time
CREATE TABLE v2 (doc jsonb);
SELECT ttl.enable('v2', 0);
SELECT ttl.enable('v2', -2);
SELECT count(*) FROM ttl.containers WHERE container = 'v2'::regclass;

DROP FUNCTION try_insert(jsonb);
DROP TABLE v, v2 CASCADE;
