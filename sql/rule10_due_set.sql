-- Rule 10's shared due sets (run with the library preloaded:
-- REGRESS_PRELOAD).  A multi-row statement whose leaf holds due items lists
-- their keys (the due filter) and leaves the list in shared memory; the
-- next statements reuse it while nothing was announced, no policy changed
-- and the table was not invalidated, reading from the purge index only the
-- items that came due since the list's second.  Clocks are in the past
-- (ttl.now_override; a clock ahead of the real one trusts no look).  The
-- rows of the statements under test carry a ttl of about 31 years, so
-- they are not due when written and announce nothing.  The container is
-- paused: the preloaded worker purges nothing.
CREATE TABLE ds (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('ds', 60);
SELECT ttl.pause('ds');
SET ttl.now_override = '2020-01-01 00:00:00+00';
INSERT INTO ds SELECT 'due' || g, '{}' FROM generate_series(1, 50) g;
-- x comes due at 00:11:00
SET ttl.now_override = '2020-01-01 00:10:00+00';
INSERT INTO ds VALUES ('x', '{"v": "old"}');
-- 00:10:30: 50 items are due, x is not; the list is made and left
SET ttl.now_override = '2020-01-01 00:10:30+00';
INSERT INTO ds SELECT 'a' || g, '{"ttl": 1000000000}' FROM generate_series(1, 200) g;
-- 00:12:00: x came due since; the list is reused, x read from the purge
-- index, and x's id is written at row 150: x is replaced
SET ttl.now_override = '2020-01-01 00:12:00+00';
INSERT INTO ds SELECT CASE g WHEN 150 THEN 'x' ELSE 'b' || g END, '{"v": "new", "ttl": 1000000000}'
  FROM generate_series(1, 200) g;
SELECT id, doc ->> 'v' AS v FROM ds WHERE id = 'x';
-- y is due the moment it is written (its clock is 2020-01-01 00:00): it is
-- announced, so the list left at 00:12:00 no longer serves; y is replaced
SET ttl.now_override = '2020-01-01 00:00:00+00';
INSERT INTO ds VALUES ('y', '{"v": "old"}');
SET ttl.now_override = '2020-01-01 00:12:00+00';
INSERT INTO ds SELECT CASE g WHEN 150 THEN 'y' ELSE 'c' || g END, '{"v": "new", "ttl": 1000000000}'
  FROM generate_series(1, 200) g;
SELECT id, doc ->> 'v' AS v FROM ds WHERE id = 'y';
-- a policy change: under a default of 2e9 s, z (written at 00:11:55)
-- is not due, and announces nothing; the list is made at 00:12:00 (the
-- due items are w1..w50, of their own ttl); then the default becomes 1 s,
-- under which z is due: the list made under the old one no longer serves
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
