-- ttl.enable / ttl.disable edge cases: temporary tables are refused, names
-- are computed in bytes (multibyte table names near the 63-byte limit),
-- error texts are never cut inside a character, disable(NULL) says so, and
-- a superuser enabling someone else's table does the work on its rows as
-- the table's owner.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';

-- temporary tables would leave registry rows behind: refused (0A000)
CREATE TEMP TABLE ee_temp (id int, doc jsonb);
SELECT ttl.enable('ee_temp', 60);
DO $$
BEGIN
    PERFORM ttl.enable('ee_temp', 60);
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'refused with %', SQLSTATE;
END $$;
SELECT count(*) FROM ttl.registry;

-- 58 bytes of two-byte characters: view and both purge indexes fit, distinct
CREATE TABLE "ééééééééééééééééééééééééééééé" (id int, doc jsonb);
SELECT octet_length(relname), length(relname) FROM pg_class WHERE relname LIKE 'ééé%';
SELECT ttl.enable('"ééééééééééééééééééééééééééééé"', 60);
SELECT c.relname, octet_length(c.relname) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = '"ééééééééééééééééééééééééééééé"'::regclass ORDER BY 1;
INSERT INTO "ééééééééééééééééééééééééééééé" VALUES (1, '{}');
SELECT id, doc FROM "ééééééééééééééééééééééééééééé_live";
SELECT ttl.disable('"ééééééééééééééééééééééééééééé"');
DROP TABLE "ééééééééééééééééééééééééééééé";
-- 63 bytes of three-byte characters: the view name would not fit
CREATE TABLE "€€€€€€€€€€€€€€€€€€€€€" (id int, doc jsonb);
SELECT ttl.enable('"€€€€€€€€€€€€€€€€€€€€€"', 60);
SELECT count(*) FROM ttl.registry;
DROP TABLE "€€€€€€€€€€€€€€€€€€€€€";

-- a long invalid value in an error message is cut between characters
CREATE TABLE ee_cut (id int, doc jsonb);
SELECT ttl.enable('ee_cut', 60);
INSERT INTO ee_cut VALUES (1, jsonb_build_object('ttl', repeat('a', 58) || repeat('é', 10)));
INSERT INTO ee_cut VALUES (1, jsonb_build_object('ttl', repeat('a', 57) || repeat('é', 10)));
SELECT ttl.disable('ee_cut');
DROP TABLE ee_cut;

-- ttl.disable(NULL): a clear error (22004)
SELECT ttl.disable(NULL);
DO $$
BEGIN
    PERFORM ttl.disable(NULL);
EXCEPTION WHEN null_value_not_allowed THEN
    RAISE NOTICE 'refused with %', SQLSTATE;
END $$;

-- a superuser enables (and disables) a table of another role: the rows'
-- validation and stamping run as the owner, inside a security-restricted
-- operation, so the owner's triggers never run with the superuser's rights
CREATE ROLE regress_ee_owner;
GRANT CREATE ON SCHEMA public TO regress_ee_owner;
SET ROLE regress_ee_owner;
CREATE TABLE ee_own (id int PRIMARY KEY, doc jsonb);
CREATE TABLE ee_log (who name, restricted boolean);
CREATE FUNCTION ee_spy() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    restricted boolean := false;
BEGIN
    BEGIN
        -- SET ROLE is refused inside a security-restricted operation
        EXECUTE 'SET LOCAL ROLE NONE';
    EXCEPTION WHEN insufficient_privilege THEN
        restricted := true;
    END;
    INSERT INTO public.ee_log VALUES (current_user, restricted);
    RETURN NEW;
END $$;
CREATE TRIGGER ee_spy BEFORE UPDATE ON ee_own FOR EACH ROW EXECUTE FUNCTION ee_spy();
INSERT INTO ee_own VALUES (1, '{}'), (2, '{"ttl": 5}');
RESET ROLE;
SELECT ttl.enable('ee_own', 60);
SELECT who, restricted, count(*) FROM ee_log GROUP BY 1, 2;
SELECT id, doc FROM ee_own ORDER BY id;
SELECT relowner::regrole FROM pg_class WHERE oid = 'ee_own_live'::regclass;
-- a bad document found by the validation scan: the trigger's error
SELECT ttl.disable('ee_own');
UPDATE ee_own SET doc = '{"ttl": 0}' WHERE id = 2;
SELECT ttl.enable('ee_own', 60);
SELECT count(*) FROM ttl.registry;
-- a deferrable trigger of the owner's would fire at commit as the caller:
-- only the owner may enable such a table
UPDATE ee_own SET doc = '{}' WHERE id = 2;
SET ROLE regress_ee_owner;
CREATE FUNCTION ee_later() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.ee_log VALUES (current_user, false);
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER ee_later AFTER UPDATE ON ee_own
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ee_later();
UPDATE ee_own SET doc = '{}';
DELETE FROM ee_log;
RESET ROLE;
SELECT ttl.enable('ee_own', 60);
SELECT who, count(*) FROM ee_log GROUP BY 1;
SELECT count(*) FROM ttl.registry;
DROP TABLE ee_own, ee_log;
DROP FUNCTION ee_later();
DROP FUNCTION ee_spy();
REVOKE CREATE ON SCHEMA public FROM regress_ee_owner;
DROP ROLE regress_ee_owner;
