/* ttl--1.6--1.7.sql: 1.6 -> 1.7, security round 2 (issue 25) and rule 10 (issue 26). */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.7'" to load this file. \quit

-- Every function below that runs SQL pins search_path = pg_catalog, pg_temp
-- and names its operators schema-qualified: see README, "Security model".

-- ---------------------------------------------------------------------------
-- section: one gate for a user table's definitions; internal functions
-- revoked from PUBLIC (issue 25, item 1)
-- ---------------------------------------------------------------------------


-- ---------------------------------------------------------------------------
-- section: the visit bound, the in-flight record, durable back-off
-- (issue 25, item 2)
-- ---------------------------------------------------------------------------


-- ---------------------------------------------------------------------------
-- section: schema and table names that need quoting (issue 25, item 3)
-- ---------------------------------------------------------------------------


-- ---------------------------------------------------------------------------
-- section: last_error, RLS in stats/backlog, marking, regclass errors
-- (issue 25, item 4)
-- ---------------------------------------------------------------------------


-- ---------------------------------------------------------------------------
-- section: rule 10, an expired item is gone for writes too (issue 26)
-- ---------------------------------------------------------------------------

-- A write that conflicts with an expired item on a unique key replaces it
-- (SPEC rule 10): the stamp trigger (C) deletes the item as a purge delete
-- before the unique check.  This table is also how the library knows the
-- database is at 1.7: rule 10 takes effect with this update.
--
-- Each replacement delete is counted here, one row each, by the writer, as
-- the extension's owner.  No unique key: writers never wait for each other
-- (one ttl.purge_stats row per container would queue every replacing writer
-- behind the last one until its commit, and could deadlock writers of two
-- containers).  ttl.stats adds these rows; the purge folds them into
-- ttl.purge_stats whenever it records its own deletes.
CREATE TABLE ttl.purge_stats_pending (
    relid       oid NOT NULL,
    rows_purged bigint NOT NULL,
    purged_at   timestamptz NOT NULL
);
CREATE INDEX purge_stats_pending_relid ON ttl.purge_stats_pending (relid);
COMMENT ON TABLE ttl.purge_stats_pending IS
    'rule 10 replacement deletes not yet folded into ttl.purge_stats; read ttl.stats';
REVOKE ALL ON ttl.purge_stats_pending FROM PUBLIC;
GRANT SELECT ON ttl.purge_stats_pending TO PUBLIC;

-- rows_purged and last_purge_at count the replacements not yet folded.
CREATE OR REPLACE VIEW ttl.stats AS
SELECT r.relid                        AS container,
       coalesce(s.rows_purged, 0) OPERATOR(pg_catalog.+) coalesce(p.rows_purged, 0)
                                      AS rows_purged,
       GREATEST(s.last_purge_at, p.purged_at) AS last_purge_at,
       s.last_error,
       s.last_error_at,
       b.expired                      AS expired_backlog,
       b.oldest_expired_at,
       ttl.now() OPERATOR(pg_catalog.-) b.oldest_expired_at AS oldest_expired_age,
       r.held_since,
       r.hold_reason
  FROM ttl.registry r
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  LEFT JOIN ttl.purge_stats s ON s.relid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
  LEFT JOIN LATERAL (SELECT pg_catalog.sum(q.rows_purged)::pg_catalog.int8 AS rows_purged,
                            pg_catalog.max(q.purged_at) AS purged_at
                       FROM ttl.purge_stats_pending q
                      WHERE q.relid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid) p ON true
  CROSS JOIN LATERAL ttl._backlog(r.relid) b;
COMMENT ON VIEW ttl.stats IS 'purge statistics per container (rule 10 replacements included); held_since, hold_reason: the restore guard''s hold';

-- The container setting of rule 10 (default on).  Off, a write conflicts
-- with an expired item that holds its key (23505, ON CONFLICT sees it) until
-- the purge removes it, as before 1.7, and costs no probe of the unique
-- indexes: for pure append workloads whose keys are never written twice.
-- Owner only (C); not on a Citus distributed container (0A000).
ALTER TABLE ttl.registry ADD COLUMN replace_expired boolean NOT NULL DEFAULT true;

CREATE FUNCTION ttl.set_replace_expired(container regclass, replace_expired boolean) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_set_replace_expired'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.set_replace_expired(regclass, boolean) IS
    'rule 10 for a container: true (the default) a write replaces an expired item holding its key; false it conflicts until the purge';

CREATE OR REPLACE VIEW ttl.containers AS
SELECT r.relid        AS container,
       r.doc_column,
       r.default_ttl,
       r.live_view,
       r.paused,
       r.enabled_at,
       r.append_only,
       r.deadline_property,
       CASE WHEN NOT r.append_only THEN 'btree'
            WHEN r.index_free THEN 'none'
            ELSE 'brin' END::pg_catalog.text AS purge_index,
       r.replace_expired
  FROM ttl.registry r;
COMMENT ON VIEW ttl.containers IS 'one row per ttl container';

-- A Citus node counts the replacements of its shards in
-- ttl.purge_stats_pending (the shard's OID) until its purge folds them:
-- ttl.distributed_stats (through this function) adds them, as ttl.stats does.
CREATE OR REPLACE FUNCTION ttl._placement_stats(container regclass,
                                                OUT rows_purged bigint, OUT last_purge_at timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
WITH p AS (SELECT l::pg_catalog.oid AS relid FROM ttl._local_placements(container) l),
     s AS (SELECT s.rows_purged, s.last_purge_at FROM p
             JOIN ttl.purge_stats s ON s.relid OPERATOR(pg_catalog.=) p.relid
           UNION ALL
           SELECT q.rows_purged, q.purged_at FROM p
             JOIN ttl.purge_stats_pending q ON q.relid OPERATOR(pg_catalog.=) p.relid)
SELECT COALESCE(pg_catalog.sum(s.rows_purged), 0)::pg_catalog.int8,
       pg_catalog.max(s.last_purge_at)
  FROM s
$$;
