# Retiring whole partitions (1.9) survives pg_dump/pg_restore: the mode is
# a column of ttl.registry and the history is ttl.retired_leaf, both
# configuration tables (pg_extension_config_dump) keyed by the container as
# regclass, so the restored rows name the restored container (whose OID
# differs), a detached leaf is restored as the plain table it became, a
# leaf attached to the archive (1.9, mode attach) as its partition, and
# the restored container goes on retiring its leaves.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('retire_dump');
$node->init;
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->safe_psql('src', q{
    SET ttl.now_override = '2030-01-01 00:00:00+00';
    CREATE EXTENSION ttl;
    CREATE SCHEMA "Event Log";
    CREATE TABLE "Event Log".ev (id int NOT NULL, created_at timestamptz NOT NULL, doc jsonb NOT NULL)
        PARTITION BY RANGE (created_at);
    CREATE TABLE "Event Log".ev_1201 PARTITION OF "Event Log".ev FOR VALUES FROM ('2029-12-01') TO ('2029-12-02');
    CREATE TABLE "Event Log".ev_1202 PARTITION OF "Event Log".ev FOR VALUES FROM ('2029-12-02') TO ('2029-12-03');
    SELECT ttl.enable('"Event Log".ev', 3600);
    SELECT ttl.set_retire('"Event Log".ev', 'detach');
    INSERT INTO "Event Log".ev SELECT g, '2029-12-01 12:00+00', '{}' FROM generate_series(1, 4) g;
    INSERT INTO "Event Log".ev VALUES (10, '2029-12-02 12:00+00', '{"ttl": 172800}');
    CREATE TABLE public.sess (id int NOT NULL, created_at timestamptz NOT NULL, doc jsonb NOT NULL)
        PARTITION BY RANGE (created_at);
    CREATE TABLE public.sess_a PARTITION OF public.sess FOR VALUES FROM ('2029-12-01') TO ('2029-12-02');
    SELECT ttl.enable('public.sess', 60);
    SELECT ttl.set_retire('public.sess', 'drop');
    CREATE TABLE public.arc (id int NOT NULL, created_at timestamptz NOT NULL, doc jsonb NOT NULL)
        PARTITION BY RANGE (created_at);
    CREATE TABLE public.arc_archive (id int NOT NULL, created_at timestamptz NOT NULL, doc jsonb NOT NULL)
        PARTITION BY RANGE (created_at);
    CREATE TABLE public.arc_a PARTITION OF public.arc (CHECK (created_at >= '2029-12-01' AND created_at < '2029-12-02'))
        FOR VALUES FROM ('2029-12-01') TO ('2029-12-02');
    SELECT ttl.enable('public.arc', 3600);
    SELECT ttl.set_archive('public.arc', 'public.arc_archive');
    SELECT ttl.set_retire('public.arc', 'drop');
    INSERT INTO public.arc SELECT g, '2029-12-01 12:00+00', '{}' FROM generate_series(1, 3) g;
    SET ttl.now_override = '2030-01-02 00:00:00+00';
    SELECT ttl.purge('"Event Log".ev');
    SELECT ttl.purge('public.arc');
});
my $retired = q{SELECT container, leaf, mode, retired_at, items FROM ttl.retired ORDER BY leaf};
my $modes = q{SELECT container, retire FROM ttl.containers ORDER BY container::text};
is($node->safe_psql('src', $retired),
   qq{"Event Log".ev|"Event Log".ev_1201|detach|2030-01-02 00:00:00+00|4\narc|public.arc_a|attach|2030-01-02 00:00:00+00|3},
   'the fully expired leaves were detached (one attached to its archive) and recorded');
my $before_modes = $node->safe_psql('src', $modes);
is($before_modes, qq{"Event Log".ev|detach\narc|drop\nsess|drop}, 'both modes set');

my $dump = $node->basedir . '/src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src') ],
    'pg_dump of a database with retiring containers');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), $dump ],
    'pg_restore into an empty database');

is($node->safe_psql('dst', $modes), $before_modes, 'the retire modes are restored');
is($node->safe_psql('dst', $retired), $node->safe_psql('src', $retired),
   'ttl.retired is restored');
is($node->safe_psql('dst', q{
    SELECT l.container::oid = c.oid FROM ttl.retired_leaf l
      JOIN pg_class c ON c.relname = 'ev' AND c.relnamespace = '"Event Log"'::regnamespace
     WHERE l.leaf LIKE '"Event Log".%'}),
   't', 'the restored record names the restored container');
is($node->safe_psql('dst', q{
    SELECT relispartition, (SELECT count(*) FROM "Event Log".ev_1201) FROM pg_class
     WHERE oid = '"Event Log".ev_1201'::regclass}),
   'f|4', 'the detached leaf is restored as a plain table with its rows');
is($node->safe_psql('dst', q{
    SELECT i.inhparent::regclass, (SELECT count(*) FROM public.arc_archive) FROM pg_inherits i
     WHERE i.inhrelid = 'public.arc_a'::regclass}),
   'arc_archive|3', 'the leaf attached to the archive is restored there with its rows');

# the restored container goes on retiring: ev_1202 is fully expired two days on
is($node->safe_psql('dst', q{
    SET ttl.now_override = '2030-01-05 00:00:00+00';
    SELECT ttl.purge('"Event Log".ev');
    SELECT string_agg(leaf || ':' || mode || ':' || items, ' ' ORDER BY leaf) FROM ttl.retired}),
   qq{0\n"Event Log".ev_1201:detach:4 "Event Log".ev_1202:detach:1 public.arc_a:attach:3},
   'the restored container retires its next leaf');
is($node->safe_psql('dst', q{
    SELECT leaves_retired, rows_retired FROM ttl.stats WHERE container = '"Event Log".ev'::regclass}),
   '1|1', 'counted in the restored database\'s ttl.stats');
# a dropped container takes its history along
$node->safe_psql('dst', q{DROP TABLE "Event Log".ev CASCADE});
is($node->safe_psql('dst', 'SELECT string_agg(leaf, \' \') FROM ttl.retired'), 'public.arc_a',
   'a dropped container takes its ttl.retired rows');

$node->stop;
done_testing();
