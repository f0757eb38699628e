-- Retiring whole partitions into the container's archive (1.9,
-- src/purge/retire_archive.c): a retired leaf is attached to a partitioned
-- archive when ATTACH reads no row of it, else its rows are copied into
-- the archive and the leaf dropped; an archive of another role's keeps the
-- leaf, and the row purge records why.  The clock is ttl.now_override.
\set SHOW_CONTEXT never
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE ROLE regress_ttl_ra_owner;
CREATE ROLE regress_ttl_ra_other;
CREATE SCHEMA ra AUTHORIZATION regress_ttl_ra_owner;
GRANT USAGE, CREATE ON SCHEMA ra TO regress_ttl_ra_other;
SET ROLE regress_ttl_ra_owner;

-- A container partitioned by a write-time column, its archive partitioned
-- the same way with the same columns and the same index, holding a
-- partition for 2029-12-02 and one for 2029-12-05 already.
--   a1: a CHECK constraint implies its bound: attached (ATTACH scans nothing)
--   a2: no such constraint: copied into the archive, then dropped
--   a3: an item that never expires: kept (its expired one archived by rows)
--   a5: a CHECK constraint, but its range is taken in the archive: the
--       ATTACH fails, is rolled back, and the rows are copied
CREATE TABLE ra.s (
    id bigint NOT NULL,
    created_at timestamptz NOT NULL,
    doc jsonb NOT NULL
) PARTITION BY RANGE (created_at);
CREATE TABLE ra.s_a1 PARTITION OF ra.s (
    CONSTRAINT s_a1_bound CHECK (created_at >= '2029-12-01' AND created_at < '2029-12-02'))
    FOR VALUES FROM ('2029-12-01') TO ('2029-12-02');
CREATE TABLE ra.s_a2 PARTITION OF ra.s FOR VALUES FROM ('2029-12-02') TO ('2029-12-03');
CREATE TABLE ra.s_a3 PARTITION OF ra.s FOR VALUES FROM ('2029-12-03') TO ('2029-12-04');
CREATE TABLE ra.s_a5 PARTITION OF ra.s (
    CONSTRAINT s_a5_bound CHECK (created_at >= '2029-12-05' AND created_at < '2029-12-06'))
    FOR VALUES FROM ('2029-12-05') TO ('2029-12-06');
CREATE INDEX s_id ON ra.s (id);
CREATE TABLE ra.s_arch (
    id bigint NOT NULL,
    created_at timestamptz NOT NULL,
    doc jsonb NOT NULL
) PARTITION BY RANGE (created_at);
CREATE TABLE ra.s_arch_2 PARTITION OF ra.s_arch FOR VALUES FROM ('2029-12-02') TO ('2029-12-03');
CREATE TABLE ra.s_arch_3 PARTITION OF ra.s_arch FOR VALUES FROM ('2029-12-03') TO ('2029-12-04');
CREATE TABLE ra.s_arch_5 PARTITION OF ra.s_arch FOR VALUES FROM ('2029-12-05') TO ('2029-12-06');
CREATE INDEX s_arch_id ON ra.s_arch (id);
SELECT ttl.enable('ra.s', 3600);
SELECT ttl.set_archive('ra.s', 'ra.s_arch');
SELECT ttl.set_retire('ra.s', 'drop');
INSERT INTO ra.s SELECT g, '2029-12-01 12:00+00', jsonb_build_object('n', g) FROM generate_series(1, 40) g;
INSERT INTO ra.s SELECT 100 + g, '2029-12-02 12:00+00', jsonb_build_object('n', g) FROM generate_series(1, 30) g;
INSERT INTO ra.s VALUES (201, '2029-12-03 12:00+00', '{"ttl": -1}'), (202, '2029-12-03 12:00+00', '{}');
INSERT INTO ra.s SELECT 500 + g, '2029-12-05 12:00+00', jsonb_build_object('n', g) FROM generate_series(1, 5) g;
RESET ROLE;
CREATE TEMP TABLE before AS SELECT id, doc FROM ra.s;

SET ttl.now_override = '2030-01-02 00:00:00+00';
SELECT ttl.purge('ra.s');
-- a1 is a partition of the archive now; a2 and a5 are gone, their rows in
-- the archive's partitions; a3 stays, its expired item purged by rows
-- (into the archive too)
SELECT c.relname, i.inhparent::regclass AS parent
  FROM pg_class c LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
 WHERE c.relname ~ '^s_(a|arch_)' AND c.relnamespace = 'ra'::regnamespace AND c.relkind = 'r'
 ORDER BY 1;
SELECT leaf, mode, items FROM ttl.retired WHERE container = 'ra.s'::regclass ORDER BY leaf;
SELECT rows_purged, leaves_retired, rows_retired, last_error FROM ttl.stats WHERE container = 'ra.s'::regclass;
-- rows archived = rows removed: every row is in the container or in the
-- archive, once, unchanged (an attached row keeps its _ts)
SELECT (SELECT count(*) FROM ra.s) AS left_in_container,
       (SELECT count(*) FROM ra.s_arch) AS archived,
       (SELECT count(*) FROM before) AS before;
SELECT count(*) AS lost_or_changed FROM before b
 WHERE (SELECT count(*) FROM ra.s x WHERE x.id = b.id AND x.doc = b.doc)
     + (SELECT count(*) FROM ra.s_arch x WHERE x.id = b.id AND x.doc = b.doc) <> 1;
SELECT tableoid::regclass AS part, count(*) FROM ra.s_arch GROUP BY 1 ORDER BY 1;

-- an archive with an INSERT trigger: attached rows would skip it, so a
-- leaf that could be attached is copied, and the trigger sees each row
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET ROLE regress_ttl_ra_owner;
CREATE TABLE ra.s_a6 PARTITION OF ra.s (
    CONSTRAINT s_a6_bound CHECK (created_at >= '2029-12-06' AND created_at < '2029-12-07'))
    FOR VALUES FROM ('2029-12-06') TO ('2029-12-07');
CREATE TABLE ra.s_arch_6 PARTITION OF ra.s_arch FOR VALUES FROM ('2029-12-06') TO ('2029-12-07');
CREATE TABLE ra.seen (id bigint);
CREATE FUNCTION ra.note() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO ra.seen VALUES (NEW.id); RETURN NEW; END$$;
CREATE TRIGGER note BEFORE INSERT ON ra.s_arch FOR EACH ROW EXECUTE FUNCTION ra.note();
INSERT INTO ra.s SELECT 600 + g, '2029-12-06 12:00+00', '{}' FROM generate_series(1, 6) g;
RESET ROLE;
SET ttl.now_override = '2030-01-02 00:00:00+00';
SELECT ttl.purge('ra.s');
SELECT to_regclass('ra.s_a6') AS a6, (SELECT count(*) FROM ra.seen) AS seen,
       (SELECT count(*) FROM ra.s_arch_6) AS archived;
SELECT leaf, mode, items FROM ttl.retired WHERE leaf = 'ra.s_a6';

-- an archive (here one of its partitions) of another role's: the leaf is
-- not retired (ATTACH needs to own both tables, the copy inserts as the
-- container's owner); the row purge refuses to archive into it, recorded
SET ttl.now_override = '2030-01-01 00:00:00+00';
SET ROLE regress_ttl_ra_owner;
CREATE TABLE ra.s_a7 PARTITION OF ra.s (
    CONSTRAINT s_a7_bound CHECK (created_at >= '2029-12-07' AND created_at < '2029-12-08'))
    FOR VALUES FROM ('2029-12-07') TO ('2029-12-08');
INSERT INTO ra.s SELECT 700 + g, '2029-12-07 12:00+00', '{}' FROM generate_series(1, 4) g;
RESET ROLE;
ALTER TABLE ra.s_arch_6 OWNER TO regress_ttl_ra_other;
SET ttl.now_override = '2030-01-02 00:00:00+00';
CALL ttl.run_purge();
SELECT to_regclass('ra.s_a7') IS NOT NULL AS a7_kept, (SELECT count(*) FROM ra.s_a7) AS a7_items,
       (SELECT i.inhparent::regclass FROM pg_inherits i WHERE i.inhrelid = 'ra.s_a7'::regclass) AS parent;
SELECT count(*) AS a7_retired FROM ttl.retired WHERE leaf = 'ra.s_a7';
SELECT last_error FROM ttl.stats WHERE container = 'ra.s'::regclass;
-- the owner's again: the next purge attaches it
ALTER TABLE ra.s_arch_6 OWNER TO regress_ttl_ra_owner;
DROP TRIGGER note ON ra.s_arch;
SELECT ttl.purge('ra.s');
SELECT leaf, mode, items FROM ttl.retired WHERE leaf = 'ra.s_a7';

RESET ttl.now_override;
DROP SCHEMA ra CASCADE;
DROP ROLE regress_ttl_ra_owner;
DROP ROLE regress_ttl_ra_other;
