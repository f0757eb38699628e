-- A row that fails never stops the rest, in the background worker (run
-- with the library preloaded, ttl.naptime = 1: REGRESS_PRELOAD).  1,000 due
-- rows, one of whose ids the archive already holds: the worker purges the
-- 999 others within a few naptimes, records the one, and does not back the
-- container off.  Waits are bounded polls (60 s at most).
CREATE FUNCTION pfw_wait(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    ok boolean;
BEGIN
    FOR i IN 1 .. 300 LOOP
        EXECUTE q INTO ok;
        IF ok THEN
            RETURN true;
        END IF;
        PERFORM pg_sleep(0.2);
    END LOOP;
    RETURN false;
END
$$;
-- written long ago (the worker's clock is the real one)
SET ttl.now_override = '2020-01-01 00:00:00+00';
CREATE TABLE pfw (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('pfw', 60);
SELECT ttl.pause('pfw');
CREATE TABLE pfw_arch (LIKE pfw INCLUDING ALL);
SELECT ttl.set_archive('pfw', 'pfw_arch');
INSERT INTO pfw SELECT g, '{}' FROM generate_series(1, 1000) g;
INSERT INTO pfw_arch VALUES (500, '{"earlier": true}');
RESET ttl.now_override;
SELECT ttl.resume('pfw');
SELECT pfw_wait('SELECT count(*) = 1 FROM pfw') AS purged_999;
SELECT id FROM pfw;
SELECT count(*) AS archived FROM pfw_arch;
SELECT pfw_wait('SELECT count(*) = 1 FROM ttl.purge_failures WHERE container = ''pfw''::regclass')
       AS recorded;
SELECT key, sqlstate, attempts >= 1 AS attempted, retry_after > first_failed_at AS waits
  FROM ttl.purge_failures WHERE container = 'pfw'::regclass;
-- the container itself is not backed off: only the row waits
SELECT overruns, retry_after IS NULL AS not_backed_off, rows_purged
  FROM ttl.stats WHERE container = 'pfw'::regclass;
SELECT ttl.pause('pfw');
DROP TABLE pfw, pfw_arch CASCADE;
DROP FUNCTION pfw_wait(text);
