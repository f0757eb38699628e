-- ttl 1.4 -> 1.5: after 1.0, deadlines and previews (issue 14).

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION ttl UPDATE TO '1.5'" to load this file. \quit

-- ==== preview ====
-- ttl.preview and ttl.expiring (src/preview.c, src/index_count.c): figures
-- under the present and a proposed default, and the items expiring within a
-- window, from the purge index where it applies.  They run with the
-- caller's rights (SELECT on the table needed) and change nothing.

-- One row of ttl.preview (a type of its own: its column default_ttl has the
-- name of the function's argument).
CREATE TYPE ttl.preview_row AS (
    scenario text,
    default_ttl integer,
    items bigint,
    hidden bigint,
    expiring_1h bigint,
    expiring_1d bigint,
    expiring_7d bigint,
    expiring_30d bigint
);

CREATE FUNCTION ttl.preview(container regclass, default_ttl integer,
                            at timestamptz DEFAULT ttl.now())
    RETURNS SETOF ttl.preview_row
    AS 'MODULE_PATHNAME', 'ttl_preview'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION ttl.preview(regclass, integer, timestamptz) IS
    'items, hidden and expiring within 1h/1d/7d/30d at "at", under the current and a proposed default; exact, changes nothing';

CREATE FUNCTION ttl.expiring(container regclass, within interval,
                             at timestamptz DEFAULT ttl.now())
    RETURNS TABLE (doc jsonb, expires_at timestamptz)
    AS 'MODULE_PATHNAME', 'ttl_expiring'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION ttl.expiring(regclass, interval, timestamptz) IS
    'items not expired at "at" that expire within "within" after it, soonest first';
-- ==== end preview ====
