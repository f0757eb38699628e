# contrib/postgres_exporter/ttl.yaml with the real exporter
# (prometheus-postgres-exporter, Debian's 0.11.1): started on a loopback
# port against a throwaway cluster, connected as a monitoring role that has
# pg_monitor and no right on any table, scraped over HTTP (curl, or Perl's
# HTTP::Tiny where curl is missing, as in the 17/18 chroots) after the
# worker purged; every metric of the file is there, with the values the
# containers call for:
#  - app.events: 3 items purged by the worker (rows_purged_total 3), no
#    backlog, not failing;
#  - app.paused: paused with 4 expired items (expired_items 4, an oldest
#    expired age, paused 1);
#  - app.broken: a DELETE trigger of its owner refuses, quoting the
#    document: failing 1, and neither the document nor the error's words
#    anywhere in the scrape;
#  - app.late: its purge window never open while the test runs, so its
#    expired items wait past ttl.backlog_alert_age (2 s here): behind 1
#    with a behind_since, where the others are 0 (app.paused is paused:
#    waiting is expected there);
#  - app.big: paused with 1,001 expired items: expired_items stops at its
#    cap, 1,000, and expired_items_capped says so (0 for the others);
#  - the pool and the database: max_workers, naptime, the worker's visits.
# And the monitoring role itself (no USAGE on the tables' schema either): it
# cannot read the tables, ttl.stats shows
# it no backlog, ttl.container_metrics does; a role without pg_monitor reads
# neither (42501).
#
# The exporter binary: prometheus-postgres-exporter on PATH (test/run-all
# installs it on the host), else the copy test/run-all puts in the work
# dir's tools/ for a chroot major (a Go binary that needs only libc).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use File::Spec;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $root = "$FindBin::Bin/../..";
my $queries = File::Spec->rel2abs("$root/contrib/postgres_exporter/ttl.yaml");

sub find_program
{
	my ($name, @also) = @_;
	for my $dir (File::Spec->path, @also)
	{
		my $p = "$dir/$name";
		return $p if -x $p && !-d $p;
	}
	return undef;
}
my $exporter = find_program('prometheus-postgres-exporter',
	grep { defined } ($ENV{TESTDIR} ? "$ENV{TESTDIR}/tools" : undef));
plan skip_all => 'prometheus-postgres-exporter is not installed (test/run-all installs it; apt-get install prometheus-postgres-exporter)'
  unless $exporter;
my $curl = find_program('curl');

my $node = ttl_node('prom', q{
ttl.batch_size = 10
ttl.backlog_alert_age = 2
});

$node->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE ROLE app;
CREATE ROLE monitor LOGIN;
GRANT pg_monitor TO monitor;
CREATE ROLE nobody LOGIN;
CREATE SCHEMA app AUTHORIZATION app;
SET ROLE app;
CREATE TABLE app.events (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE app.paused (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE app.broken (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE app.late (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE app.big (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE FUNCTION app.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'refused: %', OLD.doc;
END $$;
CREATE TRIGGER refuse BEFORE DELETE ON app.broken FOR EACH ROW EXECUTE FUNCTION app.refuse();
SELECT ttl.enable(t, -1) FROM unnest('{app.events,app.paused,app.broken,app.late,app.big}'::regclass[]) t;
SELECT ttl.pause('app.paused');
SELECT ttl.pause('app.big');
-- an hour's window twelve hours away: closed for the whole test
SELECT ttl.set_purge_window('app.late',
         to_char(now() AT TIME ZONE 'UTC' + interval '12 hours', 'HH24:MI') || '-'
         || to_char(now() AT TIME ZONE 'UTC' + interval '13 hours', 'HH24:MI') || ' UTC');
INSERT INTO app.late SELECT g, '{"ttl": 1}' FROM generate_series(1, 2) g;
INSERT INTO app.big SELECT g, '{"ttl": 1}' FROM generate_series(1, 1001) g;
INSERT INTO app.paused SELECT g, '{"ttl": 1, "secret": "paused-secret-payload"}' FROM generate_series(1, 4) g;
INSERT INTO app.broken SELECT g, '{"ttl": 1, "secret": "broken-secret-payload"}' FROM generate_series(1, 2) g;
INSERT INTO app.events SELECT g, '{"ttl": 1, "secret": "events-secret-payload"}' FROM generate_series(1, 3) g;
});

# the worker purges app.events and fails on app.broken
ok($node->poll_query_until('postgres', q{
SELECT (SELECT count(*) FROM app.events) = 0
   AND (SELECT last_error IS NOT NULL FROM ttl.stats WHERE container = 'app.broken'::regclass)
   AND (SELECT last_served IS NOT NULL FROM ttl.databases WHERE datname = 'postgres')}),
	'the worker purged app.events and failed on app.broken');
# app.late's items expired more than ttl.backlog_alert_age ago
ok($node->poll_query_until('postgres', q{
SELECT behind FROM ttl.container_metrics WHERE container = 'app.late'::regclass},
		't', extra_params => [ '-U', 'monitor' ]),
	'monitor: app.late is behind in ttl.container_metrics');

# ---- what the monitoring role reads in SQL ----
my ($ret, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM app.events',
	extra_params => [ '-U', 'monitor' ]);
like($err, qr/permission denied for (table events|schema app)/, 'monitor: no right on the tables');
is( $node->safe_psql('postgres',
		q{SELECT coalesce(expired_backlog::text, 'NULL') FROM ttl.stats WHERE container::text = 'app.paused'},
		extra_params => [ '-U', 'monitor' ]),
	'NULL', 'monitor: ttl.stats shows no backlog of a table it cannot read');
is( $node->safe_psql('postgres',
		q{SELECT expired_backlog, oldest_expired_at IS NOT NULL, paused, failing
		    FROM ttl.container_metrics WHERE container::text = 'app.paused'},
		extra_params => [ '-U', 'monitor' ]),
	'4|t|t|f', 'monitor: ttl.container_metrics counts it');
is( $node->safe_psql('postgres',
		q{SELECT container, expired_backlog, expired_backlog_capped, behind, behind_since IS NOT NULL
		    FROM ttl.container_metrics ORDER BY container::text},
		extra_params => [ '-U', 'monitor' ]),
	"app.big|1000|t|f|f\napp.broken|0|f|f|f\napp.events|0|f|f|f\napp.late|2|f|t|t\napp.paused|4|f|f|f",
	'monitor: the count stops at 1,000 and says so; only app.late is behind');
is( $node->safe_psql('postgres',
		q{SELECT m.behind_since = s.behind_since AND m.behind_since <= now()
		    FROM ttl.container_metrics m JOIN ttl.stats s USING (container)
		   WHERE container = 'app.late'::regclass}),
	't', 'behind_since as ttl.stats shows it');
($ret, $out, $err) = $node->psql('postgres', 'SELECT * FROM ttl.container_metrics',
	extra_params => [ '-U', 'nobody' ]);
like($err, qr/permission denied for view container_metrics/, 'a role without pg_monitor: not the view');
# (by OID: nobody has no USAGE on the schema either)
my $paused_oid = $node->safe_psql('postgres', q{SELECT 'app.paused'::regclass::oid});
($ret, $out, $err) = $node->psql('postgres', "SELECT * FROM ttl._monitor_backlog($paused_oid)",
	extra_params => [ '-U', 'nobody' ]);
like($err, qr/permission denied for function _monitor_backlog/, 'nor its function');
$node->safe_psql('postgres', q{GRANT EXECUTE ON FUNCTION ttl._monitor_backlog(regclass) TO nobody});
($ret, $out, $err) = $node->psql('postgres', "SELECT * FROM ttl._monitor_backlog($paused_oid)",
	extra_params => [ '-U', 'nobody' ]);
like($err, qr/permission denied to read the backlog of container app\.paused for monitoring/,
	'the function checks pg_read_all_stats itself (EXECUTE granted by mistake)');
$node->safe_psql('postgres', q{REVOKE EXECUTE ON FUNCTION ttl._monitor_backlog(regclass) FROM nobody});

# ---- the exporter ----
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $host = $node->host;
my ($eout, $eerr) = ('', '');
my $h;
{
	local $ENV{DATA_SOURCE_NAME} =
	  "host=$host port=" . $node->port . ' user=monitor dbname=postgres sslmode=disable';
	# only this file's queries: the built-in ones differ between majors
	$h = IPC::Run::start(
		[ $exporter, "--web.listen-address=127.0.0.1:$port",
		  "--extend.query-path=$queries", '--disable-default-metrics',
		  '--disable-settings-metrics', '--no-collector.database',
		  '--no-collector.bgwriter', '--log.level=warn' ],
		'<', \undef, '>', \$eout, '2>', \$eerr);
}

sub scrape
{
	my $url = "http://127.0.0.1:$port/metrics";
	if ($curl)
	{
		my ($o, $e) = ('', '');
		IPC::Run::run([ $curl, '-sf', '--max-time', '20', $url ], '>', \$o, '2>', \$e);
		return $o;
	}
	require HTTP::Tiny;
	my $r = HTTP::Tiny->new(timeout => 20)->get($url);
	return $r->{success} ? $r->{content} : '';
}

# the value of the first sample of $name whose labels include %want
sub sample
{
	my ($text, $name, %want) = @_;
	for my $line (split /\n/, $text)
	{
		next unless $line =~ /^\Q$name\E(?:\{(.*)\})? (\S+)$/;
		my ($labels, $value) = ($1 // '', $2);
		my %l = $labels =~ /(\w+)="([^"]*)"/g;
		next if grep { !defined $l{$_} || $l{$_} ne $want{$_} } keys %want;
		return $value;
	}
	return undef;
}

my $text = '';
my $deadline = time + 60;
while (time < $deadline)
{
	$text = scrape();
	last if defined sample($text, 'ttl_container_rows_purged_total', container => 'app.events')
	  && defined sample($text, 'ttl_pool_workers_running');
	sleep 1;
}
ok(defined sample($text, 'ttl_container_rows_purged_total', container => 'app.events'),
	"the exporter answers on 127.0.0.1:$port with ttl's metrics"
	  . ($curl ? ' (curl)' : ' (HTTP::Tiny)'))
  or diag "exporter stderr:\n$eerr\nscrape:\n$text";
is(sample($text, 'pg_exporter_user_queries_load_error'), '0', 'ttl.yaml loads without error');

# every metric of the file, with its type
my %types = (
	map({ ("ttl_container_$_" => 'gauge') }
		qw(expired_items oldest_expired_age_seconds last_purge_timestamp_seconds failing paused held backed_off
		  expired_items_capped behind behind_since_timestamp_seconds)),
	ttl_container_rows_purged_total => 'counter',
	map({ ("ttl_database_$_" => 'gauge') } qw(last_served_timestamp_seconds due_rows worker_running failing)),
	ttl_database_visits_total => 'counter',
	map({ ("ttl_pool_$_" => 'gauge') }
		qw(workers_running max_workers replica_wait_seconds replica_lag_bytes naptime_seconds)));
for my $m (sort keys %types)
{
	like($text, qr/^# TYPE \Q$m\E $types{$m}$/m, "$m is a $types{$m}");
}

# the values after the purge
is(sample($text, 'ttl_container_rows_purged_total', container => 'app.events', datname => 'postgres'),
	'3', 'app.events: 3 rows purged');
is(sample($text, 'ttl_container_expired_items', container => 'app.events'), '0', 'app.events: no backlog');
is(sample($text, 'ttl_container_oldest_expired_age_seconds', container => 'app.events'), '0',
	'app.events: no oldest expired item');
cmp_ok(sample($text, 'ttl_container_last_purge_timestamp_seconds', container => 'app.events'), '>',
	time - 3600, 'app.events: purged just now');
is(sample($text, 'ttl_container_failing', container => 'app.events'), '0', 'app.events: not failing');
is(sample($text, 'ttl_container_expired_items', container => 'app.paused'), '4', 'app.paused: 4 expired');
cmp_ok(sample($text, 'ttl_container_oldest_expired_age_seconds', container => 'app.paused'), '>', 0,
	'app.paused: its oldest expired item has an age');
is(sample($text, 'ttl_container_paused', container => 'app.paused'), '1', 'app.paused: paused');
is(sample($text, 'ttl_container_rows_purged_total', container => 'app.paused'), '0',
	'app.paused: nothing purged');
is(sample($text, 'ttl_container_failing', container => 'app.broken'), '1', 'app.broken: failing');
is(sample($text, 'ttl_container_paused', container => 'app.broken'), '0', 'app.broken: not paused');
is(sample($text, 'ttl_container_held', container => 'app.broken'), '0', 'app.broken: not held');
unlike($text, qr/secret|refused/, 'no document and no error words in the scrape');
is(sample($text, 'ttl_container_behind', container => 'app.late'), '1', 'app.late: behind');
cmp_ok(sample($text, 'ttl_container_behind_since_timestamp_seconds', container => 'app.late'), '>',
	time - 3600, 'app.late: behind since a moment ago');
for my $c (qw(app.events app.paused))
{
	is(sample($text, 'ttl_container_behind', container => $c), '0', "$c: not behind");
	is(sample($text, 'ttl_container_behind_since_timestamp_seconds', container => $c), '0',
		"$c: no behind_since");
}
is(sample($text, 'ttl_container_expired_items', container => 'app.big'), '1000',
	'app.big: expired_items stops at 1,000');
is(sample($text, 'ttl_container_expired_items_capped', container => 'app.big'), '1',
	'app.big: and says it stopped there');
is(sample($text, 'ttl_container_expired_items_capped', container => 'app.paused'), '0',
	'app.paused: an exact count');
is(sample($text, 'ttl_pool_max_workers'), $node->safe_psql('postgres', 'SHOW ttl.max_workers'),
	'the pool: ttl.max_workers');
is(sample($text, 'ttl_pool_naptime_seconds'), '1', 'the pool: ttl.naptime in seconds');
is(sample($text, 'ttl_pool_replica_wait_seconds'), '0', 'the pool: no replica waited for');
cmp_ok(sample($text, 'ttl_pool_workers_running'), '>=', 0, 'the pool: workers running');
cmp_ok(sample($text, 'ttl_database_last_served_timestamp_seconds', datname => 'postgres'), '>',
	time - 3600, 'the database: served just now');
cmp_ok(sample($text, 'ttl_database_visits_total', datname => 'postgres'), '>=', 1,
	'the database: visited');

$h->kill_kill;
ok(!$node->log_contains('terminated by signal|PANIC|TRAP:'), 'no crash in the server log');
$node->stop;
done_testing();
