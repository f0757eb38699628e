-- Containers enabled under 1.0 whose table got row-level security later
-- (a view that bypasses the policies) are brought in line by
-- ALTER EXTENSION ttl UPDATE, and follow their table from then on.
\set SHOW_CONTEXT never
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_upgrade;
ALTER DATABASE regress_ttl_upgrade SET ttl.worker_enabled = off;  -- a preloaded server's worker stays out
\c regress_ttl_upgrade
CREATE EXTENSION ttl VERSION '1.0';
CREATE ROLE regress_up_owner;
CREATE ROLE regress_up_reader;
GRANT CREATE ON SCHEMA public TO regress_up_owner;
SET ROLE regress_up_owner;
CREATE TABLE up (id int PRIMARY KEY, tenant name, doc jsonb);
SELECT ttl.enable('up', 3600);
INSERT INTO up VALUES (1, 'regress_up_reader', '{}'), (2, 'someone_else', '{}');
GRANT SELECT ON up, up_live TO regress_up_reader;
ALTER TABLE up ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON up USING (tenant = current_user);
SET ROLE regress_up_reader;
SELECT count(*) FROM up_live;       -- 1.0: the policy is bypassed
RESET ROLE;
-- under 1.0 renamed columns were not followed: here two names swapped
CREATE TABLE up2 (a int, b text, doc jsonb);
SELECT ttl.enable('up2', 60);
ALTER TABLE up2 RENAME COLUMN a TO tmp;
ALTER TABLE up2 RENAME COLUMN b TO a;
ALTER TABLE up2 RENAME COLUMN tmp TO b;
SELECT attname FROM pg_attribute WHERE attrelid = 'up2_live'::regclass AND attnum > 0 ORDER BY attnum;
ALTER EXTENSION ttl UPDATE TO '1.1';
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'up2_live'::regclass AND attnum > 0 ORDER BY attnum;
SELECT reloptions FROM pg_class WHERE oid = 'up_live'::regclass;
SET ROLE regress_up_reader;
SELECT id FROM up_live;
SET ROLE regress_up_owner;
ALTER TABLE up DISABLE ROW LEVEL SECURITY, ADD COLUMN note text;
RESET ROLE;
SELECT reloptions FROM pg_class WHERE oid = 'up_live'::regclass;
SELECT attname FROM pg_attribute WHERE attrelid = 'up_live'::regclass AND attnum > 0 ORDER BY attnum;
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
\c :orig_db
DROP DATABASE regress_ttl_upgrade;
DROP ROLE regress_up_owner, regress_up_reader;
