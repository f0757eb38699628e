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

\echo
\echo '=================================================================='
\echo '=== Act two: what a hand-written TTL does not have'
\echo '=================================================================='
\echo
\echo '=== 11. Archive before purge: a purge moves each expired order into'
\echo '===     orders_archive in the transaction of its delete, so a row is in one'
\echo '===     table or the other, never both, never neither. (The fixed clock is'
\echo '===     in 2030: the worker, on the real clock, leaves these items alone.)'
SET ttl.now_override = '2030-03-01 09:00:00+00';
CREATE TABLE orders (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE orders_archive (id int PRIMARY KEY, doc jsonb NOT NULL,
                             archived_at timestamptz NOT NULL DEFAULT now());
SELECT ttl.enable('orders', 3600);
SELECT ttl.set_archive('orders', 'orders_archive');
INSERT INTO orders
SELECT g, jsonb_build_object('customer', 'c-' || g % 3, 'total', g * 10)
  FROM generate_series(1, 6) AS g;

\echo
\echo '=== 12. A legal hold: everything of customer c-1 is kept past its expiry'
\echo '===     (still hidden from orders_live: a hold keeps, it does not show).'
SELECT ttl.set_legal_hold('orders', 'case-7', '{"customer": "c-1"}');
SET ttl.now_override = '2030-03-01 11:00:00+00';
SELECT count(*) AS live_orders FROM orders_live;
SELECT ttl.purge('orders');
\echo '---    the two held orders stay in the table; the four others are archived'
SELECT id, doc->>'customer' AS customer FROM orders ORDER BY id;
SELECT id, doc->>'customer' AS customer FROM orders_archive ORDER BY id;
SELECT name, match, held_expired FROM ttl.legal_holds;
\echo '---    released, the next purge archives them too'
SELECT ttl.release_legal_hold('orders', 'case-7');
SELECT ttl.purge('orders');
SELECT (SELECT count(*) FROM orders) AS in_orders,
       (SELECT count(*) FROM orders_archive) AS in_archive;

\echo
\echo '=== 13. A preview before a policy change: carts keep items for a day;'
\echo '===     what would a one-hour default hide at once?'
CREATE TABLE carts (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('carts', 86400);
SET ttl.now_override = '2030-03-01 08:00:00+00';
INSERT INTO carts SELECT g, '{}' FROM generate_series(1, 3) AS g;
SET ttl.now_override = '2030-03-01 10:30:00+00';
INSERT INTO carts SELECT g, '{}' FROM generate_series(4, 5) AS g;
SET ttl.now_override = '2030-03-01 11:00:00+00';
SELECT scenario, default_ttl, items, hidden, expiring_1h, expiring_1d
  FROM ttl.preview('carts', 3600);
\echo '---    (nothing changed: the current default still keeps all five)'
SELECT count(*) AS live_carts FROM carts_live;

\echo
\echo '=== 14. An absolute deadline (rule 9): coupons carry "validUntil"; writing'
\echo '===     a coupon again does not move its expiry, unlike a ttl.'
CREATE TABLE coupons (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('coupons', -1, deadline_property => 'validUntil');   -- -1: on, no default
INSERT INTO coupons VALUES ('spring', '{"validUntil": "2030-03-01T12:00:00Z"}');
UPDATE coupons SET doc = doc || '{"uses": 1}' WHERE id = 'spring';
SELECT id, ttl.expires_at('coupons', doc) FROM coupons;
SET ttl.now_override = '2030-03-01 12:00:00+00';
SELECT count(*) AS live_coupons FROM coupons_live;

\echo
\echo '=== 15. What an operator reads: one row per container'
SELECT container, rows_purged, last_error, expired_backlog
  FROM ttl.stats ORDER BY container::text;
RESET ttl.now_override;
