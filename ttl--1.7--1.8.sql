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

-- ---------------------------------------------------------------------------
-- section: legal holds (issue 32)
-- ---------------------------------------------------------------------------
-- Legal holds: no purge path and no rule 10 write deletes an item whose
-- document contains a standing hold's match (src/registry/legal_hold.c,
-- src/purge/purge_hold.c).  A hold binds ttl only: DELETE and TRUNCATE
-- are not stopped.  The table is keyed by the container as regclass, as
-- ttl.registry is: pg_dump writes a regclass as the table's qualified
-- name and the restore reads it back as the new table's OID, so a hold
-- follows its container through dump/restore (a key by OID would point at
-- nothing, or at another table, after a restore).  Users have no privilege
-- on it: the match can be as sensitive as the documents (a case number),
-- so ttl.legal_holds shows it only to readers who may read the table.
CREATE TABLE ttl.legal_hold (
    container regclass NOT NULL,
    name      text NOT NULL CHECK (name OPERATOR(pg_catalog.<>) ''),
    match     jsonb NOT NULL CHECK (pg_catalog.jsonb_typeof(match) OPERATOR(pg_catalog.=) 'object'),
    held_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    held_by   name NOT NULL,
    PRIMARY KEY (container, name)
);
COMMENT ON TABLE ttl.legal_hold IS 'legal holds; change them only through ttl.set_legal_hold and ttl.release_legal_hold';
SELECT pg_catalog.pg_extension_config_dump('ttl.legal_hold', '');
REVOKE ALL ON ttl.legal_hold FROM PUBLIC;

-- Where each purge key range of a container with holds starts: every due
-- row below is held or gone (src/purge/purge_hold.c).  Not dumped (a
-- restored table's first walks start at the bottom once), reset by every
-- hold change and trusted for a day from "since" (src/registry/legal_hold.c);
-- written only under the container's purge lock.
CREATE TABLE ttl.legal_hold_floor (
    container oid NOT NULL,
    kind      smallint NOT NULL,
    key       bigint NOT NULL,
    since     timestamptz NOT NULL,
    PRIMARY KEY (container, kind)
);
REVOKE ALL ON ttl.legal_hold_floor FROM PUBLIC;

CREATE FUNCTION ttl.set_legal_hold(container regclass, name text, match jsonb) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_set_legal_hold'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.set_legal_hold(regclass, text, jsonb) IS
    'keep every item whose document contains match from every purge and rule 10 replacement until released (binds ttl only, not DELETE or TRUNCATE)';

CREATE FUNCTION ttl.release_legal_hold(container regclass, name text) RETURNS void
    AS 'MODULE_PATHNAME', 'ttl_release_legal_hold'
    LANGUAGE C;
COMMENT ON FUNCTION ttl.release_legal_hold(regclass, text) IS
    'end a legal hold: its expired items are purged as usual from then on';

-- The expired items one match keeps, counted as the backlog is: NULL for
-- a caller who may not SELECT the table or to whom row-level security
-- applies there; bounded like ttl.stats (src/insight/legal_hold_backlog.c).
CREATE FUNCTION ttl._legal_hold_expired(container regclass, match jsonb) RETURNS bigint
    AS 'MODULE_PATHNAME', 'ttl_legal_hold_expired'
    LANGUAGE C STABLE STRICT;

CREATE VIEW ttl.legal_holds AS
SELECT h.container,
       h.name,
       CASE WHEN pg_catalog.has_table_privilege(h.container::pg_catalog.oid, 'SELECT')
             AND NOT pg_catalog.row_security_active(h.container)
            THEN h.match END                        AS match,
       h.held_at,
       h.held_by,
       ttl._legal_hold_expired(h.container, h.match) AS held_expired
  FROM ttl.legal_hold h
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) h.container::pg_catalog.oid;
COMMENT ON VIEW ttl.legal_holds IS
    'legal holds; match and held_expired are NULL for readers who may not read the table or to whom row-level security applies';
GRANT SELECT ON ttl.legal_holds TO PUBLIC;

-- A dropped table takes its holds and floors with it (a later table that
-- gets the same OID must not inherit them).
CREATE FUNCTION ttl._legal_hold_on_drop() RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM ttl.legal_hold h
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND h.container::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
    DELETE FROM ttl.legal_hold_floor f
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND f.container OPERATOR(pg_catalog.=) d.objid;
END
$$;
REVOKE ALL ON FUNCTION ttl._legal_hold_on_drop() FROM PUBLIC;
CREATE EVENT TRIGGER ttl_legal_hold_drop ON sql_drop EXECUTE FUNCTION ttl._legal_hold_on_drop();
