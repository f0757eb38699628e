# ttl.max_replication_lag: the background purge waits for a
# streaming standby whose replay is paused and for an active logical slot
# whose consumer stopped, not for an inactive slot nor an ignored standby;
# -1 turns it off; ttl.purge() is never throttled; CALL ttl.run_purge()
# returns within about a naptime with a NOTICE.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use IPC::Run;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 'logical');
$primary->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ttl'
# a long round at first: the worker's own check must end it (section 1)
ttl.naptime = 60
ttl.batch_size = 200
ttl.enabled = off
ttl.max_replication_lag = '1MB'
# the stopped pg_recvlogical below must not be disconnected
wal_sender_timeout = 0
});
$primary->start;
$primary->backup('bkp');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'bkp', has_streaming => 1);
$standby->start;

sub set_conf
{
	my ($setting, $value, $shown) = @_;
	$primary->safe_psql('postgres',
		"ALTER SYSTEM SET $setting = $value; SELECT pg_reload_conf()");
	$value =~ s/^'(.*)'$/$1/;
	$primary->poll_query_until('postgres', "SHOW $setting", $shown // $value)
	  or die "reload of $setting not seen";
	return;
}

my $pool_wait = "SELECT replication_wait_for FROM ttl.worker_pool";
my $pool_idle = "SELECT replication_wait_for IS NULL FROM ttl.worker_pool";
my $db_wait = "SELECT replication_wait_for || ' ' || (replication_lag_bytes > 1048576)::text"
  . " || ' ' || (replication_wait_since <= now())::text"
  . " FROM ttl.databases WHERE datname = 'postgres'";
my $standby_lag = "SELECT pg_wal_lsn_diff(pg_current_wal_flush_lsn(), replay_lsn) > 1048576"
  . " FROM pg_stat_replication WHERE application_name = 'standby'";

# expired items that a worker would purge within a naptime or two
sub add_expired
{
	my ($n) = @_;
	$primary->safe_psql('postgres',
		"INSERT INTO c SELECT g, jsonb_build_object('ttl', 1, 'pad', repeat('x', 200))"
		  . " FROM generate_series(1, $n) g");
	wait_seconds($primary, 2);
	return;
}

# about 8MB of WAL that is no purge's
sub make_wal
{
	$primary->safe_psql('postgres',
		"INSERT INTO filler SELECT g, repeat('y', 1000) FROM generate_series(1, 8000) g");
	return;
}

$primary->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE TABLE c (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('c', 3600);
CREATE TABLE filler (id int, pad text);
});

is($primary->safe_psql('postgres', 'SHOW ttl.max_replication_lag'), '1MB',
	'ttl.max_replication_lag takes the units of max_wal_size');
my ($ret, $out, $err) = $primary->psql('postgres',
	"ALTER SYSTEM SET ttl.replication_lag_ignore = 'a, \"b'");
like($err, qr/invalid value for parameter "ttl.replication_lag_ignore"/,
	'a malformed ignore list is refused');

# --- 1. the worker's own purge makes the paused standby lag: it stops
# after the batch in progress
add_expired(30000);
# the rows' hint bits set now (1.9): the purge's first batch counts the due
# rows (ttl.purge_progress.rows_due), a read that would otherwise set them
# all after the CHECKPOINT, and with wal_log_hints that alone is a burst of
# full-page images before any delete; the burst below is the deletes'
# (a read, not VACUUM, whose records would conflict with the standby's
# queries once its replay resumes)
$primary->safe_psql('postgres', 'SELECT count(*) FROM c');
$primary->wait_for_catchup($standby);
$primary->safe_psql('postgres', 'CHECKPOINT');	# full-page images: a WAL burst
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$standby->poll_query_until('postgres',
	"SELECT pg_get_wal_replay_pause_state()", 'paused')
  or die 'replay not paused';
set_conf('ttl.enabled', 'on');
ok($primary->poll_query_until('postgres', $pool_wait, 'standby "standby"'),
	'the purge burst makes the standby lag: ttl.worker_pool says whom it waits for');
my $lag_wait = $primary->pg_version >= 17 ? 'Extension:TtlReplicationLag' : 'Extension:Extension';
# (1.9) the worker waits after the batch in progress, for a naptime at
# most (60 s here), and shows it: its row of ttl.purge_progress names the
# container and the phase, pg_stat_activity the wait event
ok( $primary->poll_query_until('postgres', qq{
SELECT count(*) FROM ttl.purge_progress p JOIN pg_stat_activity a USING (pid)
 WHERE a.backend_type = 'ttl worker' AND p.phase = 'waiting for replicas'
   AND p.container = 'c'::regclass
   AND a.wait_event_type || ':' || a.wait_event = '$lag_wait'}, '1'),
	"the worker's wait shows: phase 'waiting for replicas' in container c, wait event $lag_wait");
my $left = $primary->safe_psql('postgres', 'SELECT count(*) FROM c');
ok($left > 0 && $left < 30000, "the worker stopped part way ($left of 30000 rows left)");
is($primary->safe_psql('postgres',
		"SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE a.backend_type = 'ttl worker' AND l.locktype = 'relation'"),
	'0', 'waiting, the worker holds no lock on any relation');
# a naptime of 1 s, read at its next poll, ends its wait and its visit;
# none starts again
set_conf('ttl.naptime', '1', '1s');
$primary->poll_query_until('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker'", '0')
  or die 'the worker did not leave';
is($primary->safe_psql('postgres', 'SELECT count(*) FROM c'), $left,
	'it purged nothing more before leaving');
my $visits_q = "SELECT visits FROM ttl.databases WHERE datname = 'postgres'";
my $visits = $primary->safe_psql('postgres', $visits_q);
wait_seconds($primary, 3);
is($primary->safe_psql('postgres', 'SELECT count(*) FROM c'), $left,
	'no purge while the standby lags');
is($primary->safe_psql('postgres', $visits_q), $visits,
	'the launcher starts no visit while the standby lags (3 naptimes)');
ok($primary->safe_psql('postgres', $standby_lag) eq 't', 'the standby does lag');
is($primary->safe_psql('postgres', $db_wait), 'standby "standby" true true',
	'ttl.databases: waiting since when, for whom, how far behind');
ok($primary->log_contains(
		qr/ttl purge waits for replication: standby "standby" is \d+ bytes behind, more than ttl.max_replication_lag \(1 MB\)/),
	'the wait is logged, naming the standby');

# CALL ttl.run_purge(): at most a naptime, then a NOTICE; nothing purged
my $t0 = time;
($ret, $out, $err) = $primary->psql('postgres', 'CALL ttl.run_purge()');
my $took = time - $t0;
is($ret, 0, 'CALL ttl.run_purge() succeeds while lagging');
like($err, qr/NOTICE:  ttl.run_purge purged nothing: standby "standby" is \d+ bytes behind/,
	'with a NOTICE naming the standby');
ok($took >= 0.9 && $took < 8, sprintf('after waiting about one naptime (%.1f s)', $took));
is($primary->safe_psql('postgres', 'SELECT count(*) FROM c'), $left,
	'CALL ttl.run_purge() purged nothing');

# (1.9) while it waits, ttl.purge_progress says so and pg_stat_activity
# shows the wait event (TtlReplicationLag on 17+, Extension before); a
# naptime long enough to be seen, short enough that the standby's replay,
# paused, is not held past max_standby_streaming_delay (30 s: its resume
# below would be cancelled by a recovery conflict)
set_conf('ttl.naptime', '5', '5s');
my ($call_out, $call_err) = ('', '');
my $call = IPC::Run::start(
	[ 'psql', '-X', '-At', '-d', $primary->connstr('postgres'), '-c', 'CALL ttl.run_purge()' ],
	'>', \$call_out, '2>', \$call_err);
ok( $primary->poll_query_until('postgres', qq{
SELECT count(*) FROM ttl.purge_progress p JOIN pg_stat_activity a USING (pid)
 WHERE p.phase = 'waiting for replicas' AND p.container IS NULL
   AND a.wait_event_type || ':' || a.wait_event = '$lag_wait'}, '1'),
	"run_purge's wait shows: phase 'waiting for replicas', wait event $lag_wait");
$call->finish;
like($call_err, qr/NOTICE:  ttl.run_purge purged nothing/, 'and it ends as before');
set_conf('ttl.naptime', '1', '1s');

# --- 2. replay resumes: so does the purge
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
ok($primary->poll_query_until('postgres', 'SELECT count(*) FROM c', '0'),
	'after pg_wal_replay_resume() the worker purges the rest');
ok($primary->poll_query_until('postgres', $pool_idle, 't'),
	'ttl.worker_pool no longer waits');
ok($primary->log_contains(qr/ttl purge resumes: replication is within ttl.max_replication_lag again/),
	'the end of the wait is logged');
$primary->wait_for_catchup($standby);

# --- 3. lagging before the items expire: they stay; ttl.purge() is not
# throttled
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$standby->poll_query_until('postgres',
	"SELECT pg_get_wal_replay_pause_state()", 'paused')
  or die 'replay not paused';
make_wal();
ok($primary->poll_query_until('postgres', $pool_wait, 'standby "standby"'),
	'WAL of other work makes the standby lag: the purge waits');
add_expired(100);
wait_seconds($primary, 2);
is($primary->safe_psql('postgres', 'SELECT count(*) FROM c'), '100',
	'expired items stay while the standby lags');
is($primary->safe_psql('postgres', "SELECT ttl.purge('c')"), '100',
	'ttl.purge() is never throttled');

# --- 4. an ignored standby does not count
add_expired(100);
set_conf('ttl.replication_lag_ignore', "'other, standby'");
ok($primary->poll_query_until('postgres', 'SELECT count(*) FROM c', '0'),
	'a standby in ttl.replication_lag_ignore is not waited for');
ok($primary->safe_psql('postgres', $standby_lag) eq 't', 'though it still lags');
set_conf('ttl.replication_lag_ignore', "''");
ok($primary->poll_query_until('postgres', $pool_wait, 'standby "standby"'),
	'not ignored any more: the purge waits again');

# --- 5. -1 turns the check off
add_expired(100);
set_conf('ttl.max_replication_lag', '-1');
ok($primary->poll_query_until('postgres', 'SELECT count(*) FROM c', '0'),
	'ttl.max_replication_lag = -1: the worker purges while the standby lags');
set_conf('ttl.max_replication_lag', "'1MB'");
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
$primary->wait_for_catchup($standby);
ok($primary->poll_query_until('postgres', $pool_idle, 't'),
	'caught up: no wait');

# --- 6. an active logical slot whose consumer stopped
$primary->safe_psql('postgres',
	"SELECT pg_create_logical_replication_slot('lagslot', 'test_decoding')");
my ($rl_out, $rl_err) = ('', '');
my $recvlogical = IPC::Run::start(
	[
		'pg_recvlogical', '-d', $primary->connstr('postgres'),
		'-S', 'lagslot', '--start', '-f', '/dev/null', '-s', '1', '-F', '1'
	],
	'>', \$rl_out, '2>', \$rl_err);
ok( $primary->poll_query_until('postgres',
		"SELECT active_pid IS NOT NULL FROM pg_replication_slots WHERE slot_name = 'lagslot'", 't'),
	'pg_recvlogical holds the slot active');
my $rl_pid = $recvlogical->{KIDS}[0]{PID};
kill 'STOP', $rl_pid;
make_wal();
ok($primary->poll_query_until('postgres', $pool_wait, 'slot "lagslot"'),
	'its consumer stopped: the purge waits for the active slot');
add_expired(100);
wait_seconds($primary, 2);
is($primary->safe_psql('postgres', 'SELECT count(*) FROM c'), '100',
	'expired items stay while the slot lags');
ok($primary->log_contains(qr/ttl purge waits for replication: slot "lagslot" is \d+ bytes behind/),
	'the wait is logged, naming the slot');
kill 'CONT', $rl_pid;
ok($primary->poll_query_until('postgres', 'SELECT count(*) FROM c', '0'),
	'the consumer goes on: so does the purge');
$recvlogical->kill_kill;
$recvlogical->finish;

# --- 7. inactive slots do not count
ok( $primary->poll_query_until('postgres',
		"SELECT active_pid IS NULL FROM pg_replication_slots WHERE slot_name = 'lagslot'", 't'),
	'the logical slot is inactive now');
$primary->safe_psql('postgres',
	"SELECT pg_create_physical_replication_slot('idle', true)");
make_wal();
ok( $primary->safe_psql('postgres',
		"SELECT bool_and(pg_wal_lsn_diff(pg_current_wal_flush_lsn(), coalesce(confirmed_flush_lsn, restart_lsn)) > 1048576)"
		  . " FROM pg_replication_slots WHERE slot_name IN ('lagslot', 'idle')") eq 't',
	'both inactive slots are far behind');
add_expired(100);
ok($primary->poll_query_until('postgres', 'SELECT count(*) FROM c', '0'),
	'inactive slots are not waited for');
is($primary->safe_psql('postgres', $pool_idle), 't',
	'and ttl.worker_pool shows no wait');

$standby->stop;
$primary->stop;
done_testing();
