-- Row-level security switched on or off after ttl.enable: the live view
-- follows (security_invoker exactly while the table has RLS), so policies
-- apply to the reader through <table>_live as on the table itself, on
-- simple, prepared and nested-view reads.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE ROLE regress_rf_owner;
CREATE ROLE regress_rf_a;
CREATE ROLE regress_rf_b;
CREATE ROLE regress_rf_viewonly;
GRANT CREATE ON SCHEMA public TO regress_rf_owner;
SET ROLE regress_rf_owner;
CREATE TABLE rf (id int PRIMARY KEY, tenant name, doc jsonb);
SELECT ttl.enable('rf', 3600);
INSERT INTO rf VALUES (1, 'regress_rf_a', '{}'), (2, 'regress_rf_b', '{}'),
                      (3, 'regress_rf_a', '{"ttl": 5}');
GRANT SELECT ON rf, rf_live TO regress_rf_a, regress_rf_b;
GRANT SELECT ON rf_live TO regress_rf_viewonly;
-- a reader's own view on the live view, running as the reader
CREATE VIEW rf_nested WITH (security_invoker) AS SELECT id, tenant FROM rf_live;
GRANT SELECT ON rf_nested TO regress_rf_a, regress_rf_b;
CREATE FUNCTION rf_ids() RETURNS SETOF int LANGUAGE sql STABLE AS 'SELECT id FROM public.rf_live';
RESET ROLE;
SET ttl.now_override = '2026-01-01 00:00:10+00';    -- id 3 has expired

-- no RLS yet: every reader sees every live row, a view-only grant suffices
SET ROLE regress_rf_a;
PREPARE rf_read AS SELECT id, tenant FROM rf_live ORDER BY id;
EXECUTE rf_read;
SET ROLE regress_rf_viewonly;
SELECT id FROM rf_live ORDER BY id;
RESET ROLE;
SELECT reloptions FROM pg_class WHERE oid = 'rf_live'::regclass;

-- tenants arrive: RLS and a policy
SET ROLE regress_rf_owner;
ALTER TABLE rf ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON rf USING (tenant = current_user);
RESET ROLE;
SELECT reloptions FROM pg_class WHERE oid = 'rf_live'::regclass;
SET ROLE regress_rf_a;
SELECT id, tenant FROM rf ORDER BY id;
SELECT id, tenant FROM rf_live ORDER BY id;           -- simple
EXECUTE rf_read;                                      -- prepared before RLS
PREPARE rf_read2 AS SELECT id FROM rf_live WHERE id = $1;
EXECUTE rf_read2(1);
EXECUTE rf_read2(2);                                  -- someone else's row
SELECT id, tenant FROM rf_nested ORDER BY id;         -- nested view
SELECT count(*) FROM (SELECT * FROM rf_live) s;       -- subquery
-- a cursor, a CTE, a scalar sublink and an SQL function body
BEGIN;
DECLARE rf_cur CURSOR FOR SELECT id FROM rf_live ORDER BY id;
FETCH ALL rf_cur;
COMMIT;
WITH w AS MATERIALIZED (SELECT id FROM rf_live) SELECT id FROM w ORDER BY id;
SELECT (SELECT count(*) FROM rf_live) AS visible;
SELECT * FROM rf_ids() ORDER BY 1;
-- still one scan of the table: the policy first, then ttl.live
EXPLAIN (COSTS OFF) SELECT id FROM rf_live WHERE id = 1;
SET ROLE regress_rf_b;
SELECT id, tenant FROM rf_live ORDER BY id;
EXECUTE rf_read;                                      -- prepared by another role
SELECT id, tenant FROM rf_nested ORDER BY id;
-- while RLS is on, a reader needs SELECT on the table too
SET ROLE regress_rf_viewonly;
SELECT id FROM rf_live;
RESET ROLE;

-- FORCE makes the policies apply to the owner too, through the view as well
SET ROLE regress_rf_owner;
SELECT count(*) FROM rf_live;
ALTER TABLE rf FORCE ROW LEVEL SECURITY;
SELECT count(*) FROM rf;
SELECT count(*) FROM rf_live;
ALTER TABLE rf NO FORCE ROW LEVEL SECURITY;
SELECT count(*) FROM rf_live;

-- RLS off again: the view runs with its owner's rights again
ALTER TABLE rf DISABLE ROW LEVEL SECURITY;
RESET ROLE;
SELECT reloptions FROM pg_class WHERE oid = 'rf_live'::regclass;
SET ROLE regress_rf_viewonly;
SELECT id FROM rf_live ORDER BY id;
SET ROLE regress_rf_a;
EXECUTE rf_read;
RESET ROLE;

-- several subcommands in one ALTER TABLE; the net state counts
ALTER TABLE rf ENABLE ROW LEVEL SECURITY, ADD COLUMN note text;
SELECT reloptions FROM pg_class WHERE oid = 'rf_live'::regclass;
SET ROLE regress_rf_a;
SELECT id, tenant, note FROM rf_live ORDER BY id;
RESET ROLE;

DEALLOCATE rf_read;
DEALLOCATE rf_read2;
DROP TABLE rf CASCADE;
DROP FUNCTION rf_ids();
REVOKE CREATE ON SCHEMA public FROM regress_rf_owner;
DROP ROLE regress_rf_owner, regress_rf_a, regress_rf_b, regress_rf_viewonly;
