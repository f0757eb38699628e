-- A container follows its table through ALTER TABLE: columns added,
-- renamed and dropped, the document column renamed (writes go on), the
-- document column's drop or retype refused (0A000), the table renamed,
-- moved to another schema or given to another owner.
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
CREATE ROLE regress_sc_owner;
CREATE ROLE regress_sc_owner2;
CREATE ROLE regress_sc_reader;
GRANT CREATE ON SCHEMA public TO regress_sc_owner, regress_sc_owner2;
CREATE SCHEMA sc_other;
GRANT USAGE, CREATE ON SCHEMA sc_other TO regress_sc_owner, regress_sc_owner2;
GRANT USAGE ON SCHEMA sc_other TO regress_sc_reader;
SET ROLE regress_sc_owner;
CREATE TABLE sc (id int PRIMARY KEY, a text, doc jsonb);
SELECT ttl.enable('sc', 60);
INSERT INTO sc VALUES (1, 'one', '{}');
GRANT SELECT, INSERT ON sc_live TO regress_sc_reader;
COMMENT ON VIEW sc_live IS 'my live view';

-- a column added later appears in the view (and writes through it work)
ALTER TABLE sc ADD COLUMN b int DEFAULT 7;
SELECT id, a, b FROM sc_live;
INSERT INTO sc_live (id, a, b, doc) VALUES (2, 'two', 8, '{}');
SELECT id, b, doc FROM sc_live ORDER BY id;

-- a renamed column appears renamed
ALTER TABLE sc RENAME COLUMN a TO label;
SELECT attname FROM pg_attribute WHERE attrelid = 'sc_live'::regclass AND attnum > 0 ORDER BY attnum;

-- dropping another column works; grants, owner, comment and options stay
ALTER TABLE sc DROP COLUMN b;
SELECT attname FROM pg_attribute WHERE attrelid = 'sc_live'::regclass AND attnum > 0 ORDER BY attnum;
-- (relacl as on 15: 17 added MAINTAIN, "m", to an owner's default privileges)
SELECT regexp_replace(c.relacl::text, '=([a-zA-Z]*)m/', '=\1/', 'g') AS relacl,
       c.relowner::regrole, c.reloptions, obj_description(c.oid, 'pg_class')
  FROM pg_class c WHERE c.oid = 'sc_live'::regclass;
SELECT live_view FROM ttl.containers WHERE container = 'sc'::regclass;
-- so does retyping one
ALTER TABLE sc ALTER COLUMN label TYPE varchar(20);
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'sc_live'::regclass AND attname = 'label';
SET ROLE regress_sc_reader;
SELECT id, label FROM sc_live ORDER BY id;
SET ROLE regress_sc_owner;
-- expired items stay hidden through the rebuilt view
RESET ROLE;
SET ttl.now_override = '2026-01-01 00:01:01+00';
SET ROLE regress_sc_owner;
SELECT count(*) FROM sc_live;
RESET ROLE;
SET ttl.now_override = '2026-01-01 00:00:00+00';
SET ROLE regress_sc_owner;

-- someone who may not alter the table gets ALTER TABLE's own error
SET ROLE regress_sc_reader;
ALTER TABLE sc DROP COLUMN label;
ALTER TABLE sc DROP COLUMN doc;
SET ROLE regress_sc_owner;

-- an object of the user's on the view: a clear error, nothing changed
CREATE VIEW sc_mine AS SELECT id FROM sc_live;
ALTER TABLE sc ADD COLUMN c int;            -- adding is fine
ALTER TABLE sc DROP COLUMN c;               -- needs the view rebuilt
DROP VIEW sc_mine;
ALTER TABLE sc DROP COLUMN c;

-- the document column: renaming is followed, dropping or retyping refused
ALTER TABLE sc RENAME COLUMN doc TO body;
SELECT doc_column FROM ttl.containers WHERE container = 'sc'::regclass;
SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'sc'::regclass;
INSERT INTO sc VALUES (3, 'three', '{"ttl": 30, "_ts": 1}');
UPDATE sc SET body = body || '{"x": 1}' WHERE id = 1;
SELECT id, body FROM sc_live ORDER BY id;
INSERT INTO sc VALUES (4, 'four', '{"ttl": "soon"}');
ALTER TABLE sc DROP COLUMN body;
ALTER TABLE sc ALTER COLUMN body TYPE json;
DO $$
BEGIN
    ALTER TABLE sc DROP COLUMN body CASCADE;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'refused with %', SQLSTATE;
END $$;
SELECT attname FROM pg_attribute WHERE attrelid = 'sc_live'::regclass AND attnum > 0 ORDER BY attnum;
-- purge still finds its indexes and the column
RESET ROLE;
SET ttl.now_override = '2026-01-01 00:00:40+00';
SET ROLE regress_sc_owner;
SELECT ttl.purge('sc');
SELECT id FROM sc ORDER BY id;
RESET ROLE;
SET ttl.now_override = '2026-01-01 00:00:00+00';
SET ROLE regress_sc_owner;

-- renaming the table renames <old>_live to <new>_live
ALTER TABLE sc RENAME TO sc2;
SELECT live_view FROM ttl.containers WHERE container = 'sc2'::regclass;
-- unless that name is taken: a warning, and the view keeps its name
CREATE TABLE sc3_live (x int);
ALTER TABLE sc2 RENAME TO sc3;
SELECT live_view FROM ttl.containers WHERE container = 'sc3'::regclass;
DROP TABLE sc3_live;
ALTER TABLE sc3 RENAME TO sc;
-- a view renamed by its owner keeps its name when the table is renamed
ALTER VIEW sc2_live RENAME TO sc_view;
ALTER TABLE sc RENAME TO sc4;
SELECT live_view FROM ttl.containers WHERE container = 'sc4'::regclass;
ALTER VIEW sc_view RENAME TO sc4_live;
ALTER TABLE sc4 RENAME TO sc;
SELECT live_view FROM ttl.containers WHERE container = 'sc'::regclass;
-- a type of the new name blocks it too (the view's row type bears the name)
CREATE TYPE sc6_live AS ENUM ('x');
ALTER TABLE sc RENAME TO sc6;
SELECT live_view FROM ttl.containers WHERE container = 'sc6'::regclass;
DROP TYPE sc6_live;
ALTER TABLE sc6 RENAME TO sc;
SELECT live_view FROM ttl.containers WHERE container = 'sc'::regclass;
-- DDL on the view itself is left alone
ALTER TABLE sc_live RENAME COLUMN label TO lbl;
ALTER TABLE sc_live RENAME COLUMN lbl TO label;
ALTER VIEW sc_live ALTER COLUMN label SET DEFAULT 'none';
ALTER VIEW sc_live ALTER COLUMN label DROP DEFAULT;

-- SET SCHEMA moves the view along
ALTER TABLE sc SET SCHEMA sc_other;
SELECT container, live_view FROM ttl.containers;
SET ROLE regress_sc_reader;
SELECT id FROM sc_other.sc_live ORDER BY id;
SET ROLE regress_sc_owner;
ALTER TABLE sc_other.sc SET SCHEMA public;
SELECT container, live_view FROM ttl.containers;

-- OWNER TO moves the view's ownership: readers keep reading, the new owner
-- can disable
RESET ROLE;
ALTER TABLE sc OWNER TO regress_sc_owner2;
SELECT relname, relowner::regrole, regexp_replace(relacl::text, '=([a-zA-Z]*)m/', '=\1/', 'g') AS relacl
  FROM pg_class WHERE oid IN ('sc'::regclass, 'sc_live'::regclass) ORDER BY 1;
SET ROLE regress_sc_reader;
SELECT id FROM sc_live ORDER BY id;
SET ROLE regress_sc_owner2;
SELECT ttl.disable('sc');
SELECT count(*) FROM ttl.containers;
RESET ROLE;

-- a partitioned container: the document column renamed on the parent is
-- followed by the partitions' stamping triggers
CREATE TABLE scp (id int, doc jsonb) PARTITION BY RANGE (id);
CREATE TABLE scp1 PARTITION OF scp FOR VALUES FROM (0) TO (100);
SELECT ttl.enable('scp', 60);
CREATE TABLE scp2 PARTITION OF scp FOR VALUES FROM (100) TO (200);
ALTER TABLE scp RENAME COLUMN doc TO d;
INSERT INTO scp VALUES (1, '{}'), (150, '{}');
SELECT id, d FROM scp_live ORDER BY id;
INSERT INTO scp2 VALUES (151, '{"ttl": 0}');
ALTER TABLE scp ADD COLUMN extra text;
SELECT attname FROM pg_attribute WHERE attrelid = 'scp_live'::regclass AND attnum > 0 ORDER BY attnum;
SELECT ttl.disable('scp');
DROP TABLE scp;

-- a container that is a partition of a table that is not one: changes
-- made on the parent reach the container too
CREATE TABLE scq (id int, k text, note text, doc jsonb) PARTITION BY LIST (k);
CREATE TABLE scq_a PARTITION OF scq FOR VALUES IN ('a');
SELECT ttl.enable('scq_a', 60);
ALTER TABLE scq RENAME COLUMN doc TO d;
SELECT doc_column FROM ttl.containers WHERE container = 'scq_a'::regclass;
INSERT INTO scq VALUES (1, 'a', 'n', '{}');
SELECT id, d FROM scq_a_live;
ALTER TABLE scq ADD COLUMN extra int;
ALTER TABLE scq DROP COLUMN note;
SELECT attname FROM pg_attribute WHERE attrelid = 'scq_a_live'::regclass AND attnum > 0 ORDER BY attnum;
ALTER TABLE scq DROP COLUMN d;
ALTER TABLE ONLY scq RENAME COLUMN extra TO extra2;   -- refused by PostgreSQL
SELECT ttl.disable('scq_a');
DROP TABLE scq;

-- a superuser's ALTER TABLE with a hostile search_path: the follow-up
-- statements name everything, so planted operators are never called
SELECT ttl.enable('sc', 60, 'body');
CREATE TABLE sc_canary (who text);
CREATE FUNCTION public.planted(oid, oid) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.sc_canary VALUES (current_user); RETURN $1 OPERATOR(pg_catalog.=) $2; END $$;
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = public.planted);
CREATE FUNCTION public.planted_txt(text, text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.sc_canary VALUES (current_user); RETURN $1 OPERATOR(pg_catalog.=) $2; END $$;
CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.planted_txt);
SET search_path = public, pg_catalog;
ALTER TABLE sc ADD COLUMN z int;
ALTER TABLE sc RENAME COLUMN z TO zz;
ALTER TABLE sc DROP COLUMN zz;
ALTER TABLE sc ENABLE ROW LEVEL SECURITY;
ALTER TABLE sc RENAME COLUMN body TO doc;
ALTER TABLE sc RENAME TO sc5;
ALTER TABLE sc5 SET SCHEMA sc_other;
ALTER TABLE sc_other.sc5 OWNER TO regress_sc_owner;
ALTER TABLE sc_other.sc5 SET SCHEMA public;
ALTER TABLE sc5 RENAME TO sc;
RESET search_path;
SELECT container, doc_column, live_view, (SELECT relowner::regrole FROM pg_class WHERE oid = live_view),
       (SELECT reloptions FROM pg_class WHERE oid = live_view)
  FROM ttl.containers;
SELECT count(*) AS canary FROM sc_canary;

-- a view redefined by hand (an extra computed column) is left alone by a
-- column change that needs no rebuild
CREATE OR REPLACE VIEW sc_live WITH (security_barrier) AS
  SELECT *, 'x'::text AS one FROM sc WHERE ttl.live(doc, 'sc'::regclass);
ALTER TABLE sc ADD COLUMN later int;
SELECT attname FROM pg_attribute WHERE attrelid = 'sc_live'::regclass AND attnum > 0 ORDER BY attnum;
DROP OPERATOR public.= (oid, oid);
DROP OPERATOR public.= (text, text);
DROP FUNCTION public.planted(oid, oid);
DROP FUNCTION public.planted_txt(text, text);
DROP TABLE sc_canary;

DROP TABLE sc CASCADE;
DROP SCHEMA sc_other;
REVOKE CREATE ON SCHEMA public FROM regress_sc_owner, regress_sc_owner2;
DROP ROLE regress_sc_owner, regress_sc_owner2, regress_sc_reader;
