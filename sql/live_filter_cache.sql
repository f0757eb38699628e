-- The view's filter reads the container's policy from the registry's cache
-- once per execution (the last container asked for is memoized): a cached
-- plan of a read through <table>_live, run again and again, follows every
-- change of the policy at its next execution, keeps two containers apart
-- (alternating statements, both in one query), and sees a table that
-- becomes a container.  The clock stays per execution.
SET ttl.now_override = '2030-01-01 00:00:00+00';    -- 1893456000
SET plan_cache_mode = force_generic_plan;
CREATE TABLE fa (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE fb (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('fa', 100), ttl.enable('fb', 1000);
ALTER TABLE fa DISABLE TRIGGER zzz_ttl_stamp;       -- the documents as written here
ALTER TABLE fb DISABLE TRIGGER zzz_ttl_stamp;
-- ages 50, 500 and 5000 s; 4 carries its own ttl; 5 a deadline in 30 s
INSERT INTO fa VALUES (1, '{"_ts": 1893455950}'), (2, '{"_ts": 1893455500}'),
                      (3, '{"_ts": 1893451000}'), (4, '{"_ts": 1893451000, "ttl": 10000}'),
                      (5, '{"_ts": 1893455950, "due": 1893456030}');
INSERT INTO fb SELECT id, doc FROM fa;
PREPARE ra AS SELECT string_agg(id::text, ',' ORDER BY id) AS fa_live FROM fa_live;
PREPARE rb AS SELECT string_agg(id::text, ',' ORDER BY id) AS fb_live FROM fb_live;
PREPARE rab AS
  SELECT string_agg(a.id::text, ',' ORDER BY a.id) AS both_live
    FROM fa_live a JOIN fb_live b USING (id);
EXECUTE ra;      -- 1,4,5
EXECUTE rb;      -- 1,2,4,5
EXECUTE ra;
EXECUTE rab;     -- 1,4,5
-- one plan, each scan with its own container's filter
CREATE FUNCTION plan_filters(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF l ~ 'Filter' THEN RETURN NEXT trim(l); END IF;
  END LOOP;
END $$;
SELECT f FROM plan_filters('EXECUTE rab') f ORDER BY 1;
-- the default changes between two executions of the same plans
SELECT ttl.set_default_ttl('fa', 1000);
EXECUTE ra;      -- 1,2,4,5
EXECUTE rab;
SELECT ttl.set_default_ttl('fb', 10);
EXECUTE rb;      -- 4
EXECUTE ra;
EXECUTE rab;     -- 4
SELECT ttl.set_default_ttl('fb', NULL);
EXECUTE rb;      -- all: no default, nothing expires
SELECT ttl.set_default_ttl('fb', -1);
EXECUTE rb;      -- all: -1 never expires, 4 has its own ttl
-- a change in an aborted transaction leaves nothing behind
BEGIN;
SELECT ttl.set_default_ttl('fa', 10);
EXECUTE ra;      -- 4, in the transaction
ROLLBACK;
EXECUTE ra;      -- 1,2,4,5
-- the deadline property: set, changed, removed
SELECT ttl.set_deadline_property('fa', 'due');
EXECUTE ra;      -- 1,2,4,5 (5 due in 30 s)
SET ttl.now_override = '2030-01-01 00:01:00+00';
EXECUTE ra;      -- 1,2,4: the clock is read at each execution
SELECT ttl.set_deadline_property('fa', 'other');
EXECUTE ra;      -- 1,2,4,5
SELECT ttl.set_deadline_property('fa', NULL);
EXECUTE ra;
EXECUTE rab;     -- 1,2,4,5
-- a table that is no container yet hides nothing; registered, it does
CREATE TABLE fc (id int PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO fc SELECT id, doc FROM fa;
PREPARE rc AS SELECT string_agg(id::text, ',' ORDER BY id) AS fc_filtered
  FROM fc WHERE ttl.live(doc, 'fc'::regclass);
EXECUTE rc;      -- all
EXECUTE ra;
EXECUTE rc;
SELECT ttl.enable('fc', 100) IS NOT NULL AS enabled;
EXECUTE rc;      -- 4 (1 and 5 are 110 s old now)
EXECUTE ra;
SELECT ttl.disable('fc');
EXECUTE rc;      -- all again
RESET plan_cache_mode;
DEALLOCATE ALL;
DROP TABLE fa, fb, fc CASCADE;
DROP FUNCTION plan_filters(text);
