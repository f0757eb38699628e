# The registry survives pg_dump/pg_restore (pg_extension_config_dump), and
# so do the documents' _ts: restored containers keep their policy, their
# items keep their age, the trigger, view and purge keep working.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dump');
$node->init;
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->safe_psql('src', q{
    SET ttl.now_override = '2026-01-01 00:00:00+00';
    CREATE EXTENSION ttl;
    CREATE SCHEMA app;
    CREATE TABLE app.sessions (id text PRIMARY KEY, doc jsonb NOT NULL);
    SELECT ttl.enable('app.sessions', 3600);
    INSERT INTO app.sessions VALUES ('a', '{"u": 1}'), ('b', '{"u": 2, "ttl": 60}'),
                                    ('c', '{"u": 3, "ttl": -1}');
    CREATE TABLE public.cache (k int PRIMARY KEY, body jsonb);
    SELECT ttl.enable('public.cache', -1, 'body');
    INSERT INTO public.cache VALUES (1, '{"ttl": 10}'), (2, '{}');
    SELECT ttl.pause('public.cache');
    SELECT ttl.set_append_only('public.cache', true);
    CREATE TABLE app.log (id int PRIMARY KEY, doc jsonb NOT NULL);
    SELECT ttl.enable('app.log', 120);
    SELECT ttl.set_append_only('app.log', true, 'none');
    INSERT INTO app.log SELECT g, jsonb_build_object('n', g) FROM generate_series(1, 5) g;
    -- 1.8: an archive, kept in the registry as a regclass (by name in the dump)
    CREATE SCHEMA "Arch";
    CREATE TABLE "Arch"."Log Archive" (id int, doc jsonb NOT NULL, archived_at timestamptz DEFAULT now());
    SELECT ttl.set_archive('app.log', '"Arch"."Log Archive"');
    GRANT SELECT ON app.sessions_live TO PUBLIC;
    -- 1.9: a purge window of its own, kept in the registry
    SELECT ttl.set_purge_window('app.sessions', '22:00-02:00, 12:00-13:00 Europe/Berlin');
    -- 1.9: the marking of purge deletes per container (NULL: the setting's)
    SELECT ttl.set_mark_purge_deletes('app.sessions', 'on');
    SELECT ttl.set_mark_purge_deletes('app.log', 'off');
});
my $marks = q{SELECT string_agg(relid::text || '=' || coalesce(mark_purge_deletes::text, 'default'), ','
                                ORDER BY relid::text) FROM ttl.registry};

my $containers = q{SELECT container, doc_column, default_ttl, live_view, paused, append_only, purge_index, archive
                     FROM ttl.containers ORDER BY container::text};
my $docs = q{SELECT string_agg(id || '=' || doc::text, ' ' ORDER BY id) FROM app.sessions};
my $before_containers = $node->safe_psql('src', $containers);
my $before_docs = $node->safe_psql('src', $docs);

my $dump = $node->basedir . '/src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src') ],
    'pg_dump of a database with ttl containers');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), $dump ],
    'pg_restore into an empty database');

is($node->safe_psql('dst', $containers), $before_containers,
    'registry restored: containers, columns, defaults, views, pause state');
is($node->safe_psql('dst', $marks), 'app.log=false,app.sessions=true,cache=default',
    'the marking of purge deletes per container restored (1.9)');
is($node->safe_psql('dst', $docs), $before_docs,
    'documents restored with their original _ts (the trigger is created after the data)');

# the restored registry points at the restored objects
is($node->safe_psql('dst', q{
    SELECT count(*) FROM ttl.registry r
      JOIN pg_class t ON t.oid = r.relid
      JOIN pg_class v ON v.oid = r.live_view}), '3',
    'registry references the restored table and view');
is($node->safe_psql('dst', q{
    SELECT count(*) FROM pg_index
     WHERE obj_description(indexrelid, 'pg_class') = 'ttl purge index'}), '2',
    'purge indexes restored, still marked as ours');
is($node->safe_psql('dst', q{
    SELECT string_agg(c.relname || ':' || a.amname, ',' ORDER BY c.relname) FROM pg_index i
      JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
     WHERE obj_description(i.indexrelid, 'pg_class') = 'ttl purge index'}),
    'cache_ttl_brin_idx:brin,sessions_ttl_purge_idx:btree',
    'one purge index per container: the btree, and BRIN for the append-only one (none for the index-free one)');
is($node->safe_psql('dst', q{SELECT purge_index FROM ttl.containers WHERE container = 'app.log'::regclass}),
    'none', 'the index-free container is restored index-free');
is($node->safe_psql('dst', q{SELECT relid::text || ' ' || purge_window FROM ttl.registry WHERE purge_window IS NOT NULL}),
    'app.sessions 22:00-02:00, 12:00-13:00 Europe/Berlin', 'the purge window is restored with its container');
$node->safe_psql('dst', q{SELECT ttl.disable('public.cache'); SELECT ttl.enable('public.cache', -1, 'body')});
is($node->safe_psql('dst', q{SELECT count(*) FROM pg_index WHERE indrelid = 'public.cache'::regclass}), '2',
    'disable drops the restored purge indexes, enable makes them anew');

# everything works on the restored copy
is($node->safe_psql('dst', q{
    SET ttl.now_override = '2026-01-01 00:01:00+00';
    SELECT string_agg(id, ',' ORDER BY id) FROM app.sessions_live}), 'a,c',
    'the restored view hides the item that expired at its original time');
is($node->safe_psql('dst', q{
    SET ttl.now_override = '2026-01-01 00:02:00+00';
    INSERT INTO app.sessions VALUES ('d', '{"_ts": 1}');
    SELECT doc->>'_ts' FROM app.sessions WHERE id = 'd'}), '1767225720',
    'the restored trigger stamps _ts');
my ($ret, $out, $err) = $node->psql('dst', q{INSERT INTO app.sessions VALUES ('e', '{"ttl": "x"}')});
isnt($ret, 0, 'the restored trigger validates ttl');
like($err, qr/invalid ttl in container "app.sessions"/, 'with the usual error');
is($node->safe_psql('dst', q{
    SET ttl.now_override = '2026-01-01 00:02:00+00';
    SELECT ttl.purge('app.sessions')}), '1', 'purge works on the restored container');
is($node->safe_psql('dst', q{
    SET ttl.now_override = '2026-01-01 00:02:00+00';
    SELECT ttl.purge('app.log');
    SELECT count(*) FROM app.log}), "5\n0",
    'and on the restored index-free container');
is($node->safe_psql('dst', q{
    SELECT r.archive = '"Arch"."Log Archive"'::regclass, count(a.*) FROM ttl.registry r
      JOIN pg_class t ON t.oid = r.archive
      LEFT JOIN "Arch"."Log Archive" a ON true
     WHERE r.relid = 'app.log'::regclass GROUP BY 1}), 't|5',
    'the restored archive is the restored table, and the purge moved the rows there');
$node->safe_psql('dst', q{SELECT ttl.pause('public.cache')});
is($node->safe_psql('dst', q{
    SET ttl.now_override = '2026-01-01 05:00:00+00';
    SELECT ttl.purge()}), '2', 'purge of all containers skips a paused one');
is($node->safe_psql('dst', 'SELECT count(*) FROM public.cache'), '2', 'paused container untouched');
is($node->safe_psql('dst', q{SELECT has_table_privilege('public', 'app.sessions_live', 'SELECT')}),
    't', 'grants on the live view restored');

$node->stop;
done_testing();
