-- ttl.stats and ttl.backlog: reading statistics never runs a container
-- owner's code as the reader (the backlog is computed as the table's owner
-- in a security-restricted operation); readers without SELECT on the table
-- get NULL backlog columns from ttl.stats and 42501 from ttl.backlog; rows
-- whose table is gone are skipped (ttl.stats) or give NULLs (ttl.backlog).
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE ROLE regress_stats_owner;
CREATE ROLE regress_stats_reader;
CREATE SCHEMA so AUTHORIZATION regress_stats_owner;
GRANT USAGE ON SCHEMA so TO regress_stats_reader;
-- who ran the owner's index expression
CREATE TABLE public.stats_calls (who text);
GRANT INSERT ON public.stats_calls TO PUBLIC;

SET ROLE regress_stats_owner;
CREATE FUNCTION so.record_call() RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    INSERT INTO public.stats_calls VALUES (current_user);
    RETURN 0;
END $$;
-- declared IMMUTABLE, so planning folds ix(1) in the index expression
CREATE FUNCTION so.ix(i integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    PERFORM so.record_call();
    RETURN i;
END $$;
CREATE TABLE so.t (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('so.t', 60);
CREATE INDEX t_planted ON so.t ((id + so.ix(1)));
INSERT INTO so.t VALUES (1, '{}'), (2, '{"ttl": 5}'), (3, '{"ttl": -1}');
GRANT SELECT ON so.t_live TO regress_stats_reader;
RESET ROLE;
TRUNCATE public.stats_calls;

-- a superuser reads ttl.stats in a fresh session (index expressions not
-- yet cached): the owner's function never runs as the superuser
\c
SET ttl.now_override = '2026-01-01 00:02:00+00';
SELECT container, rows_purged, expired_backlog, oldest_expired_at, oldest_expired_age
  FROM ttl.stats WHERE container = 'so.t'::regclass;
SELECT count(*) AS calls_not_as_owner FROM public.stats_calls
 WHERE who IS DISTINCT FROM 'regress_stats_owner';
\c
SET ttl.now_override = '2026-01-01 00:02:00+00';
SELECT * FROM ttl.backlog('so.t');
SELECT count(*) AS calls_not_as_owner FROM public.stats_calls
 WHERE who IS DISTINCT FROM 'regress_stats_owner';
-- the caller's search_path does not reach the computation
\c
SET ttl.now_override = '2026-01-01 00:02:00+00';
SET search_path = so, public;
SELECT expired_backlog FROM ttl.stats WHERE container = 'so.t'::regclass;
RESET search_path;

-- a reader with SELECT on the live view only: NULL backlog columns from
-- ttl.stats, 42501 from ttl.backlog
SET ROLE regress_stats_reader;
SELECT container, rows_purged, expired_backlog, oldest_expired_at, oldest_expired_age
  FROM ttl.stats WHERE container = 'so.t'::regclass;
SELECT * FROM ttl.backlog('so.t');
SELECT count(*) AS live FROM so.t_live;
RESET ROLE;
-- (planning that query folded the owner's so.ix(1) as the reader, in its
-- session's first look at the index's expressions: PostgreSQL's doing for
-- any query on the table, not ttl's; 1.9's ttl.stats reads the purge key
-- btree in C and plans nothing, so it no longer looked at them first)
TRUNCATE public.stats_calls;
-- with SELECT on the table, the reader sees the backlog
GRANT SELECT ON so.t TO regress_stats_reader;
SET ROLE regress_stats_reader;
SELECT expired_backlog, oldest_expired_at FROM ttl.stats WHERE container = 'so.t'::regclass;
SELECT * FROM ttl.backlog('so.t');
RESET ROLE;
SELECT count(*) AS calls_not_as_owner FROM public.stats_calls
 WHERE who IS DISTINCT FROM 'regress_stats_owner';

-- a registry row whose table is gone (dropped with the event trigger off,
-- as happens to a temp table at the end of its session): ttl.stats skips
-- it, ttl.backlog gives NULLs
ALTER EVENT TRIGGER ttl_sql_drop DISABLE;
CREATE TABLE gone (doc jsonb NOT NULL);
SELECT ttl.enable('gone', 60);
SELECT 'gone'::regclass::oid AS gone_oid \gset
DROP TABLE gone CASCADE;
ALTER EVENT TRIGGER ttl_sql_drop ENABLE;
SELECT count(*) AS dangling_rows FROM ttl.registry WHERE relid::oid = :gone_oid;
SELECT container FROM ttl.stats ORDER BY container::text;
SELECT * FROM ttl.backlog(:gone_oid);
SET ROLE regress_stats_reader;
SELECT container, expired_backlog FROM ttl.stats ORDER BY container::text;
SELECT * FROM ttl.backlog(:gone_oid);
RESET ROLE;
DELETE FROM ttl.registry WHERE relid::oid = :gone_oid;

-- not a container: no backlog
CREATE TABLE plain (doc jsonb);
SELECT * FROM ttl.backlog('plain');
DROP TABLE plain;

-- TTL off (default NULL): nothing is expired
SET ROLE regress_stats_owner;
SELECT ttl.set_default_ttl('so.t', NULL);
RESET ROLE;
SELECT expired_backlog, oldest_expired_at FROM ttl.stats WHERE container = 'so.t'::regclass;

-- an owner's index expression that fails when planned breaks only that
-- container's backlog in ttl.stats (NULLs and a WARNING); ttl.backlog
-- raises the error.  (Where the backlog is counted by a query, as here
-- with a legal hold: without one, 1.9 reads the purge key btree in C and
-- plans nothing of the owner's.)
SET ROLE regress_stats_owner;
CREATE TABLE so.f (doc jsonb NOT NULL);
SELECT ttl.enable('so.f', 60);
SELECT ttl.set_legal_hold('so.f', 'h', '{"hold": true}');
CREATE FUNCTION so.fail_if_asked(i integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF current_setting('regress_stats.fail', true) = 'on' THEN
        RAISE EXCEPTION 'planted failure';
    END IF;
    RETURN i;
END $$;
CREATE INDEX f_planted ON so.f ((pg_catalog.length(doc::text) + so.fail_if_asked(1)));
RESET ROLE;
\c
SET regress_stats.fail = on;
SELECT container, expired_backlog FROM ttl.stats ORDER BY container::text;
SELECT * FROM ttl.backlog('so.f');
RESET regress_stats.fail;
SELECT container, expired_backlog FROM ttl.stats ORDER BY container::text;

DROP SCHEMA so CASCADE;
DROP TABLE public.stats_calls;
DROP ROLE regress_stats_owner, regress_stats_reader;
