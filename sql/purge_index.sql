-- The purge index (1.3): one btree per container on ttl.doc_purge_key(doc),
-- whose key orders items inheriting the default by _ts and items with their
-- own ttl by their expiry, in two disjoint ranges.  Purge, the backlog and
-- policy changes work through it exactly as through the two partial indexes
-- of 1.0-1.2, which containers enabled before 1.3 keep until
-- ttl.upgrade_purge_index_sql() moves them over without blocking writes.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE pi (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('pi', 100);
-- exactly one purge index, without predicate
SELECT indexrelid::regclass AS index, pg_get_indexdef(indexrelid) AS definition
  FROM pg_index WHERE indrelid = 'pi'::regclass
   AND obj_description(indexrelid, 'pg_class') = 'ttl purge index';

-- the key: inherited items by _ts, own ttl by _ts + ttl, in disjoint ranges;
-- NULL for items that never expire by their own ttl and for rows without _ts;
-- an invalid ttl (only rows written around the trigger) counts as absent
CREATE TEMP TABLE k AS
SELECT v.name, ttl.doc_purge_key(v.doc::jsonb) AS key FROM (VALUES
    ('inh 10', '{"_ts": 10}'), ('inh 20', '{"_ts": 20}'), ('inh -5', '{"_ts": -5}'),
    ('inh huge', '{"_ts": 9000000000000000000}'), ('inh tiny', '{"_ts": -9000000000000000000}'),
    ('own 10+5', '{"_ts": 10, "ttl": 5}'), ('own 1+100', '{"_ts": 1, "ttl": 100}'),
    ('own huge', '{"_ts": 9223372036854775807, "ttl": 2147483647}'),
    ('bad ttl', '{"_ts": 30, "ttl": "x"}'), ('pinned', '{"_ts": 10, "ttl": -1}'),
    ('no _ts', '{"ttl": 5}'), ('string _ts', '{"_ts": "10"}'), ('array', '[1]')) v(name, doc);
SELECT name, key IS NULL AS is_null,
       rank() OVER (ORDER BY key) AS position
  FROM k ORDER BY key NULLS LAST, name;
SELECT (SELECT max(key) FROM k WHERE name LIKE 'own%') < (SELECT min(key) FROM k WHERE name LIKE 'inh%' OR name = 'bad ttl')
       AS own_range_below_inherited;
SELECT (SELECT key FROM k WHERE name = 'inh 20') - (SELECT key FROM k WHERE name = 'inh 10') AS inh_step,
       (SELECT key FROM k WHERE name = 'own 1+100') - (SELECT key FROM k WHERE name = 'own 10+5') AS own_step;

-- 3000 items: _ts spread over 0..299 s, a third with their own ttl, some pinned
DO $$
BEGIN
    FOR s IN 0..299 LOOP
        PERFORM set_config('ttl.now_override',
                           to_char((timestamptz '2026-01-01 00:00:00+00' + s * interval '1 second')
                                   AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS+00'), true);
        INSERT INTO pi
        SELECT s * 10 + g,
               CASE WHEN g % 3 = 0 THEN jsonb_build_object('n', g, 'ttl', 50 + g * 7)
                    WHEN g = 1 THEN '{"ttl": -1}'
                    ELSE jsonb_build_object('n', g) END
          FROM generate_series(0, 9) g;
    END LOOP;
END $$;
VACUUM ANALYZE pi;
-- the same rows in a plain table, to compare what purge leaves with the rule
CREATE TABLE pi_copy AS SELECT * FROM pi;

-- check(): purge (as told) deleted exactly the expired rows and kept the rest
CREATE FUNCTION pi_check(tab regclass, purged bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    expected bigint;
    missing bigint;
    extra bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM pi_copy c WHERE ttl.is_expired(%L, c.doc)', tab) INTO expected;
    EXECUTE format('SELECT count(*) FROM pi_copy c WHERE NOT ttl.is_expired(%L, c.doc)
                      AND NOT EXISTS (SELECT 1 FROM %s t WHERE t.id = c.id)', tab, tab) INTO missing;
    EXECUTE format('SELECT count(*) FROM %s t WHERE ttl.is_expired(%L, t.doc)', tab, tab) INTO extra;
    DELETE FROM pi_copy c WHERE ttl.is_expired(tab, c.doc);
    RETURN format('purged %s of %s expired, %s live lost, %s expired left', purged, expected, missing, extra);
END $$;

-- backlog, then the direct path in key-ordered batches (the worker's), then
-- in one bitmap walk, with policy changes in between that apply at once
SET ttl.now_override = '2026-01-01 00:03:00+00';
SELECT expired, oldest_expired_at FROM ttl.backlog('pi');
SELECT count(*) AS expired_by_rule, to_timestamp(min(ttl.doc_ts(doc) + coalesce(ttl.doc_ttl(doc), 100))) AS oldest
  FROM pi WHERE ttl.is_expired('pi', doc);
SET ttl.batch_size = 7;
CALL ttl.run_purge();
RESET ttl.batch_size;
SELECT pi_check('pi', (SELECT rows_purged FROM ttl.stats WHERE container = 'pi'::regclass));
SELECT ttl.set_default_ttl('pi', 30);
SELECT expired FROM ttl.backlog('pi');
SELECT pi_check('pi', ttl.purge('pi', 100000));
SELECT ttl.set_default_ttl('pi', 1);
SELECT pi_check('pi', ttl.purge('pi'));
SET ttl.now_override = '2026-01-01 00:10:00+00';
SELECT ttl.set_default_ttl('pi', -1);
SELECT expired FROM ttl.backlog('pi');
SELECT pi_check('pi', ttl.purge('pi'));
SELECT count(*) AS left_rows, count(*) FILTER (WHERE doc->>'ttl' = '-1') AS pinned FROM pi;

-- the statement path (a DELETE trigger keeps purge off the direct path)
-- uses the same index and finds the same rows
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE pis (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('pis', 100);
INSERT INTO pis SELECT g, CASE WHEN g % 2 = 0 THEN jsonb_build_object('ttl', g) ELSE '{}' END
  FROM generate_series(1, 400) g;
CREATE FUNCTION pis_count() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$;
CREATE TRIGGER pis_del BEFORE DELETE ON pis FOR EACH ROW EXECUTE FUNCTION pis_count();
SET ttl.now_override = '2026-01-01 00:02:30+00';
SELECT count(*) AS expected FROM pis WHERE ttl.is_expired('pis', doc);
SET client_min_messages = debug1;
SELECT ttl.purge('pis', 1000000);
RESET client_min_messages;
SELECT count(*) AS expired_left, min((doc->>'ttl')::int) AS smallest_ttl_left FROM pis WHERE doc ? 'ttl'
   AND ttl.is_expired('pis', doc);
SELECT count(*) AS rows_left FROM pis;
SELECT ttl._purge_statement('pis', false) AS inherited_statement;
DROP TABLE pis, pi, pi_copy CASCADE;
DROP FUNCTION pi_check(regclass, bigint);

-- Upgrade: containers enabled under 1.2 keep their two partial indexes and
-- are purged exactly through them; ttl.upgrade_purge_index_sql() gives the
-- statements that move one to the single index without blocking its writes
-- (CREATE INDEX CONCURRENTLY, then DROP INDEX CONCURRENTLY), run by \gexec
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_purge_index;
ALTER DATABASE regress_ttl_purge_index SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_purge_index
\set SHOW_CONTEXT never
CREATE EXTENSION ttl VERSION '1.2';
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE old (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('old', 100);
CREATE TABLE oldp (id int, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE oldp_1 PARTITION OF oldp FOR VALUES FROM (0) TO (1000);
CREATE TABLE oldp_2 PARTITION OF oldp FOR VALUES FROM (1000) TO (2000) PARTITION BY RANGE (id);
CREATE TABLE oldp_2a PARTITION OF oldp_2 FOR VALUES FROM (1000) TO (2000);
SELECT ttl.enable('oldp', 100);
DO $$
BEGIN
    FOR s IN 0..99 LOOP
        PERFORM set_config('ttl.now_override',
                           to_char((timestamptz '2026-01-01 00:00:00+00' + s * interval '1 second')
                                   AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS+00'), true);
        INSERT INTO old SELECT s * 10 + g, CASE WHEN g % 3 = 0 THEN jsonb_build_object('ttl', 20 + g) ELSE '{}' END
          FROM generate_series(0, 9) g;
        INSERT INTO oldp SELECT s * 10 + g + 500 * (g % 2), CASE WHEN g % 3 = 0 THEN jsonb_build_object('ttl', 20 + g) ELSE '{}' END
          FROM generate_series(0, 9) g;
    END LOOP;
END $$;
ALTER EXTENSION ttl UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
CREATE FUNCTION layout(t regclass) RETURNS text[] LANGUAGE sql AS $$
    SELECT array_agg(regexp_replace(pg_get_indexdef(i.indexrelid), ' ON .* USING', ' USING') ORDER BY 1)
      FROM pg_index i
     WHERE i.indrelid = t AND obj_description(i.indexrelid, 'pg_class') = 'ttl purge index'
$$;
SELECT layout('old') AS old_layout, layout('oldp') AS oldp_layout;
SET ttl.now_override = '2026-01-01 00:01:30+00';
SELECT (SELECT count(*) FROM old WHERE ttl.is_expired('old', doc)) AS old_expected,
       (SELECT count(*) FROM oldp WHERE ttl.is_expired('oldp', doc)) AS oldp_expected;
SELECT expired FROM ttl.backlog('old');
SELECT expired FROM ttl.backlog('oldp');
SET client_min_messages = debug1;
SELECT ttl.purge('old', 7);
RESET client_min_messages;
SELECT ttl.purge('old'), ttl.purge('oldp');
SELECT (SELECT count(*) FROM old WHERE ttl.is_expired('old', doc)) AS old_left,
       (SELECT count(*) FROM oldp WHERE ttl.is_expired('oldp', doc)) AS oldp_left;
-- the statements, then run them
SELECT ttl.upgrade_purge_index_sql('old');
SELECT ttl.upgrade_purge_index_sql('old') \gexec
SELECT ttl.upgrade_purge_index_sql('oldp') \gexec
SELECT layout('old') AS old_layout, layout('oldp') AS oldp_layout;
SELECT c.relname, regexp_replace(pg_get_indexdef(i.indexrelid), ' ON .* USING', ' USING') AS def, i.indisvalid
  FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
 WHERE c.relname LIKE 'oldp%' AND pg_get_indexdef(i.indexrelid) LIKE '%ttl.%'
 ORDER BY 1, 2;
-- nothing left to move
SELECT count(*) FROM ttl.upgrade_purge_index_sql('old');
SET ttl.now_override = '2026-01-01 00:02:00+00';
SELECT (SELECT count(*) FROM old WHERE ttl.is_expired('old', doc)) AS old_expected,
       (SELECT count(*) FROM oldp WHERE ttl.is_expired('oldp', doc)) AS oldp_expected;
SELECT expired FROM ttl.backlog('old');
SELECT expired FROM ttl.backlog('oldp');
SET client_min_messages = debug1;
SELECT ttl.purge('old', 3);
RESET client_min_messages;
SELECT ttl.purge('old'), ttl.purge('oldp');
SELECT (SELECT count(*) FROM old WHERE ttl.is_expired('old', doc)) AS old_left,
       (SELECT count(*) FROM oldp WHERE ttl.is_expired('oldp', doc)) AS oldp_left,
       (SELECT count(*) FROM old) AS old_rows, (SELECT count(*) FROM oldp) AS oldp_rows;
-- ttl.disable removes the new index like the old ones
SELECT ttl.disable('oldp');
SELECT count(*) AS ttl_indexes_left FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
 WHERE c.relname LIKE 'oldp%' AND pg_get_indexdef(i.indexrelid) LIKE '%ttl.%';
SELECT ttl.upgrade_purge_index_sql('oldp');
\c :orig_db
DROP DATABASE regress_ttl_purge_index;
