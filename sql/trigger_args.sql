-- The stamp trigger's arguments have one codec (src/registry/trigger_args.h):
-- what ttl writes (format 2 from 1.9 on, key=value; format 1, the
-- positional lists of 1.0-1.8, while the database's SQL is older) and what
-- it reads back, through the internal SQL functions over the C codec; bad
-- lists refused with their SQLSTATE; the trigger itself refusing a wrong
-- count with the right words (39P01); and containers whose triggers 1.5
-- and 1.8 wrote working on after ALTER EXTENSION ttl UPDATE, the C writers
-- switching format in the same session (the cached version is forgotten).
\set SHOW_CONTEXT never
-- the SQLSTATE, the message and the detail of what q raises
CREATE FUNCTION pg_temp.try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    detail text;
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ': ' || SQLERRM || coalesce(E'\n' || nullif(detail, ''), '');
END $$;

-- ---- the codec: every field combination, both formats, round trip ----
CREATE TEMP TABLE fields AS
SELECT d.doc::name AS doc, dl.dl AS deadline, p.p AS has_policy, df.df AS default_ttl,
       ps.ps AS paused, a.a AS archive
  FROM (VALUES ('doc'), ('my=col "x"'), ('Ünï')) d(doc),
       (VALUES (NULL), ('expiresAt'), ('a=b,c')) dl(dl),
       (VALUES (false), (true)) p(p),
       (VALUES (NULL::int), (3600), (-1)) df(df),
       (VALUES (false), (true)) ps(ps),
       (VALUES (NULL), ('public.arch'), ('"s=1".a''b')) a(a)
 -- without a policy there is no default, state or (in format 1) archive
 WHERE p.p OR (df.df IS NULL AND NOT ps.ps);
CREATE TEMP TABLE encoded AS
SELECT f.*, fmt, ttl._trigger_args(doc, deadline, has_policy, default_ttl, paused, archive, fmt) AS args
  FROM fields f, (VALUES (1), (2)) v(fmt)
 WHERE fmt = 2 OR has_policy OR archive IS NULL;
SELECT fmt, count(*) AS lists,
       count(*) FILTER (WHERE (x.format, x.doc_column, x.deadline_property, x.has_policy,
                               x.default_ttl, coalesce(x.paused, false), x.archive)
                              IS NOT DISTINCT FROM
                              (e.fmt, e.doc, e.deadline, e.has_policy,
                               e.default_ttl, e.paused, e.archive)) AS read_back_equal
  FROM encoded e, LATERAL ttl._trigger_args_decode(e.args) x
 GROUP BY fmt ORDER BY fmt;
-- what the lists look like
SELECT fmt, args FROM encoded
 WHERE doc = 'doc' AND (deadline IS NULL OR deadline = 'expiresAt')
   AND (default_ttl IS NULL OR default_ttl = 3600) AND NOT paused
   AND (archive IS NULL OR archive = 'public.arch')
 ORDER BY fmt, array_length(args, 1), args::text;
-- format NULL: the installed version's (1.9: format 2)
SELECT ttl._trigger_args('doc', 'until');
-- the lists of 1.0 to 1.8 read as they were written
SELECT a AS args, x.*
  FROM (VALUES ('{doc}'::text[]), ('{doc,expiresAt}'), ('{doc,3600,active}'),
               ('{doc,"",paused}'), ('{doc,60,active,until}'),
               ('{doc,60,active,"",public.arch}'), ('{format=1}'),
               ('{format=2,"doc:x"}')) v(a),
       LATERAL ttl._trigger_args_decode(a) x;
-- a key of a later round is skipped
SELECT * FROM ttl._trigger_args_decode('{format=2,doc=doc,retire=drop,deadline=d}');

-- ---- bad lists and fields: SQLSTATE and message ----
\set VERBOSITY default
SELECT q, pg_temp.try(q) FROM (VALUES
    ($$SELECT ttl._trigger_args_decode('{}')$$),
    ($$SELECT ttl._trigger_args_decode('{a,b,c,d,e,f}')$$),
    ($$SELECT ttl._trigger_args_decode('{format=3,doc=doc}')$$),
    ($$SELECT ttl._trigger_args_decode('{format=x,doc=doc}')$$),
    ($$SELECT ttl._trigger_args_decode('{format=2,doc=doc,doc=body}')$$),
    ($$SELECT ttl._trigger_args_decode('{format=2,doc=}')$$),
    ($$SELECT ttl._trigger_args_decode('{format=2,doc=doc,default=1h,state=active}')$$),
    ($$SELECT ttl._trigger_args_decode('{format=2,doc=doc,default=60}')$$),
    ($$SELECT ttl._trigger_args_decode('{format=2,doc=doc,default=60,state=stopped}')$$),
    ($$SELECT ttl._trigger_args_decode('{doc,99999999999,active}')$$),
    ($$SELECT ttl._trigger_args_decode('{doc,60,running}')$$),
    ($$SELECT ttl._trigger_args_decode(ARRAY['doc', repeat('x', 256)])$$),
    ($$SELECT ttl._trigger_args_decode(ARRAY[repeat('x', 64)])$$),
    ($$SELECT ttl._trigger_args_decode('{format=2,NULL}')$$),
    ($$SELECT ttl._trigger_args(NULL)$$),
    ($$SELECT ttl._trigger_args('')$$),
    ($$SELECT ttl._trigger_args('doc', repeat('x', 256))$$),
    ($$SELECT ttl._trigger_args('doc', format => 7)$$),
    ($$SELECT ttl._trigger_args('doc', archive => 'public.arch', format => 1)$$)) v(q);

-- ---- the trigger reads the same codec ----
CREATE TABLE hand (id int PRIMARY KEY, doc jsonb NOT NULL);
-- a wrong count: 39P01, naming the trigger and the table, saying what it takes
CREATE TRIGGER zzz_ttl_stamp BEFORE INSERT OR UPDATE ON hand FOR EACH ROW
    EXECUTE FUNCTION ttl.stamp('doc', '60', 'active', '', 'public.arch', 'extra');
\set VERBOSITY verbose
INSERT INTO hand VALUES (1, '{}');
\set VERBOSITY default
DROP TRIGGER zzz_ttl_stamp ON hand;
-- format 2 by hand: stamps and validates the deadline property
CREATE TRIGGER zzz_ttl_stamp BEFORE INSERT OR UPDATE ON hand FOR EACH ROW
    EXECUTE FUNCTION ttl.stamp('format=2', 'doc=doc', 'deadline=until', 'later=ignored');
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO hand VALUES (2, '{"until": 1893456000}');
SELECT doc FROM hand;
INSERT INTO hand VALUES (3, '{"until": "soon"}');
DROP TABLE hand;

-- ---- the writers write format 2 in a 1.9 database ----
CREATE TABLE w (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('w', 3600);
SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'w'::regclass;
SELECT ttl.set_deadline_property('w', 'until');
SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'w'::regclass;
-- a list of 1.8 on a 1.9 container, then a renamed document column: the
-- codec writes it again, format 2, the deadline kept
CREATE OR REPLACE TRIGGER zzz_ttl_stamp BEFORE INSERT OR UPDATE ON w FOR EACH ROW
    EXECUTE FUNCTION ttl.stamp('doc', 'until');
ALTER TABLE w RENAME COLUMN doc TO body;
SELECT tgnargs, pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'w'::regclass;
INSERT INTO w VALUES (1, '{"until": 1893456000}');
INSERT INTO w VALUES (2, '{"until": "soon"}');
SELECT ttl.disable('w');
DROP TABLE w;
RESET ttl.now_override;

-- ---- containers of 1.5 and 1.8 after ALTER EXTENSION ttl UPDATE ----
\set orig_db :DBNAME
CREATE DATABASE regress_ttl_args_up;
\c regress_ttl_args_up
\set SHOW_CONTEXT never
CREATE EXTENSION ttl VERSION '1.5';
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE old_plain (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE old_dl (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('old_plain', 60), ttl.enable('old_dl', 60, deadline_property => 'until');
ALTER EXTENSION ttl UPDATE TO '1.8';
-- 1.8 SQL with this library: the C writer still writes format 1, in this session too
CREATE TABLE mid (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('mid', 60);
SELECT ttl.set_deadline_property('mid', 'until');
ALTER TABLE mid RENAME COLUMN doc TO body;
SELECT c.relname, t.tgnargs, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE t.tgname = 'zzz_ttl_stamp' ORDER BY 1;
INSERT INTO old_plain VALUES (1, '{"k": 1}');
INSERT INTO old_dl VALUES (1, '{"k": 1, "until": 1893456060}');
INSERT INTO mid VALUES (1, '{"k": 1}');
ALTER EXTENSION ttl UPDATE TO '1.9';
SELECT extversion FROM pg_extension WHERE extname = 'ttl';
-- the triggers 1.5 and 1.8 wrote are unchanged and work: stamping, the
-- deadline property validated, rule 10 replacing an expired holder
SELECT c.relname, t.tgnargs FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE t.tgname = 'zzz_ttl_stamp' ORDER BY 1;
SET ttl.now_override = '2030-01-01 00:05:00+00';
INSERT INTO old_plain VALUES (1, '{"k": 2}');
INSERT INTO old_dl VALUES (1, '{"k": 2, "until": 1893456600}');
INSERT INTO old_dl VALUES (2, '{"until": "soon"}');
INSERT INTO mid VALUES (1, '{"k": 2, "until": 1893456600}');
INSERT INTO mid VALUES (2, '{"until": "soon"}');
SELECT 'old_plain' AS t, id, doc FROM old_plain UNION ALL
SELECT 'old_dl', id, doc FROM old_dl UNION ALL
SELECT 'mid', id, body FROM mid ORDER BY 1, 2;
-- the C writers now write format 2 (the version read again after the update)
SELECT ttl.set_deadline_property('old_dl', 'until');
SELECT ttl.set_deadline_property('mid', NULL);
SELECT c.relname, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE t.tgname = 'zzz_ttl_stamp' ORDER BY 1;
\c :orig_db
DROP DATABASE regress_ttl_args_up;
