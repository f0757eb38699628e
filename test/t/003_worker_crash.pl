# The purge worker is killed with SIGKILL in the middle of a batch: the
# postmaster goes through crash recovery, the launcher and a worker come
# back, no partial batch is left behind (whole batches only, statistics
# consistent with the rows that are gone), survivors survive, and purge
# goes on.  After a plain restart the worker comes back too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('crash', qq{
ttl.batch_size = 1000
restart_after_crash = on
});

sub ttl_pids
{
	return $node->safe_psql('db1',
		"SELECT string_agg(backend_type || ':' || pid, ',' ORDER BY backend_type)"
		  . " FROM pg_stat_activity WHERE backend_type IN ('ttl launcher', 'ttl worker')"
		  . " AND (datname IS NULL OR datname = 'db1')");
}

$node->safe_psql('postgres', 'CREATE DATABASE db1');
$node->safe_psql('db1', q{
CREATE EXTENSION ttl;
-- about 1 ms per deleted row: a batch of 1000 takes a second
CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_catalog.pg_sleep(0.001); RETURN OLD; END $$;
CREATE TABLE big (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('big', -1);
CREATE TRIGGER big_slow BEFORE DELETE ON big FOR EACH ROW EXECUTE FUNCTION public.slow();
CREATE TABLE small (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('small', 3600);
BEGIN;
INSERT INTO big SELECT g, jsonb_build_object('ttl', 1, 'n', g) FROM generate_series(1, 5000) g;
INSERT INTO big SELECT g, jsonb_build_object('ttl', -1, 'n', g) FROM generate_series(5001, 5300) g;
INSERT INTO big SELECT g, jsonb_build_object('n', g) FROM generate_series(5301, 5500) g;
COMMIT;
});

# wait until at least one batch of big has been committed and the next runs
ok( $node->poll_query_until('db1',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker'"
		  . " AND datname = 'db1' AND query ~ '^ttl purge of big: [1-9]'", '1'),
	'worker is in the middle of purging big');
# keep the restarted worker off big so that what the crash left can be seen
$node->safe_psql('db1', "SELECT ttl.pause('big')");
my $worker_pid = $node->safe_psql('db1',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'ttl worker' AND datname = 'db1'");
my $before = ttl_pids();
like($worker_pid, qr/^\d+$/, 'found the worker pid');

my $log_offset = -s $node->logfile;
kill 'KILL', $worker_pid or die "could not kill $worker_pid: $!";
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
ok( $node->log_contains(
		qr/background worker "ttl worker" \(PID $worker_pid\) was terminated by signal 9/,
		$log_offset),
	'postmaster saw the worker die and went through crash recovery');
$node->wait_for_log(qr/database system is ready to accept connections/, $log_offset);

ok( $node->poll_query_until('db1',
		"SELECT count(*) FROM pg_stat_activity"
		  . " WHERE backend_type = 'ttl launcher'", '1'),
	'launcher back after crash recovery');
# (issue 12: a worker visits db1 for a round and leaves; shared memory
# starts afresh after the crash, so a visit counted there is a new worker's)
ok( $node->poll_query_until('db1',
		"SELECT visits > 0 FROM ttl.databases WHERE datname = 'db1'"),
	'worker back after crash recovery');
isnt(ttl_pids(), $before, 'launcher and worker are new processes');

# whole batches only: what is gone is a multiple of the batch size, and the
# statistics (written in the batch's transaction) agree with it
my ($expired_left, $survivors, $purged) = split /\|/,
  $node->safe_psql('db1',
	"SELECT (SELECT count(*) FROM big WHERE id <= 5000),"
	  . " (SELECT count(*) FROM big WHERE id > 5000),"
	  . " (SELECT rows_purged FROM ttl.stats WHERE container = 'big'::regclass)");
note "after the crash: $expired_left expired items left, $purged purged";
cmp_ok($expired_left, '<', 5000, 'at least one batch was committed before the crash');
cmp_ok($expired_left, '>', 0, 'the crash interrupted the purge');
is($expired_left % 1000, 0, 'no partial batch: whole batches of 1000 only');
is($purged + $expired_left, 5000, 'rows_purged matches the rows that are gone');
is($survivors, '500', 'no survivor lost in the crash');
is($node->safe_psql('db1', 'SELECT count(*) FROM big_live'), '500',
	'the expired items left are hidden');

# purge goes on: the rest of big, and items written after the crash
$node->safe_psql('db1', q{
SELECT ttl.resume('big');
INSERT INTO small SELECT g, '{"ttl": 1}' FROM generate_series(1, 100) g;
INSERT INTO small SELECT g, '{}' FROM generate_series(101, 110) g;
});
ok($node->poll_query_until('db1', 'SELECT count(*) FROM big', '500'),
	'big purged after the crash');
ok($node->poll_query_until('db1', 'SELECT count(*) FROM small', '10'),
	'items written after the crash purged');
is( $node->safe_psql('db1',
		'SELECT min(id), max(id), count(DISTINCT id) FROM big'),
	'5001|5500|500', 'exactly the survivors are left');
is( $node->safe_psql('db1',
		"SELECT rows_purged, last_error IS NULL FROM ttl.stats WHERE container = 'big'::regclass"),
	'5000|t', 'rows_purged counts every expired item exactly once');
is($node->safe_psql('db1', 'SELECT count(*) FROM small WHERE id <= 100'), '0',
	'all expired items of small gone');

# a plain restart
$node->restart;
ok( $node->poll_query_until('db1',
		"SELECT (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl launcher')"
		  . " = 1 AND visits > 0 FROM ttl.databases WHERE datname = 'db1'"),
	'launcher and worker back after restart');
$node->safe_psql('db1', q{
INSERT INTO small SELECT g, '{"ttl": 1}' FROM generate_series(201, 300) g;
});
ok($node->poll_query_until('db1', 'SELECT count(*) FROM small', '10'),
	'items purged after restart');
is( $node->safe_psql('db1',
		"SELECT rows_purged FROM ttl.stats WHERE container = 'small'::regclass"),
	'200', 'statistics of small survive the restart');

$node->stop;
done_testing();
