# The worker and the operator's settings of 1.9: purge windows, the
# falling-behind signal and ttl.max_purge_time.
#
# - A container outside its window keeps its expired rows (hidden) while
#   the worker visits; it falls behind (ttl.backlog_alert_age = 1s): the
#   worker logs ONE WARNING for it, however many workers visit after it
#   (each exits after its visit: the state is in ttl.purge_stats); its
#   window removed, the worker purges it and logs ONE LOG line that it
#   caught up.
# - With ttl.max_purge_time tiny, a backlog is left with rows after a visit
#   (one batch per visit: the whole purge takes a visit per batch)
#   and finished on later rounds (resumed where it stopped).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('behind', q{
ttl.backlog_alert_age = 1s
});

# a window that excludes now: from two hours ahead to three hours ahead, UTC
my $window = $node->safe_psql('postgres', q{
SELECT to_char(now() AT TIME ZONE 'UTC' + interval '2 hours', 'HH24:MI') || '-'
    || to_char(now() AT TIME ZONE 'UTC' + interval '3 hours', 'HH24:MI') || ' UTC'});
$node->safe_psql('postgres', qq{
CREATE EXTENSION ttl;
CREATE TABLE late (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('late', 1);
SELECT ttl.set_purge_window('late', '$window');
INSERT INTO late SELECT g, jsonb_build_object('n', g) FROM generate_series(1, 50) g;
});

sub visits
{
	return $node->safe_psql('postgres',
		"SELECT visits FROM ttl.databases WHERE datname = 'postgres'");
}

sub count_in_log
{
	my ($re) = @_;
	my $log = slurp_file($node->logfile);
	my @m = $log =~ /$re/g;
	return scalar @m;
}

my $warning = qr/WARNING:  ttl container "public\.late" is behind/;
my $caught_up = qr/LOG:  ttl container "public\.late" has caught up/;

# the worker logs the WARNING (bounded polling of the server log)
my $seen = 0;
for (1 .. 300)
{
	if (count_in_log($warning) >= 1) { $seen = 1; last; }
	usleep(100_000);
}
ok($seen, 'the worker logs a WARNING when the container falls behind');
is($node->safe_psql('postgres',
		"SELECT behind, behind_since IS NOT NULL, next_window_at > now() FROM ttl.stats WHERE container = 'late'::regclass"),
	't|t|t', 'ttl.stats: behind, since when, the next window ahead');
is($node->safe_psql('postgres', 'SELECT count(*) FROM late'), '50',
	'outside its window the worker left every row');
is($node->safe_psql('postgres', 'SELECT count(*) FROM late_live'), '0',
	'and the view hides them');

# three more visits (workers that exit after each): no second WARNING
my $v0 = visits();
ok($node->poll_query_until('postgres',
		"SELECT visits >= $v0 + 3 FROM ttl.databases WHERE datname = 'postgres'"),
	'three more visits');
is(count_in_log($warning), 1, 'one WARNING, however many visits');

# its window removed: purged, one LOG line that it caught up
$node->safe_psql('postgres', "SELECT ttl.set_purge_window('late', NULL)");
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM late', '0'),
	'without its window the worker purges it');
$seen = 0;
for (1 .. 300)
{
	if (count_in_log($caught_up) >= 1) { $seen = 1; last; }
	usleep(100_000);
}
ok($seen, 'the worker logs that the container caught up');
$v0 = visits();
ok($node->poll_query_until('postgres',
		"SELECT visits >= $v0 + 3 FROM ttl.databases WHERE datname = 'postgres'"),
	'three more visits');
is(count_in_log($caught_up), 1, 'one LOG line, however many visits');
is(count_in_log($warning), 1, 'and still one WARNING');
is($node->safe_psql('postgres',
		"SELECT behind, behind_since IS NULL FROM ttl.stats WHERE container = 'late'::regclass"),
	'f|t', 'ttl.stats: no longer behind');

# ttl.max_purge_time: a visit leaves a backlog with rows after its time on
# it, and later rounds finish it from where it stopped
$node->append_conf('postgresql.conf', q{
ttl.max_purge_time = 1ms
ttl.batch_size = 1000
});
$node->reload;
$node->safe_psql('postgres', q{
CREATE TABLE slow (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('slow', 1);
SELECT ttl.pause('slow');
INSERT INTO slow SELECT g, jsonb_build_object('n', g) FROM generate_series(1, 10000) g;
});
wait_seconds($node, 2);
$v0 = visits();
$node->safe_psql('postgres', "SELECT ttl.resume('slow')");
# One visit is one round, and a container set aside at ttl.max_purge_time
# resumes in the next: with one batch of 1000 rows per visit the 10000 rows
# take at least 10 visits (the launcher sends the next one at once while a
# round is unfinished, so how many visits have passed at any one moment is
# not what the test can count on; how many the whole purge took is).
# Without the limit one visit deletes them all (a few visits at most, the
# idle ones of the naptime included).
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM slow', '0'),
	'later rounds finish it');
my $took = visits() - $v0;
cmp_ok($took, '>=', 10, "the purge took one visit per batch ($took visits for 10 batches)");
is($node->safe_psql('postgres',
		"SELECT rows_purged, last_error IS NULL FROM ttl.stats WHERE container = 'slow'::regclass"),
	'10000|t', 'each row purged once, no error');

$node->stop;
done_testing();
