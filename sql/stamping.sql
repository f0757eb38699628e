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
