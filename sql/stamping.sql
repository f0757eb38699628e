-- The trigger splices the binary document: check on many shapes that the
-- result is the input minus any client _ts, plus _ts = now, and a valid jsonb
-- (text round trip, equality, key order, nested containers, numerics at
-- every alignment, more than 32 keys, keys sorting next to "_ts").
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE st (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('st', 60);
CREATE TEMP TABLE shapes AS
SELECT g AS id,
       (SELECT jsonb_object_agg(k, v) FROM (
            SELECT CASE (g + i) % 9
                       WHEN 0 THEN 'k' || i
                       WHEN 1 THEN repeat('x', (g + i) % 7)
                       WHEN 2 THEN '_t' || chr(97 + (g + i) % 26)
                       WHEN 3 THEN '_ts'
                       WHEN 4 THEN 'ttm'
                       WHEN 5 THEN 'é' || i
                       WHEN 6 THEN 'ab'
                       WHEN 7 THEN '_s'
                       ELSE 'key_' || i END AS k,
                   CASE (g * 7 + i) % 8
                       WHEN 0 THEN to_jsonb(repeat('s', (g + i) % 5))
                       WHEN 1 THEN to_jsonb((g * 1000003 + i)::numeric / 7)
                       WHEN 2 THEN to_jsonb(g + i)
                       WHEN 3 THEN jsonb_build_array(i, repeat('a', g % 3), jsonb_build_object('n', i, 'ttl', 'nested'))
                       WHEN 4 THEN jsonb_build_object('o', jsonb_build_array(), 'p', 1.5, 'q', NULL::text)
                       WHEN 5 THEN 'null'::jsonb
                       WHEN 6 THEN to_jsonb(i % 2 = 0)
                       ELSE to_jsonb(12345678901234567890::numeric * i) END AS v
              FROM generate_series(1, 1 + g % 120) i) s)
       || CASE WHEN g % 4 = 0 THEN jsonb_build_object('ttl', 1 + g) WHEN g % 4 = 1 THEN '{"ttl": -1}' ELSE '{}' END
       AS doc
  FROM generate_series(1, 2000) g;
INSERT INTO st SELECT * FROM shapes;
SELECT count(*) AS docs,
       count(*) FILTER (WHERE (t.doc - '_ts') = (s.doc - '_ts')) AS same_content,
       count(*) FILTER (WHERE t.doc->'_ts' = '1767225600') AS stamped,
       count(*) FILTER (WHERE t.doc::text::jsonb = t.doc AND t.doc::text = t.doc::text::jsonb::text) AS round_trip,
       count(*) FILTER (WHERE (SELECT count(*) FROM jsonb_each(t.doc)) = (SELECT count(*) FROM jsonb_each(s.doc - '_ts')) + 1) AS key_count,
       count(*) FILTER (WHERE (SELECT array_agg(k) FROM jsonb_object_keys(t.doc) k)
                          = (SELECT array_agg(k) FROM jsonb_object_keys((s.doc - '_ts') || '{"_ts": 0}') k)) AS key_order,
       max(jsonb_array_length(jsonb_path_query_array(t.doc, '$.*'))) AS max_keys
  FROM st t JOIN shapes s USING (id);
-- the same through UPDATE (a stamped document stamped again)
SET ttl.now_override = '2026-01-01 00:00:01+00';
UPDATE st SET doc = doc;
SELECT count(*) FILTER (WHERE (t.doc - '_ts') = (s.doc - '_ts') AND t.doc->'_ts' = '1767225601'
                          AND t.doc::text::jsonb = t.doc) AS restamped
  FROM st t JOIN shapes s USING (id);
-- values nested in stamped documents stay intact to the last byte
SELECT count(*) FILTER (WHERE t.doc #> '{k3}' IS NOT DISTINCT FROM s.doc #> '{k3}'
                          AND jsonb_path_query_array(t.doc, 'strict $.**') = jsonb_path_query_array(s.doc || jsonb_build_object('_ts', 1767225601), 'strict $.**')) AS deep_equal,
       count(*) AS candidates
  FROM st t JOIN shapes s USING (id) WHERE NOT s.doc ? '_ts';
DROP TABLE st CASCADE;
-- the stamped row rebuilt in place of forming it anew (document last,
-- nothing out of line) reads back exactly, whatever the columns before it,
-- their nulls and alignment, the document's size (short header or not) and
-- the column's storage; other shapes (document not last, TOASTed) take the
-- general path.  Each row is compared with the same values inserted into an
-- untriggered table of the same columns: content and stored size (with
-- storage PLAIN content only: core packs a small value or not depending on
-- the descriptor that formed the row, and the trigger never packs there).
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE rb_a (id int2, doc jsonb);
CREATE TABLE rb_b (a int8, b text, c int2, g int4, doc jsonb);
CREATE TABLE rb_c (a text, b int4, doc jsonb);
ALTER TABLE rb_c ALTER COLUMN doc SET STORAGE PLAIN;
CREATE TABLE rb_d (doc jsonb, z int4);
CREATE TABLE rb_e (a int4, doc jsonb);
ALTER TABLE rb_e ALTER COLUMN doc SET STORAGE EXTERNAL;
SELECT ttl.enable('rb_a', 60), ttl.enable('rb_b', 60), ttl.enable('rb_c', 60),
       ttl.enable('rb_d', 60), ttl.enable('rb_e', 60);
CREATE TABLE rb_docs AS
SELECT g, CASE g % 5
            WHEN 0 THEN '{}'::jsonb
            WHEN 1 THEN jsonb_build_object('k', repeat('x', g % 90))
            WHEN 2 THEN jsonb_build_object('k', repeat('y', 100 + g % 40), 'ttl', 30)
            WHEN 3 THEN jsonb_build_object('n', g, '_ts', 'old')
            ELSE jsonb_build_object('big', repeat(md5(g::text), 300)) END AS doc
  FROM generate_series(1, 200) g;
INSERT INTO rb_a SELECT g, doc FROM rb_docs;
INSERT INTO rb_b SELECT CASE WHEN g % 3 = 0 THEN NULL ELSE g END,
                        CASE WHEN g % 2 = 0 THEN NULL ELSE repeat('t', g % 7) END,
                        CASE WHEN g % 4 = 0 THEN NULL ELSE g END, g, doc FROM rb_docs;
INSERT INTO rb_c SELECT repeat('s', g % 5), g, doc FROM rb_docs WHERE g % 5 <> 4;
INSERT INTO rb_d SELECT doc, g FROM rb_docs;
INSERT INTO rb_e SELECT g, doc FROM rb_docs;
-- references: the stamped documents, stored without a trigger
CREATE TABLE ref_a (LIKE rb_a); CREATE TABLE ref_b (LIKE rb_b); CREATE TABLE ref_c (LIKE rb_c INCLUDING STORAGE);
CREATE TABLE ref_d (LIKE rb_d); CREATE TABLE ref_e (LIKE rb_e INCLUDING STORAGE);
INSERT INTO ref_a SELECT g, (doc - '_ts') || '{"_ts": 1767225600}' FROM rb_docs;
INSERT INTO ref_b SELECT CASE WHEN g % 3 = 0 THEN NULL ELSE g END,
                         CASE WHEN g % 2 = 0 THEN NULL ELSE repeat('t', g % 7) END,
                         CASE WHEN g % 4 = 0 THEN NULL ELSE g END, g,
                         (doc - '_ts') || '{"_ts": 1767225600}' FROM rb_docs;
INSERT INTO ref_c SELECT repeat('s', g % 5), g, (doc - '_ts') || '{"_ts": 1767225600}' FROM rb_docs WHERE g % 5 <> 4;
INSERT INTO ref_d SELECT (doc - '_ts') || '{"_ts": 1767225600}', g FROM rb_docs;
INSERT INTO ref_e SELECT g, (doc - '_ts') || '{"_ts": 1767225600}' FROM rb_docs;
SELECT 'a' AS t, count(*) AS rows,
       count(*) FILTER (WHERE r.doc = x.doc AND pg_column_size(r.doc) = pg_column_size(x.doc)) AS same
  FROM rb_a r JOIN ref_a x USING (id)
UNION ALL
SELECT 'b', count(*),
       count(*) FILTER (WHERE r.doc = x.doc AND pg_column_size(r.doc) = pg_column_size(x.doc)
                        AND r.a IS NOT DISTINCT FROM x.a AND r.b IS NOT DISTINCT FROM x.b
                        AND r.c IS NOT DISTINCT FROM x.c)
  FROM rb_b r JOIN ref_b x USING (g)
UNION ALL
SELECT 'c', count(*),
       count(*) FILTER (WHERE r.a = x.a AND r.doc = x.doc)
  FROM rb_c r JOIN ref_c x USING (b)
UNION ALL
SELECT 'd', count(*),
       count(*) FILTER (WHERE r.doc = x.doc AND pg_column_size(r.doc) = pg_column_size(x.doc))
  FROM rb_d r JOIN ref_d x USING (z)
UNION ALL
SELECT 'e', count(*),
       count(*) FILTER (WHERE r.doc = x.doc AND pg_column_size(r.doc) = pg_column_size(x.doc))
  FROM rb_e r JOIN ref_e x USING (a)
ORDER BY 1;
-- and through UPDATE, a second later: every row restamped, the rest as it was
SET ttl.now_override = '2026-01-01 00:00:01+00';
UPDATE rb_a SET doc = doc;
UPDATE rb_b SET doc = doc;
SELECT count(*) FILTER (WHERE r.doc = (x.doc - '_ts') || '{"_ts": 1767225601}') AS a_restamped,
       (SELECT count(*) FROM rb_b b JOIN rb_docs d USING (g)
         WHERE b.doc = (d.doc - '_ts') || '{"_ts": 1767225601}'
           AND b.a IS NOT DISTINCT FROM CASE WHEN d.g % 3 = 0 THEN NULL ELSE d.g END
           AND b.b IS NOT DISTINCT FROM CASE WHEN d.g % 2 = 0 THEN NULL ELSE repeat('t', d.g % 7) END) AS b_restamped
  FROM rb_a r JOIN ref_a x USING (id);
DROP TABLE rb_a, rb_b, rb_c, rb_d, rb_e, ref_a, ref_b, ref_c, ref_d, ref_e, rb_docs CASCADE;
RESET ttl.now_override;
