-- Leak-free accessors: filtered reads through <table>_live use expression
-- and GIN indexes, give the same answers as ->>, #>> and @>, and still never
-- hand an expired document to a leaky function.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE acc (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('acc', 3600);
INSERT INTO acc
SELECT g, jsonb_build_object('userId', 'u' || (g % 100), 'tenant', g % 7,
                             'tags', jsonb_build_array('t' || (g % 13)), 'n', g,
                             'deep', jsonb_build_object('a', jsonb_build_array(1, 2, g)))
       || CASE WHEN g % 10 = 0 THEN '{"ttl": 60}'::jsonb ELSE '{}'::jsonb END
  FROM generate_series(1, 5000) g;
CREATE INDEX acc_user ON acc ((ttl.field(doc, 'userId')));
CREATE INDEX acc_n ON acc ((ttl.field_bigint(doc, 'n')));
CREATE INDEX acc_a2 ON acc ((ttl.path(doc, 'deep', 'a', '2')));
CREATE INDEX acc_gin ON acc USING gin (doc ttl.jsonb_path_ops);
CREATE INDEX acc_core ON acc ((doc->>'userId'));
ANALYZE acc;

-- through the view, the accessors' filters reach the indexes
EXPLAIN (COSTS OFF) SELECT id FROM acc_live WHERE ttl.field(doc, 'userId') = 'u5';
EXPLAIN (COSTS OFF) SELECT id FROM acc_live WHERE ttl.field_bigint(doc, 'n') BETWEEN 10 AND 20;
EXPLAIN (COSTS OFF) SELECT id FROM acc_live WHERE ttl.field(doc, 'userId') > 'u98';
EXPLAIN (COSTS OFF) SELECT id FROM acc_live WHERE ttl.path(doc, 'deep', 'a', '2') = '77';
EXPLAIN (COSTS OFF) SELECT id FROM acc_live WHERE doc OPERATOR(ttl.@>) '{"tenant": 3, "tags": ["t4"]}';
-- core ->> is not leakproof: the same filter cannot pass the barrier
EXPLAIN (COSTS OFF) SELECT id FROM acc_live WHERE doc->>'userId' = 'u5';

-- same answers as the core operators, on every row
SELECT count(*) AS rows,
       count(*) FILTER (WHERE ttl.field(doc, 'userId') IS NOT DISTINCT FROM doc->>'userId') AS field_same,
       count(*) FILTER (WHERE ttl.field(doc, 'deep') IS NOT DISTINCT FROM doc->>'deep') AS container_same,
       count(*) FILTER (WHERE ttl.field_bigint(doc, 'n') = (doc->>'n')::bigint) AS bigint_same,
       count(*) FILTER (WHERE ttl.field_float(doc, 'n') = (doc->>'n')::float8) AS float_same,
       count(*) FILTER (WHERE ttl.path(doc, 'deep', 'a', '2') IS NOT DISTINCT FROM doc#>>'{deep,a,2}') AS path_same,
       count(*) FILTER (WHERE (doc OPERATOR(ttl.@>) '{"tags": ["t4"]}') = (doc @> '{"tags": ["t4"]}')) AS contains_same
  FROM acc;
-- and the index answers equal the scan answers
SELECT count(*) FROM acc_live WHERE doc OPERATOR(ttl.@>) '{"tenant": 3, "tags": ["t4"]}';
SET enable_bitmapscan = off;
SET enable_indexscan = off;
SELECT count(*) FROM acc_live WHERE doc OPERATOR(ttl.@>) '{"tenant": 3, "tags": ["t4"]}';
RESET enable_bitmapscan;
RESET enable_indexscan;

-- odd inputs give NULL or false, never an error
SELECT ttl.field('[1, 2]', 'a') AS on_array, ttl.field('"s"', 'a') AS on_scalar,
       ttl.field('{"a": null}', 'a') AS json_null, ttl.field('{"a": true}', 'a') AS bool,
       ttl.field_bigint('{"a": "1"}', 'a') AS not_a_number, ttl.field_bigint('{"a": 1.5}', 'a') AS fraction,
       ttl.field_float('{"a": 1e400}', 'a') AS huge, ttl.field_float('{"a": 1.5}', 'a') AS float,
       ttl.path('{"a": [10, 20]}', 'a', '1') AS array_step, ttl.path('{"a": [10]}', 'a', '-1') AS negative,
       ttl.path('{"a": [10]}', 'a', 'x') AS not_an_index, ttl.path('{"a": 1}', 'a', 'b') AS through_scalar,
       ttl.path('{"a": 1}', VARIADIC '{}'::text[]) AS empty_path,
       ttl.path('{"a": 1}', VARIADIC '{{a}}'::text[]) AS two_dim,
       '[1, 2]'::jsonb OPERATOR(ttl.@>) '{"a": 1}' AS array_vs_object,
       '[1, 2]'::jsonb OPERATOR(ttl.@>) '[2]' AS array_contains;
SELECT proname, proleakproof FROM pg_proc
 WHERE pronamespace = 'ttl'::regnamespace AND proname IN ('field', 'field_bigint', 'field_float', 'path', 'contains')
 ORDER BY proname;

-- a reader still never sees an expired document through a leaky function,
-- also when a leak-free filter is pushed below the barrier
CREATE ROLE regress_acc_reader;
GRANT SELECT ON acc_live TO regress_acc_reader;
CREATE FUNCTION leak_id(jsonb) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN
    IF $1 ? 'ttl' THEN
        RAISE NOTICE 'leaked expired item %', $1->>'n';
    END IF;
    RETURN true;
END $$;
SET ttl.now_override = '2026-01-01 00:05:00+00';
SET ROLE regress_acc_reader;
SELECT count(*) FROM acc_live WHERE ttl.field(doc, 'userId') IN ('u10', 'u15') AND leak_id(doc);
SELECT count(*) FROM acc_live WHERE doc OPERATOR(ttl.@>) '{"tenant": 3}' AND leak_id(doc);
RESET ROLE;
SELECT count(*) FILTER (WHERE ttl.field(doc, 'userId') IN ('u10', 'u15')) AS first_all,
       count(*) FILTER (WHERE doc @> '{"tenant": 3}') AS second_all,
       count(*) FILTER (WHERE doc ? 'ttl' AND (ttl.field(doc, 'userId') IN ('u10', 'u15') OR doc @> '{"tenant": 3}')) AS expired_among_them
  FROM acc;

DROP TABLE acc CASCADE;
DROP FUNCTION leak_id(jsonb);
DROP ROLE regress_acc_reader;
