-- <table>_live is planned as a scan of the table with ttl.live() as a
-- security qual (no subquery), wherever the view appears; the barrier holds
-- exactly as before: no expired document reaches a function that is not
-- leakproof, whatever its cost and wherever the query puts it.  Shapes the
-- rewrite does not cover keep the usual subquery and the same answers.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE lv (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('lv', 60);
INSERT INTO lv SELECT i, jsonb_build_object('n', i, 'ttl', CASE WHEN i % 2 = 0 THEN 5 ELSE 100 END)
  FROM generate_series(1, 10) i;
CREATE TABLE other (id int PRIMARY KEY, label text);
INSERT INTO other SELECT i, 'o' || i FROM generate_series(1, 10) i;
ANALYZE lv, other;
SET ttl.now_override = '2026-01-01 00:00:10+00';
-- even ids have expired
CREATE FUNCTION peek(int, name) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN
    RAISE NOTICE 'peek saw row % of %', $1, $2;
    RETURN true;
END $$;
CREATE FUNCTION leak(jsonb) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN
    IF NOT ttl.live($1, 'lv') THEN
        RAISE NOTICE 'leaked expired item %', $1->>'n';
    END IF;
    RETURN true;
END $$;

-- flattened: a point read, a join, a sublink, a CTE, a UNION arm, an alias
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT doc FROM lv_live WHERE id = 3;
RESET enable_seqscan;
EXPLAIN (COSTS OFF) SELECT o.label FROM lv_live v JOIN other o USING (id) WHERE o.id < 4;
EXPLAIN (COSTS OFF) SELECT label FROM other WHERE id IN (SELECT id FROM lv_live);
EXPLAIN (COSTS OFF) WITH w AS MATERIALIZED (SELECT id FROM lv_live) SELECT count(*) FROM w;
EXPLAIN (COSTS OFF) SELECT id FROM lv_live UNION ALL SELECT id FROM other;
EXPLAIN (COSTS OFF) SELECT x.n FROM lv_live AS x(n, d) WHERE x.n = 1;
SELECT doc->>'n' AS n FROM lv_live WHERE id IN (3, 4);
SELECT o.label FROM lv_live v JOIN other o USING (id) WHERE o.id < 5 ORDER BY 1;
SELECT label FROM other WHERE id IN (SELECT id FROM lv_live) ORDER BY id;
SELECT label FROM other o WHERE NOT EXISTS (SELECT FROM lv_live v WHERE v.id = o.id) ORDER BY id;
WITH w AS MATERIALIZED (SELECT id FROM lv_live) SELECT count(*) FROM w;
SELECT x.n FROM lv_live AS x(n, d) WHERE x.n = 1;

-- the barrier: a cheap leaky function never sees an expired document, in
-- WHERE, in a join condition, through an outer join, in a sublink
SELECT count(*) FROM lv_live WHERE leak(doc);
SELECT count(*) FROM lv_live v JOIN other o ON leak(v.doc) AND o.id = v.id;
SELECT count(*) FROM other o LEFT JOIN lv_live v ON v.id = o.id AND leak(v.doc);
SELECT count(*) FROM other o WHERE EXISTS (SELECT FROM lv_live v WHERE v.id = o.id AND leak(v.doc));
SELECT count(*) FROM lv_live WHERE leak(doc) AND id > 0;
EXPLAIN (COSTS OFF) SELECT * FROM lv_live WHERE leak(doc);

-- not flattened (the planner's subquery), same answers: a whole-row
-- reference, FOR UPDATE, a view edited by hand
EXPLAIN (COSTS OFF) SELECT v FROM lv_live v WHERE id = 3;
SELECT v FROM lv_live v WHERE id IN (3, 4);
SELECT to_jsonb(v) ->> 'id' AS id FROM lv_live v WHERE leak(v.doc) ORDER BY 1;
EXPLAIN (COSTS OFF) SELECT id FROM lv_live WHERE id = 3 FOR UPDATE;
SELECT id FROM lv_live WHERE id IN (3, 4) FOR UPDATE;

-- a cached plan follows a change of the view's definition
PREPARE rd(int) AS SELECT id FROM lv_live WHERE id <= $1 ORDER BY id;
EXECUTE rd(4);
CREATE OR REPLACE VIEW lv_live WITH (security_barrier) AS
    SELECT * FROM lv WHERE ttl.live(doc, 'lv'::regclass) AND id > 1;
EXECUTE rd(4);
EXPLAIN (COSTS OFF) EXECUTE rd(4);
CREATE OR REPLACE VIEW lv_live WITH (security_barrier) AS
    SELECT * FROM lv WHERE ttl.live(doc, 'lv'::regclass);
EXECUTE rd(4);
DEALLOCATE rd;

-- stored queries keep naming the view (a query is only planned through it):
-- a view and a SQL-standard function body over lv_live, and what they return
CREATE VIEW lv_odd AS SELECT id FROM lv_live WHERE id < 6;
CREATE FUNCTION lv_count() RETURNS bigint LANGUAGE sql
    BEGIN ATOMIC SELECT count(*) FROM lv_live; END;
SELECT pg_get_viewdef('lv_odd'::regclass) ~ 'FROM lv_live' AS view_names_lv_live,
       pg_get_functiondef('lv_count'::regproc) ~ 'FROM lv_live' AS function_names_lv_live;
SELECT id FROM lv_odd ORDER BY id;
SELECT lv_count();
EXPLAIN (COSTS OFF) SELECT id FROM lv_odd WHERE id = 3;
DROP VIEW lv_odd;
DROP FUNCTION lv_count();
-- a SQL function inlined into the caller is analysed while the caller is
-- planned, after the planner stage: the parse stage flattens the view in it
CREATE FUNCTION lv_rows() RETURNS SETOF lv_live LANGUAGE sql STABLE
    AS 'SELECT * FROM lv_live';
EXPLAIN (COSTS OFF) SELECT id FROM lv_rows() WHERE id = 3;
SELECT id FROM lv_rows() WHERE leak(doc) ORDER BY id;
DROP FUNCTION lv_rows();

-- a dropped column ahead of the document: column numbers differ from the
-- view's; the view's columns are mapped to the table's, still one scan
CREATE TABLE lvd (gone int, id int PRIMARY KEY, doc jsonb);
ALTER TABLE lvd DROP COLUMN gone;
SELECT ttl.enable('lvd', 60);
INSERT INTO lvd VALUES (1, '{}'), (2, '{"ttl": 1}');
SET ttl.now_override = '2026-01-01 00:00:20+00';
EXPLAIN (COSTS OFF) SELECT id FROM lvd_live WHERE id = 1;
SELECT id FROM lvd_live ORDER BY id;

-- a partitioned container: every partition gets the security qual
CREATE TABLE lvp (id int, doc jsonb) PARTITION BY RANGE (id);
CREATE TABLE lvp1 PARTITION OF lvp FOR VALUES FROM (0) TO (100);
CREATE TABLE lvp2 PARTITION OF lvp FOR VALUES FROM (100) TO (200);
SELECT ttl.enable('lvp', 60);
INSERT INTO lvp VALUES (1, '{}'), (2, '{"ttl": 1}'), (101, '{}'), (102, '{"ttl": 1}');
SET ttl.now_override = '2026-01-01 00:00:30+00';
EXPLAIN (COSTS OFF) SELECT id FROM lvp_live WHERE leak(doc);
SELECT id FROM lvp_live WHERE leak(doc) ORDER BY id;

-- permissions are checked as before: the reader needs SELECT on the view,
-- not on the table; the view's owner reads the table
CREATE ROLE regress_lv_reader;
GRANT USAGE ON SCHEMA ttl TO regress_lv_reader;
SET ROLE regress_lv_reader;
SELECT id FROM lv_live WHERE id = 1;
RESET ROLE;
GRANT SELECT ON lv_live TO regress_lv_reader;
SET ROLE regress_lv_reader;
SELECT id FROM lv_live WHERE id IN (1, 2);
SELECT id FROM lv WHERE id = 1;
RESET ROLE;

-- row-level security (the view is security_invoker): the policy comes
-- first, then ttl.live, then the reader's quals
CREATE TABLE lvr (id int PRIMARY KEY, owner name, doc jsonb);
ALTER TABLE lvr ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON lvr USING (owner = current_user);
SELECT ttl.enable('lvr', 60);
INSERT INTO lvr VALUES (1, 'regress_lv_reader', '{}'), (2, 'regress_lv_reader', '{"ttl": 1}'),
                       (3, 'someone_else', '{}');
GRANT SELECT ON lvr, lvr_live TO regress_lv_reader;
SET ttl.now_override = '2026-01-01 00:00:40+00';
SET ROLE regress_lv_reader;
EXPLAIN (COSTS OFF) SELECT id FROM lvr_live WHERE leak(doc);
SELECT id FROM lvr_live WHERE leak(doc) ORDER BY id;
-- a cheap leaky function sees only the reader's own live row (id 1): not
-- the expired row 2, not row 3 of someone else
SELECT id FROM lvr_live WHERE peek(id, owner) ORDER BY id;
RESET ROLE;

DROP TABLE lv, lvd, lvp, lvr, other CASCADE;
DROP FUNCTION leak(jsonb);
DROP FUNCTION peek(int, name);
DROP OWNED BY regress_lv_reader;
DROP ROLE regress_lv_reader;
