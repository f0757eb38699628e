-- Ownership and privileges: a non-superuser owner can use everything on its
-- own tables; nobody else can; a reader of <table>_live never sees an
-- expired item, even through a leaky function; the registry is read-only
-- to users; ttl.now_override is superuser-only.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE ROLE regress_ttl_owner;
CREATE ROLE regress_ttl_other;
CREATE ROLE regress_ttl_reader;
CREATE ROLE regress_ttl_member IN ROLE regress_ttl_owner;
CREATE SCHEMA owned AUTHORIZATION regress_ttl_owner;
GRANT USAGE ON SCHEMA owned TO regress_ttl_other, regress_ttl_reader;

-- the owner does everything itself
SET ROLE regress_ttl_owner;
CREATE TABLE owned.docs (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('owned.docs', 60);
INSERT INTO owned.docs VALUES (1, '{"secret": "live"}'), (2, '{"secret": "expired", "ttl": 5}');
SELECT ttl.set_default_ttl('owned.docs', 120);
SELECT ttl.pause('owned.docs');
SELECT ttl.resume('owned.docs');
SELECT * FROM ttl.state('owned.docs', '{"ttl": 5}');
GRANT SELECT ON owned.docs_live TO regress_ttl_reader;
RESET ROLE;
SELECT pg_get_userbyid(relowner) AS view_owner FROM pg_class WHERE oid = 'owned.docs_live'::regclass;

-- a member of the owning role may act for it; the view still belongs to
-- the table's owner
SET ROLE regress_ttl_member;
CREATE TABLE owned.more (doc jsonb);
ALTER TABLE owned.more OWNER TO regress_ttl_owner;
SELECT ttl.enable('owned.more', 60);
RESET ROLE;
SELECT pg_get_userbyid(relowner) AS view_owner FROM pg_class WHERE oid = 'owned.more_live'::regclass;

-- anybody else gets 42501 from every entry point, and nothing changes
SET ROLE regress_ttl_other;
CREATE FUNCTION pg_temp.try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT q, pg_temp.try(q) FROM (VALUES
    ('SELECT ttl.disable(''owned.docs'')'),
    ('SELECT ttl.set_default_ttl(''owned.docs'', 1)'),
    ('SELECT ttl.pause(''owned.docs'')'),
    ('SELECT ttl.resume(''owned.docs'')'),
    ('SELECT ttl.purge(''owned.docs'')'),
    ('SELECT ttl._register(''owned.docs'', 1, ''doc'')'),
    ('SELECT ttl._unregister(''owned.docs'')'),
    ('SELECT ttl._set_objects(''owned.docs'', NULL)'),
    ('INSERT INTO ttl.registry (relid, doc_column) VALUES (''owned.docs'', ''doc'')'),
    ('UPDATE ttl.registry SET default_ttl = 1'),
    ('DELETE FROM ttl.registry'),
    ('UPDATE ttl.purge_stats SET rows_purged = 0'),
    ('SELECT * FROM owned.docs'),
    ('SELECT * FROM owned.docs_live'),
    ('SET ttl.now_override = ''2030-01-01 00:00:00+00''')) x(q);
DROP FUNCTION pg_temp.try(text);
-- purge of "every container I own" skips others' tables
SELECT ttl.purge();
-- the public views are readable
SELECT container, default_ttl, paused FROM ttl.containers ORDER BY container;
RESET ROLE;
SELECT container, default_ttl, paused FROM ttl.containers ORDER BY container;

-- a reader with SELECT on the view only: live items, and a leaky function
-- in its WHERE clause never sees an expired document
SET ttl.now_override = '2026-01-01 00:00:06+00';
CREATE FUNCTION public.leak(jsonb) RETURNS boolean
    LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN
    RAISE NOTICE 'leaked: %', $1->>'secret';
    RETURN true;
END $$;
SET ROLE regress_ttl_reader;
SELECT id, doc->>'secret' AS secret FROM owned.docs_live WHERE leak(doc) ORDER BY id;
SELECT id FROM owned.docs_live WHERE id = 2;
SELECT * FROM owned.docs;
RESET ROLE;
-- the same query on the base table as its owner does see both
SET ROLE regress_ttl_owner;
SELECT id FROM owned.docs WHERE leak(doc) ORDER BY id;
RESET ROLE;

-- row-level security: the view is security_invoker, policies apply to
-- the reader, and expired rows stay hidden too
SET ROLE regress_ttl_owner;
CREATE TABLE owned.tenant_docs (id int PRIMARY KEY, tenant name, doc jsonb);
ALTER TABLE owned.tenant_docs ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_tenant ON owned.tenant_docs USING (tenant = current_user);
SELECT ttl.enable('owned.tenant_docs', 60);
INSERT INTO owned.tenant_docs VALUES
    (1, 'regress_ttl_reader', '{"secret": "mine"}'),
    (2, 'regress_ttl_other', '{"secret": "theirs"}'),
    (3, 'regress_ttl_reader', '{"secret": "mine, expired", "ttl": 1}');
GRANT SELECT ON owned.tenant_docs, owned.tenant_docs_live TO regress_ttl_reader;
RESET ROLE;
SET ttl.now_override = '2026-01-01 00:00:10+00';
SET ROLE regress_ttl_reader;
SELECT id, doc->>'secret' AS secret FROM owned.tenant_docs_live WHERE leak(doc) ORDER BY id;
RESET ROLE;

-- superuser only: the fake clock
SET ROLE regress_ttl_owner;
SET ttl.now_override = '2030-01-01 00:00:00+00';
RESET ROLE;

DROP SCHEMA owned CASCADE;
DROP FUNCTION public.leak(jsonb);
DROP ROLE regress_ttl_owner, regress_ttl_other, regress_ttl_reader, regress_ttl_member;
