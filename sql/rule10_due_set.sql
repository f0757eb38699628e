-- Rule 10 is exact across multi-row statements (run with the library
-- preloaded: REGRESS_PRELOAD; 1.8 shared lists of due keys between
-- statements here, 1.9 probes every row): items that came due between two
-- statements, an item due the moment it is written, a policy change
-- between statements: the holder is replaced at the row that writes its
-- key.  Clocks are in the past (ttl.now_override).  The rows of the
-- statements under test carry a ttl of about 31 years, so they are not due
-- when written.  The container is paused: the preloaded worker purges
-- nothing.
CREATE TABLE ds (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('ds', 60);
SELECT ttl.pause('ds');
SET ttl.now_override = '2020-01-01 00:00:00+00';
INSERT INTO ds SELECT 'due' || g, '{}' FROM generate_series(1, 50) g;
-- x comes due at 00:11:00
SET ttl.now_override = '2020-01-01 00:10:00+00';
INSERT INTO ds VALUES ('x', '{"v": "old"}');
-- 00:10:30: 50 items are due, x is not
SET ttl.now_override = '2020-01-01 00:10:30+00';
INSERT INTO ds SELECT 'a' || g, '{"ttl": 1000000000}' FROM generate_series(1, 200) g;
-- 00:12:00: x came due since, and x's id is written at row 150: x is
-- replaced
SET ttl.now_override = '2020-01-01 00:12:00+00';
INSERT INTO ds SELECT CASE g WHEN 150 THEN 'x' ELSE 'b' || g END, '{"v": "new", "ttl": 1000000000}'
  FROM generate_series(1, 200) g;
SELECT id, doc ->> 'v' AS v FROM ds WHERE id = 'x';
-- y is due the moment it is written (its clock is 2020-01-01 00:00): y is
-- replaced
SET ttl.now_override = '2020-01-01 00:00:00+00';
INSERT INTO ds VALUES ('y', '{"v": "old"}');
SET ttl.now_override = '2020-01-01 00:12:00+00';
INSERT INTO ds SELECT CASE g WHEN 150 THEN 'y' ELSE 'c' || g END, '{"v": "new", "ttl": 1000000000}'
  FROM generate_series(1, 200) g;
SELECT id, doc ->> 'v' AS v FROM ds WHERE id = 'y';
-- a policy change: under a default of 2e9 s, z (written at 00:11:55)
-- is not due at 00:12:00 (the due items are w1..w50, of their own ttl);
-- then the default becomes 1 s, under which z is due: it is replaced
SELECT ttl.set_default_ttl('ds', 2000000000);
SET ttl.now_override = '2020-01-01 00:00:00+00';
INSERT INTO ds SELECT 'w' || g, '{"ttl": 1}' FROM generate_series(1, 50) g;
SET ttl.now_override = '2020-01-01 00:11:55+00';
INSERT INTO ds VALUES ('z', '{"v": "old"}');
SET ttl.now_override = '2020-01-01 00:12:00+00';
INSERT INTO ds SELECT 'd' || g, '{"ttl": 1000000000}' FROM generate_series(1, 200) g;
SELECT ttl.set_default_ttl('ds', 1);
INSERT INTO ds SELECT CASE g WHEN 150 THEN 'z' ELSE 'e' || g END, '{"v": "new", "ttl": 1000000000}'
  FROM generate_series(1, 200) g;
SELECT id, doc ->> 'v' AS v FROM ds WHERE id = 'z';
SELECT count(*) FROM ds;
DROP TABLE ds CASCADE;
