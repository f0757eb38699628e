# Rule 9 (issue 14) with the background worker and across a dump: the
# worker purges items past their deadline (also pinned ones, "ttl": -1) in
# keyset batches through the deadline index and nothing else; an
# append-only container with a deadline takes the walk (with a BRIN purge
# index, and without a purge index, 1.6); pg_dump/pg_restore
# keeps the deadline property, the trigger's argument and the deadline
# index, and the restored container validates, hides and purges by it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('deadline', "ttl.batch_size = 50\n");

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', q{
CREATE EXTENSION ttl;
CREATE TABLE dl (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('dl', 3600, deadline_property => 'until');
-- 300 past their deadline (pinned ones too), 100 due tomorrow, 100 without
INSERT INTO dl SELECT g, jsonb_build_object('until', floor(extract(epoch FROM now()))::bigint - g,
                                            'ttl', CASE WHEN g % 3 = 0 THEN -1 ELSE 7200 END)
  FROM generate_series(1, 300) g;
INSERT INTO dl SELECT g, jsonb_build_object('until', to_char(now() AT TIME ZONE 'UTC' + interval '1 day',
                                                             'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
  FROM generate_series(301, 400) g;
INSERT INTO dl SELECT g, '{"ttl": -1}' FROM generate_series(401, 500) g;
CREATE TABLE ao (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('ao', 3600, deadline_property => 'until');
SELECT ttl.set_append_only('ao', true);
INSERT INTO ao SELECT g, jsonb_build_object('until', CASE WHEN g <= 80 THEN 0 ELSE 4102444800 END)
  FROM generate_series(1, 100) g;
CREATE TABLE sw (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('sw', 3600, deadline_property => 'until');
SELECT ttl.set_append_only('sw', true, 'none');
INSERT INTO sw SELECT g, jsonb_build_object('until', CASE WHEN g <= 80 THEN 0 ELSE 4102444800 END)
  FROM generate_series(1, 100) g;
});

ok($node->poll_query_until('src', 'SELECT count(*) FROM dl', '200'),
	'the worker purges the items past their deadline');
is($node->safe_psql('src', 'SELECT min(id), max(id) FROM dl'), '301|500',
	'... exactly those: the ones due tomorrow and those without a deadline stay');
is($node->safe_psql('src', "SELECT rows_purged FROM ttl.stats WHERE container = 'dl'::regclass"),
	'300', 'ttl.stats counts them');
ok($node->poll_query_until('src', 'SELECT count(*) FROM ao', '20'),
	'an append-only container with a deadline is purged by it too');
ok($node->poll_query_until('src', 'SELECT count(*) FROM sw', '20'),
	'... and one without a purge index');
is($node->safe_psql('src', 'SELECT min(id), max(id) FROM sw'), '81|100',
	'... exactly the items past their deadline');

# dump and restore
$node->safe_psql('src', 'SELECT ttl.pause(\'dl\')');
$node->safe_psql('src', q{INSERT INTO dl VALUES (1, '{"until": 1}')});
my $dump = $node->basedir . '/deadline.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src') ],
	'pg_dump of a database with a deadline container');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), $dump ],
	'pg_restore into an empty database');
is( $node->safe_psql('dst',
		"SELECT deadline_property, paused FROM ttl.containers WHERE container = 'dl'::regclass"),
	'until|t', 'the deadline property is restored');
like( $node->safe_psql('dst',
		"SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'dl'::regclass AND tgname = 'zzz_ttl_stamp'"),
	qr/ttl\.stamp\('format=2', 'doc=doc', 'deadline=until'\)/, 'the trigger carries it');
is( $node->safe_psql('dst', q{
SELECT count(*) FROM pg_index i WHERE i.indrelid = 'dl'::regclass
   AND ttl._is_deadline_index(i.indexrelid, 'dl')}),
	'1', 'the deadline index is restored and recognised');
my ($rc, $out, $err) = $node->psql('dst',
	"\\set VERBOSITY verbose\nINSERT INTO dl VALUES (999, '{\"until\": \"soon\"}')");
like($err, qr/22007/, 'the restored container validates the deadline');
is($node->safe_psql('dst', 'SELECT count(*) FROM dl_live WHERE id = 1'), '0',
	'the restored container hides by the deadline');
is($node->safe_psql('dst', "SELECT ttl.purge('dl')"), '1',
	'... and purges by it');

$node->stop;
done_testing();
