-- Purge windows (ttl.purge_window, ttl.set_purge_window) and the
-- falling-behind signal of ttl.stats (behind, behind_since,
-- next_window_at): one parser for the setting and the function (bad values
-- 22023, nothing written), windows across midnight and across the
-- daylight-saving changes of Europe/Berlin, CALL ttl.run_purge() leaving a
-- container outside its window while ttl.purge() ignores windows, and
-- behind judged against ttl.backlog_alert_age (1h) with held items and
-- paused containers left out.
\set SHOW_CONTEXT never
SET TimeZone = 'UTC';

-- the parser: inside, outside, across midnight, 24:00, several ranges
SELECT w, at, ttl._in_purge_window(w, at) AS inside
  FROM (VALUES ('01:00-05:00', '2026-03-01 00:59:59+00'::timestamptz),
               ('01:00-05:00', '2026-03-01 01:00+00'),
               ('01:00-05:00', '2026-03-01 04:59:59+00'),
               ('01:00-05:00', '2026-03-01 05:00+00'),
               ('22:00-02:00', '2026-03-01 21:59+00'),
               ('22:00-02:00', '2026-03-01 23:30+00'),
               ('22:00-02:00', '2026-03-02 01:59+00'),
               ('22:00-02:00', '2026-03-02 02:00+00'),
               ('22:00-24:00', '2026-03-01 23:59:59+00'),
               ('00:00-24:00', '2026-03-01 12:00+00'),
               (' 9:00 - 10:00 ,12:00-13:00 ', '2026-03-01 12:30+00'),
               ('09:00-10:00, 12:00-13:00', '2026-03-01 11:00+00'),
               ('12:00-13:00 Europe/Berlin', '2026-03-01 11:30+00'),
               ('12:00-13:00 Europe/Berlin', '2026-07-01 11:30+00')) v(w, at);

-- the next opening: at itself inside; the next range, the next day
SELECT w, at, ttl._next_purge_window(w, at) AS next_window_at
  FROM (VALUES ('01:00-05:00', '2026-03-01 02:00+00'::timestamptz),
               ('01:00-05:00', '2026-03-01 06:00+00'),
               ('22:00-02:00', '2026-03-01 03:00+00'),
               ('22:00-02:00, 12:00-13:00 Europe/Berlin', '2026-03-01 06:00+00')) v(w, at);

-- across the change forward (29 March 2026, 02:00 CET -> 03:00 CEST): a
-- window inside the skipped hour does not open that day; one that spans
-- it opens at the change and is an hour shorter
SELECT w, at, ttl._next_purge_window(w, at) AS next_window_at
  FROM (VALUES ('02:00-03:00 Europe/Berlin', '2026-03-28 12:00+00'::timestamptz),
               ('02:30-04:00 Europe/Berlin', '2026-03-28 12:00+00'),
               ('01:00-05:00 Europe/Berlin', '2026-03-28 12:00+00')) v(w, at);
SELECT at, ttl._in_purge_window('01:00-05:00 Europe/Berlin', at) AS inside
  FROM (VALUES ('2026-03-29 00:00+00'::timestamptz), ('2026-03-29 02:59+00'),
               ('2026-03-29 03:00+00')) v(at);
-- across the change back (25 October 2026, 03:00 CEST -> 02:00 CET): the
-- repeated hour opens a window over it twice
SELECT w, at, ttl._next_purge_window(w, at) AS next_window_at
  FROM (VALUES ('02:00-02:30 Europe/Berlin', '2026-10-24 12:00+00'::timestamptz),
               ('02:00-02:30 Europe/Berlin', '2026-10-25 00:40+00'),
               ('02:00-02:30 Europe/Berlin', '2026-10-25 01:30+00')) v(w, at);
SELECT at, ttl._in_purge_window('01:00-05:00 Europe/Berlin', at) AS inside
  FROM (VALUES ('2026-10-24 23:00+00'::timestamptz), ('2026-10-25 03:59+00'),
               ('2026-10-25 04:00+00')) v(at);
-- without a zone name: the session's TimeZone
SET TimeZone = 'Europe/Berlin';
SELECT ttl._in_purge_window('01:00-05:00', '2026-03-01 00:30+00') AS inside_berlin;
SET TimeZone = 'UTC';
SELECT ttl._in_purge_window('01:00-05:00', '2026-03-01 00:30+00') AS inside_utc;

-- bad values: 22023, naming the value
SELECT ttl._in_purge_window(w, now())
  FROM (VALUES ('25:00-01:00')) v(w);
SELECT ttl._in_purge_window('01:00-02:00 Mars/Base', now());
SELECT ttl._in_purge_window('01:00-01:00', now());
SELECT ttl._in_purge_window('24:00-01:00', now());
SELECT ttl._in_purge_window('01:00-02:00 UTC, 03:00-04:00', now());
SELECT ttl._in_purge_window('1-2', now());
SELECT ttl._in_purge_window('01:60-02:00', now());
-- the setting: the same parser as its check hook; empty means always
SET ttl.purge_window = '01:00';
SET ttl.purge_window = '01:00-02:00 Nowhere/Land';
SHOW ttl.purge_window;
SET ttl.purge_window = '01:00-02:00, 22:00-23:00 UTC';
SHOW ttl.purge_window;
RESET ttl.purge_window;

-- the function: owner only; bad values write nothing; NULL removes
CREATE ROLE regress_window_other;
CREATE TABLE win_docs (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('win_docs', 60);
SELECT ttl.set_purge_window('win_docs', '22:00-02:00 UTC');
SELECT purge_window FROM ttl.registry WHERE relid = 'win_docs'::regclass;
SELECT ttl.set_purge_window('win_docs', 'at night');
SELECT ttl.set_purge_window('win_docs', '');
SELECT ttl.set_purge_window('win_docs', '01:00-02:00 Atlantis/Central');
SELECT purge_window FROM ttl.registry WHERE relid = 'win_docs'::regclass;
SET ROLE regress_window_other;
SELECT ttl.set_purge_window('win_docs', '01:00-02:00');
RESET ROLE;
SELECT ttl.set_purge_window(NULL, '01:00-02:00');
CREATE TABLE win_plain (id int);
SELECT ttl.set_purge_window('win_plain', '01:00-02:00');

-- CALL ttl.run_purge() leaves the container outside its window
SET ttl.now_override = '2026-03-01 12:00:00+00';
INSERT INTO win_docs SELECT i, '{}' FROM generate_series(1, 10) i;
SET ttl.now_override = '2026-03-01 12:05:00+00';
SELECT container, next_window_at FROM ttl.stats WHERE container = 'win_docs'::regclass;
CALL ttl.run_purge();
SELECT count(*) AS left_outside FROM win_docs;
-- the view hides them all the same
SELECT count(*) AS live FROM win_docs_live;
-- inside the window (across midnight) it purges
SET ttl.now_override = '2026-03-01 23:00:00+00';
SELECT container, next_window_at FROM ttl.stats WHERE container = 'win_docs'::regclass;
CALL ttl.run_purge();
SELECT count(*) AS left_inside FROM win_docs;
-- the setting, for a container without its own window
SET ttl.now_override = '2026-03-02 12:00:00+00';
INSERT INTO win_docs SELECT i, '{}' FROM generate_series(1, 10) i;
SET ttl.now_override = '2026-03-02 12:05:00+00';
SELECT ttl.set_purge_window('win_docs', NULL);
SET ttl.purge_window = '03:00-04:00 UTC';
SELECT container, next_window_at FROM ttl.stats WHERE container = 'win_docs'::regclass;
CALL ttl.run_purge();
SELECT count(*) AS left_outside_setting FROM win_docs;
-- a window of its own overrides the setting
SELECT ttl.set_purge_window('win_docs', '00:00-24:00');
CALL ttl.run_purge();
SELECT count(*) AS left_own_window FROM win_docs;
-- ttl.purge() ignores windows
SET ttl.now_override = '2026-03-03 12:00:00+00';
INSERT INTO win_docs SELECT i, '{}' FROM generate_series(1, 10) i;
SET ttl.now_override = '2026-03-03 12:05:00+00';
SELECT ttl.set_purge_window('win_docs', '03:00-04:00');
SELECT ttl.purge('win_docs') AS purged_by_purge;
RESET ttl.purge_window;

-- behind: the oldest deletable expired item older than ttl.backlog_alert_age
SHOW ttl.backlog_alert_age;
SET ttl.now_override = '2026-04-01 00:00:00+00';
INSERT INTO win_docs SELECT i, jsonb_build_object('n', i) FROM generate_series(1, 10) i;
SET ttl.now_override = '2026-04-01 00:30:00+00';
SELECT behind, behind_since FROM ttl.stats WHERE container = 'win_docs'::regclass;
SET ttl.now_override = '2026-04-01 01:01:00+00';
SELECT behind, behind_since FROM ttl.stats WHERE container = 'win_docs'::regclass;
SET ttl.now_override = '2026-04-01 01:01:01+00';
SELECT behind, behind_since, oldest_expired_at FROM ttl.stats WHERE container = 'win_docs'::regclass;
-- paused: left out
SELECT ttl.pause('win_docs');
SELECT behind, behind_since FROM ttl.stats WHERE container = 'win_docs'::regclass;
SELECT ttl.resume('win_docs');
-- held items are left out: the oldest deletable one is younger
SET ttl.now_override = '2026-04-01 00:50:00+00';
INSERT INTO win_docs VALUES (100, '{"n": 100}');
SET ttl.now_override = '2026-04-01 01:30:00+00';
SELECT behind, behind_since FROM ttl.stats WHERE container = 'win_docs'::regclass;
SELECT ttl.set_legal_hold('win_docs', 'early', '{"n": 1}');
DELETE FROM win_docs WHERE id BETWEEN 2 AND 10;
SELECT behind, behind_since, oldest_expired_at FROM ttl.stats WHERE container = 'win_docs'::regclass;
SELECT ttl.release_legal_hold('win_docs', 'early');
SELECT behind, behind_since FROM ttl.stats WHERE container = 'win_docs'::regclass;
-- rows isolated as failing (ttl.purge_failures) are left out too
CREATE FUNCTION win_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'row % stays', OLD.id;
END $$;
CREATE TRIGGER win_refuse BEFORE DELETE ON win_docs FOR EACH ROW
    WHEN (OLD.id = 1) EXECUTE FUNCTION win_refuse();
SELECT ttl.set_purge_window('win_docs', NULL);
SET client_min_messages = error;
CALL ttl.run_purge();
RESET client_min_messages;
SELECT container, key, attempts FROM ttl.purge_failures;
SELECT count(*) AS rows_left FROM win_docs;
SELECT expired_backlog, oldest_expired_at, behind FROM ttl.stats WHERE container = 'win_docs'::regclass;
-- forgotten (runtime state): counted, and behind, again
DELETE FROM ttl.purge_failure WHERE relid = 'win_docs'::regclass;
SELECT expired_backlog, oldest_expired_at, behind FROM ttl.stats WHERE container = 'win_docs'::regclass;
DROP TRIGGER win_refuse ON win_docs;
-- nothing expired: not behind
SELECT ttl.purge('win_docs') AS purged;
SELECT behind, behind_since FROM ttl.stats WHERE container = 'win_docs'::regclass;

DROP TABLE win_docs, win_plain CASCADE;
DROP FUNCTION win_refuse();
DROP ROLE regress_window_other;
