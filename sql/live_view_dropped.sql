-- After a column is dropped (the event trigger rebuilds <table>_live), the
-- live view is still planned as a scan of the table with ttl.live() as a
-- security qual: its columns are mapped to the table's attribute numbers.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE lvd (id int PRIMARY KEY, gone1 text, name text, gone2 int, doc jsonb, tail int);
SELECT ttl.enable('lvd', 60);
INSERT INTO lvd SELECT i, 'g', 'n' || i, i,
       jsonb_build_object('ttl', CASE WHEN i % 2 = 0 THEN 5 ELSE 100 END), i * 10
  FROM generate_series(1, 6) i;
ALTER TABLE lvd DROP COLUMN gone1;
ALTER TABLE lvd DROP COLUMN gone2;
ALTER TABLE lvd ADD COLUMN extra text DEFAULT 'x';
ANALYZE lvd;
SET ttl.now_override = '2026-01-01 00:00:10+00';   -- even ids have expired

SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT name, tail FROM lvd_live WHERE id = 3;
RESET enable_seqscan;
EXPLAIN (COSTS OFF, VERBOSE) SELECT name, extra FROM lvd_live WHERE tail > 10;
SELECT id, name, tail, extra FROM lvd_live ORDER BY id;
SELECT * FROM lvd_live WHERE id = 3;
-- a correlated sublink refers to the outer view's columns
SELECT v.name FROM lvd_live v
 WHERE v.tail > (SELECT min(w.tail) FROM lvd_live w WHERE w.id < v.id) ORDER BY 1;
-- column aliases
SELECT x.n, x.t FROM lvd_live AS x(i, n, d, t) WHERE x.i = 5;
-- a join, grouping and ordering by view columns
SELECT v.extra, count(*), max(v.name) FROM lvd_live v JOIN lvd_live u USING (id)
 GROUP BY v.extra ORDER BY 1;
-- a cheap leaky function still never sees an expired row
CREATE FUNCTION lvd_peek(int, text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN
    RAISE NOTICE 'peek saw % %', $1, $2;
    RETURN true;
END $$;
SELECT id FROM lvd_live WHERE lvd_peek(id, name) ORDER BY id;
-- inside another view (the planner stage flattens it)
CREATE VIEW lvd_outer AS SELECT name, tail FROM lvd_live;
EXPLAIN (COSTS OFF) SELECT * FROM lvd_outer;
SELECT * FROM lvd_outer ORDER BY tail;
SELECT name FROM lvd_outer WHERE lvd_peek(tail, name) ORDER BY 1;
-- prepared
PREPARE lvd_p(int) AS SELECT name, extra FROM lvd_live WHERE id = $1;
EXECUTE lvd_p(1);
EXECUTE lvd_p(2);
DEALLOCATE lvd_p;
-- whole-row use keeps PostgreSQL's subquery, same answers
SELECT v FROM lvd_live v WHERE id = 1;
-- row-level security: the policy names the table's attributes, the reader
-- the view's columns
CREATE ROLE regress_lvd_reader;
GRANT SELECT ON lvd, lvd_live, lvd_outer TO regress_lvd_reader;
ALTER TABLE lvd ENABLE ROW LEVEL SECURITY;
CREATE POLICY lvd_tail ON lvd USING (tail > 20);
SET ROLE regress_lvd_reader;
EXPLAIN (COSTS OFF) SELECT name FROM lvd_live WHERE lvd_peek(tail, name);
SELECT name FROM lvd_live WHERE lvd_peek(tail, name) ORDER BY 1;
SELECT name FROM lvd_outer ORDER BY 1;
RESET ROLE;
DROP VIEW lvd_outer;
DROP TABLE lvd CASCADE;
DROP FUNCTION lvd_peek(int, text);
DROP ROLE regress_lvd_reader;
