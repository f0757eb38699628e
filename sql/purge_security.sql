-- ttl.purge() and CALL ttl.run_purge() (issue 10): several containers in
-- one call, the session's vacuum cost settings left alone, READ ONLY
-- transactions refused, deferred constraint triggers fired as the owner
-- without touching the caller's own deferred work or constraint mode.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE s1 (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE s2 (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('s1', 60) IS NOT NULL AS enabled;
SELECT ttl.enable('s2', 60) IS NOT NULL AS enabled;
INSERT INTO s1 SELECT g, '{}' FROM generate_series(1, 10) g;
INSERT INTO s2 SELECT g, '{}' FROM generate_series(1, 10) g;
SET ttl.now_override = '2026-01-01 00:10:00+00';

-- item 14: READ ONLY: refused before anything is deleted (25006)
BEGIN READ ONLY;
\set VERBOSITY sqlstate
SELECT ttl.purge('s1');
\set VERBOSITY default
ROLLBACK;
BEGIN READ ONLY;
SAVEPOINT a;
SELECT ttl.purge();
ROLLBACK TO a;
COMMIT;
SELECT (SELECT count(*) FROM s1) AS s1, (SELECT count(*) FROM s2) AS s2;

-- item 3: two containers in one call
SELECT ttl.purge();
SELECT (SELECT count(*) FROM s1) AS s1, (SELECT count(*) FROM s2) AS s2;

-- item 12: the procedure's budget does not stay in the session
SET ttl.now_override = '2026-01-01 00:00:00+00';
INSERT INTO s1 SELECT g, '{}' FROM generate_series(11, 20) g;
SET ttl.now_override = '2026-01-01 00:10:00+00';
SET ttl.cost_limit = 1234;
SET ttl.cost_delay = 7;
SHOW vacuum_cost_limit;
SHOW vacuum_cost_delay;
CALL ttl.run_purge();
SHOW vacuum_cost_limit;
SHOW vacuum_cost_delay;
SELECT count(*) AS s1 FROM s1;
RESET ttl.cost_limit;
RESET ttl.cost_delay;

-- item 11: a container with a deferred constraint trigger, owned by a
-- plain role; the superuser purges it
CREATE ROLE ttl_sec_owner;
CREATE TABLE ttl_sec_log (tbl text, who name);
GRANT INSERT ON ttl_sec_log TO ttl_sec_owner;
GRANT CREATE ON SCHEMA public TO ttl_sec_owner;
CREATE FUNCTION ttl_sec_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.ttl_sec_log VALUES (TG_TABLE_NAME, current_user);
    RETURN NULL;
END $$;
CREATE TABLE d (id int PRIMARY KEY, doc jsonb NOT NULL);
ALTER TABLE d OWNER TO ttl_sec_owner;
SET ttl.now_override = '2026-01-01 00:00:00+00';
SET ROLE ttl_sec_owner;
SELECT ttl.enable('d', 60) IS NOT NULL AS enabled;
CREATE CONSTRAINT TRIGGER d_deferred AFTER DELETE ON d
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ttl_sec_note();
INSERT INTO d SELECT g, '{}' FROM generate_series(1, 5) g;
RESET ROLE;
-- the caller's own table with a deferred trigger
CREATE TABLE mine (id int);
CREATE CONSTRAINT TRIGGER mine_deferred AFTER INSERT ON mine
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ttl_sec_note();
SET ttl.now_override = '2026-01-01 00:10:00+00';
-- on its own: works, the deferred trigger ran as the owner
SELECT ttl.purge('d');
SELECT tbl, who = 'ttl_sec_owner' AS as_owner, count(*) FROM ttl_sec_log GROUP BY 1, 2 ORDER BY 1, 2;
SELECT count(*) AS d FROM d;
TRUNCATE ttl_sec_log;
SET ttl.now_override = '2026-01-01 00:00:00+00';
INSERT INTO d SELECT g, '{}' FROM generate_series(6, 10) g;
SET ttl.now_override = '2026-01-01 00:10:00+00';
-- in a transaction that has deferred work of its own: the caller's
-- trigger never runs as the owner, nor before the caller's commit, and the
-- caller's constraint mode stays deferred
BEGIN;
INSERT INTO mine VALUES (1);
SELECT ttl.purge('d');
INSERT INTO mine VALUES (2);
SELECT tbl, who = 'ttl_sec_owner' AS as_owner, count(*) FROM ttl_sec_log GROUP BY 1, 2 ORDER BY 1, 2;
COMMIT;
SELECT tbl, who = 'ttl_sec_owner' AS as_owner, count(*) FROM ttl_sec_log GROUP BY 1, 2 ORDER BY 1, 2;
-- a deferrable foreign key pointing at a container: its check runs within
-- the purge as well, not at the caller's commit
SET ttl.now_override = '2026-01-01 00:00:00+00';
SET ROLE ttl_sec_owner;
CREATE TABLE fkp (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('fkp', 60) IS NOT NULL AS enabled;
CREATE TABLE fkc (id int REFERENCES fkp DEFERRABLE INITIALLY DEFERRED);
INSERT INTO fkp SELECT g, '{}' FROM generate_series(1, 3) g;
INSERT INTO fkc VALUES (1);
RESET ROLE;
SET ttl.now_override = '2026-01-01 00:10:00+00';
BEGIN;
SELECT ttl.purge('fkp');
ROLLBACK;
DELETE FROM fkc;
BEGIN;
SELECT ttl.purge('fkp');
SELECT count(*) AS fkp FROM fkp;
COMMIT;
-- item 9: in CALL ttl.run_purge() too, a batch is bounded by
-- ttl.batch_timeout and recorded as its container's error; a sooner
-- statement_timeout of the session still ends the whole CALL
CREATE TABLE slow (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('slow', 60) IS NOT NULL AS enabled;
CREATE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_catalog.pg_sleep(10);
    RETURN OLD;
END $$;
CREATE TRIGGER slow_stall BEFORE DELETE ON slow FOR EACH ROW EXECUTE FUNCTION stall();
SET ttl.now_override = '2026-01-01 00:00:00+00';
INSERT INTO slow SELECT g, '{}' FROM generate_series(1, 3) g;
SET ttl.now_override = '2026-01-01 00:10:00+00';
SET ttl.batch_timeout = '100ms';
CALL ttl.run_purge();
SELECT last_error FROM ttl.stats WHERE container = 'slow'::regclass;
SELECT count(*) AS slow FROM slow;
SET ttl.batch_timeout = '20s';
SET statement_timeout = '200ms';
CALL ttl.run_purge();
RESET statement_timeout;
RESET ttl.batch_timeout;
SELECT count(*) AS slow FROM slow;
DROP TABLE d, mine, ttl_sec_log, s1, s2, fkc, fkp, slow CASCADE;
DROP FUNCTION stall();
DROP FUNCTION ttl_sec_note();
REVOKE CREATE ON SCHEMA public FROM ttl_sec_owner;
DROP ROLE ttl_sec_owner;
