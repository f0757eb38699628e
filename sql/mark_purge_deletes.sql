-- ttl.set_mark_purge_deletes (1.9): per container, 'on', 'off' or
-- 'default' (follow ttl.mark_purge_deletes), kept in
-- ttl.registry.mark_purge_deletes (NULL for default); superuser only
-- (42501), a bad mode named (22023), nothing written on an error.  The
-- marking itself is seen through a slot in test/t/060_mark_purge.pl.  On
-- Citus the mode travels in the stamp trigger's arguments as mark=on|off.
\set SHOW_CONTEXT never
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
CREATE ROLE regress_ttl_mpd_owner;
CREATE SCHEMA mpd AUTHORIZATION regress_ttl_mpd_owner;
SET ROLE regress_ttl_mpd_owner;
CREATE TABLE mpd.docs (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE mpd.plain (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('mpd.docs', 60) IS NOT NULL AS enabled;
RESET ROLE;
CREATE FUNCTION pg_temp.mode() RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(mark_purge_deletes::text, 'NULL') FROM ttl.registry WHERE relid = 'mpd.docs'::regclass
$$;

-- the modes
SELECT pg_temp.mode() AS after_enable;
SELECT ttl.set_mark_purge_deletes('mpd.docs', 'on');
SELECT pg_temp.mode() AS after_on;
SELECT ttl.set_mark_purge_deletes('mpd.docs', 'off');
SELECT pg_temp.mode() AS after_off;
SELECT ttl.set_mark_purge_deletes('mpd.docs', 'default');
SELECT pg_temp.mode() AS after_default;
SELECT ttl.set_mark_purge_deletes('mpd.docs', 'on');

-- errors, each leaving the mode 'on' (true)
SELECT pg_temp.try($$SELECT ttl.set_mark_purge_deletes('mpd.docs', 'yes')$$) AS bad_mode;
SELECT pg_temp.try($$SELECT ttl.set_mark_purge_deletes('mpd.docs', 'ON')$$) AS bad_case;
SELECT pg_temp.try($$SELECT ttl.set_mark_purge_deletes('mpd.docs', NULL)$$) AS null_mode;
SELECT pg_temp.try($$SELECT ttl.set_mark_purge_deletes(NULL, 'on')$$) AS null_container;
SELECT pg_temp.try($$SELECT ttl.set_mark_purge_deletes('mpd.plain', 'on')$$) AS not_a_container;
SELECT pg_temp.try($$SELECT ttl.set_mark_purge_deletes(4294967295, 'on')$$) AS no_such_table;
-- the table's owner is no superuser: refused, as SET ttl.mark_purge_deletes is
SET ROLE regress_ttl_mpd_owner;
SELECT pg_temp.try($$SELECT ttl.set_mark_purge_deletes('mpd.docs', 'off')$$) AS owner_off;
SELECT pg_temp.try($$SELECT ttl.set_mark_purge_deletes('mpd.docs', 'default')$$) AS owner_default;
SELECT pg_temp.try($$SET ttl.mark_purge_deletes = off$$) AS owner_setting;
RESET ROLE;
SELECT pg_temp.mode() AS still_on;

-- the policy readers see it (the codec: a distributed container's pieces
-- carry it as mark=on|off; absent is default)
SELECT format, doc_column FROM ttl._trigger_args_decode('{format=2,doc=doc,mark=on}');
SELECT format, doc_column FROM ttl._trigger_args_decode('{format=2,doc=doc,default=60,state=active,mark=off}');
SELECT pg_temp.try($$SELECT ttl._trigger_args_decode('{format=2,doc=doc,mark=maybe}')$$) AS bad_mark;
SELECT pg_temp.try($$SELECT ttl._trigger_args_decode('{format=2,doc=doc,mark=on,mark=off}')$$) AS twice;

-- disabling forgets it; enabling again starts from default
SELECT ttl.disable('mpd.docs');
SET ROLE regress_ttl_mpd_owner;
SELECT ttl.enable('mpd.docs', 60) IS NOT NULL AS enabled_again;
RESET ROLE;
SELECT pg_temp.mode() AS after_enable_again;

DROP SCHEMA mpd CASCADE;
DROP ROLE regress_ttl_mpd_owner;
