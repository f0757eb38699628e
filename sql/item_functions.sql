-- ttl.calculate, ttl.state, ttl.expires_at, ttl.is_expired.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';

-- calculate(default_ttl, item_ttl, ts, at)
SELECT * FROM ttl.calculate(NULL, NULL, 1767225600, '2026-01-01 00:00:00+00');
SELECT * FROM ttl.calculate(NULL, 60, 1767225600, '2026-01-01 00:00:00+00');
SELECT * FROM ttl.calculate(NULL, 0, 1767225600, '2026-01-01 00:00:00+00');
SELECT * FROM ttl.calculate(-1, NULL, 1767225600, '2026-01-01 00:00:00+00');
SELECT * FROM ttl.calculate(60, -1, 1767225600, '2026-01-01 00:00:00+00');
SELECT * FROM ttl.calculate(-1, 90, 1767225600, '2026-01-01 00:00:30+00');
SELECT * FROM ttl.calculate(60, NULL, 1767225600, '2026-01-01 00:00:59.5+00');
SELECT * FROM ttl.calculate(60, NULL, 1767225600, '2026-01-01 00:01:00+00');
SELECT * FROM ttl.calculate(60, NULL, 1767225600, '2026-01-01 05:00:00+00');
SELECT * FROM ttl.calculate(60, 172800, 1767225600, '2026-01-01 00:00:00+00');
SELECT * FROM ttl.calculate(60, NULL, NULL, '2026-01-01 00:00:00+00');
SELECT * FROM ttl.calculate(60, NULL, 1767225600, NULL);
-- any other effective value raises 22023
SELECT * FROM ttl.calculate(0, NULL, 1767225600, '2026-01-01 00:00:00+00');
SELECT * FROM ttl.calculate(-1, -2, 1767225600, '2026-01-01 00:00:00+00');
SELECT * FROM ttl.calculate(60, 0, 1767225600, '2026-01-01 00:00:00+00');
-- expires_at beyond the timestamp range
SELECT * FROM ttl.calculate(2147483647, NULL, 9223372036854775000, '2026-01-01 00:00:00+00');

-- the same for documents of a container at ttl.now()
CREATE TABLE i (id text PRIMARY KEY, doc jsonb);
SELECT ttl.enable('i', 3600);
INSERT INTO i VALUES ('default', '{}'), ('own', '{"ttl": 7200}'), ('pinned', '{"ttl": -1}');
SET ttl.now_override = '2026-01-01 01:30:00+00';
SELECT id, s.* FROM i, ttl.state('i', doc) s ORDER BY id;
SELECT id, ttl.expires_at('i', doc), ttl.is_expired('i', doc) FROM i ORDER BY id;
SET ttl.now_override = '2026-01-01 02:00:00+00';
SELECT id, ttl.is_expired('i', doc) FROM i ORDER BY id;
-- a document not (yet) stored: no _ts means no expiry time yet
SELECT * FROM ttl.state('i', '{"ttl": 5}');
SELECT ttl.is_expired('i', '{"ttl": 5}');
-- bad documents raise what the trigger would
SELECT * FROM ttl.state('i', '{"ttl": "5"}');
SELECT ttl.is_expired('i', '[1]');
SELECT ttl.state('i', NULL) IS NULL AS null_doc_gives_null;
-- with TTL off, item ttls are ignored (but still validated)
SELECT ttl.set_default_ttl('i', NULL);
SELECT id, s.* FROM i, ttl.state('i', doc) s ORDER BY id;
SELECT * FROM ttl.state('i', '{"ttl": 0}');
-- a table that is not a container
CREATE TABLE not_c (doc jsonb);
SELECT * FROM ttl.state('not_c', '{}');
SELECT ttl.expires_at('not_c', '{}');
DROP TABLE i, not_c CASCADE;
