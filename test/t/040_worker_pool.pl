# The bounded pool of purge workers (issue 12): 40 databases with the
# extension on a cluster with the default max_worker_processes = 8 are all
# purged, never by more than ttl.max_workers workers at once (the
# high-water mark kept in shared memory, shown in ttl.worker_pool), while a
# parallel query in the same cluster gets every worker it plans.  A
# database without the extension is visited once, then left alone until
# the slow rescan.  ALTER DATABASE ... SET TABLESPACE succeeds with a busy
# worker connected, and pg_stat_activity says which container it purges.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;
use Time::HiRes qw(time);

# ttl.max_workers is left at its default (2), max_worker_processes at 8.
# The databases are clones of a template, so their containers say they were
# enabled in another database: with all their items due, the restore guard
# (1.5, TAP 071) would hold them.  This test is about the pool: guard off.
my $node = ttl_node('pool', "ttl.restore_guard_fraction = 0\n");
is($node->safe_psql('postgres', 'SHOW max_worker_processes'), '8',
	'default max_worker_processes');
is($node->safe_psql('postgres', 'SHOW ttl.max_workers'), '2',
	'default ttl.max_workers');

# purge off while 40 databases are cloned from a template holding the
# extension, a container with a 1 s default and 100 items
$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl.enabled = off');
$node->reload;
$node->safe_psql('postgres', 'CREATE DATABASE tmpl');
$node->safe_psql('tmpl', q{
CREATE EXTENSION ttl;
CREATE TABLE d (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('d', 1);
INSERT INTO d SELECT g, jsonb_build_object('n', g) FROM generate_series(1, 100) g;
});
$node->safe_psql('postgres', 'ALTER DATABASE tmpl IS_TEMPLATE true');
my @dbs = map { "db$_" } 1 .. 40;
$node->safe_psql('postgres', "CREATE DATABASE $_ TEMPLATE tmpl") for @dbs;

# a table a parallel query scans with 2 workers
$node->safe_psql('postgres', q{
CREATE TABLE par (id int);
INSERT INTO par SELECT g FROM generate_series(1, 100000) g;
ANALYZE par;
});
my $parallel = q{
SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM par;
};

wait_seconds($node, 1.5);		# every item is due now
my $t0 = time;
$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl.enabled = on');
$node->reload;

# while the pool works through the databases, parallel queries run
my @launched;
my $done = 0;
my $bound = 60;
while (time - $t0 < $bound)
{
	my $plan = $node->safe_psql('postgres', $parallel);
	my ($planned) = $plan =~ /Workers Planned: (\d+)/;
	my ($got) = $plan =~ /Workers Launched: (\d+)/;
	push @launched, [ $planned // -1, $got // -1 ];
	$done = $node->safe_psql('db1',
		"SELECT count(*) FROM ttl.databases WHERE datname ~ '^db[0-9]+\$'"
		  . " AND last_served IS NOT NULL AND due_rows = 0");
	last if $done == 40;
	select(undef, undef, undef, 0.2);
}
my $secs = time - $t0;
is($done, 40, "the pool served all 40 databases within $bound s (took "
	  . sprintf('%.1f', $secs) . ' s)');
my $purged = 0;
$purged += $node->safe_psql($_, 'SELECT count(*) = 0 FROM d') eq 't' ? 1 : 0 for @dbs;
is($purged, 40, 'every expired item of the 40 databases is gone');

cmp_ok(scalar @launched, '>=', 1, 'parallel queries ran meanwhile');
my @short = grep { $_->[0] < 2 || $_->[1] != $_->[0] } @launched;
is(scalar @short, 0,
	'every parallel query launched every worker it planned (>= 2): '
	  . join(' ', map { "$_->[0]/$_->[1]" } @launched));

my ($maxw, $high) = split /\|/, $node->safe_psql('db1',
	'SELECT max_workers, high_water FROM ttl.worker_pool');
is($maxw, '2', 'ttl.worker_pool shows ttl.max_workers');
ok($high >= 1 && $high <= 2, "high-water mark of concurrent workers $high <= 2");
ok( !$node->log_contains(qr/could not start a worker|Raise max_worker_processes/),
	'the launcher never ran out of worker slots');

# -------------------------------------------------------------------------
# a database without the extension: visited once, then no worker connects
# there over several naptimes (the rescan period is minutes)
$node->safe_psql('postgres', 'CREATE DATABASE noext');
ok( $node->poll_query_until('db1',
		"SELECT has_ttl IS false AND visits = 1 FROM ttl.databases WHERE datname = 'noext'"),
	'noext was visited once and found without the extension');
my $seen = 0;
my $tn = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
while ($node->safe_psql('postgres',
		"SELECT clock_timestamp() < '$tn'::timestamptz + interval '5 s'") eq 't')
{
	$seen += $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker' AND datname = 'noext'");
	select(undef, undef, undef, 0.1);
}
is($seen, 0, 'no ttl worker connected to noext over 5 naptimes');
is($node->safe_psql('db1', "SELECT visits FROM ttl.databases WHERE datname = 'noext'"),
	'1', 'noext: still a single visit');

# -------------------------------------------------------------------------
# ALTER DATABASE ... SET TABLESPACE while a worker is busy there
my $tsdir = $node->basedir . '/ts';
mkdir $tsdir or die;
$node->safe_psql('postgres', "CREATE TABLESPACE ts LOCATION '$tsdir'");
$node->safe_psql('postgres', 'CREATE ROLE alice LOGIN');
$node->safe_psql('postgres', 'CREATE DATABASE busy');
$node->safe_psql('busy', q{
CREATE EXTENSION ttl;
CREATE TABLE d (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('d', -1);
CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_catalog.pg_sleep(0.005); RETURN OLD; END $$;
CREATE TRIGGER d_slow BEFORE DELETE ON d FOR EACH ROW EXECUTE FUNCTION public.slow();
INSERT INTO d SELECT g, '{"ttl": 1}' FROM generate_series(1, 100000) g;
});
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'ttl worker'"
		  . " AND datname = 'busy' AND query LIKE 'ttl purge of d:%'"),
	'pg_stat_activity: a worker purges container d of database busy');

# alice may not move it: core refuses, and no worker is stopped for her
my $log_offset = -s $node->logfile;
my ($rc, $out, $err) = $node->psql('postgres',
	'ALTER DATABASE busy SET TABLESPACE ts', extra_params => [ '-U', 'alice' ]);
like($err, qr/must be owner of database busy/, 'alice may not move busy');
ok( !$node->log_contains(qr/terminating background worker "ttl worker/, $log_offset),
	'no worker terminated for the refused command');

$node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'ttl worker' AND datname = 'busy'")
  or die 'no worker in busy';
($rc, $out, $err) = $node->psql('postgres', 'ALTER DATABASE busy SET TABLESPACE ts');
is($rc, 0, 'ALTER DATABASE busy SET TABLESPACE succeeds with a busy worker')
  or diag($err);
is( $node->safe_psql('postgres',
		"SELECT spcname FROM pg_database d JOIN pg_tablespace t ON t.oid = d.dattablespace WHERE datname = 'busy'"),
	'ts', 'busy now lives in ts');
ok( $node->poll_query_until('busy', 'SELECT count(*) < 100000 FROM d'),
	'the purge of busy goes on afterwards');

$node->stop;
done_testing();
