-- <table>_live: security_barrier, same columns, updatable, hides exactly
-- the expired items, never raises on odd rows, policy changes without
-- rewriting rows, owned by the table's owner.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE TABLE s (id text PRIMARY KEY, doc jsonb NOT NULL, tenant int DEFAULT 1);
SELECT ttl.enable('s', 60);
SELECT c.relname, c.reloptions, pg_get_userbyid(c.relowner) = current_user AS owned_by_table_owner
  FROM pg_class c WHERE c.oid = 's_live'::regclass;
SELECT obj_description('s_live'::regclass, 'pg_class');
-- same columns, same order, same types
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 's_live'::regclass AND attnum > 0 ORDER BY attnum;
SELECT is_updatable, is_insertable_into FROM information_schema.views WHERE table_name = 's_live';

INSERT INTO s (id, doc) VALUES ('a', '{}'), ('b', '{"ttl": 10}'), ('c', '{"ttl": -1}'), ('d', '{}');
SET ttl.now_override = '2026-01-01 00:00:10+00';
-- the "404": a point read of an expired item returns no row
SELECT * FROM s_live WHERE id = 'b';
SELECT id FROM s WHERE id = 'b';
-- an expired item can be neither updated nor deleted through the view
UPDATE s_live SET doc = doc || '{"x": 1}' WHERE id = 'b';
DELETE FROM s_live WHERE id = 'b';
SELECT id, doc FROM s WHERE id = 'b';
-- live ones can
UPDATE s_live SET tenant = 2 WHERE id = 'a' RETURNING id, tenant, doc;

-- rule 7 without rewriting rows: the same row versions, a new answer
SELECT ctid AS a_ctid FROM s WHERE id = 'a' \gset
SELECT ctid AS d_ctid FROM s WHERE id = 'd' \gset
SELECT id FROM s_live ORDER BY id;
SELECT ttl.set_default_ttl('s', 5);
SELECT id FROM s_live ORDER BY id;
SELECT count(*) AS same_row_versions FROM s
 WHERE (id = 'a' AND ctid = :'a_ctid') OR (id = 'd' AND ctid = :'d_ctid');
-- inside one transaction, the next statement sees the change
BEGIN;
SELECT ttl.set_default_ttl('s', 3600);
SELECT id FROM s_live ORDER BY id;
ROLLBACK;
SELECT id FROM s_live ORDER BY id;
SELECT ttl.set_default_ttl('s', 60);

-- rows written while the trigger was off (e.g. a restore with triggers
-- disabled) never make the filter raise
ALTER TABLE s DISABLE TRIGGER zzz_ttl_stamp;
INSERT INTO s (id, doc) VALUES
    ('odd1', '{"_ts": "yesterday", "ttl": 5}'),
    ('odd2', '{"_ts": 1e30}'),
    ('odd3', '{"_ts": 1767225600, "ttl": "x"}'),
    ('odd4', '[1, 2]'),
    ('odd5', '"scalar"'),
    ('odd6', '{"_ts": -9223372036854775808, "ttl": 2147483647}'),
    ('odd7', '{"_ts": 9223372036854775807, "ttl": 2147483647}'),
    ('odd8', '{"_ts": 1.5}');
ALTER TABLE s ENABLE TRIGGER zzz_ttl_stamp;
SET ttl.now_override = '2026-01-01 00:01:00+00';
SELECT id FROM s_live ORDER BY id;
SELECT id, ttl.doc_ts(doc), ttl.doc_ttl(doc), ttl.doc_expiry(doc) FROM s ORDER BY id;

-- the filter is one cheap C call on the view's own table
EXPLAIN (COSTS OFF) SELECT * FROM s_live WHERE id = 'a';
EXPLAIN (COSTS OFF) SELECT count(*) FROM s_live;

-- with row-level security the view is security_invoker, so the reader's
-- policies apply
CREATE TABLE r (id int PRIMARY KEY, doc jsonb);
ALTER TABLE r ENABLE ROW LEVEL SECURITY;
SELECT ttl.enable('r', 60);
SELECT reloptions FROM pg_class WHERE oid = 'r_live'::regclass;

DROP TABLE s, r CASCADE;
