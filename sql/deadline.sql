-- Rule 9, the deadline property: validation on write (on and off), hiding,
-- ttl.state / ttl.expires_at / ttl.is_expired / ttl.calculate, updates,
-- ttl.set_deadline_property (at once; a malformed stored item fails it),
-- and purge of deadline-expired items through the deadline index.
\set SHOW_CONTEXT never
SET ttl.now_override = '2030-01-01 00:00:00+00';
SELECT extract(epoch FROM ttl.now())::bigint AS now_unix;  -- 1893456000

CREATE TABLE d_on  (id text PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE d_off (id text PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE d_pin (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('d_on', 3600, deadline_property => 'expiresAt'),
       ttl.enable('d_off', NULL, 'doc', 'expiresAt'),
       ttl.enable('d_pin', -1, deadline_property => 'expiresAt');
SELECT container, default_ttl, deadline_property FROM ttl.containers ORDER BY container::text COLLATE "C";
-- the trigger carries the property, the deadline index is there
SELECT tgrelid::regclass, pg_catalog.pg_get_triggerdef(oid) FROM pg_trigger
 WHERE tgname = 'zzz_ttl_stamp' ORDER BY tgrelid::regclass::text COLLATE "C";
SELECT indexrelid::regclass AS index, pg_get_indexdef(indexrelid),
       obj_description(indexrelid, 'pg_class')
  FROM pg_index WHERE indrelid = 'd_on'::regclass ORDER BY indexrelid::regclass::text COLLATE "C";

-- every malformed form is rejected, while on and while off, nothing written
CREATE FUNCTION try_insert(t regclass, d jsonb) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('INSERT INTO %s VALUES (md5(random()::text), $1)', t) USING d;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
SELECT c, v::text AS deadline, try_insert(c, jsonb_build_object('expiresAt', v)) AS result
  FROM (VALUES ('"not a date"'::jsonb), ('"2030-01-01"'), ('"2030-01-01T00:10:00"'),
               ('"2030-01-01 00:10:00"'), ('"2030-02-30T00:00:00Z"'), ('"2030-01-01T24:00:00Z"'),
               ('"2030-01-01T00:00:00+24:00"'), ('"2030-01-01T00:00:00.Z"'), ('" 2030-01-01T00:00:00Z"'),
               ('""'), ('-1'), ('-0.5'), ('1.5'), ('1e20'), ('true'), ('false'),
               ('[1893456600]'), ('{"at": 1893456600}')) x(v),
       (VALUES ('d_on'::regclass), ('d_off'::regclass)) y(c)
 ORDER BY c::text COLLATE "C", v::text COLLATE "C";
SELECT (SELECT count(*) FROM d_on) AS written_on, (SELECT count(*) FROM d_off) AS written_off;

-- valid forms (on and off), and the server never changes them
SELECT v::text AS deadline, try_insert('d_off', jsonb_build_object('expiresAt', v)) AS result
  FROM (VALUES ('null'::jsonb), ('0'), ('1893456600'), ('1893456600.0'),
               ('"2030-01-01T00:10:00Z"'), ('"2030-01-01t00:10:00z"'),
               ('"2030-01-01 00:10:00Z"'), ('"2030-01-01T00:10:00.999999+00:00"'),
               ('"2030-01-01T01:10:00+01:00"'), ('"2029-12-31T23:10:00-01:00"'),
               ('"2028-02-29T00:00:00Z"'), ('"1969-12-31T23:59:59Z"')) x(v);
SELECT doc -> 'expiresAt' AS stored FROM d_off ORDER BY (doc -> 'expiresAt')::text COLLATE "C";
-- the error in full
INSERT INTO d_on VALUES ('x', '{"expiresAt": "2030-01-01T00:10:00"}');
INSERT INTO d_on VALUES ('x', '{"expiresAt": -5}');
-- only the root property counts
INSERT INTO d_on VALUES ('nested', '{"a": {"expiresAt": "nope"}, "ExpiresAt": true}');
DELETE FROM d_on;

-- the combinations: deadline before / after the lifetime expiry, pinned,
-- null, absent; default on (3600), -1 and off
CREATE FUNCTION load(t regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format($q$INSERT INTO %s VALUES
        ('absent',        '{}'),
        ('null',          '{"expiresAt": null}'),
        ('before',        '{"expiresAt": "2030-01-01T00:10:00Z"}'),
        ('before_secs',   '{"expiresAt": 1893456600}'),
        ('after',         '{"expiresAt": "2030-01-01T02:00:00Z"}'),
        ('own_before',    '{"ttl": 7200, "expiresAt": "2030-01-01T00:30:00+00:00"}'),
        ('own_after',     '{"ttl": 600, "expiresAt": "2030-01-01T03:00:00Z"}'),
        ('pinned',        '{"ttl": -1, "expiresAt": "2030-01-01T00:20:00Z"}'),
        ('pinned_none',   '{"ttl": -1}'),
        ('past',          '{"expiresAt": 0}'),
        ('fraction',      '{"expiresAt": "2030-01-01T00:05:00.999Z"}')$q$, t);
END
$$;
DELETE FROM d_off;
SELECT load('d_on'), load('d_off'), load('d_pin');

CREATE FUNCTION matrix() RETURNS TABLE (id text, on_expires_at timestamptz, pin_expires_at timestamptz,
                                         off_expires_at timestamptz)
LANGUAGE sql AS $$
    SELECT a.id, ttl.expires_at('d_on', a.doc), ttl.expires_at('d_pin', p.doc),
           ttl.expires_at('d_off', o.doc)
      FROM d_on a JOIN d_pin p USING (id) JOIN d_off o USING (id) ORDER BY a.id
$$;
SELECT * FROM matrix();
SELECT id, s.* FROM d_on, ttl.state('d_on', doc) s ORDER BY id;
SELECT id, s.* FROM d_pin, ttl.state('d_pin', doc) s ORDER BY id;

-- hiding follows the clock: live view == not ttl.is_expired, at each step
CREATE FUNCTION live() RETURNS TABLE (container text, live text, consistent boolean)
LANGUAGE sql AS $$
    SELECT 'on', (SELECT string_agg(id, ',' ORDER BY id) FROM d_on_live),
           (SELECT bool_and((l.id IS NULL) = ttl.is_expired('d_on', t.doc))
              FROM d_on t LEFT JOIN d_on_live l USING (id))
    UNION ALL
    SELECT 'pin', (SELECT string_agg(id, ',' ORDER BY id) FROM d_pin_live),
           (SELECT bool_and((l.id IS NULL) = ttl.is_expired('d_pin', t.doc))
              FROM d_pin t LEFT JOIN d_pin_live l USING (id))
    UNION ALL
    SELECT 'off', (SELECT string_agg(id, ',' ORDER BY id) FROM d_off_live),
           (SELECT bool_and((l.id IS NULL) = ttl.is_expired('d_off', t.doc))
              FROM d_off t LEFT JOIN d_off_live l USING (id))
$$;
SELECT * FROM live();
SET ttl.now_override = '2030-01-01 00:05:00+00';   -- fraction truncated: due now
SELECT * FROM live();
SET ttl.now_override = '2030-01-01 00:09:59+00';
SELECT * FROM live();
SET ttl.now_override = '2030-01-01 00:10:00+00';   -- the boundary second
SELECT * FROM live();
SET ttl.now_override = '2030-01-01 00:20:00+00';
SELECT * FROM live();
SET ttl.now_override = '2030-01-01 00:30:00+00';
SELECT * FROM live();
SET ttl.now_override = '2030-01-01 01:00:00+00';
SELECT * FROM live();
-- the backlog: each hidden item once (by lifetime, deadline or both)
SELECT container, expired_backlog, oldest_expired_at FROM ttl.stats
 WHERE container IN ('d_on'::regclass, 'd_pin'::regclass, 'd_off'::regclass) ORDER BY container::text COLLATE "C";
SET ttl.now_override = '2030-01-01 02:00:00+00';
SELECT * FROM live();
-- a point read by key through the view: the 404
SELECT count(*) FROM d_on_live WHERE id = 'before';
SELECT ttl.is_expired('d_on', doc) FROM d_on WHERE id = 'before';

-- updates: keeping the property keeps the deadline (a write restarts only
-- the lifetime), changing it moves it, null removes it; bad ones rejected
SET ttl.now_override = '2030-01-01 00:00:00+00';
DELETE FROM d_on;
SELECT load('d_on');
SET ttl.now_override = '2030-01-01 00:08:00+00';
UPDATE d_on SET doc = doc || '{"touched": true}' WHERE id = 'before';
UPDATE d_on SET doc = jsonb_set(doc, '{expiresAt}', '"2030-01-01T05:00:00Z"') WHERE id = 'before_secs';
UPDATE d_on SET doc = jsonb_set(doc, '{expiresAt}', 'null') WHERE id = 'fraction';
UPDATE d_on SET doc = doc - 'expiresAt' WHERE id = 'pinned';
UPDATE d_on SET doc = jsonb_set(doc, '{expiresAt}', '"tomorrow"') WHERE id = 'after';
UPDATE d_on SET doc = jsonb_set(doc, '{expiresAt}', '[]') WHERE id = 'after';
SELECT id, doc -> 'expiresAt' AS deadline, doc -> '_ts' AS ts, ttl.expires_at('d_on', doc)
  FROM d_on WHERE id IN ('before', 'before_secs', 'fraction', 'pinned', 'after') ORDER BY id;
SET ttl.now_override = '2030-01-01 00:10:00+00';
SELECT string_agg(id, ',' ORDER BY id) AS live FROM d_on_live;
-- ON CONFLICT DO UPDATE and COPY are validated too
INSERT INTO d_on VALUES ('before', '{"expiresAt": false}')
    ON CONFLICT (id) DO UPDATE SET doc = excluded.doc;
COPY d_on FROM STDIN;
copied	{"expiresAt": "2030-13-01T00:00:00Z"}
\.
SELECT count(*) FROM d_on WHERE id = 'copied';
-- a renamed document column keeps the property in the trigger
ALTER TABLE d_on RENAME COLUMN doc TO body;
SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'd_on'::regclass;
INSERT INTO d_on VALUES ('renamed', '{"expiresAt": "2030"}');
SELECT string_agg(id, ',' ORDER BY id) AS live FROM d_on_live;
ALTER TABLE d_on RENAME COLUMN body TO doc;

-- set_deadline_property applies at once, to stored items
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE s (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('s', 3600);
INSERT INTO s VALUES (1, '{"due": "2030-01-01T00:10:00Z", "other": 1893456000}'),
                     (2, '{"due": 1893456300, "other": "2031-01-01T00:00:00Z"}'),
                     (3, '{"due": null}'),
                     (4, '{}');
-- malformed values are ordinary properties while they are no deadline
INSERT INTO s VALUES (5, '{"due": "soon", "other": null}');
SET ttl.now_override = '2030-01-01 00:20:00+00';
SELECT string_agg(id::text, ',' ORDER BY id) AS live FROM s_live;
-- a malformed stored item fails the call, naming its key; nothing changes
SELECT ttl.set_deadline_property('s', 'due');
SELECT deadline_property FROM ttl.containers WHERE container = 's'::regclass;
SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 's'::regclass;
SELECT count(*) AS deadline_indexes FROM pg_index WHERE indrelid = 's'::regclass
   AND obj_description(indexrelid, 'pg_class') = 'ttl deadline index';
INSERT INTO s VALUES (6, '{"due": "still not a date"}');  -- still accepted
DELETE FROM s WHERE id IN (5, 6);
-- now it applies at once: 1 and 2 are past their deadline
SELECT ttl.set_deadline_property('s', 'due');
SELECT string_agg(id::text, ',' ORDER BY id) AS live FROM s_live;
INSERT INTO s VALUES (7, '{"due": "soon"}');
-- changed: the other property now, another index
SELECT ttl.set_deadline_property('s', 'other');
SELECT string_agg(id::text, ',' ORDER BY id) AS live FROM s_live;
SELECT indexrelid::regclass, pg_get_indexdef(indexrelid) FROM pg_index
 WHERE indrelid = 's'::regclass AND obj_description(indexrelid, 'pg_class') = 'ttl deadline index';
-- removed: no deadline, no index, no validation
SELECT ttl.set_deadline_property('s', NULL);
SELECT string_agg(id::text, ',' ORDER BY id) AS live FROM s_live;
SELECT count(*) AS deadline_indexes FROM pg_index WHERE indrelid = 's'::regclass
   AND obj_description(indexrelid, 'pg_class') = 'ttl deadline index';
SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 's'::regclass;
INSERT INTO s VALUES (8, '{"other": true, "due": []}');
-- a table without a primary key is named by ctid
CREATE TABLE nk (doc jsonb);
SELECT ttl.enable('nk', 60);
INSERT INTO nk VALUES ('{"d": 1}'), ('{"d": "x"}');
SELECT ttl.set_deadline_property('nk', 'd');
-- bad property names, bad callers
SELECT ttl.set_deadline_property('s', '');
SELECT ttl.set_deadline_property('s', 'ttl');
SELECT ttl.set_deadline_property('s', '_ts');
SELECT ttl.set_deadline_property('s', repeat('x', 256));
SELECT ttl.set_deadline_property(NULL, 'x');
CREATE TABLE plain (id int, doc jsonb);
SELECT ttl.set_deadline_property('plain', 'x');
CREATE ROLE dl_stranger;
SET ROLE dl_stranger;
SELECT ttl.set_deadline_property('s', 'due');
RESET ROLE;
DROP ROLE dl_stranger;
-- enable with a malformed stored item: nothing is created
CREATE TABLE e (id int PRIMARY KEY, doc jsonb);
INSERT INTO e VALUES (1, '{"until": 12}'), (2, '{"until": {"x": 1}}');
SELECT ttl.enable('e', 60, deadline_property => 'until');
SELECT count(*) FROM ttl.containers WHERE container = 'e'::regclass;
SELECT count(*) FROM pg_trigger WHERE tgrelid = 'e'::regclass;
SELECT to_regclass('e_live');

-- purge: deadline-expired items go through the deadline index, also when
-- pinned, and nothing that is not expired
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE p (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('p', 86400, deadline_property => 'expiresAt');
INSERT INTO p SELECT g, jsonb_build_object('expiresAt', 1893456000 + g,
                                           'ttl', CASE WHEN g % 2 = 0 THEN -1 ELSE 86400 END)
  FROM generate_series(1, 2000) g;
INSERT INTO p SELECT g, '{}' FROM generate_series(2001, 3000) g;
ANALYZE p;
SELECT pg_stat_force_next_flush();
SELECT coalesce(idx_scan, 0) AS scans_before FROM pg_stat_user_indexes
 WHERE indexrelname = 'p_ttl_deadline_idx' \gset
SET ttl.now_override = '2030-01-01 00:16:40+00';   -- +1000 s
SELECT string_agg(id::text, ',') FILTER (WHERE id IN (999, 1000, 1001)) AS live_edge,
       count(*) AS live FROM p_live;
-- the backlog counts them through the deadline index (once each)
SELECT expired_backlog, oldest_expired_at FROM ttl.stats WHERE container = 'p'::regclass;
SELECT ttl.purge('p');
SELECT count(*) AS remaining, min(id) AS first_left FROM p;
SELECT pg_stat_force_next_flush();
SELECT idx_scan > :scans_before AS deadline_index_used FROM pg_stat_user_indexes
 WHERE indexrelname = 'p_ttl_deadline_idx';
-- batches (the worker's shape): a keyset walk of the deadline index
SET ttl.now_override = '2030-01-01 00:25:00+00';   -- +1500 s
SELECT ttl.purge('p', 100), ttl.purge('p', 1000), ttl.purge('p', 1000);
SELECT count(*) AS remaining, min(id) AS first_left FROM p;
SELECT rows_purged FROM ttl.stats WHERE container = 'p'::regclass;
-- CALL ttl.run_purge(): the round's walk over all three
SET ttl.now_override = '2030-01-01 00:30:00+00';   -- +1800 s
CALL ttl.run_purge();
SELECT count(*) AS remaining, min(id) AS first_left FROM p;
-- the statement path (a DELETE trigger) uses the deadline index too
CREATE FUNCTION note_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RETURN OLD; END $$;
CREATE TRIGGER p_del BEFORE DELETE ON p FOR EACH ROW EXECUTE FUNCTION note_delete();
SELECT pg_stat_force_next_flush();
SELECT idx_scan AS scans_before FROM pg_stat_user_indexes
 WHERE indexrelname = 'p_ttl_deadline_idx' \gset
SET ttl.now_override = '2030-01-01 00:31:40+00';   -- +1900 s
SELECT ttl.purge('p', 30), ttl.purge('p');
SELECT count(*) AS remaining, min(id) AS first_left FROM p;
SELECT pg_stat_force_next_flush();
SELECT idx_scan > :scans_before AS deadline_index_used FROM pg_stat_user_indexes
 WHERE indexrelname = 'p_ttl_deadline_idx';
SELECT ttl.purge('p');
-- TTL off: nothing purged, nothing hidden, still validated
SELECT ttl.set_default_ttl('p', NULL);
SET ttl.now_override = '2031-01-01 00:00:00+00';
SELECT ttl.purge('p'), (SELECT count(*) FROM p_live) AS live;
INSERT INTO p VALUES (0, '{"expiresAt": "x"}');
-- disable drops the deadline index too
SELECT ttl.disable('p');
SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'p'::regclass;

-- a big container: the deadline index built beforehand without blocking
-- writes (CREATE INDEX CONCURRENTLY through \gexec), then the property set
-- finds it and builds nothing
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE big (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('big', 3600);
INSERT INTO big SELECT g, jsonb_build_object('exp', 1893456000 + g) FROM generate_series(1, 100) g;
SELECT ttl.deadline_index_sql('big', 'exp');
SELECT ttl.deadline_index_sql('big', 'exp') \gexec
SELECT ttl.set_deadline_property('big', 'exp');
SELECT indexrelid::regclass, obj_description(indexrelid, 'pg_class') FROM pg_index
 WHERE indrelid = 'big'::regclass ORDER BY indexrelid::regclass::text COLLATE "C";
SELECT count(*) AS statements_left FROM ttl.deadline_index_sql('big', 'exp');
-- switching to another property of a big container the same way: the new
-- index gets the alternative name while the old one is there; the switch
-- drops the old one
UPDATE big SET doc = doc || jsonb_build_object('exp2', 1893456000 + 1000 - id);
SELECT ttl.deadline_index_sql('big', 'exp2') \gexec
SELECT ttl.set_deadline_property('big', 'exp2');
SELECT indexrelid::regclass, obj_description(indexrelid, 'pg_class') FROM pg_index
 WHERE indrelid = 'big'::regclass ORDER BY indexrelid::regclass::text COLLATE "C";
SELECT ttl.set_deadline_property('big', 'exp');
SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'big'::regclass ORDER BY indexrelid::regclass::text COLLATE "C";
SET ttl.now_override = '2030-01-01 00:00:50+00';
SELECT ttl.purge('big');
SELECT count(*) AS remaining, min(id) AS first_left FROM big;
SELECT ttl.disable('big');

-- partitioned: the trigger, the index and the purge on every partition
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE pt (id int PRIMARY KEY, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE pt1 PARTITION OF pt FOR VALUES FROM (0) TO (100);
CREATE TABLE pt2 PARTITION OF pt FOR VALUES FROM (100) TO (200);
INSERT INTO pt VALUES (1, '{"d": 1}'), (150, '{"d": "2030-01-01T00:10:00Z"}'), (151, '{}');
SELECT ttl.enable('pt', 3600, deadline_property => 'd');
SELECT c.relname, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE t.tgname = 'zzz_ttl_stamp' AND c.relname LIKE 'pt%' ORDER BY 1;
SELECT indrelid::regclass, count(*) FROM pg_index
 WHERE indrelid IN ('pt1'::regclass, 'pt2'::regclass)
   AND pg_get_indexdef(indexrelid) LIKE '%doc_deadline_key%' GROUP BY 1 ORDER BY indrelid::regclass::text COLLATE "C";
INSERT INTO pt VALUES (2, '{"d": "x"}');
INSERT INTO pt VALUES (152, '{"d": []}');
SET ttl.now_override = '2030-01-01 00:10:00+00';
SELECT string_agg(id::text, ',' ORDER BY id) AS live FROM pt_live;
SELECT ttl.deadline_index_sql('pt', 'e');
SELECT ttl.purge('pt', 1), ttl.purge('pt');
SELECT string_agg(id::text, ',' ORDER BY id) AS left FROM pt;
SELECT ttl.set_deadline_property('pt', NULL);
SELECT count(*) AS deadline_indexes FROM pg_index
 WHERE indrelid IN ('pt'::regclass, 'pt1'::regclass, 'pt2'::regclass)
   AND pg_get_indexdef(indexrelid) LIKE '%doc_deadline_key%';
SELECT ttl.disable('pt');

-- ttl.preview and ttl.expiring on a container with a deadline property:
-- rule 9 applies (the scan path); the 'proposed' row must be what
-- ttl.set_default_ttl would give, counted item by item with ttl.expires_at.
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE TABLE pvd (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('pvd', 7200, deadline_property => 'until');
INSERT INTO pvd SELECT i, CASE i % 4
    WHEN 0 THEN jsonb_build_object('until', 1893456000 + i * 600)         -- deadline i*10 min
    WHEN 1 THEN jsonb_build_object('ttl', -1, 'until', 1893456000 + i * 86400) -- pinned, deadline i days
    WHEN 2 THEN '{}'::jsonb                                               -- lifetime only
    ELSE jsonb_build_object('ttl', 60, 'until', 1893456000 + 30) END      -- own ttl, deadline 30 s
  FROM generate_series(1, 40) i;
CREATE FUNCTION pvd_brute(at timestamptz)
RETURNS TABLE (items bigint, hidden bigint, e1h bigint, e1d bigint, e7d bigint, e30d bigint)
LANGUAGE sql AS $$
  SELECT count(*), count(*) FILTER (WHERE e <= at),
         count(*) FILTER (WHERE e > at AND e <= at + interval '1 hour'),
         count(*) FILTER (WHERE e > at AND e <= at + interval '1 day'),
         count(*) FILTER (WHERE e > at AND e <= at + interval '7 days'),
         count(*) FILTER (WHERE e > at AND e <= at + interval '30 days')
    FROM (SELECT ttl.expires_at('pvd', doc) AS e FROM pvd) x $$;
SELECT scenario, default_ttl, items, hidden, expiring_1h, expiring_1d, expiring_7d, expiring_30d
  FROM ttl.preview('pvd', 600, '2030-01-01 00:30:00+00') ORDER BY scenario;
SELECT (SELECT row(items, hidden, expiring_1h, expiring_1d, expiring_7d, expiring_30d)::text
          FROM ttl.preview('pvd', 600, '2030-01-01 00:30:00+00') WHERE scenario = 'current')
       = (SELECT row(b.*)::text FROM pvd_brute('2030-01-01 00:30:00+00') b) AS current_matches;
CREATE TEMP TABLE pvd_proposed AS
  SELECT row(items, hidden, expiring_1h, expiring_1d, expiring_7d, expiring_30d)::text AS r
    FROM ttl.preview('pvd', 600, '2030-01-01 00:30:00+00') WHERE scenario = 'proposed';
BEGIN;
SELECT ttl.set_default_ttl('pvd', 600);
SELECT (SELECT r FROM pvd_proposed) = (SELECT row(b.*)::text FROM pvd_brute('2030-01-01 00:30:00+00') b)
       AS proposed_matches;
ROLLBACK;
SELECT id, expires_at FROM ttl.expiring('pvd', '1 hour', '2030-01-01 00:30:00+00') e
  JOIN pvd USING (doc) ORDER BY expires_at, id;
DROP FUNCTION pvd_brute(timestamptz);
SELECT ttl.disable('pvd');
