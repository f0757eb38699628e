-- bench/sql/setup.sql: the benchmark's own objects, in schema bench.
--
-- Loaded once into the throwaway database by bench/run, after
-- CREATE EXTENSION ttl.  Contains:
--   * the document generator and a pre-generated source table (bench.src),
--   * bench.fill(): copies documents with a chosen fraction already expired,
--   * the hand-written peer (PEER-BASELINE.md): a plpgsql trigger, a
--     security_barrier view, two partial expression indexes for purge and
--     a batched DELETE procedure,
--   * the cron-style DELETE loop used against ttl containers,
--   * the lag logging trigger (the stream of short-lived items is client-side).

CREATE SCHEMA bench;

-- The clock used to pre-stamp documents: "old" documents are 30 days old
-- (expired whatever their own ttl, which is at most 14 days), "new" ones are
-- stamped now (alive for at least two days); bench.fill spreads them a little
-- further into the past (one second per 100 rows: at most ~28 hours for 10M
-- rows, so old stays expired and new stays alive).
CREATE FUNCTION bench.old_ts() RETURNS bigint LANGUAGE sql STABLE
    AS $$ SELECT floor(extract(epoch FROM now()))::bigint - 30 * 86400 $$;
CREATE FUNCTION bench.new_ts() RETURNS bigint LANGUAGE sql STABLE
    AS $$ SELECT floor(extract(epoch FROM now()))::bigint $$;

-- Container default used everywhere except where noted: 7 days.
CREATE FUNCTION bench.default_ttl() RETURNS integer LANGUAGE sql IMMUTABLE
    AS $$ SELECT 7 * 86400 $$;

-- The own ttl of document i: 30% of them have one (2..14 days), the rest
-- inherit (NULL).  bench.doc uses it, and so does row 1o's btree of the
-- purge key's values (bench/run), which must match the documents.
CREATE FUNCTION bench.own_ttl(i bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT CASE WHEN abs(hashint8(i)) % 10 < 3
            THEN 2 * 86400 + abs(hashint8(-i)) % (12 * 86400) END
$$;

-- A small document (~200 B as jsonb), without _ts, 30% with their own ttl
-- (bench.own_ttl).  nt = number of distinct tenantId values.
CREATE FUNCTION bench.doc(i bigint, nt integer) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT jsonb_build_object(
         'tenantId', 'tenant-' || lpad((i % nt)::text, 5, '0'),
         'userId', 'user-' || (i * 7919 % 1000003),
         'type', (ARRAY['order', 'session', 'event', 'cart'])[1 + i % 4],
         'status', CASE WHEN i % 3 = 0 THEN 'open' ELSE 'closed' END,
         'amount', ((i % 100000)::numeric / 100)::numeric(10, 2),
         'tags', jsonb_build_array('t' || (i % 17), 't' || (i % 23)),
         'note', md5(i::text))
    || CASE WHEN bench.own_ttl(i) IS NOT NULL
            THEN jsonb_build_object('ttl', bench.own_ttl(i))
            ELSE '{}'::jsonb END
$$;

-- bench.src(id, doc): n pre-generated documents (no _ts), ids 1..n.
CREATE FUNCTION bench.make_src(n bigint, nt integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DROP TABLE IF EXISTS bench.src;
    CREATE TABLE bench.src (id bigint PRIMARY KEY, doc jsonb NOT NULL);
    INSERT INTO bench.src SELECT i, bench.doc(i, nt) FROM generate_series(1, n) i;
    ANALYZE bench.src;
END
$$;

-- Copy n documents into tbl (columns id, doc) with ids id_offset+1..id_offset+n,
-- pre-stamped with _ts: the first round(n * expired_frac) of them about 30
-- days old (expired), the rest recent.  _ts grows with the id, by one second
-- every rows_per_second rows, as if the rows had been inserted in a steady
-- stream (rows_per_second = 0: all expired rows share one _ts and all live
-- rows another, as after one bulk INSERT).  Reuses bench.src cyclically when
-- n is larger than it.  With the ttl trigger enabled on tbl, _ts is
-- re-stamped (use ttl.now_override then, or disable the trigger).
CREATE FUNCTION bench.fill(tbl regclass, n bigint, expired_frac float8,
                           id_offset bigint DEFAULT 0,
                           rows_per_second integer DEFAULT 100) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    srcn  bigint := (SELECT max(id) FROM bench.src);
    n_old bigint := round(n * expired_frac);
    done  bigint := 0;
    chunk bigint;
BEGIN
    WHILE done < n LOOP
        chunk := least(srcn, n - done);
        -- i = position 1..n of the row in this fill
        EXECUTE format(
            'INSERT INTO %s (id, doc) SELECT s.id + $1, s.doc || jsonb_build_object(''_ts'','
            ' CASE WHEN s.id + $2 <= $3'
            '      THEN bench.old_ts() - CASE WHEN $5 > 0 THEN ($3 - (s.id + $2)) / $5 ELSE 0 END'
            '      ELSE bench.new_ts() - CASE WHEN $5 > 0 THEN ($6 - (s.id + $2)) / $5 ELSE 0 END END)'
            ' FROM bench.src s WHERE s.id <= $4', tbl)
            USING id_offset + done, done, n_old, chunk, rows_per_second, n;
        done := done + chunk;
    END LOOP;
    RETURN n;
END
$$;

-- A deadline container's rows (rule 9, ttl 1.5): n rows from bench.src,
-- all stamped now (none expired by their lifetime), the first n_past past
-- their "expiresAt" deadline (a day ago, one second per 100 rows), the
-- others due in a day.  Written with the stamp trigger disabled or before
-- ttl.enable.
CREATE FUNCTION bench.fill_deadline(tbl regclass, n bigint, n_past bigint,
                                    id_offset bigint DEFAULT 0) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    srcn  bigint := (SELECT max(id) FROM bench.src);
    now_s bigint := bench.new_ts();
    done  bigint := 0;
    chunk bigint;
BEGIN
    WHILE done < n LOOP
        chunk := least(srcn, n - done);
        EXECUTE format(
            'INSERT INTO %s (id, doc) SELECT s.id + $1, (s.doc - ''ttl'') || jsonb_build_object(''_ts'', $5,'
            ' ''expiresAt'', CASE WHEN s.id + $2 <= $3 THEN $5 - 86400 + (s.id + $2) / 100'
            '                     ELSE $5 + 86400 + (s.id + $2) / 100 END)'
            ' FROM bench.src s WHERE s.id <= $4', tbl)
            USING id_offset + done, done, n_past, chunk, now_s;
        done := done + chunk;
    END LOOP;
    RETURN n;
END
$$;

-- ---------------------------------------------------------------------------
-- The hand-written peer.
-- ---------------------------------------------------------------------------
CREATE TABLE bench.peer_cfg (relid regclass PRIMARY KEY, dflt integer);

-- BEFORE INSERT OR UPDATE: validate the root ttl, stamp _ts.
CREATE FUNCTION bench.peer_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    t jsonb;
    v numeric;
BEGIN
    IF NEW.doc IS NULL OR jsonb_typeof(NEW.doc) <> 'object' THEN
        RAISE EXCEPTION 'document of container %.% is not a JSON object', TG_TABLE_SCHEMA, TG_TABLE_NAME
            USING ERRCODE = '22023';
    END IF;
    t := NEW.doc -> 'ttl';
    IF t IS NOT NULL THEN
        IF jsonb_typeof(t) <> 'number' THEN
            RAISE EXCEPTION 'invalid ttl in container %.%: %', TG_TABLE_SCHEMA, TG_TABLE_NAME, t
                USING ERRCODE = '22023';
        END IF;
        v := t::numeric;
        IF v <> trunc(v) OR NOT (v = -1 OR v BETWEEN 1 AND 2147483647) THEN
            RAISE EXCEPTION 'invalid ttl in container %.%: %', TG_TABLE_SCHEMA, TG_TABLE_NAME, t
                USING ERRCODE = '22023';
        END IF;
    END IF;
    NEW.doc := jsonb_set(NEW.doc, '{_ts}', to_jsonb(extract(epoch FROM now())::bigint));
    RETURN NEW;
END
$$;

-- Install the peer on a table with columns (id, doc):
--   trigger: the plpgsql trigger;  indexes: the two partial purge indexes;
--   view: <table>_peer_live (security_barrier; the default and "now" are read
--   once per query, in a materialized CTE read by InitPlans).
CREATE FUNCTION bench.peer_enable(tbl regclass, default_ttl integer,
                                  with_trigger boolean DEFAULT true,
                                  with_indexes boolean DEFAULT true,
                                  with_view boolean DEFAULT true) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    nm text := (SELECT relname FROM pg_class WHERE oid = tbl);
BEGIN
    INSERT INTO bench.peer_cfg VALUES (tbl, default_ttl)
        ON CONFLICT (relid) DO UPDATE SET dflt = EXCLUDED.dflt;
    IF with_trigger THEN
        EXECUTE format('CREATE TRIGGER peer_stamp BEFORE INSERT OR UPDATE ON %s'
                       ' FOR EACH ROW EXECUTE FUNCTION bench.peer_stamp()', tbl);
    END IF;
    IF with_indexes THEN
        -- items inheriting the default: key _ts
        EXECUTE format('CREATE INDEX %I ON %s (((doc ->> ''_ts'')::bigint))'
                       ' WHERE (doc -> ''ttl'') IS NULL', nm || '_peer_ts_idx', tbl);
        -- items with their own positive ttl: key _ts + ttl
        EXECUTE format('CREATE INDEX %I ON %s ((((doc ->> ''_ts'')::bigint + (doc ->> ''ttl'')::integer)))'
                       ' WHERE (doc ->> ''ttl'')::integer > 0', nm || '_peer_exp_idx', tbl);
    END IF;
    IF with_view THEN
        EXECUTE format($v$
            CREATE VIEW %I WITH (security_barrier) AS
            WITH s AS MATERIALIZED (
                SELECT c.dflt AS d, extract(epoch FROM now())::bigint AS now_s
                  FROM bench.peer_cfg c WHERE c.relid = %L::regclass)
            SELECT t.* FROM %s t
             WHERE (SELECT s.d FROM s) IS NULL
                OR coalesce((t.doc ->> 'ttl')::integer, (SELECT s.d FROM s)) <= 0
                OR (t.doc ->> '_ts')::bigint
                   + coalesce((t.doc ->> 'ttl')::integer, (SELECT s.d FROM s))
                   > (SELECT s.now_s FROM s)
            $v$, nm || '_peer_live', tbl::oid, tbl);
    END IF;
END
$$;

-- Batched DELETE of expired items with commits between batches (the peer's
-- purge, and what pg_cron users schedule).  pred_inherited / pred_own are
-- WHERE clauses with $1 = cutoff (now - default for inherited, now for own);
-- one batch = DELETE ... WHERE ctid = ANY(ARRAY(SELECT ctid ... LIMIT batch)).
-- max_seconds (optional) stops it after the first batch that ends later.
-- Reports the number of rows deleted with RAISE NOTICE.
CREATE PROCEDURE bench.batched_delete(tbl regclass, pred_inherited text, pred_own text,
                                      default_ttl integer, batch integer,
                                      max_seconds float8 DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
    now_s bigint := floor(extract(epoch FROM now()))::bigint;
    stop  timestamptz := clock_timestamp() + coalesce(max_seconds, 1e9) * interval '1 s';
    n     bigint;
    total bigint := 0;
BEGIN
    IF default_ttl > 0 THEN
        LOOP
            EXECUTE format('DELETE FROM %s WHERE ctid = ANY(ARRAY(SELECT ctid FROM %s WHERE %s LIMIT $2))',
                           tbl, tbl, pred_inherited) USING now_s - default_ttl, batch;
            GET DIAGNOSTICS n = ROW_COUNT;
            total := total + n;
            COMMIT;
            EXIT WHEN n = 0 OR clock_timestamp() > stop;
        END LOOP;
    END IF;
    WHILE clock_timestamp() <= stop LOOP
        EXECUTE format('DELETE FROM %s WHERE ctid = ANY(ARRAY(SELECT ctid FROM %s WHERE %s LIMIT $2))',
                       tbl, tbl, pred_own) USING now_s, batch;
        GET DIAGNOSTICS n = ROW_COUNT;
        total := total + n;
        COMMIT;
        EXIT WHEN n = 0;
    END LOOP;
    RAISE NOTICE 'deleted %', total;
END
$$;

-- The expired predicate of a ttl container, written with ttl's own index
-- expressions (so the purge index serves it): from 1.3 the two key ranges
-- of ttl.doc_purge_key (src/purge_key.c: inherited items at 2^62 + _ts,
-- items with their own ttl at -2^62 + _ts + ttl, each within +-2^61),
-- before that the two partial indexes of ttl.doc_ts and ttl.doc_expiry.
CREATE FUNCTION bench.ttl_pred_inherited() RETURNS text LANGUAGE sql STABLE
    AS $$ SELECT CASE WHEN pg_catalog.to_regprocedure('ttl.doc_purge_key(jsonb)') IS NOT NULL
                      THEN 'ttl.doc_purge_key(doc) BETWEEN 2305843009213693952 AND 4611686018427387904 + $1'
                      ELSE 'ttl.doc_ttl(doc) IS NULL AND ttl.doc_ts(doc) <= $1' END $$;
CREATE FUNCTION bench.ttl_pred_own() RETURNS text LANGUAGE sql STABLE
    AS $$ SELECT CASE WHEN pg_catalog.to_regprocedure('ttl.doc_purge_key(jsonb)') IS NOT NULL
                      THEN 'ttl.doc_purge_key(doc) BETWEEN -6917529027641081856 AND -4611686018427387904 + $1'
                      ELSE 'ttl.doc_expiry(doc) <= $1' END $$;
CREATE FUNCTION bench.peer_pred_inherited() RETURNS text LANGUAGE sql IMMUTABLE
    AS $$ SELECT '(doc -> ''ttl'') IS NULL AND (doc ->> ''_ts'')::bigint <= $1' $$;
CREATE FUNCTION bench.peer_pred_own() RETURNS text LANGUAGE sql IMMUTABLE
    AS $$ SELECT '(doc ->> ''ttl'')::integer > 0 AND (doc ->> ''_ts'')::bigint + (doc ->> ''ttl'')::integer <= $1' $$;

-- ---------------------------------------------------------------------------
-- Worker lag: expiry -> physical deletion, per deleted row.
-- ---------------------------------------------------------------------------
CREATE TABLE bench.lag_log (
    id         bigint,
    expired_at timestamptz,
    deleted_at timestamptz
);

-- Statement-level AFTER DELETE with a transition table; everything is
-- schema-qualified because purge runs with search_path = pg_catalog, pg_temp.
CREATE FUNCTION bench.log_lag() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bench.lag_log
    SELECT o.id,
           pg_catalog.to_timestamp(((o.doc ->> '_ts')::bigint + (o.doc ->> 'ttl')::integer)::float8),
           pg_catalog.clock_timestamp()
      FROM old_rows o;
    RETURN NULL;
END
$$;

-- The steady stream itself is generated client-side (report.py stream | psql):
-- one statement per tick, because inside a procedure every COMMIT keeps the
-- CALL's statement timestamp, so every item would get the same _ts.
