# No owner can hold the purge pool (issue 25, item 2).  Two hostile
# containers, one in each of two databases, with ttl.max_workers = 2:
#   (a) a BEFORE DELETE trigger that sleeps in a loop and traps
#       query_canceled, so ttl.batch_timeout's cancel is swallowed and the
#       worker would stay in that batch for ever;
#   (b) an RLS policy (FORCE ROW LEVEL SECURITY) whose function sleeps in
#       a loop, trapping query_canceled too, whenever the worker is in its
#       end-of-visit backlog walk (it is quick in the purge batches, so the
#       walk is what it holds).
# Without a bound on a visit both workers stay for ever: a third database
# and a container beside hog (a) are never purged.  With it, the launcher
# terminates each overstaying worker after ttl.max_visit_time (SIGTERM: a
# FATAL no user code can trap), the next worker in that database records
# what happened as the hostile container's last_error and backs it off in
# ttl.purge_stats (durably), and both victims are purged within a few
# naptimes.  The server never restarts.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('visit_bound', q{
ttl.max_workers = 2
ttl.batch_timeout = '1s'
ttl.max_visit_time = '4s'
});

my $start_time = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');
my $launcher_pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'ttl launcher'");

$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE mallory LOGIN;
-- hog (b) looks at what its worker is doing (pg_stat_activity.query)
GRANT pg_read_all_stats TO mallory;
CREATE DATABASE dba;
CREATE DATABASE dbb;
CREATE DATABASE dbc;
});
for my $db (qw(dba dbb dbc))
{
	$node->safe_psql($db, q{
CREATE EXTENSION ttl;
CREATE SCHEMA m AUTHORIZATION mallory;
CREATE SCHEMA app AUTHORIZATION alice;
});
}

# (a) in dba, beside a victim container of alice's
my $hog_a = q{
SET ROLE mallory;
CREATE FUNCTION m.hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    LOOP
        BEGIN
            PERFORM pg_catalog.pg_sleep(0.1);
        EXCEPTION WHEN query_canceled THEN
            NULL;               -- ttl.batch_timeout's cancel, swallowed
        END;
    END LOOP;
END $$;
CREATE TABLE m.a_hog (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('m.a_hog', -1);
CREATE TRIGGER hold BEFORE DELETE ON m.a_hog FOR EACH ROW EXECUTE FUNCTION m.hold();
};
$node->safe_psql('dba', $hog_a . q{
SET ROLE alice;
CREATE TABLE app.victim (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('app.victim', -1);
});

# (b) in dbb: rows the batches may read but not delete, and a policy that
# holds whoever walks the backlog
$node->safe_psql('dbb', q{
SET ROLE mallory;
CREATE FUNCTION m.slow_in_walk() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_stat_activity a
                WHERE a.pid = pg_catalog.pg_backend_pid()
                  AND a.query LIKE 'ttl backlog%') THEN
        LOOP
            BEGIN
                PERFORM pg_catalog.pg_sleep(0.1);
            EXCEPTION WHEN query_canceled THEN
                NULL;
            END;
        END LOOP;
    END IF;
    RETURN true;
END $$;
CREATE TABLE m.b_hog (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('m.b_hog', -1);
ALTER TABLE m.b_hog ENABLE ROW LEVEL SECURITY;
ALTER TABLE m.b_hog FORCE ROW LEVEL SECURITY;
CREATE POLICY sel ON m.b_hog FOR SELECT USING (m.slow_in_walk());
CREATE POLICY ins ON m.b_hog FOR INSERT WITH CHECK (true);
CREATE POLICY del ON m.b_hog FOR DELETE USING (false);
});

$node->safe_psql('dbc', q{
SET ROLE alice;
CREATE TABLE app.victim (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('app.victim', -1);
});

# the hogs take both places of the pool
$node->safe_psql('dba', q{
SET ROLE mallory;
INSERT INTO m.a_hog SELECT g, '{"ttl": 1}' FROM generate_series(1, 3) g;
});
$node->safe_psql('dbb', q{
SET ROLE mallory;
INSERT INTO m.b_hog SELECT g, '{"ttl": 1}' FROM generate_series(1, 3) g;
});
ok( $node->poll_query_until('postgres', q{
SELECT count(DISTINCT datname) FROM pg_stat_activity
 WHERE backend_type = 'ttl worker' AND wait_event = 'PgSleep'
   AND datname IN ('dba', 'dbb')}, '2'),
	'both hogs hold a worker');

# now the victims have expired items
my $t0 = time();
$node->safe_psql('dba', q{
INSERT INTO app.victim SELECT g, '{"ttl": 1}' FROM generate_series(1, 5) g;
});
$node->safe_psql('dbc', q{
INSERT INTO app.victim SELECT g, '{"ttl": 1}' FROM generate_series(1, 5) g;
});

# bounded polling: 60 s at most (on the code before the fix, never)
sub poll_within
{
	my ($db, $sql, $secs) = @_;
	my $deadline = time() + $secs;
	while (time() < $deadline)
	{
		return 1 if $node->safe_psql($db, $sql) eq 't';
		usleep(100_000);
	}
	return 0;
}

ok(poll_within('dbc', 'SELECT count(*) = 0 FROM app.victim', 60),
	'a third database is purged while hogs run in two others');
ok(poll_within('dba', 'SELECT count(*) = 0 FROM app.victim', 60),
	'a container beside a hog is purged');
my $took = time() - $t0;
# items expire 1 s after their _ts; a visit is bounded at 4 s; naptime 1 s
cmp_ok($took, '<', 30, sprintf('both victims purged within a few naptimes (%.1f s)', $took));

# the hogs' last_error says what happened
ok( poll_within('dba',
		"SELECT last_error LIKE '%max_visit_time%' FROM ttl.stats WHERE container = 'm.a_hog'::regclass",
		60),
	'hog (a) has its termination as last_error');
like( $node->safe_psql('dba',
		"SELECT last_error FROM ttl.stats WHERE container = 'm.a_hog'::regclass"),
	qr/purge worker terminated after ttl\.max_visit_time \(4000 ms\) while in this container \(batch\)/,
	'hog (a): terminated in a batch');
ok( poll_within('dbb',
		"SELECT last_error LIKE '%max_visit_time%' FROM ttl.stats WHERE container = 'm.b_hog'::regclass",
		60),
	'hog (b) has its termination as last_error');
like( $node->safe_psql('dbb',
		"SELECT last_error FROM ttl.stats WHERE container = 'm.b_hog'::regclass"),
	qr/purge worker terminated after ttl\.max_visit_time \(4000 ms\) while in this container \(backlog walk\)/,
	'hog (b): terminated in the backlog walk');
is($node->safe_psql('dba', 'SELECT count(*) FROM m.a_hog'), '3', 'hog (a) kept its rows');

# the back-off, durably in ttl.purge_stats
is( $node->safe_psql('dba',
		"SELECT overruns >= 1 AND retry_after > last_error_at FROM ttl.purge_stats"
		  . " WHERE relid = 'm.a_hog'::regclass"),
	't', 'hog (a) is backed off in ttl.purge_stats');
is( $node->safe_psql('dbb',
		"SELECT overruns >= 1 AND retry_after > last_error_at FROM ttl.purge_stats"
		  . " WHERE relid = 'm.b_hog'::regclass"),
	't', 'hog (b) is backed off in ttl.purge_stats');
is( $node->safe_psql('dba',
		"SELECT overruns, retry_after IS NULL FROM ttl.purge_stats WHERE relid = 'app.victim'::regclass"),
	'0|t', 'the victim is not backed off');

# terminations are visible in the pool's views
is( $node->safe_psql('dbc',
		"SELECT count(*) FROM ttl.databases WHERE datname IN ('dba', 'dbb')"
		  . " AND terminated_visits >= 1 AND last_termination LIKE '%ttl.max_visit_time%'"),
	'2', 'ttl.databases counts the terminated visits');
cmp_ok($node->safe_psql('dbc', 'SELECT terminated_visits FROM ttl.worker_pool'),
	'>=', 2, 'ttl.worker_pool counts them too');
ok( $node->log_contains(
		qr/ttl launcher terminated the purge worker of database "dba" after ttl\.max_visit_time/),
	'the launcher logs the termination');

# later rounds go on: new items in the victims are purged again
$node->safe_psql($_, q{
INSERT INTO app.victim SELECT g, '{"ttl": 1}' FROM generate_series(11, 15) g;
}) for qw(dba dbc);
ok(poll_within('dbc', 'SELECT count(*) = 0 FROM app.victim', 60),
	'the third database is purged again');
ok(poll_within('dba', 'SELECT count(*) = 0 FROM app.victim', 60),
	'the victim container is purged again');

# a database whose extension is still at 1.6 (no back-off columns yet):
# the termination is its hog's last_error all the same, and its 1.6 views
# work with the new library
$node->safe_psql('postgres', 'CREATE DATABASE dbold');
$node->safe_psql('dbold', q{
CREATE EXTENSION ttl VERSION '1.6';
CREATE SCHEMA m AUTHORIZATION mallory;
} . $hog_a . q{
INSERT INTO m.a_hog SELECT g, '{"ttl": 1}' FROM generate_series(1, 3) g;
});
ok( poll_within('dbold',
		"SELECT last_error LIKE 'purge worker terminated after ttl.max_visit_time%'"
		  . " FROM ttl.stats WHERE container = 'm.a_hog'::regclass",
		60),
	'1.6: the hog\'s termination is its last_error');
is( $node->safe_psql('dbold',
		"SELECT visits > 0 FROM ttl.databases WHERE datname = 'dbold'"),
	't', '1.6: ttl.databases works with the new library');
is($node->safe_psql('dbold', 'SELECT max_workers FROM ttl.worker_pool'),
	'2', '1.6: ttl.worker_pool too');

# the server never restarted (SIGTERM, never SIGKILL)
is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'),
	$start_time, 'the server did not restart');
is( $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'ttl launcher'"),
	$launcher_pid, 'the launcher is the same process');
ok(!$node->log_contains('terminated by signal|PANIC|TRAP:|terminating any other active server processes'),
	'no crash, no restart');

# a restart keeps the back-off: with hog (a) backed off for an hour, the
# first visits after a restart leave it alone (no termination, its count
# unchanged) and purge the victim beside it
$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl.enabled = off');
$node->reload;
ok( $node->poll_query_until('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker'", '0'),
	'no worker left with ttl.enabled off (a stuck one is still terminated)');
$node->safe_psql('dba', q{
UPDATE ttl.purge_stats SET retry_after = clock_timestamp() + interval '1 hour'
 WHERE relid = 'm.a_hog'::regclass;
});
my $overruns = $node->safe_psql('dba',
	"SELECT overruns FROM ttl.purge_stats WHERE relid = 'm.a_hog'::regclass");
$node->safe_psql('postgres', 'ALTER SYSTEM RESET ttl.enabled');
$node->restart;
$node->safe_psql('dba', q{
INSERT INTO app.victim SELECT g, '{"ttl": 1}' FROM generate_series(21, 25) g;
});
ok(poll_within('dba', 'SELECT count(*) = 0 FROM app.victim', 60),
	'after a restart, the victim beside the backed-off hog is purged');
is( $node->safe_psql('dba',
		"SELECT terminated_visits FROM ttl.databases WHERE datname = 'dba'"),
	'0', 'without entering the hog: no visit terminated since the restart');
is( $node->safe_psql('dba',
		"SELECT overruns FROM ttl.purge_stats WHERE relid = 'm.a_hog'::regclass"),
	$overruns, 'the back-off survived the restart');

$node->stop;
done_testing();
