-- A purge seen in ttl.purge_progress from inside itself (1.9; run with the
-- preload, so on every major): the owner's BEFORE DELETE trigger reads the
-- view while ttl.purge() deletes the row (the statement path: phase
-- deleting).  The row is the purging session's; what it shows follows
-- pg_stat_activity's rule: the trigger runs as the container's owner,
-- who sees only pid and database of the superuser's purge until it has
-- pg_read_all_stats.  The session's clock is ahead (ttl.now_override), so
-- the background worker, on the real clock, leaves the rows alone.
\set SHOW_CONTEXT never
CREATE ROLE regress_pp_owner;
CREATE SCHEMA pp AUTHORIZATION regress_pp_owner;
SET ROLE regress_pp_owner;
CREATE TABLE pp.t (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('pp.t', 3600) IS NOT NULL AS enabled;
CREATE TABLE pp.seen (id int, pid_is_mine boolean, database name, container regclass,
                      phase text, rows_done bigint, rows_due bigint, has_rate boolean,
                      has_start boolean);
CREATE FUNCTION pp.look() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pp.seen
    SELECT OLD.id, p.pid = pg_catalog.pg_backend_pid(), p.database, p.container, p.phase,
           p.rows_done, p.rows_due, p.rows_per_second IS NOT NULL, p.started_at IS NOT NULL
      FROM ttl.purge_progress p WHERE p.pid = pg_catalog.pg_backend_pid();
    RETURN OLD;
END $$;
CREATE TRIGGER t_look BEFORE DELETE ON pp.t FOR EACH ROW EXECUTE FUNCTION pp.look();
INSERT INTO pp.t VALUES (1, '{}'), (2, '{}');
RESET ROLE;
SET ttl.now_override = '2100-01-01 00:00:00+00';

-- the owner lacks the superuser's privileges: pid and database only
SELECT ttl.purge('pp.t', 1);
SELECT id, pid_is_mine, database = current_database() AS this_db, container, phase, rows_done,
       rows_due, has_rate, has_start FROM pp.seen ORDER BY id;
-- with pg_read_all_stats: the whole row (ttl.purge() counts no rows_due)
GRANT pg_read_all_stats TO regress_pp_owner;
TRUNCATE pp.seen;
SELECT ttl.purge('pp.t');
SELECT id, pid_is_mine, database = current_database() AS this_db, container, phase, rows_done,
       rows_due, has_rate, has_start FROM pp.seen ORDER BY id;
-- the purge is over: its row is gone
SELECT count(*) AS mine FROM ttl.purge_progress WHERE pid = pg_backend_pid();
REVOKE pg_read_all_stats FROM regress_pp_owner;
DROP SCHEMA pp CASCADE;
DROP ROLE regress_pp_owner;
