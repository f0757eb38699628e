-- Issue 25, item 1: ttl reads a user table's index definitions through one
-- gate (src/definitions.c), as stored, so no function of the owner's runs
-- with anyone else's rights.  The owner plants IMMUTABLE functions in an
-- index expression and a partial-index predicate (created before
-- ttl.enable, so they come first in the table's index list); each records
-- current_user when it runs.  Folding an index definition happens once per
-- session, so every call below starts in a fresh session (\c) as the
-- superuser, then as a reader.  The plants must never run as anyone but
-- their owner.  A positive control shows that a plain SELECT by the
-- superuser (core PostgreSQL's own folding, not ttl's to change) does run
-- them, so the test can fail.
\set SHOW_CONTEXT never
\set orig_db :DBNAME
CREATE ROLE regress_gate_owner;
CREATE ROLE regress_gate_reader;
CREATE TABLE gate_log (who name, what text);
GRANT INSERT ON gate_log TO PUBLIC;
CREATE SCHEMA gate AUTHORIZATION regress_gate_owner;
SET ROLE regress_gate_owner;
CREATE FUNCTION gate.rec(what text) RETURNS boolean LANGUAGE plpgsql VOLATILE
    AS $$BEGIN INSERT INTO public.gate_log VALUES (current_user, what); RETURN true; END$$;
CREATE FUNCTION gate.k() RETURNS text LANGUAGE plpgsql IMMUTABLE
    AS $$BEGIN PERFORM gate.rec('index expression'); RETURN 'k'; END$$;
CREATE FUNCTION gate.p() RETURNS boolean LANGUAGE plpgsql IMMUTABLE
    AS $$BEGIN RETURN gate.rec('index predicate'); END$$;
CREATE TABLE gate.t (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE INDEX t_plant_expr ON gate.t ((doc ->> gate.k()));
CREATE INDEX t_plant_pred ON gate.t (id) WHERE gate.p();
SELECT ttl.enable('gate.t', 60) IS NOT NULL AS enabled;
SELECT ttl.set_deadline_property('gate.t', 'exp');
INSERT INTO gate.t SELECT g, jsonb_build_object('exp', 2000000000 + g) FROM generate_series(1, 5) g;
GRANT USAGE ON SCHEMA gate TO regress_gate_reader;
GRANT SELECT ON gate.t TO regress_gate_reader;
RESET ROLE;
TRUNCATE gate_log;

-- each call in a fresh session, as the superuser
\c :orig_db
SELECT scenario, items FROM ttl.preview('gate.t', 30);
\c :orig_db
SELECT count(*) FROM ttl.expiring('gate.t', interval '100 years');
\c :orig_db
SELECT ttl._purge_statement('gate.t', false) IS NOT NULL AS statement;
\c :orig_db
SELECT count(*) FROM ttl.deadline_index_sql('gate.t', 'exp2');
\c :orig_db
SELECT ttl._is_deadline_index('gate.t_plant_expr', 'gate.t');
\c :orig_db
SELECT ttl.purge('gate.t');
\c :orig_db
SELECT expired FROM ttl.backlog('gate.t');
\c :orig_db
SELECT rows_purged FROM ttl.stats WHERE container = 'gate.t'::regclass;
SELECT count(*) AS ran_as_someone_else FROM gate_log WHERE who <> 'regress_gate_owner';

-- the same as a reader with SELECT
\c :orig_db
SET ROLE regress_gate_reader;
SELECT scenario, items FROM ttl.preview('gate.t', 30);
\c :orig_db
SET ROLE regress_gate_reader;
SELECT count(*) FROM ttl.expiring('gate.t', interval '100 years');
\c :orig_db
SET ROLE regress_gate_reader;
SELECT expired FROM ttl.backlog('gate.t');
\c :orig_db
SELECT count(*) AS ran_as_someone_else FROM gate_log WHERE who <> 'regress_gate_owner';

-- positive control: a plain query planned by the superuser folds the
-- index definitions itself (core PostgreSQL), and the plant records it
\c :orig_db
SELECT count(*) FROM gate.t WHERE doc ->> 'k' = 'x';
SELECT count(*) > 0 AS control_fired FROM gate_log WHERE who <> 'regress_gate_owner';

SELECT ttl.disable('gate.t');
DROP SCHEMA gate CASCADE;
DROP TABLE gate_log;
DROP ROLE regress_gate_owner;
DROP ROLE regress_gate_reader;
