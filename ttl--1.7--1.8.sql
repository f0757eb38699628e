/* ttl--1.7--1.8.sql: 1.7 -> 1.8, the purge pipeline and index ownership
 * (issue 28), rule 10's cost (issue 26), archives (issue 31) and legal
 * holds (issue 32). */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.8'" to load this file. \quit

-- Every function below that runs SQL pins search_path = pg_catalog, pg_temp
-- and names its operators schema-qualified: see docs/security.md.

-- ---------------------------------------------------------------------------
-- section: purge and deadline indexes owned by the registry (issue 28)
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- section: one policy look-up and one purge pipeline (issue 28)
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- section: rule 10's cost (issue 26)
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- section: archive before purge (issue 31)
-- ---------------------------------------------------------------------------

-- Where a container's purge moves its rows before deleting them, in the
-- same statement (C: archive.c, archive_admin.c).  A regclass like relid:
-- pg_dump writes it by name, a restore reads it back by name.  NULL: no
-- archive.  Every purge path of a container with an archive takes the
-- statement path; a purge checks the fit again before each statement.
ALTER TABLE ttl.registry ADD COLUMN archive regclass;

CREATE FUNCTION ttl.set_archive(container regclass, archive regclass) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_set_archive'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.set_archive(regclass, regclass) IS
    'every purge of the container inserts each deleted row into archive in the same transaction; NULL stops archiving';

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
       r.replace_expired,
       r.archive
  FROM ttl.registry r;
COMMENT ON VIEW ttl.containers IS 'one row per ttl container';

-- ---------------------------------------------------------------------------
-- section: legal holds (issue 32)
-- ---------------------------------------------------------------------------
