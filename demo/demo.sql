-- demo/demo.sql: the ttl story, run by demo/run on a throwaway cluster
-- started with shared_preload_libraries = 'ttl' and ttl.naptime = 1.
-- psql runs it with -e (every statement is echoed before its result).

\set ON_ERROR_STOP on
\set QUIET on
\pset null '(null)'
\set QUIET off

\echo
\echo '=== 1. Install the extension and make "sessions" a container with a 30-day default'
CREATE EXTENSION ttl;
CREATE TABLE sessions (id text PRIMARY KEY, doc jsonb);
SELECT ttl.enable('sessions', 2592000);
SELECT container, doc_column, default_ttl, live_view, paused FROM ttl.containers;

\echo
\echo '=== 2. A fixed clock for the deterministic part. It lies in the future, so the'
\echo '===    background worker (which uses the real clock) leaves these items alone.'
SET ttl.now_override = '2030-01-01 09:00:00+00';
SELECT ttl.now();

\echo
\echo '=== 3. Three items: alice inherits the default, bob carries a 2-hour ttl,'
\echo '===    carol is pinned with ttl -1. The _ts alice sends is overwritten:'
\echo '===    _ts is the server''s (1893488400 = 2030-01-01 09:00:00 UTC).'
INSERT INTO sessions VALUES
    ('alice', '{"user": "alice", "_ts": 1}'),
    ('bob',   '{"user": "bob", "ttl": 7200}'),
    ('carol', '{"user": "carol", "ttl": -1}')
RETURNING id, doc;

\echo
\echo '=== 4. Remaining lifetime of every item'
SELECT id, (ttl.state('sessions', doc)).* FROM sessions ORDER BY id;
SELECT id, ttl.expires_at('sessions', doc), ttl.is_expired('sessions', doc)
  FROM sessions ORDER BY id;

\echo
\echo '=== 5. A ttl must be an integer JSON number: -1 or 1..2147483647. The string "60" is rejected.'
\set ON_ERROR_STOP off
INSERT INTO sessions VALUES ('dave', '{"user": "dave", "ttl": "60"}');
\echo '    -> SQLSTATE' :LAST_ERROR_SQLSTATE
\set ON_ERROR_STOP on
SELECT count(*) AS dave_rows FROM sessions WHERE id = 'dave';

\echo
\echo '=== 6. Two hours later: bob has expired. A point read through sessions_live'
\echo '===    returns no row (Cosmos DB''s 404), yet bob is still in the table.'
SET ttl.now_override = '2030-01-01 11:00:00+00';
SELECT id, doc FROM sessions_live WHERE id = 'bob';
SELECT id FROM sessions_live ORDER BY id;
SELECT id, ttl.is_expired('sessions', doc) FROM sessions ORDER BY id;

\echo
\echo '=== 7. Policy changes apply to existing items at once, from their existing _ts'
\echo '---    default NULL: TTL off, nothing expires, item ttls are ignored (bob is back)'
SELECT ttl.set_default_ttl('sessions', NULL);
SELECT id FROM sessions_live ORDER BY id;
\echo '---    default 3600: alice, written two hours ago, expires immediately'
SELECT ttl.set_default_ttl('sessions', 3600);
SELECT id FROM sessions_live ORDER BY id;
\echo '---    back to 30 days'
SELECT ttl.set_default_ttl('sessions', 2592000);
SELECT id FROM sessions_live ORDER BY id;

\echo
\echo '=== 8. Thirty days after the writes: alice has expired too; carol is pinned'
SET ttl.now_override = '2030-01-31 09:00:00+00';
SELECT id FROM sessions_live ORDER BY id;
SELECT id, (ttl.state('sessions', doc)).* FROM sessions ORDER BY id;

\echo
\echo '=== 8b. An expired item is gone for writes too (rule 10, 1.7): its id can be'
\echo '===     created again at once. The expired alice is deleted (as a purge delete,'
\echo '===     counted in ttl.stats) and the new alice takes her place.'
INSERT INTO sessions VALUES ('alice', '{"user": "alice", "login": 2}') RETURNING id, doc;
SELECT id FROM sessions_live ORDER BY id;
\echo '---    an idempotency key that expired accepts its next use; a live one does not'
CREATE TABLE requests (key text PRIMARY KEY, doc jsonb);
SELECT ttl.enable('requests', 86400);
INSERT INTO requests VALUES ('req-1', '{"status": "done"}'), ('req-2', '{"status": "done"}');
SET ttl.now_override = '2030-02-01 09:00:00+00';
INSERT INTO requests VALUES ('req-2', '{"status": "done"}');
INSERT INTO requests VALUES ('req-1', '{"status": "retried"}') ON CONFLICT DO NOTHING;
INSERT INTO requests VALUES ('req-1', '{"status": "again"}') ON CONFLICT DO NOTHING;
SELECT key, doc FROM requests ORDER BY key;
SET ttl.now_override = '2030-01-31 09:00:00+00';

\echo
\echo '=== 9. Physical purge by hand, on the fixed clock. Pausing the container keeps'
\echo '===    the background worker away; a named container is purged even when paused.'
SELECT ttl.pause('sessions');
SELECT ttl.purge('sessions');
SELECT id FROM sessions ORDER BY id;
SELECT container, rows_purged, last_purge_at, last_error FROM ttl.stats;
SELECT ttl.resume('sessions');

\echo
\echo '=== 10. The background worker, on the real clock: three items with a 1-second ttl'
RESET ttl.now_override;
INSERT INTO sessions
SELECT 'tmp' || i, jsonb_build_object('user', 'tmp' || i, 'ttl', 1)
  FROM generate_series(1, 3) AS i;
SELECT count(*) AS tmp_items FROM sessions WHERE id LIKE 'tmp%';

\echo '---    waiting (at most 30 s) until the worker has deleted them'
DO $$
DECLARE
    started timestamptz := clock_timestamp();
    left_over bigint;
BEGIN
    LOOP
        SELECT count(*) INTO left_over FROM sessions WHERE id LIKE 'tmp%';
        EXIT WHEN left_over = 0;
        IF clock_timestamp() > started + interval '30 seconds' THEN
            RAISE EXCEPTION 'the ttl worker did not purge % items within 30 s', left_over;
        END IF;
        PERFORM pg_sleep(0.2);
    END LOOP;
    RAISE NOTICE 'purged by the worker after % s',
        round(extract(epoch FROM clock_timestamp() - started)::numeric, 1);
END
$$;
SELECT id FROM sessions ORDER BY id;
SELECT container, rows_purged, last_purge_at, last_error FROM ttl.stats;
SELECT backend_type, datname, state, wait_event
  FROM pg_stat_activity
 WHERE backend_type IN ('ttl launcher', 'ttl worker')
 ORDER BY backend_type;
