-- A row that fails never stops the rest (issue 38, items 4, 5, 6): a batch
-- that fails on one row is split until the row is isolated, the other rows
-- are purged (and archived), the row is recorded in ttl.purge_failures and
-- left out until its retry_after, also by rule 10; an archive must take
-- every row deleted; ttl.purge() over every container survives one that
-- fails.
\set SHOW_CONTEXT never
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE FUNCTION pf_try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
CREATE ROLE regress_pf_reader;
GRANT USAGE ON SCHEMA ttl TO regress_pf_reader;

-- the direct deleter: 1,000 due rows, one of whose ids the archive already
-- holds (a writer wrote the id twice over its lifetime)
CREATE TABLE pf (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('pf', 60);
CREATE TABLE pf_arch (LIKE pf INCLUDING ALL);
SELECT ttl.set_archive('pf', 'pf_arch');
INSERT INTO pf SELECT g, '{}' FROM generate_series(1, 1000) g;
INSERT INTO pf_arch VALUES (500, '{"earlier": true}');
SET ttl.now_override = '2030-01-01 00:10:00+00';
-- the split: at most 2 x log2(1000), about 20 tries for the one bad row
SET client_min_messages = debug1;
SELECT ttl.purge('pf') AS purged;
RESET client_min_messages;
SELECT count(*) AS left_in_pf, min(id), max(id) FROM pf;
SELECT count(*) AS archived FROM pf_arch;
SELECT container, key, sqlstate, message, first_failed_at, attempts, retry_after
  FROM ttl.purge_failures;
-- the second round does not split again: nothing to do, no WARNING, the
-- same attempt
SELECT ttl.purge('pf') AS purged;
SELECT key, attempts FROM ttl.purge_failures;
-- the row is still hidden
SELECT count(*) AS visible FROM pf_live;
-- rule 10 does not replace a quarantined row: the write conflicts with it
SELECT pf_try('INSERT INTO pf VALUES (500, ''{"again": true}'')') AS rule10;
SELECT doc FROM pf;
-- after retry_after the row is tried again, fails again, waits longer
SET ttl.now_override = '2030-01-01 00:12:01+00';
SELECT ttl.purge('pf') AS purged;
SELECT key, attempts, retry_after FROM ttl.purge_failures;
-- repaired: the next try purges it, and the record goes with the row
DELETE FROM pf_arch WHERE id = 500 AND doc ? 'earlier';
SET ttl.now_override = '2030-01-01 00:20:00+00';
SELECT ttl.purge('pf') AS purged;
SELECT ttl.purge('pf') AS purged;
SELECT count(*) AS failures FROM ttl.purge_failures;
SELECT count(*) AS left_in_pf FROM pf;
SELECT count(*) AS archived FROM pf_arch;

-- key and message are shown like last_error: not to a reader who may not
-- SELECT the table
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO pf VALUES (7, '{}');
INSERT INTO pf_arch VALUES (7, '{"earlier": true}') ON CONFLICT DO NOTHING;
SET ttl.now_override = '2030-01-01 00:30:00+00';
SELECT ttl.purge('pf') AS purged;
SET ROLE regress_pf_reader;
SELECT container, key, sqlstate, message, attempts FROM ttl.purge_failures;
RESET ROLE;
GRANT SELECT ON pf TO regress_pf_reader;
SET ROLE regress_pf_reader;
SELECT container, key, sqlstate, attempts FROM ttl.purge_failures;
RESET ROLE;
TRUNCATE pf, pf_arch;

-- the statement deleter (a DELETE trigger), through CALL ttl.run_purge(),
-- and a container without a primary key: key is the row's place
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE ps (id int NOT NULL, doc jsonb NOT NULL);
SELECT ttl.enable('ps', 60);
CREATE TABLE ps_deleted (n int);
CREATE FUNCTION ps_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.ps_deleted VALUES (1);
    RETURN OLD;
END
$$;
CREATE TRIGGER ps_note AFTER DELETE ON ps FOR EACH ROW EXECUTE FUNCTION ps_note();
CREATE TABLE ps_arch (id int NOT NULL CHECK (id <> 321), doc jsonb NOT NULL);
SELECT ttl.set_archive('ps', 'ps_arch');
INSERT INTO ps SELECT g, '{}' FROM generate_series(1, 1000) g;
SET ttl.now_override = '2030-01-01 00:10:00+00';
CALL ttl.run_purge();
SELECT count(*) AS left_in_ps, min(id) FROM ps;
SELECT count(*) AS archived, (SELECT count(*) FROM ps_deleted) AS trigger_fired FROM ps_arch;
SELECT container, key = (SELECT 'public.ps ' || ctid::text FROM ps) AS key_is_place, sqlstate,
       message, attempts
  FROM ttl.purge_failures;
CALL ttl.run_purge();
SELECT count(*) AS left_in_ps FROM ps;
SELECT container, attempts FROM ttl.purge_failures;
-- last_error says so (the container is not backed off)
SELECT last_error LIKE '1 failing row left in place (ttl.purge_failures): %' AS last_error,
       retry_after IS NULL AS not_backed_off
  FROM ttl.stats WHERE container = 'ps'::regclass;

-- a partitioned container (the split deletes leaf by leaf), a key of two
-- columns
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE pp (id int, k text, doc jsonb NOT NULL, PRIMARY KEY (id, k)) PARTITION BY RANGE (id);
CREATE TABLE pp_1 PARTITION OF pp FOR VALUES FROM (0) TO (100);
CREATE TABLE pp_2 PARTITION OF pp FOR VALUES FROM (100) TO (200);
SELECT ttl.enable('pp', 60);
CREATE TABLE pp_arch (id int, k text, doc jsonb NOT NULL, PRIMARY KEY (id, k));
SELECT ttl.set_archive('pp', 'pp_arch');
INSERT INTO pp SELECT g, 'a', '{}' FROM generate_series(0, 199) g;
INSERT INTO pp_arch VALUES (150, 'a', '{"earlier": true}');
SET ttl.now_override = '2030-01-01 00:10:00+00';
SELECT ttl.purge('pp') AS purged;
SELECT tableoid::regclass AS leaf, id, k FROM pp;
SELECT count(*) AS archived FROM pp_arch;
SELECT container, key, sqlstate, attempts FROM ttl.purge_failures WHERE container = 'pp'::regclass;
SELECT ttl.purge('pp') AS purged;
-- a dropped container takes its failure records with it (ttl._on_sql_drop)
SELECT 'pp'::regclass::oid AS pp_oid \gset
SELECT count(*) AS records_before_drop FROM ttl.purge_failure WHERE relid = :pp_oid;
DROP TABLE pp, pp_arch CASCADE;
SELECT count(*) AS records_after_drop FROM ttl.purge_failure WHERE relid = :pp_oid;

-- item 5: an archive trigger that drops a row (returns NULL) fails the
-- batch, on both deleters; the split leaves just that row in place
CREATE FUNCTION drop_some() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id = 1042 THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER drop_some BEFORE INSERT ON pf_arch FOR EACH ROW EXECUTE FUNCTION drop_some();
CREATE TRIGGER drop_some BEFORE INSERT ON ps_arch FOR EACH ROW EXECUTE FUNCTION drop_some();
SET ttl.now_override = '2030-01-01 01:00:00+00';
INSERT INTO pf SELECT g, '{}' FROM generate_series(1041, 1045) g;
INSERT INTO ps SELECT g, '{}' FROM generate_series(1041, 1045) g;
SET ttl.now_override = '2030-01-01 01:10:00+00';
SELECT ttl.purge('pf') AS purged_direct;
SELECT ttl.purge('ps') AS purged_statement;
SELECT 'pf' AS t, array_agg(id ORDER BY id) FROM pf
UNION ALL SELECT 'pf_arch', array_agg(id ORDER BY id) FROM pf_arch
UNION ALL SELECT 'ps', array_agg(id ORDER BY id) FROM ps WHERE id <> 321
UNION ALL SELECT 'ps_arch', array_agg(id ORDER BY id) FROM ps_arch WHERE id > 1000;
SELECT container, sqlstate, message FROM ttl.purge_failures WHERE sqlstate = '27000' ORDER BY 1;
-- the archive's INSERT with rules: refused by ttl.set_archive, and by the
-- batch when added later (no XX000: the archive is named)
CREATE TABLE ruled (LIKE pf);
CREATE RULE ruled_nothing AS ON INSERT TO ruled DO INSTEAD NOTHING;
SELECT pf_try('SELECT ttl.set_archive(''pf'', ''ruled'')') AS set_archive_rules;
DROP TRIGGER drop_some ON pf_arch;
CREATE RULE pf_arch_nothing AS ON INSERT TO pf_arch DO INSTEAD NOTHING;
SELECT pf_try('SELECT ttl.purge(''pf'')') AS purge_rules;
DROP RULE pf_arch_nothing ON pf_arch;

-- item 6: ttl.purge() over every container (of its caller, a role that
-- owns two): one container's failure (not a row's: 42501 is not split) is
-- a WARNING, the other is purged
SET ttl.now_override = '2030-01-01 02:00:00+00';
CREATE ROLE regress_pf_owner;
GRANT USAGE ON SCHEMA ttl TO regress_pf_owner;
GRANT CREATE ON SCHEMA public TO regress_pf_owner;
SET ROLE regress_pf_owner;
CREATE TABLE pa (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('pa', 60);
CREATE TABLE pb (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('pb', 60);
CREATE FUNCTION pb_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE insufficient_privilege USING MESSAGE = 'pb refuses every delete';
END
$$;
CREATE TRIGGER pb_refuse BEFORE DELETE ON pb FOR EACH ROW EXECUTE FUNCTION pb_refuse();
INSERT INTO pa SELECT g, '{}' FROM generate_series(1, 5) g;
INSERT INTO pb SELECT g, '{}' FROM generate_series(1, 5) g;
RESET ROLE;
SET ttl.now_override = '2030-01-01 02:10:00+00';
SET ROLE regress_pf_owner;
SELECT ttl.purge() AS purged_all;
SELECT (SELECT count(*) FROM pa) AS left_in_pa, (SELECT count(*) FROM pb) AS left_in_pb;
SELECT container, last_error FROM ttl.stats WHERE container IN ('pa'::regclass, 'pb'::regclass)
 ORDER BY 1;
SELECT count(*) AS pb_failures FROM ttl.purge_failures WHERE container = 'pb'::regclass;
-- for one container the error is the caller's, as before
SELECT pf_try('SELECT ttl.purge(''pb'')') AS purge_pb;
DROP TABLE pa, pb CASCADE;
DROP FUNCTION pb_refuse();
RESET ROLE;

-- ttl.disable forgets the container's failing rows with its statistics
SELECT count(*) AS ps_failures FROM ttl.purge_failure WHERE relid = 'ps'::regclass;
SELECT ttl.disable('ps');
SELECT count(*) AS ps_failures FROM ttl.purge_failure WHERE relid = 'ps'::regclass;
DROP TABLE pf, pf_arch, ps, ps_arch, ps_deleted, ruled CASCADE;
DROP FUNCTION pf_try(text), ps_note(), drop_some();
REVOKE USAGE ON SCHEMA ttl FROM regress_pf_reader, regress_pf_owner;
REVOKE CREATE ON SCHEMA public FROM regress_pf_owner;
DROP ROLE regress_pf_reader, regress_pf_owner;
