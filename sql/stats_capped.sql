-- ttl.stats and ttl.container_metrics count the backlog up to 1,000 items
-- per container (1.9): past that, expired_backlog stops and
-- expired_backlog_capped says so, while oldest_expired_at (and so behind)
-- stays exact, whatever the key range or partition the oldest item is in
-- and however many held items come before it.  ttl.backlog still counts
-- up to 1,000,000 per key range.  Both counting paths: the purge key
-- btree read in C (no hold, no failing row) and the query that reads the
-- rows (a legal hold; a container enabled with a BRIN purge index).
\set SHOW_CONTEXT never
SET TimeZone = 'UTC';
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE SCHEMA cap;

-- inherited items (default 1 h), stamped an hour and more before now
CREATE TABLE cap.many (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('cap.many', 3600);
SET ttl.now_override = '2029-12-31 20:00:00+00';
INSERT INTO cap.many SELECT g, '{}' FROM generate_series(1, 1500) g;
SET ttl.now_override = '2030-01-01 00:00:00+00';

-- exactly the cap, and one fewer: exact counts
CREATE TABLE cap.exact (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('cap.exact', 3600);
SET ttl.now_override = '2029-12-31 20:00:00+00';
INSERT INTO cap.exact SELECT g, '{}' FROM generate_series(1, 1000) g;
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE cap.under (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('cap.under', 3600);
SET ttl.now_override = '2029-12-31 20:00:00+00';
INSERT INTO cap.under SELECT g, '{}' FROM generate_series(1, 999) g;
SET ttl.now_override = '2030-01-01 00:00:00+00';

-- both key ranges: 1,200 inherited items fill the cap before the walk of
-- the own-ttl range, whose item is the oldest
CREATE TABLE cap.two (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('cap.two', 3600);
SET ttl.now_override = '2029-12-31 20:00:00+00';
INSERT INTO cap.two SELECT g, '{}' FROM generate_series(1, 1200) g;
SET ttl.now_override = '2029-12-31 10:00:00+00';
INSERT INTO cap.two VALUES (0, '{"ttl": 60}');
SET ttl.now_override = '2030-01-01 00:00:00+00';

-- partitions: the first fills the cap, the last holds the oldest item
CREATE TABLE cap.parts (id int, doc jsonb NOT NULL, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE cap.parts_1 PARTITION OF cap.parts FOR VALUES FROM (0) TO (10000);
CREATE TABLE cap.parts_2 PARTITION OF cap.parts FOR VALUES FROM (10000) TO (20000);
CREATE TABLE cap.parts_3 PARTITION OF cap.parts FOR VALUES FROM (20000) TO (30000);
SELECT ttl.enable('cap.parts', 3600);
SET ttl.now_override = '2029-12-31 20:00:00+00';
INSERT INTO cap.parts SELECT g, '{}' FROM generate_series(1, 1100) g;
INSERT INTO cap.parts SELECT g, '{}' FROM generate_series(10001, 10005) g;
SET ttl.now_override = '2029-12-31 08:00:00+00';
INSERT INTO cap.parts VALUES (20001, '{}');
SET ttl.now_override = '2030-01-01 00:00:00+00';

-- a legal hold keeps the 1,200 oldest items: the count reads the rows and
-- leaves them out; no purge has set a floor past them yet, so its 1,000
-- rows read are all held: 0, a lower bound, says so; the oldest is the
-- first item no hold keeps all the same
CREATE TABLE cap.held (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('cap.held', 3600);
SET ttl.now_override = '2029-12-31 18:00:00+00';
INSERT INTO cap.held SELECT g, '{"case": 7}' FROM generate_series(1, 1200) g;
SET ttl.now_override = '2029-12-31 20:00:00+00';
INSERT INTO cap.held SELECT g, '{}' FROM generate_series(1201, 1210) g;
SET ttl.now_override = '2030-01-01 00:00:00+00';
SELECT ttl.set_legal_hold('cap.held', 'case 7', '{"case": 7}');

-- append-only, its purge index a BRIN: the count reads the rows
CREATE TABLE cap.brin (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('cap.brin', 3600);
SELECT ttl.set_append_only('cap.brin', true);
SET ttl.now_override = '2029-12-31 20:00:00+00';
INSERT INTO cap.brin SELECT g, '{}' FROM generate_series(1, 1100) g;
SET ttl.now_override = '2030-01-01 00:00:00+00';

-- nothing due yet; TTL off
CREATE TABLE cap.fresh (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('cap.fresh', 3600);
INSERT INTO cap.fresh SELECT g, '{}' FROM generate_series(1, 5) g;
CREATE TABLE cap.off (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('cap.off', NULL);

SELECT container, expired_backlog, expired_backlog_capped, oldest_expired_at
  FROM ttl.stats WHERE container::text LIKE 'cap.%' ORDER BY container::text;

-- ttl.backlog counts them all (up to 1,000,000 per key range), with the
-- same oldest item
SELECT s.container, b.expired, b.oldest_expired_at = s.oldest_expired_at AS same_oldest
  FROM ttl.stats s, ttl.backlog(s.container) b
 WHERE s.container::text LIKE 'cap.%' ORDER BY s.container::text;

-- behind follows the exact oldest item (ttl.backlog_alert_age, 1 h)
SELECT container, behind, behind_since
  FROM ttl.stats WHERE container::text LIKE 'cap.%' ORDER BY container::text;

-- ttl.container_metrics, for a monitoring role, says the same
CREATE ROLE cap_monitor;
GRANT pg_monitor TO cap_monitor;
SET ROLE cap_monitor;
SELECT container, expired_backlog, expired_backlog_capped, oldest_expired_at, behind, behind_since
  FROM ttl.container_metrics WHERE container::text LIKE 'cap.%' ORDER BY container::text;
-- (and ttl.stats nothing of the backlog: it may not read the tables)
SELECT count(*) FILTER (WHERE expired_backlog IS NULL AND expired_backlog_capped IS NULL) AS hidden
  FROM ttl.stats WHERE container::text LIKE 'cap.%';
RESET ROLE;

-- rows going: exact again under the cap
DELETE FROM cap.many WHERE id > 600;
SELECT expired_backlog, expired_backlog_capped FROM ttl.stats WHERE container = 'cap.many'::regclass;
-- a row deleted but not yet vacuumed is not counted (its index entry is)
BEGIN;
DELETE FROM cap.many WHERE id <= 100;
SELECT expired_backlog, expired_backlog_capped FROM ttl.stats WHERE container = 'cap.many'::regclass;
ROLLBACK;

SELECT ttl.release_legal_hold('cap.held', 'case 7');
DROP ROLE cap_monitor;
DROP SCHEMA cap CASCADE;
