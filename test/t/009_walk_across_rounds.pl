# A backlog that takes the worker many rounds at a slow budget: rounds are
# bounded by ttl.naptime, and each round goes on with the walk the previous
# one left (its bitmap of due rows) instead of gathering a new one.  The
# result is exact: every expired item of both kinds gone, nothing else.
# Then a walk survives VACUUM truncating the table between its batches.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('walk', q{
ttl.batch_size = 500
ttl.cost_limit = 200
ttl.cost_delay = 50
log_min_messages = debug1
});

# 24000 items inheriting a 1 s default, 6000 with their own ttl of 1 s,
# 500 that never expire and 500 that expire in an hour; all due at once.
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE TABLE big (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('big', 1);
SELECT ttl.pause('big');
INSERT INTO big SELECT g, CASE WHEN g % 5 = 0 THEN jsonb_build_object('n', g, 'ttl', 1)
                               ELSE jsonb_build_object('n', g) END
  FROM generate_series(1, 30000) g;
INSERT INTO big SELECT g, jsonb_build_object('n', g, 'ttl', -1) FROM generate_series(30001, 30500) g;
INSERT INTO big SELECT g, jsonb_build_object('n', g, 'ttl', 3600) FROM generate_series(30501, 31000) g;
});
wait_seconds($node, 2);

my $log_offset = -s $node->logfile;
my $t0 = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
$node->safe_psql('postgres', "SELECT ttl.resume('big')");
ok( $node->poll_query_until('postgres', 'SELECT count(*) FROM big', '1000'),
	'the backlog is purged');
my $secs = $node->safe_psql('postgres',
	"SELECT extract(epoch FROM clock_timestamp() - '$t0'::timestamptz)::int");
is( $node->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE doc->'ttl' = '-1'), count(*) FILTER (WHERE doc->'ttl' = '3600'), count(*) FROM big"),
	'500|500|1000', 'exactly the items not due survive');
is( $node->safe_psql('postgres',
		"SELECT rows_purged, last_error IS NULL FROM ttl.stats WHERE container = 'big'::regclass"),
	'30000|t', 'ttl.stats counts every purged row once');

# at this budget the backlog takes several naptimes, so several rounds ...
cmp_ok($secs, '>=', 3, "the budget spread the purge over $secs s, several rounds");
# ... that went on with one walk rather than gathering one per round
my $log = slurp_file($node->logfile, $log_offset);
my $walks = () = $log =~ /ttl purge of "big": new walk/g;
cmp_ok($walks, '>=', 1, 'a walk was gathered');
cmp_ok($walks, '<=', 2, "rounds went on with the walk they found ($walks walks in $secs s)");

# A walk remembers pages: VACUUM may cut the end of the table off between
# two of its batches (here after a user deleted the last rows).  The walk
# skips the pages that are gone and purges the rest, without an error.
$node->safe_psql('postgres', q{
CREATE TABLE trunc (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('trunc', 1);
SELECT ttl.pause('trunc');
INSERT INTO trunc SELECT g, jsonb_build_object('n', g) FROM generate_series(1, 20000) g;
});
wait_seconds($node, 2);
$log_offset = -s $node->logfile;
$node->safe_psql('postgres', "SELECT ttl.resume('trunc')");
ok($node->poll_query_until('postgres', 'SELECT count(*) < 19000 FROM trunc'),
	'the worker is walking trunc');
my $size_before = $node->safe_psql('postgres', "SELECT pg_relation_size('trunc')");
$node->safe_psql('postgres', 'DELETE FROM trunc WHERE id > 15000');
$node->safe_psql('postgres', 'VACUUM trunc');
my $size_after = $node->safe_psql('postgres', "SELECT pg_relation_size('trunc')");
cmp_ok($size_after, '<', $size_before, 'VACUUM truncated the table under the walk');
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM trunc', '0'),
	'the rest is purged');
is( $node->safe_psql('postgres',
		"SELECT rows_purged + 5000, last_error IS NULL FROM ttl.stats WHERE container = 'trunc'::regclass"),
	'20000|t', 'every row purged once, no error');
$log = slurp_file($node->logfile, $log_offset);
unlike($log, qr/could not read block|ttl purge of "trunc" failed/,
	'no read past the end of the table');

$node->stop;
done_testing();
