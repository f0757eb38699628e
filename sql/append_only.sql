-- Append-only mode (ttl.set_append_only): the container's purge index is a
-- BRIN index (minmax-multi on ttl.doc_purge_key) instead of a btree, so
-- writes skip the btree; purge walks the page ranges that may hold due
-- rows and re-checks every row.  With purge_index 'none' (1.6) there is no
-- purge index at all and purge sweeps every page.  Correctness never
-- depends on the mode: on the same data, also after updates, the view
-- hides and purge deletes exactly the same rows as in the default mode.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE ao_d (id int PRIMARY KEY, doc jsonb NOT NULL);   -- default mode
CREATE TABLE ao_a (id int PRIMARY KEY, doc jsonb NOT NULL);   -- append-only
CREATE TABLE ao_s (id int PRIMARY KEY, doc jsonb NOT NULL);   -- append-only, no index
SELECT ttl.enable('ao_d', 120), ttl.enable('ao_a', 120), ttl.enable('ao_s', 120);
SELECT ttl.set_append_only('ao_a', true);
SELECT ttl.set_append_only('ao_s', true, 'none');
SELECT container, default_ttl, append_only, purge_index FROM ttl.containers ORDER BY 1;
CREATE FUNCTION ao_indexes(t regclass) RETURNS TABLE (am name, definition text) LANGUAGE sql AS $$
    SELECT a.amname, regexp_replace(pg_get_indexdef(i.indexrelid), ' ON .* USING', ' USING')
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
     WHERE i.indrelid = t AND obj_description(i.indexrelid, 'pg_class') = 'ttl purge index'
     ORDER BY 1
$$;
SELECT * FROM ao_indexes('ao_a');
SELECT * FROM ao_indexes('ao_d');
SELECT count(*) AS ao_s_indexes FROM pg_index WHERE indrelid = 'ao_s'::regclass
   AND pg_get_indexdef(indexrelid) LIKE '%ttl.%';
-- switching is idempotent
SELECT ttl.set_append_only('ao_a', true);
SELECT count(*) FROM ao_indexes('ao_a');
SELECT ttl.set_append_only('ao_a', true, 'brin');
SELECT count(*) FROM ao_indexes('ao_a');
SELECT ttl.set_append_only('ao_s', true, 'none');
SELECT count(*) FROM ao_indexes('ao_s');

-- a log: 300 seconds of 20 rows each, 10% with their own ttl, a few pinned
CREATE PROCEDURE ao_write(t regclass) LANGUAGE plpgsql AS $$
BEGIN
    FOR s IN 0..299 LOOP
        PERFORM set_config('ttl.now_override',
                           to_char((timestamptz '2026-01-01 00:00:00+00' + s * interval '1 second')
                                   AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS+00'), true);
        EXECUTE format('INSERT INTO %s SELECT $1 * 20 + g,
                          CASE WHEN g = 0 THEN jsonb_build_object(''msg'', g, ''ttl'', 30 + $1 %% 200)
                               WHEN g = 1 AND $1 %% 10 = 0 THEN ''{"ttl": -1}''
                               ELSE jsonb_build_object(''msg'', g) END
                          FROM generate_series(0, 19) g', t) USING s;
    END LOOP;
END $$;
CALL ao_write('ao_d');
CALL ao_write('ao_a');
CALL ao_write('ao_s');
VACUUM ANALYZE ao_d;
VACUUM ANALYZE ao_a;
VACUUM ANALYZE ao_s;
-- then updates: rows re-stamped later, rows that gain or lose their own ttl
SET ttl.now_override = '2026-01-01 00:04:00+00';
UPDATE ao_d SET doc = doc WHERE id % 7 = 0;
UPDATE ao_a SET doc = doc WHERE id % 7 = 0;
UPDATE ao_s SET doc = doc WHERE id % 7 = 0;
UPDATE ao_d SET doc = doc || '{"ttl": 5}' WHERE id % 11 = 0;
UPDATE ao_a SET doc = doc || '{"ttl": 5}' WHERE id % 11 = 0;
UPDATE ao_s SET doc = doc || '{"ttl": 5}' WHERE id % 11 = 0;
UPDATE ao_d SET doc = doc - 'ttl' WHERE id % 13 = 0;
UPDATE ao_a SET doc = doc - 'ttl' WHERE id % 13 = 0;
UPDATE ao_s SET doc = doc - 'ttl' WHERE id % 13 = 0;

-- compare(): for each container, its hidden set, backlog and remaining
-- set, and whether each is the default-mode container's (ao_d)
CREATE FUNCTION ao_compare() RETURNS TABLE (container text, hidden bigint, same_hidden boolean,
                                            backlog bigint, same_backlog boolean,
                                            rows_left bigint, same_rows boolean)
LANGUAGE plpgsql AS $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT unnest(ARRAY['ao_d', 'ao_a', 'ao_s']) LOOP
        RETURN QUERY EXECUTE format($q$
            SELECT %1$L::text,
                   (SELECT count(*) FROM %1$I WHERE id NOT IN (SELECT id FROM %2$I)),
                   (SELECT array_agg(id ORDER BY id) FROM %1$I WHERE id NOT IN (SELECT id FROM %2$I))
                       IS NOT DISTINCT FROM
                   (SELECT array_agg(id ORDER BY id) FROM ao_d WHERE id NOT IN (SELECT id FROM ao_d_live)),
                   (SELECT expired FROM ttl.backlog(%1$L)),
                   (SELECT row(expired, oldest_expired_at) FROM ttl.backlog(%1$L))
                       IS NOT DISTINCT FROM
                   (SELECT row(expired, oldest_expired_at) FROM ttl.backlog('ao_d')),
                   (SELECT count(*) FROM %1$I),
                   (SELECT array_agg(id ORDER BY id) FROM %1$I)
                       IS NOT DISTINCT FROM (SELECT array_agg(id ORDER BY id) FROM ao_d)
            $q$, t, t || '_live');
    END LOOP;
END
$$;
SET ttl.now_override = '2026-01-01 00:04:10+00';
SELECT * FROM ao_compare();
-- ttl.purge with max_rows: the append-only container walks its page ranges
SET client_min_messages = debug1;
SELECT ttl.purge('ao_a', 100) AS a_max_rows;
SELECT ttl.purge('ao_s', 100) AS s_max_rows;
RESET client_min_messages;
SELECT ttl.purge('ao_d', 100) AS d_max_rows;
SELECT ttl.purge('ao_d') AS d_rest, ttl.purge('ao_a') AS a_rest, ttl.purge('ao_s') AS s_rest;
SELECT * FROM ao_compare();
-- committed batches (the procedure), after the default changed
SET ttl.now_override = '2026-01-01 00:05:30+00';
SELECT ttl.set_default_ttl('ao_d', 60), ttl.set_default_ttl('ao_a', 60), ttl.set_default_ttl('ao_s', 60);
SELECT * FROM ao_compare();
SET ttl.batch_size = 13;
CALL ttl.run_purge();
RESET ttl.batch_size;
SELECT * FROM ao_compare();
-- default -1: only items with their own ttl
SET ttl.now_override = '2026-01-01 00:09:00+00';
SELECT ttl.set_default_ttl('ao_d', -1), ttl.set_default_ttl('ao_a', -1), ttl.set_default_ttl('ao_s', -1);
SELECT * FROM ao_compare();
SELECT ttl.purge('ao_d') AS d, ttl.purge('ao_a') AS a, ttl.purge('ao_s') AS s;
SELECT * FROM ao_compare();

-- the statement path (a DELETE trigger) finds the same rows through BRIN,
-- and, without an index, by scanning the table
SELECT ttl.set_default_ttl('ao_d', 30), ttl.set_default_ttl('ao_a', 30), ttl.set_default_ttl('ao_s', 30);
CREATE FUNCTION ao_keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$;
CREATE TRIGGER ao_del BEFORE DELETE ON ao_a FOR EACH ROW EXECUTE FUNCTION ao_keep();
CREATE TRIGGER ao_del BEFORE DELETE ON ao_s FOR EACH ROW EXECUTE FUNCTION ao_keep();
SELECT * FROM ao_compare();
SET client_min_messages = debug1;
SELECT ttl.purge('ao_a', 50) AS a_batch;
SELECT ttl.purge('ao_s', 50) AS s_batch;
RESET client_min_messages;
SELECT ttl.purge('ao_a') AS a_rest, ttl.purge('ao_s') AS s_rest, ttl.purge('ao_d') AS d;
SELECT * FROM ao_compare();
DROP TRIGGER ao_del ON ao_a;
DROP TRIGGER ao_del ON ao_s;

-- back to the default mode: a btree again, the same rows
SELECT ttl.set_append_only('ao_a', false);
SELECT * FROM ao_indexes('ao_a');
SELECT append_only, purge_index FROM ttl.containers WHERE container = 'ao_a'::regclass;
-- and the index-free one gets a BRIN index, then none again
SELECT ttl.set_append_only('ao_s', true, 'brin');
SELECT * FROM ao_indexes('ao_s');
SELECT append_only, purge_index FROM ttl.containers WHERE container = 'ao_s'::regclass;
SET ttl.now_override = '2026-01-01 00:20:00+00';
SELECT ttl.set_default_ttl('ao_d', 120), ttl.set_default_ttl('ao_a', 120), ttl.set_default_ttl('ao_s', 120);
UPDATE ao_d SET doc = doc || '{"ttl": 10}' WHERE id % 3 = 0;
UPDATE ao_a SET doc = doc || '{"ttl": 10}' WHERE id % 3 = 0;
UPDATE ao_s SET doc = doc || '{"ttl": 10}' WHERE id % 3 = 0;
SELECT ttl.set_append_only('ao_a', true);
SELECT ttl.set_append_only('ao_s', true, 'none');
SELECT * FROM ao_indexes('ao_s');
SET ttl.now_override = '2026-01-01 00:20:10+00';
SELECT * FROM ao_compare();
SELECT ttl.purge('ao_d') AS d, ttl.purge('ao_a') AS a, ttl.purge('ao_s') AS s;
SELECT * FROM ao_compare();
-- from the default mode straight to no index, and back to the btree
SELECT ttl.set_append_only('ao_d', true, 'none');
SELECT count(*) AS ao_d_purge_indexes FROM pg_index WHERE indrelid = 'ao_d'::regclass
   AND pg_get_indexdef(indexrelid) LIKE '%ttl.%';
SELECT ttl.set_append_only('ao_d', false, 'btree');
SELECT * FROM ao_indexes('ao_d');
SELECT purge_index FROM ttl.containers WHERE container = 'ao_d'::regclass;
-- a sweep of a big table with few due rows is cut into batches of at most
-- 4096 pages (each its own transaction in the worker): here two batches
-- for a table of about 7,500 pages (fillfactor 10) and 5 due rows
CREATE TABLE ao_big (id int PRIMARY KEY, doc jsonb NOT NULL) WITH (fillfactor = 10);
SELECT ttl.enable('ao_big', 3600);
SELECT ttl.set_append_only('ao_big', true, 'none');
INSERT INTO ao_big SELECT g, CASE WHEN g % 12000 = 1 THEN '{"ttl": 5}'::jsonb ELSE jsonb_build_object('n', g) END
  FROM generate_series(1, 60000) g;
SELECT pg_relation_size('ao_big') / 8192 BETWEEN 4097 AND 8192 AS between_one_and_two_batches;
SET ttl.now_override = '2026-01-01 00:20:20+00';
SET client_min_messages = debug1;
SELECT ttl.purge('ao_big', 1000) AS big_purged;
RESET client_min_messages;
SELECT count(*) AS big_left FROM ao_big;
DROP TABLE ao_big CASCADE;

-- ttl.disable removes the BRIN index too, and disables an index-free one
SELECT ttl.disable('ao_a');
SELECT ttl.disable('ao_s');
SELECT count(*) AS containers_left FROM ttl.containers WHERE container::text IN ('ao_a', 'ao_s');
SELECT count(*) AS purge_indexes_left FROM pg_index WHERE indrelid = 'ao_a'::regclass
   AND pg_get_indexdef(indexrelid) LIKE '%ttl.%';

-- errors: not a container, NULL, a purge_index that does not fit the mode,
-- not the owner; none of them changes the mode or the indexes
SELECT ttl.set_append_only('ao_a', true);
SELECT ttl.set_append_only('ao_a', true, 'none');
SELECT ttl.set_append_only('ao_d', NULL);
SELECT ttl.set_append_only('ao_d', true, NULL);
SELECT ttl.set_append_only('ao_d', NULL, 'none');
SELECT ttl.set_append_only('ao_d', true, 'btree');
SELECT ttl.set_append_only('ao_d', false, 'none');
SELECT ttl.set_append_only('ao_d', true, 'hash');
SELECT ttl.set_append_only(NULL, true, 'none');
CREATE ROLE regress_ttl_ao_other;
SET ROLE regress_ttl_ao_other;
SELECT ttl.set_append_only('ao_d', true);
SELECT ttl.set_append_only('ao_d', true, 'none');
RESET ROLE;
DROP ROLE regress_ttl_ao_other;
SELECT append_only, purge_index FROM ttl.containers WHERE container = 'ao_d'::regclass;
SELECT * FROM ao_indexes('ao_d');
DROP TABLE ao_d, ao_a, ao_s CASCADE;
DROP FUNCTION ao_compare(), ao_keep(), ao_indexes(regclass);
DROP PROCEDURE ao_write(regclass);
