-- Errors that say what is wrong and where (security round 3): ttl.enable
-- on a partition of a container (and on a table above one), a deadline
-- out of range, legal hold names limited like identifiers, a number past
-- float8's range in ttl.field_float, a bad existing row named by its key,
-- and no XX000 from SQL: the event-trigger functions called directly, a
-- DO INSTEAD rule in the way of ttl.enable's stamping or of rule 10.
\set SHOW_CONTEXT never
\set VERBOSITY default
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE FUNCTION em_try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

-- 1. a partition of a container, at any depth, is no container of its own
CREATE TABLE em_p (id int PRIMARY KEY, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE em_p1 PARTITION OF em_p FOR VALUES FROM (0) TO (100);
CREATE TABLE em_p2 PARTITION OF em_p FOR VALUES FROM (100) TO (200) PARTITION BY RANGE (id);
CREATE TABLE em_p21 PARTITION OF em_p2 FOR VALUES FROM (100) TO (150);
SELECT ttl.enable('em_p', 60);
SELECT ttl.enable('em_p1', 60);
SELECT ttl.enable('em_p21', 60);
SELECT em_try('SELECT ttl.enable(''em_p2'', 60)') AS mid_level;
-- ... nor can a table above a container become one (at any depth)
SELECT ttl.disable('em_p');
SELECT ttl.enable('em_p21', 60);
SELECT em_try('SELECT ttl.enable(''em_p'', 60)') AS top_level;
SELECT em_try('SELECT ttl.enable(''em_p2'', 60)') AS mid_level;
SELECT container FROM ttl.containers WHERE container::text LIKE 'em_p%' ORDER BY 1;
SELECT ttl.disable('em_p21');

-- 2. a deadline out of range says the range (a lifetime already did)
CREATE TABLE em_d (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('em_d', 60, deadline_property => 'exp');
INSERT INTO em_d VALUES (1, '{"exp": 1e18}');
INSERT INTO em_d VALUES (1, '{"ttl": 1e18}');
-- the last second a timestamptz holds is the last deadline
INSERT INTO em_d VALUES (1, '{"exp": 9224318015999}');
INSERT INTO em_d VALUES (2, '{"exp": 9224318016000}');
SELECT id, ttl.doc_deadline_key(doc, 'exp') FROM em_d;

-- 3. legal hold names: at most NAMEDATALEN - 1 bytes, like an identifier;
-- the message shows the start of the name, never all of it
SELECT ttl.set_legal_hold('em_d', repeat('h', 63), '{"case": 1}');
SELECT ttl.set_legal_hold('em_d', repeat('h', 64), '{"case": 1}');
SELECT ttl.set_legal_hold('em_d', repeat('x', 100000), '{"case": 1}');
-- bytes, not characters; the start is cut at a character's end
SELECT ttl.set_legal_hold('em_d', repeat('é', 32), '{"case": 1}');
SELECT ttl.set_legal_hold('em_d', repeat('é', 31), '{"case": 1}');
SELECT octet_length(name) FROM ttl.legal_holds WHERE container = 'em_d'::regclass ORDER BY 1;
SELECT ttl.release_legal_hold('em_d', repeat('h', 63));
SELECT ttl.release_legal_hold('em_d', repeat('é', 31));

-- 4. ttl.field_float: a number past float8's range gives NULL (it is
-- leakproof: it raises on no document), never Infinity
SELECT ttl.field_float('{"a": 1e400}', 'a') AS huge,
       ttl.field_float('{"a": -1e400}', 'a') AS huge_negative,
       ttl.field_float('{"a": 1e-400}', 'a') AS tiny,
       ttl.field_float('{"a": 1.5e308}', 'a') AS largest,
       ttl.field_float('{"a": "1e400"}', 'a') AS text;

-- 5. enable over an existing bad row names the row by its primary key
-- (the first one in key order), or by its ctid (and partition)
CREATE TABLE em_b (k1 text, k2 int, doc jsonb, PRIMARY KEY (k1, k2));
INSERT INTO em_b VALUES ('a', 1, '{}'), ('b', 7, '{"ttl": "soon"}'), ('b', 2, '{"ttl": 0}');
SELECT ttl.enable('em_b', 60);
UPDATE em_b SET doc = '[]' WHERE k2 = 2;
SELECT ttl.enable('em_b', 60);
UPDATE em_b SET doc = NULL WHERE k2 = 2;
SELECT ttl.enable('em_b', 60);
CREATE TABLE em_n (id int, doc jsonb) PARTITION BY LIST (id);
CREATE TABLE em_n1 PARTITION OF em_n FOR VALUES IN (1);
CREATE TABLE em_n2 PARTITION OF em_n FOR VALUES IN (2);
INSERT INTO em_n VALUES (1, '{}'), (2, '{}'), (2, '{"ttl": -5}');
SELECT ttl.enable('em_n', 60);
SELECT container FROM ttl.containers WHERE container::text LIKE 'em_%' ORDER BY 1;

-- 6. the event-trigger functions called directly: 39P03, not XX000
SELECT em_try('SELECT ttl._ddl_start()') AS ddl_start, em_try('SELECT ttl._ddl_end()') AS ddl_end;

-- 7. a DO INSTEAD rule in the way: ttl.enable's stamping UPDATE ...
CREATE TABLE em_r (id int PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO em_r VALUES (1, '{}');
CREATE RULE em_r_upd AS ON UPDATE TO em_r DO INSTEAD NOTHING;
SELECT ttl.enable('em_r', 60);
DROP RULE em_r_upd ON em_r;
SELECT ttl.enable('em_r', 60);
-- ... and rule 10's DELETE of an expired item: 0A000, nothing replaced
CREATE RULE em_r_del AS ON DELETE TO em_r DO INSTEAD NOTHING;
SET ttl.now_override = '2030-01-01 00:05:00+00';
INSERT INTO em_r VALUES (1, '{"v": "new"}');
SELECT id, doc - '_ts' AS doc FROM em_r;
-- a DO ALSO rule is no obstacle
DROP RULE em_r_del ON em_r;
CREATE TABLE em_r_log (id int);
CREATE RULE em_r_del AS ON DELETE TO em_r DO ALSO INSERT INTO em_r_log VALUES (OLD.id);
INSERT INTO em_r VALUES (1, '{"v": "new"}');
SELECT id, doc - '_ts' AS doc FROM em_r;
SELECT id FROM em_r_log;

SET client_min_messages = warning;
DROP TABLE em_p, em_d, em_b, em_n, em_r, em_r_log CASCADE;
RESET client_min_messages;
DROP FUNCTION em_try(text);

-- a caller's mistake in ttl.enable is ttl.enable's: no CONTEXT line names
-- an internal function (ttl._register, ttl._existing_rows) or its PL/pgSQL
\set SHOW_CONTEXT always
CREATE VIEW em_ctx_view AS SELECT 1 AS a;
SELECT ttl.enable('em_ctx_view', 60);
CREATE TABLE em_ctx_bad (id int PRIMARY KEY, doc jsonb);
INSERT INTO em_ctx_bad VALUES (7, '{"ttl": "soon"}');
SELECT ttl.enable('em_ctx_bad', 60);
-- the same for ttl.disable, ttl.set_append_only, ttl.set_deadline_property
SELECT ttl.disable('em_ctx_bad');
UPDATE em_ctx_bad SET doc = '{"until": "soon"}';
SELECT ttl.enable('em_ctx_bad', 60);
SELECT ttl.set_append_only('em_ctx_bad', true, 'nonsense');
SELECT ttl.set_deadline_property('em_ctx_bad', 'until');
SELECT ttl.disable('em_ctx_bad');
\set SHOW_CONTEXT never
DROP VIEW em_ctx_view;
DROP TABLE em_ctx_bad;
