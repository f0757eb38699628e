-- Rule 10 runs the replacement's DELETE (and its archive INSERT, the
-- owner's triggers and foreign-key actions) as the table's owner on behalf
-- of the writer.  An error raised there keeps its SQLSTATE, but a writer
-- that could not read ttl.stats.last_error (no SELECT on the table, or row
-- security applies to it there) gets a message ttl writes, naming the
-- container and the SQLSTATE, with none of the original message, detail,
-- hint or context: those can carry the hidden row.  The owner, and a
-- superuser, still get the original.
\set SHOW_CONTEXT never
\set VERBOSITY default
SET client_min_messages = warning;
CREATE ROLE rr_owner;
CREATE ROLE rr_eve;      -- INSERT only, like a write-only API
CREATE ROLE rr_mallory;  -- SELECT and INSERT, but row security applies
RESET client_min_messages;
GRANT CREATE ON SCHEMA public TO rr_owner;
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET ROLE rr_owner;

-- what a writer saw: the SQLSTATE, the message, and whether anything else
-- it was shown holds a secret (client_min_messages = log must not show it
-- the original either: the full text goes to the server log only)
CREATE FUNCTION public.rr_try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    st text; msg text; det text; hnt text; ctx text;
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS OR query_canceled THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
        det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT, ctx = PG_EXCEPTION_CONTEXT;
    RETURN st || ': ' || msg
              || CASE WHEN concat(det, hnt, ctx) LIKE '%TOPSECRET%'
                      THEN ' (and the detail, hint or context shows the row)' ELSE '' END;
END $$;
GRANT EXECUTE ON FUNCTION public.rr_try(text) TO PUBLIC;

-- 1. an archive whose CHECK refuses the row: the row is in the detail
CREATE TABLE rr_c (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('rr_c', 60);
CREATE TABLE rr_a (id text PRIMARY KEY, doc jsonb NOT NULL,
                   CHECK (NOT doc ? 'secret'));
SELECT ttl.set_archive('rr_c', 'rr_a');
ALTER TABLE rr_c ENABLE ROW LEVEL SECURITY;
CREATE POLICY rr_c_own ON rr_c USING (doc ->> 'owner' = current_user);
CREATE POLICY rr_c_write ON rr_c FOR INSERT WITH CHECK (true);
GRANT INSERT ON rr_c TO rr_eve;
GRANT SELECT, INSERT ON rr_c TO rr_mallory;
INSERT INTO rr_c VALUES ('e1', '{"owner": "rr_owner", "secret": "TOPSECRET-CARD-41"}'),
                        ('e2', '{"owner": "rr_owner", "secret": "TOPSECRET-CARD-42"}'),
                        ('e3', '{"owner": "rr_owner", "secret": "TOPSECRET-CARD-43"}');
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:05:00+00';

-- the INSERT-only writer: 23514, a message of ttl's naming the container
SET ROLE rr_eve;
SET client_min_messages = log;
SELECT public.rr_try($$INSERT INTO rr_c VALUES ('e1', '{"owner": "rr_eve"}')$$) AS eve;
RESET client_min_messages;
-- the same error raised to psql: SQLSTATE kept, nothing of the row

INSERT INTO rr_c VALUES ('e1', '{"owner": "rr_eve"}');
RESET ROLE;
-- a writer with SELECT to whom row security applies: the same
SET ROLE rr_mallory;
SELECT public.rr_try($$INSERT INTO rr_c VALUES ('e2', '{"owner": "rr_mallory"}')$$) AS mallory;
RESET ROLE;
-- the owner, who may see every row (no FORCE): the original error
SET ROLE rr_owner;
SELECT public.rr_try($$INSERT INTO rr_c VALUES ('e3', '{"owner": "rr_owner"}')$$) AS owner;
RESET ROLE;
-- a superuser: the original error too
SELECT public.rr_try($$INSERT INTO rr_c VALUES ('e3', '{"owner": "rr_owner"}')$$) AS superuser;
-- nothing was replaced, nothing archived
SELECT id, doc ->> 'secret' AS secret FROM rr_c ORDER BY id;
SELECT count(*) AS archived FROM rr_a;

-- 2. an owner's trigger that puts the row into its message (RAISE '%',
-- OLD.doc), a cast error of the owner's that does the same, and a trigger
-- that raises a cancel's SQLSTATE with the row as its text
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET ROLE rr_owner;
CREATE TABLE rr_t (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('rr_t', 60);
CREATE FUNCTION public.rr_t_raise() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.doc ? 'cast' THEN
        PERFORM (OLD.doc ->> 'secret')::int;
    ELSIF OLD.doc ? 'cancel' THEN
        RAISE EXCEPTION USING ERRCODE = 'query_canceled', MESSAGE = OLD.doc::text;
    END IF;
    RAISE EXCEPTION '%', OLD.doc USING DETAIL = OLD.doc::text, HINT = OLD.doc::text;
END $$;
CREATE TRIGGER rr_t_raise BEFORE DELETE ON rr_t FOR EACH ROW EXECUTE FUNCTION public.rr_t_raise();
ALTER TABLE rr_t ENABLE ROW LEVEL SECURITY;
CREATE POLICY rr_t_none ON rr_t USING (false);
CREATE POLICY rr_t_write ON rr_t FOR INSERT WITH CHECK (true);
GRANT INSERT ON rr_t TO rr_eve;
INSERT INTO rr_t VALUES (1, '{"secret": "TOPSECRET-PIN-1"}'),
                        (2, '{"secret": "TOPSECRET-PIN-2", "cast": true}'),
                        (3, '{"secret": "TOPSECRET-PIN-3", "cancel": true}');
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:05:00+00';
SET ROLE rr_eve;
SELECT public.rr_try($$INSERT INTO rr_t VALUES (1, '{}')$$) AS eve_raise;
SELECT public.rr_try($$INSERT INTO rr_t VALUES (2, '{}')$$) AS eve_cast;
SELECT public.rr_try($$INSERT INTO rr_t VALUES (3, '{}')$$) AS eve_cancel;
-- ON CONFLICT DO NOTHING takes the same path
SELECT public.rr_try($$INSERT INTO rr_t VALUES (1, '{}') ON CONFLICT DO NOTHING$$) AS eve_on_conflict;
RESET ROLE;
SET ROLE rr_owner;
SELECT public.rr_try($$INSERT INTO rr_t VALUES (1, '{}')$$) AS owner_raise;
RESET ROLE;

-- 3. a foreign-key action of the owner's: ON DELETE CASCADE into a child
-- whose trigger raises with the child's row
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET ROLE rr_owner;
CREATE TABLE rr_p (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('rr_p', 60);
CREATE TABLE rr_k (id int PRIMARY KEY, p int REFERENCES rr_p ON DELETE CASCADE, note text);
CREATE FUNCTION public.rr_k_raise() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'child % says %', OLD.id, OLD.note;
END $$;
CREATE TRIGGER rr_k_raise BEFORE DELETE ON rr_k FOR EACH ROW EXECUTE FUNCTION public.rr_k_raise();
GRANT INSERT ON rr_p TO rr_eve;
INSERT INTO rr_p VALUES (1, '{}');
INSERT INTO rr_k VALUES (1, 1, 'TOPSECRET-NOTE');
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:05:00+00';
SET ROLE rr_eve;
SELECT public.rr_try($$INSERT INTO rr_p VALUES (1, '{}')$$) AS eve_fk_action;
RESET ROLE;
-- a writer with SELECT on a table without row security sees the original
GRANT SELECT ON rr_p TO rr_mallory;
GRANT INSERT ON rr_p TO rr_mallory;
SET ROLE rr_mallory;
SELECT public.rr_try($$INSERT INTO rr_p VALUES (1, '{}')$$) AS reader_fk_action;
RESET ROLE;
SELECT p, note FROM rr_k;

-- 4. a cancel during the owner's work (the writer's statement_timeout,
-- while the owner's trigger sleeps), caught by the writer's PL/pgSQL
-- handler: the writer goes on as itself, never as the owner
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET ROLE rr_owner;
CREATE TABLE rr_s (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('rr_s', 60);
CREATE TABLE rr_owner_only (s text);
INSERT INTO rr_owner_only VALUES ('TOPSECRET-OWNER-TABLE');
CREATE FUNCTION public.rr_s_slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_catalog.pg_sleep(60);
    RETURN OLD;
END $$;
CREATE TRIGGER rr_s_slow BEFORE DELETE ON rr_s FOR EACH ROW EXECUTE FUNCTION public.rr_s_slow();
GRANT INSERT ON rr_s TO rr_eve;
INSERT INTO rr_s VALUES (1, '{}');
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:05:00+00';
SET ROLE rr_eve;
SET statement_timeout = '200ms';
DO $$
BEGIN
    BEGIN
        INSERT INTO public.rr_s VALUES (1, '{}');
    EXCEPTION WHEN query_canceled THEN
        RAISE NOTICE 'canceled (%), going on as %', SQLSTATE, current_user;
    END;
    BEGIN
        PERFORM * FROM public.rr_owner_only;
        RAISE NOTICE 'read the owner''s table';
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE NOTICE 'the owner''s table is not readable';
    END;
END $$;
RESET statement_timeout;
SELECT current_user;
RESET ROLE;

-- 5. the remedy docs/rules.md gives against a writer probing hidden keys:
-- row security forced on the owner, and a restrictive DELETE policy that
-- lets a writer's session replace only what that writer could read (the
-- policy runs as the owner: it judges the writer by session_user)
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET ROLE rr_owner;
CREATE TABLE rr_f (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('rr_f', 60);
ALTER TABLE rr_f ENABLE ROW LEVEL SECURITY;
CREATE POLICY rr_f_mine ON rr_f TO rr_eve, rr_mallory USING (doc ->> 'owner' = current_user);
GRANT SELECT, INSERT ON rr_f TO rr_eve, rr_mallory;
INSERT INTO rr_f VALUES ('m1', '{"owner": "rr_mallory"}'), ('m2', '{"owner": "rr_mallory"}'),
                        ('e1', '{"owner": "rr_eve"}');
RESET ROLE;
SET ttl.now_override = '2030-01-01 00:05:00+00';
-- without it: eve replaces mallory's expired m1, which she cannot read
SET SESSION AUTHORIZATION rr_eve;
SELECT public.rr_try($$INSERT INTO rr_f VALUES ('m1', '{"owner": "rr_eve"}')$$) AS without_remedy;
RESET SESSION AUTHORIZATION;
SET ROLE rr_owner;
ALTER TABLE rr_f FORCE ROW LEVEL SECURITY;
CREATE POLICY rr_f_owner ON rr_f TO rr_owner USING (true) WITH CHECK (true);
CREATE POLICY rr_f_replace_own ON rr_f AS RESTRICTIVE FOR DELETE TO rr_owner
    USING (doc ->> 'owner' = session_user OR pg_has_role(session_user, 'rr_owner', 'MEMBER'));
RESET ROLE;
-- with it: mallory's m2 conflicts, eve's own e1 is replaced
SET SESSION AUTHORIZATION rr_eve;
SELECT public.rr_try($$INSERT INTO rr_f VALUES ('m2', '{"owner": "rr_eve"}')$$) AS others_item;
SELECT public.rr_try($$INSERT INTO rr_f VALUES ('e1', '{"owner": "rr_eve", "v": 2}')$$) AS own_item;
RESET SESSION AUTHORIZATION;
SELECT id, doc - '_ts' AS doc FROM rr_f ORDER BY id;
-- a superuser's purge still deletes every expired item
SET ttl.now_override = '2030-01-01 00:15:00+00';
SELECT ttl.purge('rr_f');
SELECT count(*) AS left_over FROM rr_f;

DROP OWNED BY rr_owner, rr_eve, rr_mallory;
DROP ROLE rr_owner;
DROP ROLE rr_eve;
DROP ROLE rr_mallory;
