-- ttl.purge(): deletes exactly the expired items, through the purge
-- indexes (no table scan), resumes by key, honours max_rows, pauses for the
-- NULL form, keeps everything when TTL is off, and records statistics.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE p (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('p', 100);
-- 3000 items: _ts spread over 0..299 s, a third with their own ttl
DO $$
BEGIN
    FOR s IN 0..299 LOOP
        PERFORM set_config('ttl.now_override',
                           to_char((timestamptz '2026-01-01 00:00:00+00' + s * interval '1 second')
                                   AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS+00'), true);
        INSERT INTO p
        SELECT s * 10 + g,
               CASE WHEN g % 3 = 0 THEN jsonb_build_object('n', g, 'ttl', 50 + g)
                    WHEN g = 1 THEN '{"ttl": -1}'
                    ELSE jsonb_build_object('n', g) END
          FROM generate_series(0, 9) g;
    END LOOP;
END $$;
ANALYZE p;
SELECT count(*) FROM p;

-- the plans purge runs: index scans on the purge indexes lock a batch, the
-- DELETE takes exactly those rows by TID and re-checks the expiry rule on
-- the row version it deletes
SELECT ttl._purge_statement('p', false) AS inherited_statement;
-- EXPLAIN (COSTS OFF) in the initplan notation of 17+ on every major: 15
-- prints "InitPlan 2 (returns $2)" and refers to its result as "$2", 17+
-- print "InitPlan 2" and "(InitPlan 2).col1"; the plans are the same
CREATE FUNCTION explain_plan(stmt text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    lines text[] := '{}';
    line text;
    m text[];
    plan_of jsonb := '{}';
    param text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || stmt LOOP
        m := regexp_match(line, '^(\s*InitPlan (\d+)) \(returns \$(\d+)\)$');
        IF m IS NOT NULL THEN
            plan_of := plan_of || jsonb_build_object(m[3], m[2]);
            line := m[1];
        END IF;
        lines := lines || line;
    END LOOP;
    FOREACH line IN ARRAY lines LOOP
        FOR param IN SELECT jsonb_object_keys(plan_of) ORDER BY 1 DESC LOOP
            line := regexp_replace(line, '\$' || param || '(?!\d)',
                                   format('(InitPlan %s).col1', plan_of->>param), 'g');
        END LOOP;
        RETURN NEXT line;
    END LOOP;
END $$;
BEGIN;
SELECT ttl._purge_plan_options();
SELECT format('PREPARE inherited(bigint, bigint, bigint, integer, bigint) AS %s', ttl._purge_statement('p', false)) \gexec
SELECT format('PREPARE own(bigint, bigint, bigint, integer, bigint) AS %s', ttl._purge_statement('p', true)) \gexec
SELECT explain_plan('EXECUTE inherited(-9223372036854775808, 1767225700, 1000, 100, 1767225800)');
SELECT explain_plan('EXECUTE own(-9223372036854775808, 1767225800, 1000, 100, 1767225800)');
DEALLOCATE inherited;
DEALLOCATE own;
COMMIT;

CREATE FUNCTION expired_count() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM p WHERE ttl.is_expired('p', doc)
$$;
CREATE FUNCTION live_count() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM p_live
$$;

-- at 00:03:00 some are due
SET ttl.now_override = '2026-01-01 00:03:00+00';
SELECT expired_count() AS expired, live_count() AS live;
-- max_rows
SELECT ttl.purge('p', 250);
SELECT expired_count() AS expired, live_count() AS live;
SELECT ttl.purge('p', 0);
-- small committed batches (the procedure and the worker) resume by key and
-- still find every expired item
SET ttl.batch_size = 7;
CALL ttl.run_purge();
SELECT expired_count() AS expired, live_count() AS live;
RESET ttl.batch_size;
SELECT container, rows_purged, last_purge_at, last_error FROM ttl.stats;
-- nothing left: zero, and the live items are all still there
SELECT ttl.purge('p');
SELECT count(*) = live_count() AS only_live_left FROM p;

-- a new default is used by the next purge
SELECT ttl.set_default_ttl('p', 10);
SELECT expired_count() AS expired, live_count() AS live;
SELECT ttl.purge('p');
SELECT expired_count() AS expired, live_count() AS live;

-- default -1: only items with their own ttl; NULL: nothing at all
SET ttl.now_override = '2026-01-01 01:00:00+00';
SELECT ttl.set_default_ttl('p', -1);
SELECT count(*) FILTER (WHERE doc ? 'ttl') AS own, count(*) AS total FROM p;
SELECT ttl.set_default_ttl('p', NULL);
SELECT ttl.purge('p');
SELECT ttl.set_default_ttl('p', -1);
SELECT ttl.purge('p');
SELECT count(*) FILTER (WHERE doc ? 'ttl') AS own, count(*) AS total FROM p;
SELECT ttl.set_default_ttl('p', 60);

-- pause: ttl.purge() with no argument skips the container; naming it purges
CREATE TABLE q (doc jsonb);
SELECT ttl.enable('q', 1);
INSERT INTO q SELECT '{}' FROM generate_series(1, 5);
SELECT ttl.pause('p');
SET ttl.now_override = '2026-01-01 02:00:00+00';
SELECT ttl.purge();
SELECT (SELECT count(*) FROM p) AS p_rows, (SELECT count(*) FROM q) AS q_rows;
SELECT paused FROM ttl.containers WHERE container = 'p'::regclass;
SELECT ttl.purge('p');
SELECT ttl.resume('p');
SELECT count(*) FROM p;

-- rows that escaped the trigger: an invalid ttl inherits, a missing _ts
-- never expires, and nothing raises
ALTER TABLE p DISABLE TRIGGER zzz_ttl_stamp;
INSERT INTO p VALUES (-1, '{"_ts": 1767225600, "ttl": "bad"}'), (-2, '{"ttl": 1}'), (-3, '{"_ts": "x"}');
ALTER TABLE p ENABLE TRIGGER zzz_ttl_stamp;
SELECT ttl.purge('p');
SELECT id FROM p WHERE id < 0 ORDER BY id;

-- errors
SELECT ttl.purge('p', -1);
CREATE TABLE not_c (doc jsonb);
SELECT ttl.purge('not_c');
-- CALL ttl.run_purge() cannot run inside a transaction block
BEGIN;
CALL ttl.run_purge();
ROLLBACK;
-- but on its own it purges every due container in committed batches, each
-- READ COMMITTED and read-write whatever the session's defaults say
INSERT INTO q SELECT '{}' FROM generate_series(1, 5);
SET ttl.now_override = '2026-01-01 03:00:00+00';
SET default_transaction_isolation = 'serializable';
SET default_transaction_read_only = on;
CALL ttl.run_purge();
RESET default_transaction_read_only;
RESET default_transaction_isolation;
SELECT count(*) FROM q;
SELECT container, rows_purged FROM ttl.stats ORDER BY container;

DROP TABLE p, q, not_c CASCADE;
DROP FUNCTION expired_count(), live_count();

-- the backlog in ttl.stats: expired but not yet purged, and since when
CREATE TABLE b (doc jsonb);
SELECT ttl.enable('b', 60);
SET ttl.now_override = '2026-01-01 00:00:00+00';
INSERT INTO b VALUES ('{}'), ('{}'), ('{"ttl": 30}'), ('{"ttl": -1}'), ('{"ttl": 600}');
SET ttl.now_override = '2026-01-01 00:00:10+00';
INSERT INTO b VALUES ('{}');
SELECT expired_backlog, oldest_expired_at, oldest_expired_age FROM ttl.stats WHERE container = 'b'::regclass;
SET ttl.now_override = '2026-01-01 00:01:05+00';
SELECT expired_backlog, oldest_expired_at, oldest_expired_age FROM ttl.stats WHERE container = 'b'::regclass;
SET ttl.now_override = '2026-01-01 00:20:00+00';
SELECT expired_backlog, oldest_expired_at, oldest_expired_age FROM ttl.stats WHERE container = 'b'::regclass;
SELECT ttl.purge('b');
SELECT rows_purged, expired_backlog, oldest_expired_at FROM ttl.stats WHERE container = 'b'::regclass;
SELECT ttl.set_default_ttl('b', NULL);
SELECT expired_backlog FROM ttl.stats WHERE container = 'b'::regclass;
DROP TABLE b CASCADE;

-- which way a batch deletes: directly (deletes that skip rows others hold)
-- when a DELETE would only delete; otherwise a DELETE statement, so that
-- triggers, foreign keys, rules and row security act exactly as for a
-- user's DELETE.  DEBUG1 names the path and why.
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE w (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('w', 60);
CREATE FUNCTION w_rows() RETURNS void LANGUAGE sql AS $$
    INSERT INTO w SELECT g, jsonb_build_object('g', g) FROM generate_series(1, 6) g
        ON CONFLICT DO NOTHING
$$;
SELECT w_rows();
SET ttl.now_override = '2026-01-01 00:05:00+00';
SET client_min_messages = debug1;
SELECT ttl.purge('w');
RESET client_min_messages;
-- an audit trigger on DELETE sees every purged row (purge runs with
-- search_path = pg_catalog, pg_temp: trigger functions name their schema)
SET ttl.now_override = '2026-01-01 00:00:00+00';
SELECT w_rows();
CREATE TABLE w_audit (id int, doc jsonb);
CREATE FUNCTION w_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.w_audit VALUES (OLD.id, OLD.doc - '_ts');
    RETURN OLD;
END $$;
CREATE TRIGGER w_audit AFTER DELETE ON w FOR EACH ROW EXECUTE FUNCTION w_audit();
SET ttl.now_override = '2026-01-01 00:05:00+00';
SET client_min_messages = debug1;
SELECT ttl.purge('w');
RESET client_min_messages;
SELECT * FROM w_audit ORDER BY id;
DROP TRIGGER w_audit ON w;
-- the purge's own transactions (CALL ttl.run_purge(), the worker) commit
-- without waiting for a WAL flush (a lost purge commit is redone); the
-- caller's transaction of ttl.purge() keeps its setting, and the session's
-- setting is the same after the CALL
CREATE TABLE w_commit (how text, sync text);
CREATE FUNCTION w_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.w_commit
        VALUES (pg_catalog.current_setting('application_name'),
                pg_catalog.current_setting('synchronous_commit'));
    RETURN OLD;
END $$;
CREATE TRIGGER w_commit AFTER DELETE ON w FOR EACH ROW EXECUTE FUNCTION w_commit();
SET ttl.now_override = '2026-01-01 00:00:00+00';
SELECT w_rows();
SET ttl.now_override = '2026-01-01 00:05:00+00';
SET application_name = 'ttl.purge';
SELECT ttl.purge('w') > 0 AS purged;
SET ttl.now_override = '2026-01-01 00:00:00+00';
SELECT w_rows();
SET ttl.now_override = '2026-01-01 00:05:00+00';
SET application_name = 'run_purge';
CALL ttl.run_purge();
RESET application_name;
SELECT how, sync, count(*) > 0 AS fired FROM w_commit GROUP BY how, sync ORDER BY how;
SHOW synchronous_commit;
DROP TRIGGER w_commit ON w;
DROP TABLE w_commit;
DROP FUNCTION w_commit();
-- a foreign key pointing at the container: ON DELETE CASCADE cascades,
-- and a restricting one makes the purge fail, not orphan rows
SET ttl.now_override = '2026-01-01 00:00:00+00';
SELECT w_rows();
CREATE TABLE w_child (id int PRIMARY KEY, parent int REFERENCES w ON DELETE CASCADE);
INSERT INTO w_child VALUES (10, 1), (20, 2);
SET ttl.now_override = '2026-01-01 00:05:00+00';
SET client_min_messages = debug1;
SELECT ttl.purge('w');
RESET client_min_messages;
SELECT count(*) AS children_left FROM w_child;
DROP TABLE w_child;
SET ttl.now_override = '2026-01-01 00:00:00+00';
SELECT w_rows();
CREATE TABLE w_keep (id int PRIMARY KEY, parent int REFERENCES w);
INSERT INTO w_keep VALUES (10, 1);
SET ttl.now_override = '2026-01-01 00:05:00+00';
SELECT ttl.purge('w');
SELECT count(*) AS all_kept FROM w;
DROP TABLE w_keep;
SELECT ttl.purge('w');
-- row security forced on a (non-superuser) owner: purge deletes only what
-- a DELETE by the owner may (its row locks also need an UPDATE policy)
CREATE ROLE regress_ttl_w_owner;
ALTER TABLE w OWNER TO regress_ttl_w_owner;
SET ttl.now_override = '2026-01-01 00:00:00+00';
SELECT w_rows();
ALTER TABLE w ENABLE ROW LEVEL SECURITY;
ALTER TABLE w FORCE ROW LEVEL SECURITY;
CREATE POLICY w_see ON w FOR SELECT USING (true);
CREATE POLICY w_lock ON w FOR UPDATE USING (true);
CREATE POLICY w_odd ON w FOR DELETE USING (id % 2 = 1);
SET ttl.now_override = '2026-01-01 00:05:00+00';
SET client_min_messages = debug1;
SELECT ttl.purge('w');
RESET client_min_messages;
SELECT id FROM w ORDER BY id;
ALTER TABLE w NO FORCE ROW LEVEL SECURITY;
SET client_min_messages = debug1;
SELECT ttl.purge('w');
RESET client_min_messages;
ALTER TABLE w DISABLE ROW LEVEL SECURITY;
ALTER TABLE w OWNER TO CURRENT_USER;
DROP OWNED BY regress_ttl_w_owner;
DROP ROLE regress_ttl_w_owner;
-- a purge index dropped by hand: the statement still finds every row
SET ttl.now_override = '2026-01-01 00:00:00+00';
SELECT w_rows();
DROP INDEX w_ttl_purge_idx;
SET ttl.now_override = '2026-01-01 00:05:00+00';
SET client_min_messages = debug1;
SELECT ttl.purge('w');
RESET client_min_messages;
SELECT count(*) FROM w;
DROP TABLE w, w_audit CASCADE;
DROP FUNCTION w_rows(), w_audit();

-- ttl.purge() without max_rows takes both kinds of items in one bitmap pass;
-- when work_mem makes the bitmap lossy, whole pages are re-checked and only
-- what is due goes (the EXPLAIN shows the same bitmap going lossy)
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE lossy (id int PRIMARY KEY, doc jsonb NOT NULL) WITH (fillfactor = 10);
SELECT ttl.enable('lossy', 60);
INSERT INTO lossy SELECT g, CASE WHEN g % 7 = 0 THEN jsonb_build_object('ttl', -1)
                                 WHEN g % 5 = 0 THEN jsonb_build_object('ttl', 30)
                                 WHEN g % 11 = 0 THEN jsonb_build_object('ttl', 600)
                                 ELSE jsonb_build_object() END
  FROM generate_series(1, 20000) g;
ANALYZE lossy;
SET ttl.now_override = '2026-01-01 00:05:00+00';
SET work_mem = '64kB';
DO $$
DECLARE
    line text;
    lossy boolean := false;
BEGIN
    SET LOCAL enable_indexscan = off;
    SET LOCAL enable_seqscan = off;
    FOR line IN EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
        -- the inherited items' range of the purge index (src/purge_key.c)
        SELECT * FROM lossy WHERE ttl.doc_purge_key(doc) BETWEEN 2305843009213693952
                                                             AND 4611686018427387904 + 1767225840
    LOOP
        lossy := lossy OR line ~ 'lossy=[1-9]';
    END LOOP;
    RAISE NOTICE 'bitmap lossy at this work_mem: %', lossy;
END $$;
SELECT count(*) FILTER (WHERE ttl.is_expired('lossy', doc)) AS due,
       count(*) FILTER (WHERE NOT ttl.is_expired('lossy', doc)) AS kept FROM lossy;
SELECT ttl.purge('lossy');
RESET work_mem;
SELECT count(*) FILTER (WHERE ttl.is_expired('lossy', doc)) AS due,
       count(*) FILTER (WHERE doc->'ttl' = '-1') AS never,
       count(*) FILTER (WHERE doc->'ttl' = '600') AS later,
       count(*) AS kept FROM lossy;
DROP TABLE lossy CASCADE;

-- a partitioned container: each partition is walked through its own part
-- of the purge indexes, leaf by leaf, and small committed batches resume at
-- (partition, key); a DELETE trigger on one partition means the statement
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE pp (tenant int, id int, doc jsonb NOT NULL, PRIMARY KEY (tenant, id))
    PARTITION BY LIST (tenant);
CREATE TABLE pp_1 PARTITION OF pp FOR VALUES IN (1);
CREATE TABLE pp_2 (id int NOT NULL, doc jsonb NOT NULL, tenant int NOT NULL);
ALTER TABLE pp ATTACH PARTITION pp_2 FOR VALUES IN (2);
CREATE TABLE pp_3 PARTITION OF pp FOR VALUES IN (3);
SELECT ttl.enable('pp', 60);
CREATE FUNCTION pp_rows() RETURNS void LANGUAGE sql AS $$
    INSERT INTO pp SELECT t, g, CASE WHEN g % 4 = 0 THEN jsonb_build_object('ttl', 30)
                                     WHEN g % 4 = 1 THEN jsonb_build_object('ttl', -1)
                                     ELSE jsonb_build_object() END
      FROM generate_series(1, 3) t, generate_series(1, 8) g
    ON CONFLICT DO NOTHING
$$;
SELECT pp_rows();
SET ttl.now_override = '2026-01-01 00:05:00+00';
SET client_min_messages = debug1;
SELECT ttl.purge('pp', 5);
RESET client_min_messages;
SELECT ttl.purge('pp', 7);
SET ttl.batch_size = 2;
CALL ttl.run_purge();
RESET ttl.batch_size;
SELECT tableoid::regclass, array_agg(id ORDER BY id) FROM pp GROUP BY 1 ORDER BY 1;
SET ttl.now_override = '2026-01-01 00:00:00+00';
SELECT pp_rows();
CREATE TABLE pp_audit (tenant int, id int);
CREATE FUNCTION pp_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.pp_audit VALUES (OLD.tenant, OLD.id);
    RETURN OLD;
END $$;
CREATE TRIGGER pp_audit AFTER DELETE ON pp_3 FOR EACH ROW EXECUTE FUNCTION pp_audit();
SET ttl.now_override = '2026-01-01 00:05:00+00';
SET client_min_messages = debug1;
SELECT ttl.purge('pp');
RESET client_min_messages;
SELECT tenant, array_agg(id ORDER BY id) FROM pp_audit GROUP BY 1;
SELECT tableoid::regclass, array_agg(id ORDER BY id) FROM pp GROUP BY 1 ORDER BY 1;
DROP TABLE pp, pp_audit CASCADE;
DROP FUNCTION pp_rows(), pp_audit();

-- scheduling needs pg_cron in this database, and says how to get it
DO $$
BEGIN
    PERFORM ttl.schedule_purge();
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    DECLARE
        hint text;
    BEGIN
        GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
        RAISE NOTICE '%: %', SQLSTATE, regexp_replace(SQLERRM, '".*"', '"<this database>"');
        RAISE NOTICE 'hint: %', hint;
    END;
END $$;
DO $$
BEGIN
    PERFORM ttl.unschedule_purge();
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    RAISE NOTICE '%: %', SQLSTATE, regexp_replace(SQLERRM, '".*"', '"<this database>"');
END $$;
