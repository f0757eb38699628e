-- The restore guard (1.5): settings, the registry's home and hold columns,
-- ttl.stats' hold columns, a container enabled over documents mostly due
-- already, a restore simulated by moving a registry row's home, ttl.resume
-- and ttl.purge on a held container, and the update from 1.4.
-- (Starts from a base backup and clock jumps need the worker: TAP 070-072.)

SELECT ttl.now() IS NOT NULL AS loaded;
SHOW ttl.restore_guard_fraction;
SHOW ttl.clock_jump_threshold;
SET ttl.restore_guard_fraction = 0.5;
SET ttl.clock_jump_threshold = '1h';

SELECT column_name FROM information_schema.columns
 WHERE table_schema = 'ttl' AND table_name = 'stats' AND ordinal_position > 8
 ORDER BY ordinal_position;

CREATE FUNCTION docs(n int, ts bigint, extra jsonb DEFAULT '{}') RETURNS SETOF jsonb
LANGUAGE sql AS $$ SELECT jsonb_build_object('i', g, '_ts', ts) || extra FROM generate_series(1, n) g $$;
CREATE VIEW holds AS
SELECT container, held_since IS NOT NULL AS held, hold_reason FROM ttl.stats
 WHERE container::text LIKE 'g\_%' OR container::text IN ('u', 'o')  -- this test's containers
 ORDER BY container::text;

-- 2026-01-01 00:00:00+00 = 1767225600; the clock is a month later
SET ttl.now_override = '2026-02-01 00:00:00+00';

-- enabled over documents all due: held at once
CREATE TABLE g_old (id serial PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO g_old (doc) SELECT docs(10, 1767225600);
SELECT ttl.enable('g_old', 3600) IS NOT NULL;
-- home: this cluster, this database
SELECT home_system_identifier = (SELECT system_identifier FROM pg_control_system()) AS same_cluster,
       home_database = (SELECT oid FROM pg_database WHERE datname = current_database()) AS same_db
  FROM ttl.registry WHERE relid = 'g_old'::regclass;
SELECT * FROM holds;
SELECT count(*) FROM g_old_live;               -- hidden as always
CALL ttl.run_purge();
SELECT count(*) FROM g_old;                    -- automatic purge holds it
SELECT ttl.resume('g_old');
SELECT * FROM holds;
CALL ttl.run_purge();
SELECT count(*) FROM g_old;                    -- released: purged

-- own ttl items count too (the own range of the purge index)
CREATE TABLE g_own (id serial PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO g_own (doc) SELECT docs(6, 1767225600, '{"ttl": 60}');
INSERT INTO g_own (doc) SELECT docs(14, 1767225600, '{"ttl": -1}');
SELECT ttl.enable('g_own', -1) IS NOT NULL;
-- an explicit purge is deliberate: it purges a held container
SELECT ttl.purge('g_own');
SELECT count(*) FROM g_own;

-- below the fraction (2 of 20 due): not held, purged
CREATE TABLE g_few (id serial PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO g_few (doc) SELECT docs(2, 1767225600);
INSERT INTO g_few (doc) SELECT docs(18, 1769904000);
SELECT ttl.enable('g_few', 3600) IS NOT NULL;
-- exactly at the fraction (4 of 20) is not above it
CREATE TABLE g_edge (id serial PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO g_edge (doc) SELECT docs(4, 1767225600);
INSERT INTO g_edge (doc) SELECT docs(16, 1769904000);
SELECT ttl.enable('g_edge', 3600) IS NOT NULL;
SELECT * FROM holds;
CALL ttl.run_purge();
SELECT (SELECT count(*) FROM g_few) AS few, (SELECT count(*) FROM g_edge) AS edge;

-- a restore, simulated: the row says it was enabled in another database
-- (items inserted a month ago: the trigger stamps _ts with ttl.now())
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE g_moved (id serial PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('g_moved', 3600) IS NOT NULL;
INSERT INTO g_moved (doc) SELECT docs(10, 0);
CREATE TABLE g_moved_small (id serial PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('g_moved_small', 3600) IS NOT NULL;
INSERT INTO g_moved_small (doc) SELECT docs(1, 0);
CREATE TABLE g_brin (id serial PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('g_brin', 3600) IS NOT NULL;
SELECT ttl.set_append_only('g_brin', true);
INSERT INTO g_brin (doc) SELECT docs(10, 0);
CREATE TABLE g_none (id serial PRIMARY KEY, doc jsonb NOT NULL);   -- no purge index (1.6)
SELECT ttl.enable('g_none', 3600) IS NOT NULL;
SELECT ttl.set_append_only('g_none', true, 'none');
INSERT INTO g_none (doc) SELECT docs(10, 0);
-- a dump of 1.4 restored into 1.5 leaves the home NULL: checked the same
CREATE TABLE g_unknown (id serial PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('g_unknown', 3600) IS NOT NULL;
INSERT INTO g_unknown (doc) SELECT docs(10, 0);
SET ttl.now_override = '2026-02-01 00:00:00+00';
INSERT INTO g_moved_small (doc) SELECT docs(19, 0);
UPDATE ttl.registry SET home_database = 1
 WHERE relid IN ('g_moved'::regclass, 'g_moved_small'::regclass, 'g_brin'::regclass, 'g_none'::regclass);
UPDATE ttl.registry SET home_system_identifier = NULL, home_database = NULL
 WHERE relid = 'g_unknown'::regclass;
CALL ttl.run_purge();
SELECT container, held,
       CASE WHEN hold_reason LIKE 'the container was enabled in another database or cluster (system identifier %, database 1): restored by pg_restore or copied'
            THEN 'moved' ELSE hold_reason END AS reason
  FROM holds WHERE container::text LIKE 'g_moved%' OR container::text IN ('g_brin', 'g_none', 'g_unknown');
SELECT (SELECT count(*) FROM g_moved) AS moved, (SELECT count(*) FROM g_moved_small) AS small,
       (SELECT count(*) FROM g_brin) AS brin, (SELECT count(*) FROM g_none) AS none,
       (SELECT count(*) FROM g_unknown) AS unknown;
-- the small one is at home now; the held ones keep their old home
SELECT relid, home_database = (SELECT oid FROM pg_database WHERE datname = current_database()) AS at_home
  FROM ttl.registry WHERE relid::text LIKE 'g_moved%' ORDER BY relid::text;
-- a second round keeps the holds
CALL ttl.run_purge();
SELECT (SELECT count(*) FROM g_moved) AS moved, (SELECT count(*) FROM g_brin) AS brin,
       (SELECT count(*) FROM g_none) AS none;
SELECT ttl.resume('g_moved');
SELECT ttl.resume('g_brin');
SELECT ttl.resume('g_none');
SELECT relid, home_database = (SELECT oid FROM pg_database WHERE datname = current_database()) AS at_home,
       held_since IS NULL AS released
  FROM ttl.registry WHERE relid IN ('g_moved'::regclass, 'g_brin'::regclass) ORDER BY relid::text;
CALL ttl.run_purge();
SELECT (SELECT count(*) FROM g_moved) AS moved, (SELECT count(*) FROM g_brin) AS brin,
       (SELECT count(*) FROM g_none) AS none, (SELECT count(*) FROM g_unknown) AS unknown;
-- resume of a paused container still unpauses it
SELECT ttl.pause('g_unknown');
SELECT ttl.resume('g_unknown');
SELECT paused, held_since IS NULL AS released FROM ttl.registry WHERE relid = 'g_unknown'::regclass;
SELECT ttl.resume(NULL);

RESET ttl.now_override;
DROP VIEW holds;
SELECT ttl.disable(c) FROM unnest(ARRAY['g_old', 'g_own', 'g_few', 'g_edge', 'g_moved', 'g_moved_small',
                                        'g_brin', 'g_none', 'g_unknown']::regclass[]) c;
DROP TABLE g_old, g_own, g_few, g_edge, g_moved, g_moved_small, g_brin, g_none, g_unknown;

-- the update from 1.4: existing containers are at home, nothing is held,
-- and the 1.4 SQL runs on the new library before the update
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_guard;
ALTER DATABASE regress_ttl_guard SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_guard
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE EXTENSION ttl VERSION '1.4';
CREATE TABLE u (id serial PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO u (doc) SELECT jsonb_build_object('i', g) FROM generate_series(1, 10) g;
SELECT ttl.enable('u', 3600) IS NOT NULL;
SET ttl.now_override = '2026-02-01 00:00:00+00';
SELECT ttl.resume('u');
CALL ttl.run_purge();
SELECT count(*) FROM u;
SET ttl.now_override = '2026-01-01 00:00:00+00';
INSERT INTO u (doc) SELECT jsonb_build_object('i', g) FROM generate_series(1, 10) g;
SET ttl.now_override = '2026-02-01 00:00:00+00';
ALTER EXTENSION ttl UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
SELECT relid, home_system_identifier = (SELECT system_identifier FROM pg_control_system()) AS same_cluster,
       home_database = (SELECT oid FROM pg_database WHERE datname = current_database()) AS same_db,
       held_since, hold_reason, hold_fraction
  FROM ttl.registry ORDER BY relid::text;
SELECT container, expired_backlog, held_since, hold_reason FROM ttl.stats ORDER BY container::text;
CALL ttl.run_purge();
SELECT count(*) FROM u;
\c :orig_db
DROP DATABASE regress_ttl_guard;

-- a container of the 1.0 layout (two partial purge indexes, kept by the
-- updates): the estimate walks them the same way
CREATE DATABASE regress_ttl_guard_old;
ALTER DATABASE regress_ttl_guard_old SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_guard_old
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE EXTENSION ttl VERSION '1.2';
CREATE TABLE o (id serial PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('o', 3600) IS NOT NULL;
INSERT INTO o (doc) SELECT jsonb_build_object('i', g) FROM generate_series(1, 6) g;
INSERT INTO o (doc) SELECT jsonb_build_object('i', g, 'ttl', 60) FROM generate_series(1, 4) g;
SET ttl.now_override = '2026-02-01 00:00:00+00';
INSERT INTO o (doc) SELECT jsonb_build_object('i', g) FROM generate_series(1, 30) g;
ALTER EXTENSION ttl UPDATE;
SELECT count(*) FROM pg_index WHERE indrelid = 'o'::regclass AND NOT indisprimary;
UPDATE ttl.registry SET home_database = 1;
CALL ttl.run_purge();                          -- 10 of 40 due: held
SELECT held_since IS NOT NULL AS held FROM ttl.stats;
SELECT count(*) FROM o;
SELECT ttl.resume('o');
CALL ttl.run_purge();
SELECT count(*) FROM o;
\c :orig_db
DROP DATABASE regress_ttl_guard_old;
DROP FUNCTION docs(int, bigint, jsonb);
