# Legal holds (issue 32) survive pg_dump/pg_restore: ttl.legal_hold is a
# configuration table keyed by the container as regclass, so each restored
# hold names the restored table (whose OID differs), and purge keeps its
# items there.  The floors past held rows (ttl.legal_hold_floor) are not
# dumped: the restored database walks the held rows once.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('hold_dump');
$node->init;
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->safe_psql('src', q{
    SET ttl.now_override = '2026-01-01 00:00:00+00';
    CREATE EXTENSION ttl;
    CREATE SCHEMA "Case Files";
    CREATE TABLE "Case Files".docs (id int PRIMARY KEY, doc jsonb NOT NULL);
    SELECT ttl.enable('"Case Files".docs', 60);
    INSERT INTO "Case Files".docs
    SELECT g, jsonb_build_object('case', CASE WHEN g <= 3 THEN 'X' ELSE 'Y' END) FROM generate_series(1, 10) g;
    SELECT ttl.set_legal_hold('"Case Files".docs', 'case X', '{"case": "X"}');
    SET ttl.now_override = '2026-01-01 01:00:00+00';
    SELECT ttl.purge('"Case Files".docs', 100);
});
is($node->safe_psql('src', 'SELECT count(*) FROM ttl.legal_hold_floor'), '2',
    'the source keeps floors past the held rows');

# other tables first, so that the restored container gets another OID
$node->safe_psql('dst', 'CREATE TABLE filler1 (a int); CREATE TABLE filler2 (a int); CREATE TABLE filler3 (a int)');
my $dump = $node->basedir . '/src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src') ],
    'pg_dump of a database with legal holds');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), $dump ],
    'pg_restore into another database');

isnt($node->safe_psql('dst', q{SELECT '"Case Files".docs'::regclass::oid}),
    $node->safe_psql('src', q{SELECT '"Case Files".docs'::regclass::oid}),
    'the restored container has another OID');
is($node->safe_psql('dst', q{SELECT container, name, match, held_expired FROM ttl.legal_holds}),
    qq{"Case Files".docs|case X|{"case": "X"}|3},
    'the hold is restored and names the restored table');
is($node->safe_psql('dst', 'SELECT count(*) FROM ttl.legal_hold_floor'), '0',
    'floors are not restored');
is($node->safe_psql('dst', q{
    SET ttl.now_override = '2026-01-01 02:00:00+00';
    SELECT ttl.purge('"Case Files".docs', 100);
    SELECT string_agg(id::text, ',' ORDER BY id) FROM "Case Files".docs}), "0\n1,2,3",
    'purge keeps the held items in the restored database');
my ($ret, $out, $err) = $node->psql('dst', q{SELECT ttl.disable('"Case Files".docs')});
isnt($ret, 0, 'ttl.disable is refused there too');
like($err, qr/has legal holds: 'case X'/, 'naming the hold');
$node->safe_psql('dst', q{DROP TABLE "Case Files".docs CASCADE});
is($node->safe_psql('dst', 'SELECT count(*) FROM ttl.legal_hold'), '0',
    'dropping the restored table drops its hold');

$node->stop;
done_testing();
