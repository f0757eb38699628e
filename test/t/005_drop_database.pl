# DROP DATABASE and the purge workers: dropping a database whose worker
# runs succeeds at once, whether the worker was started a moment ago, the
# database has been served for many rounds, or its worker is in the middle
# of a batch; the launcher goes on serving the other databases; and a DROP
# DATABASE that is refused (no privilege) neither stops the worker nor
# stalls.  (Issue 12: a worker serves a database for one round and leaves,
# so "running for many rounds" is now "served many times".)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;
use Time::HiRes qw(time);

my $node = ttl_node('dropdb', qq{
ttl.batch_size = 50
});

# A database with the extension and a container that is slow to purge
# (5 ms per row, batches of 50).
sub create_db
{
	my ($db) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
CREATE EXTENSION ttl;
CREATE TABLE d (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('d', -1);
CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_catalog.pg_sleep(0.005); RETURN OLD; END $$;
CREATE TRIGGER d_slow BEFORE DELETE ON d FOR EACH ROW EXECUTE FUNCTION public.slow();
});
}

$node->safe_psql('postgres', 'CREATE ROLE alice LOGIN');
create_db('keep');
# a slow backlog keeps a worker busy in keep
$node->safe_psql('keep',
	q{INSERT INTO d SELECT g, '{"ttl": 1}' FROM generate_series(1, 1000000, 1000) g});
ok( $node->poll_query_until('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker'"
		  . " AND datname = 'keep' AND query ~ '^ttl purge of d: '", '1'),
	'a worker is purging in keep');
my $launcher_pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'ttl launcher'");

# -------------------------------------------------------------------------
# a DROP DATABASE refused for lack of privilege must not stop the worker of
# that database (no role may signal it that way), nor wait for anything
my $log_offset = -s $node->logfile;
my $t0 = time;
my ($rc, $out, $err) =
  $node->psql('postgres', 'SET ROLE alice; DROP DATABASE keep');
my $elapsed = time - $t0;
like($err, qr/must be owner of database keep/, 'alice may not drop keep');
cmp_ok($elapsed, '<', 3, 'the refused DROP DATABASE fails at once');
ok( !$node->log_contains(
		qr/terminating background worker "ttl worker" due to administrator command/,
		$log_offset),
	'no worker terminated by the refused DROP DATABASE');

# -------------------------------------------------------------------------
# DROP DATABASE: worker just started; database served for several rounds;
# served for several rounds, worker mid-batch
for my $case (['dropfresh', 'fresh'], ['dropidle', 'served'],
	['dropbusy', 'mid-batch'])
{
	my ($db, $what) = @$case;
	create_db($db);
	if ($what eq 'fresh')
	{
		$node->poll_query_until('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker'"
			  . " AND datname = '$db'", '1')
		  or die "no worker in $db";
	}
	else
	{
		$node->poll_query_until('keep',
			"SELECT visits >= 3 FROM ttl.databases WHERE datname = '$db'")
		  or die "$db not served three times";
	}
	if ($what eq 'mid-batch')
	{
		$node->safe_psql($db,
			q{INSERT INTO d SELECT g, '{"ttl": 1}' FROM generate_series(1, 2000) g});
		$node->poll_query_until('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker'"
			  . " AND datname = '$db' AND query ~ '^ttl purge of d: [1-9]'", '1')
		  or die "worker of $db not busy";
	}
	$t0 = time;
	($rc, $out, $err) = $node->psql('postgres', "DROP DATABASE $db");
	$elapsed = time - $t0;
	is($rc, 0, "DROP DATABASE ($what worker) succeeds") or diag $err;
	unlike($err, qr/being accessed by other users/,
		"DROP DATABASE ($what worker): no 'being accessed' error");
	cmp_ok($elapsed, '<', 3, "DROP DATABASE ($what worker) is prompt");
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_database WHERE datname = '$db'"),
		'0', "database ($what worker) is gone");
}

# -------------------------------------------------------------------------
# the launcher goes on, and so does the purge of the other database
is( $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'ttl launcher'"),
	$launcher_pid, 'the launcher survives the drops');
$node->safe_psql('keep', q{
DROP TRIGGER d_slow ON d;
INSERT INTO d SELECT g, '{"ttl": 1}' FROM generate_series(2000000, 2000030) g;
INSERT INTO d VALUES (31, '{}');
});
ok($node->poll_query_until('keep', 'SELECT count(*) FROM d', '1'),
	'the other database is still purged after the drops');
ok(!$node->log_contains('terminated by signal|PANIC|TRAP:'),
	'no crash in the server log');

$node->stop;
done_testing();
