-- The stamping trigger splices "_ts" into the binary form of the document
-- (src/stamp.c): its output must be byte for byte what the pushJsonbValue
-- path of core makes ((doc - '_ts') || jsonb_build_object('_ts', now)),
-- over documents with more than 32 root keys (stored offsets), nested and
-- alignment-sensitive values, TOASTed documents and an existing _ts of
-- every JSON type.  A write in the same second as the stamp keeps the
-- document as it is: a TOASTed document is not written again.
\set SHOW_CONTEXT never
-- the raw bytes of a jsonb value, for this test only
CREATE CAST (jsonb AS bytea) WITHOUT FUNCTION;
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE sb (id int PRIMARY KEY, doc jsonb);
SELECT ttl.enable('sb', 3600);
CREATE TABLE sb_src AS
SELECT g AS id,
       coalesce((SELECT jsonb_object_agg(k, v) FROM (
           SELECT CASE i % 6 WHEN 0 THEN 'k' || i
                             WHEN 1 THEN repeat('x', i % 7) || i
                             WHEN 2 THEN substr('_tsa', 1, 1 + i % 4) || i % 3
                             WHEN 3 THEN 'zz' || i % 10
                             WHEN 4 THEN 'ttm' || i
                             ELSE chr(65 + i % 58) END AS k,
                  CASE (g + i) % 10 WHEN 0 THEN to_jsonb(i)
                                    WHEN 1 THEN to_jsonb(repeat('s', (g + i) % 13))
                                    WHEN 2 THEN 'null'
                                    WHEN 3 THEN to_jsonb((g + i) % 2 = 0)
                                    WHEN 4 THEN jsonb_build_array(i, 1.5, 'a', jsonb_build_object('n', i * 1.25))
                                    WHEN 5 THEN jsonb_build_object('deep', jsonb_build_object('x', i, 'y', repeat('q', i % 5)))
                                    WHEN 6 THEN to_jsonb(123456789012345678901234567890.5 * i)
                                    WHEN 7 THEN to_jsonb(-i)
                                    WHEN 8 THEN jsonb_build_object('ttl', 'nested', '_ts', i)
                                    ELSE '[]' END AS v
             FROM generate_series(1, g % 90) i) s), '{}')
       || CASE g % 12 WHEN 0 THEN '{"_ts": 1}'
                      WHEN 1 THEN '{"_ts": "1767225600"}'
                      WHEN 2 THEN '{"_ts": null}'
                      WHEN 3 THEN '{"_ts": true}'
                      WHEN 4 THEN '{"_ts": false}'
                      WHEN 5 THEN '{"_ts": [1767225600]}'
                      WHEN 6 THEN '{"_ts": {"a": 1}}'
                      WHEN 7 THEN '{"_ts": 1767225600.5}'
                      WHEN 8 THEN '{"_ts": -1e30}'
                      WHEN 9 THEN '{"_ts": 1767225600.0}'
                      WHEN 10 THEN '{"_ts": 1767225600}'
                      ELSE '{}' END::jsonb
       || CASE g % 4 WHEN 0 THEN jsonb_build_object('ttl', g) WHEN 1 THEN '{"ttl": -1}' ELSE '{}' END::jsonb
       -- out of line (incompressible) and compressed inline
       || CASE WHEN g % 50 = 0 THEN jsonb_build_object('big', (SELECT string_agg(md5(i::text || g), '') FROM generate_series(1, 400) i))
               WHEN g % 50 = 25 THEN jsonb_build_object('rep', repeat('abc', 3000))
               ELSE '{}' END::jsonb
       AS doc
  FROM generate_series(1, 3000) g;
INSERT INTO sb SELECT * FROM sb_src;
-- what the corpus holds
SELECT count(*) AS docs,
       count(*) FILTER (WHERE (SELECT count(*) FROM jsonb_object_keys(doc)) > 32) AS over_32_keys,
       count(*) FILTER (WHERE (SELECT count(*) FROM jsonb_object_keys(doc)) > 64) AS over_64_keys,
       count(*) FILTER (WHERE octet_length(doc::bytea) > 2000) AS toast_sized,
       count(DISTINCT jsonb_typeof(doc->'_ts')) AS ts_types
  FROM sb_src;
SELECT pg_relation_size(reltoastrelid) > 0 AS toasted FROM pg_class WHERE oid = 'sb'::regclass;
-- the stamped documents, byte for byte
SELECT count(*) FILTER (WHERE t.doc::bytea = ((s.doc - '_ts') || jsonb_build_object('_ts', 1767225600))::bytea) AS byte_identical,
       count(*) AS docs
  FROM sb t JOIN sb_src s USING (id);
-- the same through UPDATE in a later second: every _ts is a number now
SET ttl.now_override = '2026-01-01 00:00:01+00';
UPDATE sb SET doc = doc;
SELECT count(*) FILTER (WHERE t.doc::bytea = ((s.doc - '_ts') || jsonb_build_object('_ts', 1767225601))::bytea) AS byte_identical,
       count(*) AS docs
  FROM sb t JOIN sb_src s USING (id);

-- a second write in the same second keeps the stored document: the TOASTed
-- ones keep their chunks; in a later second they get new ones
CREATE FUNCTION sb_chunks() RETURNS oid[] LANGUAGE plpgsql AS $$
DECLARE
    chunks oid[];
BEGIN
    EXECUTE format('SELECT array_agg(DISTINCT chunk_id ORDER BY chunk_id) FROM %s',
                   (SELECT reltoastrelid::regclass FROM pg_class WHERE oid = 'sb'::regclass))
       INTO chunks;
    RETURN chunks;
END $$;
CREATE TEMP TABLE before AS SELECT sb_chunks() AS c;
UPDATE sb SET id = id WHERE id % 50 = 0;
UPDATE sb SET doc = doc WHERE id % 50 = 0;
SELECT sb_chunks() = (SELECT c FROM before) AS same_chunks,
       (SELECT count(*) FROM sb WHERE doc->'_ts' = '1767225601') AS stamped_now;
SET ttl.now_override = '2026-01-01 00:00:02+00';
UPDATE sb SET id = id WHERE id % 50 = 0;
SELECT sb_chunks() = (SELECT c FROM before) AS same_chunks,
       (SELECT count(*) FROM sb WHERE doc->'_ts' = '1767225602') AS stamped_now;
-- a client-sent _ts of the current second is ours; any other form is not
INSERT INTO sb VALUES (-1, '{"_ts": 1767225602, "a": 1}'), (-2, '{"_ts": 1767225602.0, "a": 1}');
-- and an invalid ttl is refused whatever _ts holds
INSERT INTO sb VALUES (-3, '{"_ts": 1767225602, "ttl": 0}');
SELECT id, doc, doc::bytea = '{"a": 1, "_ts": 1767225602}'::jsonb::bytea AS canonical
  FROM sb WHERE id < 0 ORDER BY id;
DROP TABLE sb, sb_src CASCADE;
DROP FUNCTION sb_chunks();
DROP CAST (jsonb AS bytea);
