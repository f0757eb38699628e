# pg_cron without the ttl preload: one statement schedules purging, the real
# pg_cron runs it (in this database and in another one), pauses are kept,
# ttl.stats records the work.  Then with both ttl and pg_cron preloaded: the
# worker and the cron job never purge one container at the same time and
# never double count.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

# pg_cron 1.4 schedules by the minute: the first run can take up to 60 s.
my $cron_wait = 150;

sub cron_node
{
	my ($name, $preload) = @_;
	return ttl_node($name, qq{
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 20
}, $preload);
}

sub wait_for
{
	my ($node, $db, $query, $expected, $what) = @_;
	my $deadline = time() + $cron_wait;
	my $got = '';
	while (time() < $deadline)
	{
		$got = $node->safe_psql($db, $query);
		last if $got eq $expected;
		# bounded polling: pg_cron only acts on minute boundaries
		select(undef, undef, undef, 0.5);
	}
	is($got, $expected, $what);
}

my $containers = q{
	CREATE TABLE c (id int PRIMARY KEY, doc jsonb NOT NULL);
	SELECT ttl.enable('c', 3600);
	INSERT INTO c SELECT g, '{"ttl": 1}' FROM generate_series(1, 500) g;
	INSERT INTO c SELECT g, '{"ttl": -1}' FROM generate_series(501, 510) g;
	INSERT INTO c SELECT g, '{}' FROM generate_series(511, 520) g;
	CREATE TABLE paused (doc jsonb);
	SELECT ttl.enable('paused', 1);
	INSERT INTO paused SELECT '{}' FROM generate_series(1, 7);
	SELECT ttl.pause('paused');
};

# --- 1. pg_cron only -------------------------------------------------------
my $node = cron_node('cron_only', 'pg_cron');
$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('postgres', 'CREATE EXTENSION pg_cron');
$node->safe_psql($_, "CREATE EXTENSION ttl; $containers") for ('postgres', 'app');

my ($ret, $out, $err) = $node->psql('postgres', 'SELECT 1', extra_params => []);
is($err, '', 'no warning at every statement although ttl is not preloaded');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'ttl%'}),
	'0', 'no ttl worker without the preload');

($ret, $out, $err) = $node->psql('app', 'SELECT ttl.schedule_purge()');
like($err, qr/pg_cron is not installed in database "app"/,
	'scheduling where pg_cron is not installed explains itself');

my $job = $node->safe_psql('postgres', q{SELECT ttl.schedule_purge()});
my $job_app = $node->safe_psql('postgres', q{SELECT ttl.schedule_purge('* * * * *', 'app')});
is($node->safe_psql('postgres',
	q{SELECT string_agg(jobname || ':' || database || ':' || command, ' ' ORDER BY jobname) FROM cron.job}),
	'ttl-purge-app:app:CALL ttl.run_purge() ttl-purge-postgres:postgres:CALL ttl.run_purge()',
	'one statement per database schedules CALL ttl.run_purge()');

for my $db ('postgres', 'app')
{
	wait_for($node, $db, q{SELECT count(*) FROM c}, '20',
		"$db: the cron job purged the expired items and nothing else");
}
wait_for($node, 'postgres',
	q{SELECT count(DISTINCT jobid) FROM cron.job_run_details WHERE status = 'succeeded'}, '2',
	'both cron runs succeeded');
is($node->safe_psql('postgres', q{SELECT count(*) FROM cron.job_run_details WHERE status <> 'succeeded' AND status <> 'running'}),
	'0', 'no failed cron run');
for my $db ('postgres', 'app')
{
	is($node->safe_psql($db, q{SELECT count(*) FROM paused}), '7', "$db: the paused container is left alone");
	is($node->safe_psql($db, q{SELECT rows_purged FROM ttl.stats WHERE container = 'c'::regclass}),
		'500', "$db: ttl.stats records the cron purge");
}
is($node->safe_psql('postgres', q{SELECT ttl.unschedule_purge('app')}), 't', 'unschedule');
is($node->safe_psql('postgres', q{SELECT count(*) FROM cron.job}), '1', 'one job left');
$node->stop;

# --- 2. ttl and pg_cron both preloaded ---------------------------------------
$node = cron_node('both', 'ttl,pg_cron');
$node->safe_psql('postgres', 'CREATE EXTENSION pg_cron; CREATE EXTENSION ttl');
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET ttl.batch_size = 50;
	SELECT pg_reload_conf();
	CREATE TABLE big (id int PRIMARY KEY, doc jsonb NOT NULL);
	SELECT ttl.enable('big', 1);
	SELECT ttl.schedule_purge();
});
# while another purger holds the container, both the worker and the cron
# job skip it: hold it with an open ttl.purge() transaction
my $holder = $node->background_psql('postgres');
$holder->query_safe(q{BEGIN; SELECT ttl.purge('big')});
$node->safe_psql('postgres', q{INSERT INTO big SELECT g, '{}' FROM generate_series(1, 3000) g});
my $runs = $node->safe_psql('postgres', q{SELECT count(*) FROM cron.job_run_details});
wait_for($node, 'postgres',
	qq{SELECT count(*) > $runs FROM cron.job_run_details WHERE status = 'succeeded'}, 't',
	'a cron run finished while the container was held');
is($node->safe_psql('postgres', q{SELECT count(*) FROM big}), '3000',
	'neither the cron job nor the worker purged a container another purger holds');
$holder->query_safe('COMMIT');
$holder->quit;

wait_for($node, 'postgres', q{SELECT count(*) FROM big}, '0', 'then it is purged');
# more rows, purged by whichever gets there: worker and cron together
$node->safe_psql('postgres', q{INSERT INTO big SELECT g, '{}' FROM generate_series(3001, 9000) g});
wait_for($node, 'postgres', q{SELECT count(*) FROM big}, '0', 'worker and cron purge together');
$runs = $node->safe_psql('postgres', q{SELECT count(*) FROM cron.job_run_details});
wait_for($node, 'postgres',
	qq{SELECT count(*) > $runs FROM cron.job_run_details WHERE status = 'succeeded'}, 't',
	'another cron run after that');
is($node->safe_psql('postgres', q{SELECT rows_purged FROM ttl.stats WHERE container = 'big'::regclass}),
	'9000', 'every row counted exactly once');
is($node->safe_psql('postgres', q{SELECT count(*) FROM cron.job_run_details WHERE status = 'failed'}),
	'0', 'no cron run failed');
my $log = slurp_file($node->logfile);
unlike($log, qr/deadlock detected/, 'no deadlock');
$node->stop;

done_testing();
