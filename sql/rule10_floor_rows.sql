-- Rule 10 is exact whatever wrote the holder (run with the library
-- preloaded: REGRESS_PRELOAD; 1.8's due floor was tested here, 1.9 probes
-- every row): an item of a short ttl written in the past, rows written
-- while ttl's trigger was disabled, an attached partition's rows, on btree,
-- index-free and partitioned containers: an expired holder is replaced.
-- Containers are paused: the preloaded worker purges nothing.
SET ttl.now_override = '2030-01-01 00:10:00+00';

-- single-row statements on a container with its btree purge index
CREATE TABLE fb (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('fb', 60);
SELECT ttl.pause('fb');
INSERT INTO fb VALUES ('k1', '{"v": 1}');
INSERT INTO fb VALUES ('k2', '{"v": 1}');
-- an item of a short ttl written in the past
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO fb VALUES ('x', '{"v": "old", "ttl": 1}');
SET ttl.now_override = '2030-01-01 00:10:00+00';
INSERT INTO fb VALUES ('x', '{"v": "new"}');
SELECT id, doc ->> 'v' AS v FROM fb ORDER BY id;
-- an item inheriting the default, expired by it
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO fb VALUES ('y', '{"v": "old"}');
SET ttl.now_override = '2030-01-01 00:10:00+00';
INSERT INTO fb VALUES ('y', '{"v": "new"}') ON CONFLICT (id) DO UPDATE SET doc = fb.doc || '{"merged": true}';
SELECT id, doc ->> 'v' AS v, doc ? 'merged' AS merged FROM fb ORDER BY id;
-- a live item still conflicts
INSERT INTO fb VALUES ('k1', '{"v": 2}');

-- the append-only mode without a purge index
CREATE TABLE fn (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('fn', 60);
SELECT ttl.pause('fn');
SELECT ttl.set_append_only('fn', true, 'none');
INSERT INTO fn SELECT 'k' || g, '{"v": 1}' FROM generate_series(1, 5) g;
INSERT INTO fn VALUES ('k6', '{"v": 1}');
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO fn VALUES ('x', '{"v": "old", "ttl": 1}');
SET ttl.now_override = '2030-01-01 00:10:00+00';
INSERT INTO fn SELECT 'k' || g, '{"v": 1}' FROM generate_series(7, 9) g;
INSERT INTO fn VALUES ('x', '{"v": "new"}');
SELECT id, doc ->> 'v' AS v FROM fn WHERE id = 'x';

-- rows written while ttl's trigger is disabled are not stamped
INSERT INTO fn VALUES ('z0', '{"v": 1}');
ALTER TABLE fn DISABLE TRIGGER USER;
INSERT INTO fn VALUES ('z', '{"v": "old", "_ts": 1000}');
ALTER TABLE fn ENABLE TRIGGER USER;
INSERT INTO fn VALUES ('z', '{"v": "new"}');
SELECT id, doc ->> 'v' AS v FROM fn WHERE id = 'z';

-- the same on the btree container, and a partitioned container's leaf
ALTER TABLE fb DISABLE TRIGGER USER;
INSERT INTO fb VALUES ('z', '{"v": "old", "_ts": 1000}');
ALTER TABLE fb ENABLE TRIGGER USER;
INSERT INTO fb VALUES ('z', '{"v": "new"}');
SELECT id, doc ->> 'v' AS v FROM fb WHERE id = 'z';

CREATE TABLE fp (id text, part int, doc jsonb NOT NULL, PRIMARY KEY (id, part)) PARTITION BY LIST (part);
CREATE TABLE fp1 PARTITION OF fp FOR VALUES IN (1);
SELECT ttl.enable('fp', 60);
SELECT ttl.pause('fp');
INSERT INTO fp VALUES ('k1', 1, '{"v": 1}');
INSERT INTO fp VALUES ('k2', 1, '{"v": 1}');
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO fp VALUES ('x', 1, '{"v": "old", "ttl": 1}');
SET ttl.now_override = '2030-01-01 00:10:00+00';
INSERT INTO fp VALUES ('x', 1, '{"v": "new"}');
SELECT id, doc ->> 'v' AS v FROM fp WHERE id = 'x';
-- a table with an expired row, attached as a partition
CREATE TABLE fp2 (id text, part int, doc jsonb NOT NULL, PRIMARY KEY (id, part));
INSERT INTO fp2 VALUES ('w', 2, '{"v": "old", "_ts": 1000}');
ALTER TABLE fp ATTACH PARTITION fp2 FOR VALUES IN (2);
INSERT INTO fp VALUES ('w2', 2, '{"v": 1}');
INSERT INTO fp VALUES ('w', 2, '{"v": "new"}');
SELECT id, doc ->> 'v' AS v FROM fp WHERE id = 'w';

-- the same on fresh containers that never held a due item written
-- through the trigger
CREATE TABLE gb (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('gb', 60);
SELECT ttl.pause('gb');
CREATE TABLE gn (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('gn', 60);
SELECT ttl.pause('gn');
SELECT ttl.set_append_only('gn', true, 'none');
INSERT INTO gb VALUES ('k1', '{"v": 1}'), ('k2', '{"v": 1}');
INSERT INTO gn VALUES ('k1', '{"v": 1}'), ('k2', '{"v": 1}');
ALTER TABLE gb DISABLE TRIGGER USER;
ALTER TABLE gn DISABLE TRIGGER USER;
INSERT INTO gb VALUES ('z', '{"v": "old", "_ts": 1000}');
INSERT INTO gn VALUES ('z', '{"v": "old", "_ts": 1000}');
ALTER TABLE gb ENABLE TRIGGER USER;
ALTER TABLE gn ENABLE TRIGGER USER;
INSERT INTO gb VALUES ('z', '{"v": "new"}');
INSERT INTO gn VALUES ('z', '{"v": "new"}');
SELECT 'gb' AS t, id, doc ->> 'v' AS v FROM gb WHERE id = 'z'
UNION ALL SELECT 'gn', id, doc ->> 'v' FROM gn WHERE id = 'z';

DROP TABLE fb, fn, fp, gb, gn CASCADE;
