-- One owner per container tree (1.9, SPEC "After 1.8", Ownership): a
-- partition of a container, or of its archive, owned by another role is
-- never touched as the container's owner.  mallory owns one partition of a
-- superuser's container and plants a DELETE trigger there that would make
-- her a superuser; no purge path (ttl.purge, run_purge, rule 10) runs it,
-- each skips her partition (last_error names it and both owners) and still
-- purges the rest; an ownership change made with the event triggers
-- bypassed (session_replication_role = replica) is caught at the batch.
-- Archives: every partition of an archive passes the archive's checks
-- (owner, permanence, kind) at ttl.set_archive and at every batch.
\set SHOW_CONTEXT never
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET client_min_messages = warning;
CREATE ROLE regress_lo_mallory;
RESET client_min_messages;
-- the SQLSTATE, message and detail of what q raises
CREATE FUNCTION lo_try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    detail text;
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ': ' || SQLERRM || coalesce(E'\n' || nullif(detail, ''), '');
END
$$;
-- whose code ran, as whom: mallory's trigger writes here first
CREATE TABLE lo_log (tbl text, by_user name);
GRANT INSERT ON lo_log TO PUBLIC;
-- mallory's trigger: logs, then tries to make her a superuser
CREATE FUNCTION lo_evil() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.lo_log VALUES (TG_TABLE_NAME, current_user);
    BEGIN
        EXECUTE 'ALTER ROLE regress_lo_mallory SUPERUSER';
    EXCEPTION WHEN OTHERS THEN NULL;
    END;
    IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
    RETURN NEW;
END $$;
ALTER FUNCTION lo_evil() OWNER TO regress_lo_mallory;

-- the issue's container: sp2 given to mallory after ttl.enable (a WARNING)
CREATE TABLE sp (id int PRIMARY KEY, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE sp1 PARTITION OF sp FOR VALUES FROM (0) TO (100);
CREATE TABLE sp2 PARTITION OF sp FOR VALUES FROM (100) TO (200);
SELECT ttl.enable('sp', 60);
ALTER TABLE sp2 OWNER TO regress_lo_mallory;
INSERT INTO sp VALUES (1, '{}'), (2, '{}'), (150, '{}'), (151, '{}');

-- the direct path (no trigger yet): sp1's rows go, sp2's stay
SET ttl.now_override = '2030-01-01 00:05:00+00';
SELECT ttl.purge('sp') AS purged_direct;
SELECT tableoid::regclass AS leaf, id FROM sp ORDER BY id;
SELECT last_error FROM ttl.stats WHERE container = 'sp'::regclass;

-- mallory plants her trigger on her partition (the statement path now)
SET ROLE regress_lo_mallory;
CREATE TRIGGER m BEFORE DELETE ON sp2 FOR EACH ROW EXECUTE FUNCTION lo_evil();
RESET ROLE;
INSERT INTO sp VALUES (3, '{}'), (4, '{}');
SET ttl.now_override = '2030-01-01 00:10:00+00';
SELECT ttl.purge('sp') AS purged_statement;
SELECT tableoid::regclass AS leaf, id FROM sp ORDER BY id;
SELECT last_error FROM ttl.stats WHERE container = 'sp'::regclass;
CALL ttl.run_purge();
SELECT count(*) AS sp2_rows FROM sp2;

-- rule 10: an expired id of her partition is not replaced as the owner;
-- the write conflicts (23505) and says why
SELECT lo_try('INSERT INTO sp VALUES (150, ''{"v": "new"}'')') AS rule10_foreign;
-- in sp1 it is replaced as before
INSERT INTO sp VALUES (5, '{}');
SET ttl.now_override = '2030-01-01 00:20:00+00';
INSERT INTO sp VALUES (5, '{"v": "new"}');
SELECT id, doc->>'v' AS v FROM sp1 ORDER BY id;

-- her trigger never ran as anyone but her, and she is no superuser
SELECT count(*) AS trigger_ran FROM lo_log WHERE by_user <> 'regress_lo_mallory';
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_lo_mallory';

-- ATTACH PARTITION of a table she owns: a WARNING, and skipped as well
CREATE TABLE sp3 (id int PRIMARY KEY, doc jsonb NOT NULL);
ALTER TABLE sp3 OWNER TO regress_lo_mallory;
ALTER TABLE sp ATTACH PARTITION sp3 FOR VALUES FROM (200) TO (300);
-- an ownership change the event triggers never see (replica role):
-- the batch's own check still holds
SET session_replication_role = replica;
ALTER TABLE sp1 OWNER TO regress_lo_mallory;
RESET session_replication_role;
SET ROLE regress_lo_mallory;
CREATE TRIGGER m BEFORE DELETE ON sp1 FOR EACH ROW EXECUTE FUNCTION lo_evil();
RESET ROLE;
INSERT INTO sp VALUES (6, '{}');
TRUNCATE lo_log;
SET ttl.now_override = '2030-01-01 00:30:00+00';
SELECT ttl.purge('sp') AS purged_replica;
SELECT tableoid::regclass AS leaf, id FROM sp ORDER BY id;
SELECT count(*) AS trigger_ran FROM lo_log;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_lo_mallory';
-- the container's owner takes them back: purged as usual
ALTER TABLE sp1 OWNER TO CURRENT_USER;
ALTER TABLE sp2 OWNER TO CURRENT_USER;
ALTER TABLE sp3 OWNER TO CURRENT_USER;
DROP TRIGGER m ON sp1;
DROP TRIGGER m ON sp2;
SELECT ttl.purge('sp') AS purged_back;
SELECT last_error FROM ttl.stats WHERE container = 'sp'::regclass;
-- a partitioned partition of hers holding a leaf of ours: what is below
-- a table of hers is hers to shape (she may detach and attach there), so
-- that leaf is left alone too
CREATE TABLE sp4 (id int NOT NULL, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE sp4a PARTITION OF sp4 FOR VALUES FROM (300) TO (400);
ALTER TABLE sp4 OWNER TO regress_lo_mallory;
ALTER TABLE sp ATTACH PARTITION sp4 FOR VALUES FROM (300) TO (400);
INSERT INTO sp VALUES (7, '{}'), (301, '{}');
SET ttl.now_override = '2030-01-01 00:35:00+00';
SELECT ttl.purge('sp') AS purged_nested;
SELECT tableoid::regclass AS leaf, id FROM sp ORDER BY id;
SELECT last_error FROM ttl.stats WHERE container = 'sp'::regclass;

-- archives: a partitioned archive with a partition of mallory's, and one
-- with an unlogged partition
CREATE TABLE hot (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('hot', 60);
CREATE TABLE cold (id int, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE cold1 PARTITION OF cold FOR VALUES FROM (0) TO (100);
CREATE TABLE cold2 PARTITION OF cold FOR VALUES FROM (100) TO (200);
ALTER TABLE cold2 OWNER TO regress_lo_mallory;
SET ROLE regress_lo_mallory;
CREATE TRIGGER m BEFORE INSERT ON cold2 FOR EACH ROW EXECUTE FUNCTION lo_evil();
RESET ROLE;
SELECT lo_try('SELECT ttl.set_archive(''hot'', ''cold'')') AS foreign_partition;
CREATE TABLE cold_u (id int, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE cold_u1 PARTITION OF cold_u FOR VALUES FROM (0) TO (100);
CREATE UNLOGGED TABLE cold_u2 PARTITION OF cold_u FOR VALUES FROM (100) TO (200);
SELECT lo_try('SELECT ttl.set_archive(''hot'', ''cold_u'')') AS unlogged_partition;
CREATE FOREIGN DATA WRAPPER regress_lo_fdw;
CREATE SERVER regress_lo_srv FOREIGN DATA WRAPPER regress_lo_fdw;
CREATE FOREIGN TABLE cold_u3 PARTITION OF cold_u FOR VALUES FROM (200) TO (300)
    SERVER regress_lo_srv;
DROP TABLE cold_u2;
SELECT lo_try('SELECT ttl.set_archive(''hot'', ''cold_u'')') AS foreign_table_partition;
DROP FOREIGN TABLE cold_u3;
CREATE TABLE cold_u2 PARTITION OF cold_u FOR VALUES FROM (100) TO (200);
SELECT ttl.set_archive('hot', 'cold_u');
INSERT INTO hot VALUES (1, '{}'), (150, '{}');
SET ttl.now_override = '2030-01-01 00:40:00+00';
SELECT ttl.purge('hot') AS archived_fit;
-- the fit is cached now; an unlogged partition attached afterwards fails
-- the next batch: the rows stay in the container
CREATE UNLOGGED TABLE cold_u3 PARTITION OF cold_u FOR VALUES FROM (200) TO (300);
INSERT INTO hot VALUES (2, '{}'), (250, '{}');
SET ttl.now_override = '2030-01-01 00:50:00+00';
SELECT lo_try('SELECT ttl.purge(''hot'')') AS unlogged_attached;
SELECT id FROM hot ORDER BY id;
-- made permanent: the cached misfit is gone, archived again
ALTER TABLE cold_u3 SET LOGGED;
SELECT ttl.purge('hot') AS archived_logged;
-- a partition given to mallory afterwards, with her INSERT trigger: the
-- batch fails with 42501 naming it; the trigger never runs
ALTER TABLE cold_u3 OWNER TO regress_lo_mallory;
SET ROLE regress_lo_mallory;
CREATE TRIGGER m BEFORE INSERT ON cold_u3 FOR EACH ROW EXECUTE FUNCTION lo_evil();
RESET ROLE;
TRUNCATE lo_log;
INSERT INTO hot VALUES (3, '{}'), (252, '{}');
SET ttl.now_override = '2030-01-01 01:00:00+00';
SELECT lo_try('SELECT ttl.purge(''hot'')') AS foreign_attached;
-- rule 10 with that archive: refused, nothing archived by the owner
SELECT lo_try('INSERT INTO hot VALUES (252, ''{"v": "new"}'')') AS rule10_archive;
SELECT id FROM hot ORDER BY id;
SELECT tableoid::regclass AS leaf, id FROM cold_u ORDER BY id;
SELECT count(*) AS trigger_ran FROM lo_log;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_lo_mallory';
-- given back, then away again with the event triggers bypassed: the
-- relcache invalidation drops the cached fit all the same
ALTER TABLE cold_u3 OWNER TO CURRENT_USER;
DROP TRIGGER m ON cold_u3;	-- taken back: her trigger would run as ours
TRUNCATE lo_log;
SELECT ttl.purge('hot') AS archived_back;
INSERT INTO hot VALUES (4, '{}'), (253, '{}');
SET session_replication_role = replica;
ALTER TABLE cold_u3 OWNER TO regress_lo_mallory;
RESET session_replication_role;
SET ttl.now_override = '2030-01-01 01:10:00+00';
SELECT lo_try('SELECT ttl.purge(''hot'')') AS foreign_replica;
SELECT id FROM hot ORDER BY id;
SELECT count(*) AS trigger_ran FROM lo_log;

-- a failing row splits its batch (purge_split.c): the split takes its rows
-- on ONLY each leaf of the owner's too, never mallory's (her trigger on
-- DELETE would run as the owner); the archive already holds id 3
TRUNCATE lo_log;
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE spl (id int PRIMARY KEY, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE spl1 PARTITION OF spl FOR VALUES FROM (0) TO (100);
CREATE TABLE spl2 PARTITION OF spl FOR VALUES FROM (100) TO (200);
CREATE TABLE spl_arch (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('spl', 60);
SELECT ttl.set_archive('spl', 'spl_arch');
INSERT INTO spl_arch VALUES (3, '{}');
INSERT INTO spl SELECT g, '{}' FROM generate_series(1, 5) g;
INSERT INTO spl VALUES (150, '{}'), (151, '{}');
ALTER TABLE spl2 OWNER TO regress_lo_mallory;
SET ROLE regress_lo_mallory;
CREATE TRIGGER m BEFORE DELETE ON spl2 FOR EACH ROW EXECUTE FUNCTION lo_evil();
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:05:00+00';
SET client_min_messages = error;
SELECT ttl.purge('spl') AS purged_split;
RESET client_min_messages;
SELECT tableoid::regclass AS leaf, id FROM spl ORDER BY id;
SELECT key, sqlstate FROM ttl.purge_failures WHERE container = 'spl'::regclass;
SELECT count(*) AS trigger_ran FROM lo_log;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_lo_mallory';
ALTER TABLE spl2 OWNER TO CURRENT_USER;
SELECT ttl.disable('spl');
DROP TABLE spl, spl_arch;

SELECT ttl.disable('hot'), ttl.disable('sp');
DROP TABLE hot, cold_u, cold, sp, lo_log;
DROP SERVER regress_lo_srv;
DROP FOREIGN DATA WRAPPER regress_lo_fdw;
DROP FUNCTION lo_evil(), lo_try(text);
DROP ROLE regress_lo_mallory;
