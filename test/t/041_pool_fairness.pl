# Fairness of the pool (issue 12): one database with a large due backlog
# and ten small ones, and a single purge worker (ttl.max_workers = 1):
# every small database is purged within a few naptimes while the big one is
# still draining, both when they are new and later, when the big one's
# old backlog makes it the most urgent database every time.  The backlog is 200000 rows, not a million: what matters
# is that it outlasts the small ones' deadline, which the cost throttle
# below guarantees, and building a million rows on a shared test machine
# costs a minute for nothing more.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('fair', q{
ttl.max_workers = 1
ttl.enabled = off
ttl.cost_limit = 200
ttl.cost_delay = 50
});

my $setup = q{
CREATE EXTENSION ttl;
CREATE TABLE d (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('d', 1);
};
$node->safe_psql('postgres', 'CREATE DATABASE big');
$node->safe_psql('big', $setup
	  . q{INSERT INTO d SELECT g, jsonb_build_object('n', g) FROM generate_series(1, 200000) g;});
my @small = map { "small$_" } 1 .. 10;
for my $db (@small)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, $setup
		  . q{INSERT INTO d SELECT g, jsonb_build_object('n', g) FROM generate_series(1, 10) g;});
}
wait_seconds($node, 1.5);

# the big one is served first and keeps a backlog
$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl.enabled = on');
$node->reload;
ok( $node->poll_query_until('big', 'SELECT count(*) < 200000 FROM d'),
	'the worker started on the big backlog');
my $t0 = $node->safe_psql('postgres', 'SELECT clock_timestamp()');

# every small database purged within 8 naptimes (11 databases, 1 worker)
my $left = 0;
for my $db (@small)
{
	$node->poll_query_until($db,
		"SELECT count(*) = 0 OR clock_timestamp() > '$t0'::timestamptz + interval '8 s' FROM d")
	  or die;
	$left++ if $node->safe_psql($db, 'SELECT count(*) FROM d') ne '0';
}
my $secs = $node->safe_psql('postgres',
	"SELECT round(extract(epoch FROM clock_timestamp() - '$t0'::timestamptz), 1)");
is($left, 0, "all ten small databases purged within 8 naptimes (took $secs s)");
cmp_ok($node->safe_psql('big', 'SELECT count(*) FROM d'), '>', 0,
	'while the big one is still draining');
# later: the small ones have been served and are idle; new items expire
# there while the big one, whose backlog is older, keeps draining.  No
# small database waits more than a few of the big one's turns.
$node->safe_psql($_,
	q{INSERT INTO d SELECT g, jsonb_build_object('n', g) FROM generate_series(11, 20) g;})
  for @small;
$t0 = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
$left = 0;
for my $db (@small)
{
	$node->poll_query_until($db,
		"SELECT count(*) = 0 OR clock_timestamp() > '$t0'::timestamptz + interval '10 s' FROM d")
	  or die;
	$left++ if $node->safe_psql($db, 'SELECT count(*) FROM d') ne '0';
}
$secs = $node->safe_psql('postgres',
	"SELECT round(extract(epoch FROM clock_timestamp() - '$t0'::timestamptz), 1)");
is($left, 0,
	"new items of all ten small databases purged within 10 naptimes of insertion (took $secs s)");
cmp_ok($node->safe_psql('big', 'SELECT count(*) FROM d'), '>', 0,
	'while the big one is still draining');

is( $node->safe_psql('small1',
		"SELECT due_rows, due_rows_capped, oldest_due IS NOT NULL, last_error IS NULL FROM ttl.databases WHERE datname = 'big'"),
	'10000|t|t|t',
	'ttl.databases shows the big backlog (counted by the worker up to 10000 rows per purge index, due_rows_capped says so), no error');
is( $node->safe_psql('small1',
		"SELECT due_rows_capped FROM ttl.databases WHERE datname = 'small1'"),
	'f', 'a small database: its count is exact (due_rows_capped false)');
is($node->safe_psql('small1', 'SELECT high_water FROM ttl.worker_pool'), '1',
	'never more than one worker at once');

$node->stop;
done_testing();
