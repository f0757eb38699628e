-- The view's filter and the index accessors read "_ts" and "ttl" where an
-- inline document lies (a short varlena header, unaligned), and detoast
-- only compressed or out-of-line ones: every storage form and every shape
-- of the root gives the rule's answer, computed here in plain SQL.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:10:00+00';   -- 1767226200
CREATE TABLE lf (id int PRIMARY KEY, doc jsonb);
SELECT ttl.enable('lf', 300);
ALTER TABLE lf DISABLE TRIGGER zzz_ttl_stamp;       -- the documents as written here
CREATE TABLE lf_forms AS
SELECT row_number() OVER () AS id, ts.v::jsonb || t.v::jsonb || pad.v || keys.v AS doc, ts.name AS ts_form, t.name AS ttl_form,
       pad.name AS size, keys.name AS keys
  FROM (VALUES ('old', '{"_ts": 1767225000}'), ('new', '{"_ts": 1767226100}'), ('edge', '{"_ts": 1767225900}'),
               ('zeros', '{"_ts": 1767225000.000}'), ('exp', '{"_ts": 1.767225e9}'), ('half', '{"_ts": 1767225000.5}'),
               ('negative', '{"_ts": -5}'), ('huge', '{"_ts": 1e30}'), ('string', '{"_ts": "1767225000"}'),
               ('none', '{}')) ts(name, v),
       (VALUES ('inherit', '{}'), ('short', '{"ttl": 60}'), ('long', '{"ttl": 100000}'), ('pinned', '{"ttl": -1}'),
               ('bad', '{"ttl": "x"}'), ('zero', '{"ttl": 0}')) t(name, v),
       (VALUES ('small', '{}'::jsonb),
               ('compressed', jsonb_build_object('p', repeat('abc', 2000))),
               ('external', jsonb_build_object('p', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 300) i)))) pad(name, v),
       (VALUES ('few', '{"a": 1, "b": [1, {"c": 2}]}'::jsonb),
               ('many short', (SELECT jsonb_object_agg('k' || i, i) FROM generate_series(10, 80) i)),
               ('many long', (SELECT jsonb_object_agg('key' || i, repeat('v', i % 5)) FROM generate_series(1, 70) i))) keys(name, v);
INSERT INTO lf SELECT id, doc FROM lf_forms;
SELECT count(*) AS docs,
       count(*) FILTER (WHERE pg_column_size(doc) < 127) AS short_header,
       count(*) FILTER (WHERE pg_column_size(doc) < octet_length(doc::text) / 2) AS compressed_or_external
  FROM lf;
-- the rule in SQL: an integral _ts within bigint, an effective ttl > 0
CREATE FUNCTION lf_expired(doc jsonb, dflt int, now_s numeric) RETURNS boolean LANGUAGE sql AS $$
    SELECT CASE WHEN jsonb_typeof(doc->'_ts') = 'number'
                 AND (doc->>'_ts')::numeric = trunc((doc->>'_ts')::numeric)
                 AND (doc->>'_ts')::numeric BETWEEN -9223372036854775808 AND 9223372036854775807
           THEN (SELECT e > 0 AND (doc->>'_ts')::numeric + e <= now_s
                   FROM (SELECT CASE WHEN jsonb_typeof(doc->'ttl') = 'number'
                                      AND (doc->>'ttl')::numeric IN (-1) OR
                                          (jsonb_typeof(doc->'ttl') = 'number' AND (doc->>'ttl')::numeric = trunc((doc->>'ttl')::numeric)
                                           AND (doc->>'ttl')::numeric BETWEEN 1 AND 2147483647)
                                     THEN (doc->>'ttl')::int ELSE dflt END AS e) s)
           ELSE false END
$$;
SELECT f.ts_form, f.ttl_form,
       count(*) AS docs,
       count(*) FILTER (WHERE lf_expired(f.doc, 300, 1767226200)) AS expired_by_sql,
       count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM lf_live v WHERE v.id = f.id)) AS hidden_by_view,
       count(DISTINCT ttl.doc_purge_key(l.doc)) AS purge_keys,
       count(DISTINCT ttl.doc_ts(l.doc)) AS ts_values,
       count(DISTINCT ttl.doc_ttl(l.doc)) AS ttl_values
  FROM lf_forms f JOIN lf l USING (id)
 GROUP BY 1, 2 ORDER BY 1, 2;
SELECT count(*) AS disagreements FROM lf l
 WHERE lf_expired(l.doc, 300, 1767226200) = EXISTS (SELECT 1 FROM lf_live v WHERE v.id = l.id)
    OR ttl.doc_expired(l.doc, 300, 1767226200) <> lf_expired(l.doc, 300, 1767226200);
DROP TABLE lf, lf_forms CASCADE;
DROP FUNCTION lf_expired(jsonb, int, numeric);
