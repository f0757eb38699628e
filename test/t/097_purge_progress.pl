# ttl.purge_progress and the cost budget's wait event, seen from outside
# a running purge (1.9).  The purge is throttled by ttl's cost settings so
# that it lasts; every wait is bounded polling.
#
# - the worker's purge of a 20,000-row backlog: a row with the container,
#   the phase "throttled", rows_due as counted when the pass began, rows_done
#   advancing between two looks, a rate and a start;
# - the worker's session waits under TtlCostDelay on 17 and later,
#   Extension on 15 and 16 (pg_stat_activity.wait_event);
# - from another database: the row, with container NULL (an OID of another
#   database means nothing here);
# - a role without pg_read_all_stats sees pid and database only (the
#   worker runs as the bootstrap superuser), as pg_stat_activity shows
#   another role's session; with pg_read_all_stats the whole row;
# - the row is gone when the purge is over;
# - CALL ttl.run_purge() in a session of its own shows too, under that
#   session's pid;
# - retiring a whole partition shows the phase "retiring": in a round,
#   while it asks for the container's lock without queueing (wait event
#   TtlRetireLock on 17 and later), and in ttl.purge(), queued for it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

# a batch of 200 rows costs several times ttl.cost_limit: a sleep of
# 100 ms or more after each
my $node = ttl_node('purge_progress', qq{
ttl.cost_limit = 10
ttl.cost_delay = 100
ttl.batch_size = 200
});
my $v17 = $node->pg_version >= 17;

# The first non-empty answer of $sql in db1 (as $role, if given), asked
# again until the timeout: between two visits of the worker there is no
# row for a moment.  '' when none came.
sub first_answer
{
	my ($sql, $role) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	my $got = '';
	while ($got eq '' && time() < $deadline)
	{
		$got = $node->safe_psql('db1', $sql,
			$role ? (extra_params => [ '-U', $role ]) : ());
		select(undef, undef, undef, 0.1) if $got eq '';
	}
	return $got;
}

$node->safe_psql('postgres', q{
CREATE EXTENSION ttl;	-- the view, read from another database below
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE DATABASE db1 OWNER alice;
-- filled while the worker stays away, so the whole backlog is due when
-- the worker first counts it
ALTER DATABASE db1 SET ttl.worker_enabled = off;
});
$node->safe_psql('db1', q{
CREATE EXTENSION ttl;
SET ROLE alice;
CREATE TABLE t (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('t', 1);
INSERT INTO t SELECT g, '{}' FROM generate_series(1, 20000) g;
});
wait_seconds($node, 2);
# (the view shows every database: the worker's visit of postgres, which
# has the extension and nothing to purge, shows for a moment too)
is($node->safe_psql('db1', q{SELECT count(*) FROM ttl.purge_progress WHERE database = 'db1'}),
	'0', 'no purge, no row');
$node->safe_psql('postgres', 'ALTER DATABASE db1 RESET ttl.worker_enabled');

# ---- the worker's purge, throttled ----
ok( $node->poll_query_until('db1', q{
SELECT count(*) FROM ttl.purge_progress p
  JOIN pg_stat_activity a ON a.pid = p.pid AND a.backend_type = 'ttl worker'
 WHERE p.database = 'db1' AND p.container = 't'::regclass
   AND p.phase = 'throttled' AND p.rows_due = 20000}, '1'),
	'the worker purge shows: container, phase throttled, rows_due counted');
my $first = first_answer(
	"SELECT rows_done FROM ttl.purge_progress WHERE container = 't'::regclass");
like($first, qr/^\d+$/, 'rows_done read');
ok( $node->poll_query_until('db1', qq{
SELECT rows_done > $first AND rows_done <= 20000 AND rows_per_second > 0
   AND started_at <= now()
  FROM ttl.purge_progress WHERE container = 't'::regclass}),
	'rows_done advances, with a rate and a start');

my $wait = $v17 ? 'Extension:TtlCostDelay' : 'Extension:Extension';
ok( $node->poll_query_until('db1', qq{
SELECT count(*) > 0 FROM ttl.purge_progress p
  JOIN pg_stat_activity a USING (pid)
 WHERE p.phase = 'throttled'
   AND a.wait_event_type || ':' || a.wait_event = '$wait'}),
	"the throttled purge waits as $wait in pg_stat_activity");

# from another database: the row, its container unknown there
ok( $node->poll_query_until('postgres', q{
SELECT count(*) FROM ttl.purge_progress
 WHERE database = 'db1' AND container IS NULL AND phase IS NOT NULL
   AND rows_done IS NOT NULL}, '1'),
	'another database sees the purge, container NULL');

# privacy, as pg_stat_activity
my $as_bob = q{
SELECT pid IS NOT NULL, database, container IS NULL, phase IS NULL, rows_done IS NULL,
       rows_due IS NULL, rows_per_second IS NULL, started_at IS NULL
  FROM ttl.purge_progress WHERE database = 'db1'};
my $seen = first_answer($as_bob, 'bob');
is($seen, 't|db1|t|t|t|t|t|t',
	'a role without pg_read_all_stats sees pid and database only');
is( $node->safe_psql('db1', q{
SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker' AND query IS NOT NULL},
		extra_params => [ '-U', 'bob' ]),
	'0', '(as pg_stat_activity hides the worker\'s query from that role)');
$node->safe_psql('postgres', 'GRANT pg_read_all_stats TO bob');
$seen = first_answer(q{
SELECT phase IS NOT NULL, container IS NOT NULL FROM ttl.purge_progress WHERE database = 'db1'}, 'bob');
is($seen, 't|t', 'with pg_read_all_stats: the whole row');

# over: gone
ok($node->poll_query_until('db1', 'SELECT count(*) FROM t', '0'),
	'the backlog is purged');
ok($node->poll_query_until('db1', q{
SELECT count(*) FROM ttl.purge_progress WHERE container = 't'::regclass}, '0'),
	'the row is gone once the purge is over');

# ---- CALL ttl.run_purge() in a session of its own ----
$node->safe_psql('postgres', 'ALTER DATABASE db1 SET ttl.worker_enabled = off');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker' AND datname = 'db1'",
		'0'),
	'no worker in db1');
$node->safe_psql('db1',
	"SET ROLE alice; INSERT INTO t SELECT g, '{}' FROM generate_series(1, 5000) g");
wait_seconds($node, 2);
my ($out, $err) = ('', '');
my $call = IPC::Run::start(
	[ 'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('db1'),
	  '-U', 'alice', '-c', 'SELECT pg_backend_pid()', '-c', 'CALL ttl.run_purge()' ],
	'>', \$out, '2>', \$err);
ok( $node->poll_query_until('db1', q{
SELECT count(*) FROM ttl.purge_progress p
  JOIN pg_stat_activity a ON a.pid = p.pid AND a.backend_type = 'client backend'
 WHERE p.container = 't'::regclass AND p.rows_due = 5000
   AND p.phase IN ('walking', 'deleting', 'throttled')}, '1'),
	'CALL ttl.run_purge() shows, with its due rows');
$call->finish;
is($?, 0, 'the CALL ends well') or diag($err);
my ($caller_pid) = split /\n/, $out;
like($caller_pid, qr/^\d+$/, 'the caller\'s pid was read');
is($node->safe_psql('db1', 'SELECT count(*) FROM t'), '0', 'run_purge purged it all');
is($node->safe_psql('db1', 'SELECT count(*) FROM ttl.purge_progress'),
	'0', 'nothing shows after the CALL');

# ---- retiring a whole partition: the phase "retiring" ----
# A leaf whose every item has expired, and a reader holding the container
# (ACCESS SHARE, in an open transaction): the retire step waits for its
# lock, showing the phase.  ttl.purge() waits in the lock queue (the
# caller's lock_timeout); CALL ttl.run_purge() first asks for the lock
# without queueing, between tries under TtlRetireLock (17+; Extension on
# 15 and 16), then gives up for the round.
$node->safe_psql('db1', q{
SET ROLE alice;
CREATE TABLE rp (id int NOT NULL, created_at date NOT NULL, doc jsonb NOT NULL)
    PARTITION BY RANGE (created_at);
CREATE TABLE rp_old PARTITION OF rp FOR VALUES FROM ('2000-01-01') TO ('2000-01-02');
CREATE TABLE rp_new PARTITION OF rp FOR VALUES FROM ('2000-01-02') TO ('2000-01-03');
SELECT ttl.enable('rp', 60);
SELECT ttl.set_retire('rp', 'drop');
INSERT INTO rp SELECT g, '2000-01-01', '{}' FROM generate_series(1, 100) g;
INSERT INTO rp VALUES (0, '2000-01-02', '{"ttl": -1}');
});
my $blocker = $node->background_psql('db1');
$blocker->query_safe('BEGIN; SELECT count(*) FROM rp');
my ($rout, $rerr) = ('', '');
my $rcall = IPC::Run::start(
	[ 'psql', '-X', '-At', '-d', $node->connstr('db1'),
	  '-c', "SET ttl.now_override = '2100-01-01 00:00:00+00'",
	  map { ('-c', 'CALL ttl.run_purge()') } 1 .. 100 ],
	'>', \$rout, '2>', \$rerr);
my $retire_wait = $v17 ? 'TtlRetireLock' : 'Extension';
ok( $node->poll_query_until('db1', qq{
SELECT count(*) FROM ttl.purge_progress p JOIN pg_stat_activity a USING (pid)
 WHERE p.container = 'rp'::regclass AND p.phase = 'retiring'
   AND a.wait_event_type = 'Extension' AND a.wait_event = '$retire_wait'}, '1'),
	"CALL ttl.run_purge() retiring, not queued: phase 'retiring', wait event $retire_wait");
$rcall->kill_kill;
$rcall->finish;
# its session ends (the CALL in progress would hold the purge lock)
my $calls = q{FROM pg_stat_activity WHERE query LIKE 'CALL ttl.run_purge%' AND pid <> pg_backend_pid()};
$node->safe_psql('db1', "SELECT pg_terminate_backend(pid) $calls");
$node->poll_query_until('db1', "SELECT count(*) $calls", '0')
  or die 'the CALL session did not end';
is($node->safe_psql('db1', "SELECT count(*) FROM pg_inherits WHERE inhparent = 'rp'::regclass"),
	'2', 'the reader kept both leaves');
($rout, $rerr) = ('', '');
$rcall = IPC::Run::start(
	[ 'psql', '-X', '-At', '-d', $node->connstr('db1'),
	  '-c', "SET ttl.now_override = '2100-01-01 00:00:00+00'",
	  '-c', "SET lock_timeout = '60s'", '-c', "SELECT ttl.purge('rp')" ],
	'>', \$rout, '2>', \$rerr);
ok( $node->poll_query_until('db1', q{
SELECT count(*) FROM ttl.purge_progress p JOIN pg_stat_activity a USING (pid)
 WHERE p.container = 'rp'::regclass AND p.phase = 'retiring'
   AND a.wait_event_type = 'Lock'}, '1'),
	"ttl.purge() waiting in the lock queue shows the phase 'retiring'");
$blocker->query_safe('COMMIT');
$blocker->quit;
$rcall->finish;
like($rout, qr/^\d+$/m, 'then ttl.purge() returns') or diag($rerr);
is($node->safe_psql('db1', "SELECT count(*) FROM pg_inherits WHERE inhparent = 'rp'::regclass"),
	'1', 'one leaf left');

$node->stop;

# ---- without the preload: the DSM registry on 17 and later, nothing before ----
my $plain = PostgreSQL::Test::Cluster->new('purge_progress_plain');
$plain->init;
$plain->start;
$plain->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE TABLE p (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('p', 3600);
CREATE TABLE seen (container regclass, phase text);
CREATE FUNCTION look() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.seen SELECT container, phase FROM ttl.purge_progress
     WHERE pid = pg_catalog.pg_backend_pid();
    RETURN OLD;
END $$;
CREATE TRIGGER p_look BEFORE DELETE ON p FOR EACH ROW EXECUTE FUNCTION public.look();
INSERT INTO p VALUES (1, '{}');
});
is( $plain->safe_psql('postgres',
		"SET ttl.now_override = '2100-01-01 00:00:00+00'; SELECT ttl.purge('p')"),
	'1', 'a purge without the preload');
is( $plain->safe_psql('postgres', 'SELECT count(*), min(container::text), min(phase) FROM seen'),
	$v17 ? '1|p|deleting' : '0||',
	$v17 ? 'without the preload, 17+ shows it (the DSM registry)'
	  : 'without the preload, 15 and 16 show nothing');
$plain->stop;
done_testing();
