-- The rules of the SPEC, walked with the fake clock: container default
-- (rule 1) x item override (rule 2), _ts stamping (rule 4), expiry at the
-- exact boundary second (rule 5), hiding (rule 6), policy changes (rule 7).
\set SHOW_CONTEXT never
SET ttl.now_override = '2026-01-01 00:00:00+00';
SELECT ttl.now();

CREATE TABLE c_off (id text PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE c_on  (id text PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE c_60  (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('c_off', NULL), ttl.enable('c_on', -1), ttl.enable('c_60', 60);

INSERT INTO c_off VALUES ('inherit', '{}'), ('never', '{"ttl": -1}'),
                         ('own30', '{"ttl": 30}'), ('own120', '{"ttl": 120}');
INSERT INTO c_on SELECT * FROM c_off;
INSERT INTO c_60 SELECT * FROM c_off;

-- rule 4: _ts is the statement time in whole Unix seconds
SELECT id, doc FROM c_60 ORDER BY id;
SELECT extract(epoch FROM ttl.now())::bigint AS now_unix;

CREATE FUNCTION live_matrix() RETURNS TABLE (container text, live text)
LANGUAGE sql AS $$
    SELECT 'off', string_agg(id, ',' ORDER BY id) FROM c_off_live
    UNION ALL SELECT '-1', string_agg(id, ',' ORDER BY id) FROM c_on_live
    UNION ALL SELECT '60', string_agg(id, ',' ORDER BY id) FROM c_60_live
$$;

-- and every hidden item is exactly an expired one (rule 5 == rule 6)
CREATE FUNCTION hidden_equals_expired() RETURNS boolean
LANGUAGE sql AS $$
    SELECT bool_and(l.id IS NULL = ttl.is_expired(t.tableoid::regclass, t.doc))
      FROM (SELECT tableoid, * FROM c_off UNION ALL SELECT tableoid, * FROM c_on
            UNION ALL SELECT tableoid, * FROM c_60) t
      LEFT JOIN (SELECT 'c_off'::regclass AS r, id FROM c_off_live
                 UNION ALL SELECT 'c_on'::regclass, id FROM c_on_live
                 UNION ALL SELECT 'c_60'::regclass, id FROM c_60_live) l
        ON l.r = t.tableoid AND l.id = t.id
$$;

SELECT * FROM live_matrix();
SET ttl.now_override = '2026-01-01 00:00:29.999999+00';
SELECT * FROM live_matrix();
-- the exact boundary second: now >= _ts + ttl means expired
SET ttl.now_override = '2026-01-01 00:00:30+00';
SELECT * FROM live_matrix();
SELECT hidden_equals_expired();
SET ttl.now_override = '2026-01-01 00:00:59+00';
SELECT * FROM live_matrix();
SET ttl.now_override = '2026-01-01 00:01:00+00';
SELECT * FROM live_matrix();
SELECT hidden_equals_expired();
SET ttl.now_override = '2026-01-01 00:01:59+00';
SELECT * FROM live_matrix();
SET ttl.now_override = '2026-01-01 00:02:00+00';
SELECT * FROM live_matrix();
SET ttl.now_override = '2036-01-01 00:00:00+00';
SELECT * FROM live_matrix();
SELECT hidden_equals_expired();

-- rule 4: every write restarts the countdown, also one changing nothing
SET ttl.now_override = '2026-01-01 00:00:50+00';
UPDATE c_60 SET doc = doc WHERE id = 'inherit';
SELECT doc->'_ts' AS ts FROM c_60 WHERE id = 'inherit';
ALTER TABLE c_60 ADD COLUMN note text;
SET ttl.now_override = '2026-01-01 00:00:55+00';
UPDATE c_60 SET note = 'touched' WHERE id = 'never';
SELECT id, doc->'_ts' AS ts, note FROM c_60 WHERE id = 'never';
-- a client-sent _ts is overwritten, never trusted
INSERT INTO c_60 VALUES ('client_ts', '{"_ts": 1}'), ('client_ts2', '{"_ts": "soon"}'),
                        ('client_ts3', '{"_ts": 99999999999}');
SELECT id, doc FROM c_60 WHERE id LIKE 'client%' ORDER BY id;
UPDATE c_60 SET doc = doc || '{"_ts": 5}' WHERE id = 'client_ts';
SELECT doc->'_ts' AS ts FROM c_60 WHERE id = 'client_ts';
-- an update that changes only ttl restarts it too
SET ttl.now_override = '2026-01-01 00:01:10+00';
UPDATE c_60 SET doc = jsonb_set(doc, '{ttl}', '5') WHERE id = 'own30';
SELECT doc FROM c_60 WHERE id = 'own30';
SELECT id FROM c_60_live ORDER BY id;
SET ttl.now_override = '2026-01-01 00:01:15+00';
SELECT id FROM c_60_live ORDER BY id;

-- rule 7: a new default applies at once to items without their own ttl,
-- from their existing _ts
SET ttl.now_override = '2026-01-01 00:00:20+00';
TRUNCATE c_on;
SET ttl.now_override = '2026-01-01 00:00:00+00';
INSERT INTO c_on VALUES ('inherit', '{}'), ('never', '{"ttl": -1}'), ('own300', '{"ttl": 300}');
SET ttl.now_override = '2026-01-01 00:00:20+00';
SELECT id FROM c_on_live ORDER BY id;
SELECT ttl.set_default_ttl('c_on', 10);
SELECT id FROM c_on_live ORDER BY id;
SELECT ttl.set_default_ttl('c_on', 3600);
SELECT id FROM c_on_live ORDER BY id;
-- NULL turns TTL off: item ttls are ignored
SET ttl.now_override = '2026-01-01 01:00:00+00';
SELECT id FROM c_on_live ORDER BY id;
SELECT ttl.set_default_ttl('c_on', NULL);
SELECT id FROM c_on_live ORDER BY id;
SELECT default_ttl FROM ttl.containers WHERE container = 'c_on'::regclass;
-- rule 1: bad defaults are rejected and nothing changes
SELECT ttl.set_default_ttl('c_on', 0);
SELECT ttl.set_default_ttl('c_on', -2);
SELECT default_ttl FROM ttl.containers WHERE container = 'c_on'::regclass;

-- back to the real clock; a value that is not a time is refused
RESET ttl.now_override;
SELECT ttl.now() = statement_timestamp() AS real_clock;
SET ttl.now_override = 'not a time';
SET ttl.now_override = '';
SELECT ttl.now() = statement_timestamp() AS real_clock;

DROP FUNCTION live_matrix();
DROP FUNCTION hidden_equals_expired();
DROP TABLE c_off, c_on, c_60 CASCADE;
