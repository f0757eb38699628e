-- Legal holds and rule 10 after a purge round and VACUUM (run with the
-- library preloaded: REGRESS_PRELOAD).  A held expired item stays in the
-- table: a write of its key probes, meets it and is refused (55000), never
-- a unique violation (23505); released, the write replaces it.
-- Containers are paused: the preloaded worker purges nothing.
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE lf (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('lf', 60);
SELECT ttl.pause('lf');
CREATE TABLE lfn (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('lfn', 60);
SELECT ttl.pause('lfn');
SELECT ttl.set_append_only('lfn', true, 'none');
INSERT INTO lf VALUES ('h', '{"case": "X"}'), ('u', '{"case": "Y"}');
INSERT INTO lfn VALUES ('h', '{"case": "X"}'), ('u', '{"case": "Y"}');
SELECT ttl.set_legal_hold('lf', 'case X', '{"case": "X"}');
SELECT ttl.set_legal_hold('lfn', 'case X', '{"case": "X"}');
SET ttl.now_override = '2030-01-01 00:10:00+00';
-- the round deletes the unheld expired item only
SELECT ttl.purge('lf', 1000) AS lf_deleted, ttl.purge('lfn', 1000) AS lfn_deleted;
SELECT 'lf' AS t, id FROM lf UNION ALL SELECT 'lfn', id FROM lfn ORDER BY 1, 2;
-- VACUUM, then writes of live keys in a new session
VACUUM lf;
VACUUM lfn;
\c
SET ttl.now_override = '2030-01-01 00:10:00+00';
INSERT INTO lf VALUES ('k1', '{"v": 1}');
INSERT INTO lfn VALUES ('k1', '{"v": 1}');
INSERT INTO lf VALUES ('k2', '{"v": 1}');
INSERT INTO lfn VALUES ('k2', '{"v": 1}');
-- a write of the held item's key: refused, with and without ON CONFLICT
INSERT INTO lf VALUES ('h', '{"v": "new"}');
INSERT INTO lf VALUES ('h', '{"v": "new"}') ON CONFLICT DO NOTHING;
INSERT INTO lfn VALUES ('h', '{"v": "new"}');
INSERT INTO lfn VALUES ('h', '{"v": "new"}') ON CONFLICT DO NOTHING;
SELECT 'lf' AS t, id, doc FROM lf WHERE id = 'h'
UNION ALL SELECT 'lfn', id, doc FROM lfn WHERE id = 'h';
-- released: the write replaces it
SELECT ttl.release_legal_hold('lf', 'case X');
SELECT ttl.release_legal_hold('lfn', 'case X');
INSERT INTO lf VALUES ('h', '{"v": "new"}');
INSERT INTO lfn VALUES ('h', '{"v": "new"}');
SELECT 'lf' AS t, id, doc ->> 'v' AS v FROM lf WHERE id = 'h'
UNION ALL SELECT 'lfn', id, doc ->> 'v' FROM lfn WHERE id = 'h';
DROP TABLE lf, lfn CASCADE;
