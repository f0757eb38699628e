# The restore guard after pg_dump/pg_restore: the registry row carries the
# system identifier and database of ttl.enable, so a container restored
# into another database (same cluster) or another cluster, with most of
# its items due, is held by the worker, while a small backlog restored
# with it is purged (and that container is at home from then on).
# ttl.resume() releases the hold.  The source database, at home, purges
# the same full backlog without any hold (an ordinary backlog).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('guard_dump', "ttl.enabled = off\n");
$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->safe_psql('src', q{
CREATE EXTENSION ttl;
CREATE TABLE big (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('big', 3600);
CREATE TABLE small (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('small', 3600);
SELECT set_config('ttl.now_override', (now() - interval '2 days')::text, false);
INSERT INTO big SELECT g, '{}' FROM generate_series(1, 300) g;
INSERT INTO small SELECT g, '{}' FROM generate_series(1, 5) g;
RESET ttl.now_override;
INSERT INTO small SELECT g, '{}' FROM generate_series(6, 100) g;
});

my $dump = $node->basedir . '/src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src') ], 'pg_dump');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), $dump ],
	'pg_restore into another database of the cluster');

# another cluster, its worker running while the restore goes on
my $other = ttl_node('guard_other');
$other->safe_psql('postgres', 'CREATE DATABASE dst');
$other->command_ok([ 'pg_restore', '--exit-on-error', '-d', $other->connstr('dst'), $dump ],
	'pg_restore into another cluster');

$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl.enabled = on; SELECT pg_reload_conf()');

my $held = q{SELECT held_since IS NOT NULL FROM ttl.stats WHERE container = 'big'::regclass};
for my $case ([ $node, 'another database' ], [ $other, 'another cluster' ])
{
	my ($n, $what) = @$case;
	ok($n->poll_query_until('dst', $held), "$what: the restored big container is held");
	ok($n->poll_query_until('dst', 'SELECT count(*) FROM small', '95'),
		"$what: the restored small backlog is purged");
	like($n->safe_psql('dst',
			q{SELECT hold_reason FROM ttl.stats WHERE container = 'big'::regclass}),
		qr/^the container was enabled in another database or cluster \(system identifier -?\d+, database \d+\): restored by pg_restore or copied$/,
		"$what: hold_reason");
	is($n->safe_psql('dst', q{
		SELECT home_database = (SELECT oid FROM pg_database WHERE datname = 'dst')
		  FROM ttl.registry WHERE relid = 'small'::regclass}), 't',
		"$what: the small container is at home now");
	my $v = $n->safe_psql('dst', "SELECT visits FROM ttl.databases WHERE datname = 'dst'");
	$n->poll_query_until('dst',
		"SELECT visits >= $v + 2 FROM ttl.databases WHERE datname = 'dst'")
	  or die 'no more rounds';
	is($n->safe_psql('dst', 'SELECT count(*) FROM big'), '300', "$what: nothing purged while held");
	is($n->safe_psql('dst', 'SELECT count(*) FROM big_live'), '0', "$what: still hidden");
	like(slurp_file($n->logfile), qr/automatic purge of container "public\.big" held/,
		"$what: logged");
	$n->safe_psql('dst', q{SELECT ttl.resume('big')});
	ok($n->poll_query_until('dst', 'SELECT count(*) FROM big', '0'),
		"$what: purged after ttl.resume");
	is($n->safe_psql('dst', q{
		SELECT home_system_identifier = (SELECT system_identifier FROM pg_control_system())
		       AND home_database = (SELECT oid FROM pg_database WHERE datname = 'dst')
		  FROM ttl.registry WHERE relid = 'big'::regclass}), 't',
		"$what: ttl.resume recorded the new home");
}

# the source, at home, purges its ordinary backlog
ok($node->poll_query_until('src', 'SELECT count(*) FROM big', '0'), 'the source purges its backlog');
is($node->safe_psql('src', $held), 'f', 'without a hold');

$node->stop;
$other->stop;
done_testing();
