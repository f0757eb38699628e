# Archive before purge (issue 31) with the background worker: rows move to
# the archive (bounded polling); a failing archive insert (a trigger
# raising disk_full for one row) rolls its batch back, the container's
# last_error names the container, the archive and the row, its rows all
# stay, the container is backed off (ttl.purge_stats.retry_after, doubling,
# attempts bounded, ended by a batch that commits after the repair) and
# the other containers go on being purged; the worker killed
# with SIGKILL in the middle of an archiving batch leaves each row in
# exactly one place (container or archive, never both, never neither).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('archive', qq{
ttl.batch_size = 1000
restart_after_crash = on
});

$node->safe_psql('postgres', 'CREATE DATABASE db1');
$node->safe_psql('db1', q{
CREATE EXTENSION ttl;
CREATE TABLE small (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE small_arch (id int PRIMARY KEY, doc jsonb NOT NULL, archived_at timestamptz DEFAULT now());
SELECT ttl.enable('small', 3600);
SELECT ttl.set_archive('small', 'small_arch');
CREATE TABLE bad (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE bad_arch (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('bad', 3600);
SELECT ttl.set_archive('bad', 'bad_arch');
CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id = 42 THEN
        RAISE EXCEPTION 'could not extend file: No space left on device (row %)', NEW.id
            USING ERRCODE = 'disk_full';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER disk_full BEFORE INSERT ON bad_arch FOR EACH ROW EXECUTE FUNCTION disk_full();
CREATE TABLE good (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('good', 3600);
INSERT INTO small SELECT g, '{"ttl": 1}' FROM generate_series(1, 100) g;
INSERT INTO small SELECT g, '{}' FROM generate_series(101, 110) g;
INSERT INTO bad SELECT g, '{"ttl": 1}' FROM generate_series(1, 100) g;
INSERT INTO good SELECT g, '{"ttl": 1}' FROM generate_series(1, 100) g;
});

ok($node->poll_query_until('db1', 'SELECT count(*) FROM small', '10'),
	'the worker purged the expired items of small');
is( $node->safe_psql('db1',
		'SELECT count(*), min(id), max(id), bool_and(doc @> \'{"ttl": 1}\') FROM small_arch'),
	'100|1|100|t', 'each of them is in the archive, with its document');
is($node->safe_psql('db1', 'SELECT count(*) FROM small JOIN small_arch USING (id)'),
	'0', 'no row in both');

ok($node->poll_query_until('db1', 'SELECT count(*) FROM good', '0'),
	'a container next to the failing one is purged');
ok( $node->poll_query_until('db1',
		"SELECT last_error LIKE 'purge of container public.bad into archive public.bad_arch failed: %No space left on device (row 42)%'"
		  . " FROM ttl.stats WHERE container = 'bad'::regclass", 't'),
	'the failing container has last_error naming the archive and the row');
my $bad_log_offset = -s $node->logfile;
is($node->safe_psql('db1', 'SELECT count(*) FROM bad'), '100',
	'its batch rolled back: every row still in the container');
# backed off like any failing container, durably in ttl.purge_stats: the
# worker retries after 2, 4, 8 naptimes, not at every round
ok( $node->poll_query_until('db1',
		"SELECT overruns >= 1 AND retry_after > last_error_at FROM ttl.purge_stats"
		  . " WHERE relid = 'bad'::regclass", 't'),
	'the failing container is backed off (ttl.purge_stats.retry_after)');
is($node->safe_psql('db1', 'SELECT count(*) FROM bad_arch'), '0',
	'and none in the archive');
# the others go on: items written now are purged while bad keeps failing
$node->safe_psql('db1', q{INSERT INTO good SELECT g, '{"ttl": 1}' FROM generate_series(101, 150) g});
ok($node->poll_query_until('db1', 'SELECT count(*) FROM good', '0'),
	'later rounds purge the other containers');
is($node->safe_psql('db1', 'SELECT count(*) FROM bad'), '100',
	'the failing container still keeps all its rows');
ok( $node->poll_query_until('db1',
		"SELECT overruns >= 3 FROM ttl.purge_stats WHERE relid = 'bad'::regclass", 't'),
	'each retry that fails doubles the back-off');
my ($overruns, $backed_off_for) = split /\|/, $node->safe_psql('db1',
	"SELECT overruns, extract(epoch FROM retry_after - last_error_at)::int"
	  . " FROM ttl.purge_stats WHERE relid = 'bad'::regclass");
cmp_ok($backed_off_for, '>=', 7, "the latest back-off is longer ($backed_off_for s)");
my $bad_log = slurp_file($node->logfile, $bad_log_offset);
my $attempts = () = $bad_log =~ /ttl purge of "bad" failed/g;
note "attempts since the first failure: $attempts, overruns $overruns";
cmp_ok($attempts, '<=', $overruns + 1,
	'the worker tried the failing container only once per back-off');
# repaired: the next round archives them
$node->safe_psql('db1', 'DROP TRIGGER disk_full ON bad_arch');
ok($node->poll_query_until('db1', 'SELECT count(*) FROM bad', '0'),
	'once the archive takes the row again the container is purged');
is($node->safe_psql('db1', 'SELECT count(*) FROM bad_arch'), '100',
	'into the archive');
ok( $node->poll_query_until('db1',
		"SELECT overruns = 0 AND retry_after IS NULL FROM ttl.purge_stats"
		  . " WHERE relid = 'bad'::regclass", 't'),
	'a batch that commits ends the back-off');

# SIGKILL in the middle of an archiving batch
$node->safe_psql('db1', q{
-- about 1 ms per archived row: a batch of 1000 takes a second
CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_catalog.pg_sleep(0.001); RETURN NEW; END $$;
CREATE TABLE big (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE big_arch (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TRIGGER big_slow BEFORE INSERT ON big_arch FOR EACH ROW EXECUTE FUNCTION public.slow();
SELECT ttl.enable('big', -1);
SELECT ttl.set_archive('big', 'big_arch');
BEGIN;
INSERT INTO big SELECT g, jsonb_build_object('ttl', 1, 'n', g) FROM generate_series(1, 5000) g;
INSERT INTO big SELECT g, jsonb_build_object('ttl', -1, 'n', g) FROM generate_series(5001, 5500) g;
COMMIT;
});
ok( $node->poll_query_until('db1',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker'"
		  . " AND datname = 'db1' AND query ~ '^ttl purge of big: [1-9]'", '1'),
	'worker is in the middle of archiving big');
$node->safe_psql('db1', "SELECT ttl.pause('big')");
my $worker_pid = $node->safe_psql('db1',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'ttl worker' AND datname = 'db1'");
like($worker_pid, qr/^\d+$/, 'found the worker pid');
my $log_offset = -s $node->logfile;
kill 'KILL', $worker_pid or die "could not kill $worker_pid: $!";
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
$node->wait_for_log(qr/database system is ready to accept connections/, $log_offset);
ok($node->poll_query_until('db1', 'SELECT 1', '1'), 'server back after crash recovery');

my $places = q{SELECT (SELECT count(*) FROM big WHERE id <= 5000),
 (SELECT count(*) FROM big_arch),
 (SELECT count(*) FROM big JOIN big_arch USING (id)),
 (SELECT count(*) FROM (SELECT id FROM big UNION SELECT id FROM big_arch) u),
 (SELECT count(*) FROM big WHERE id > 5000)};
my ($left, $archived, $both, $anywhere, $survivors) = split /\|/, $node->safe_psql('db1', $places);
note "after the crash: $left expired items left, $archived archived";
cmp_ok($archived, '>', 0, 'at least one batch was archived before the crash');
cmp_ok($left, '>', 0, 'the crash interrupted the purge');
is($archived % 1000, 0, 'whole batches only in the archive');
is($left + $archived, 5000, 'each expired row in the container or in the archive');
is($both, '0', 'no row in both');
is($anywhere, '5500', 'no row lost');
is($survivors, '500', 'survivors untouched');

$node->safe_psql('db1', "SELECT ttl.resume('big')");
ok($node->poll_query_until('db1', 'SELECT count(*) FROM big', '500'),
	'the rest of big archived after the crash');
is( $node->safe_psql('db1', $places), '0|5000|0|5500|500',
	'every expired row in the archive exactly once');

$node->stop;
done_testing();
