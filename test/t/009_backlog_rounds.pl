# A backlog that takes the worker many rounds at a slow budget: rounds are
# bounded by ttl.naptime and each goes on where the previous one stopped in
# the purge indexes.  The result is exact: every expired item of both kinds
# gone, nothing else, each counted once.  Then VACUUM truncates the table
# between two batches of such a walk, which carries on without an error.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('backlog', q{
ttl.batch_size = 500
ttl.cost_limit = 200
ttl.cost_delay = 50
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

# at this budget the backlog takes several naptimes, so several rounds
cmp_ok($secs, '>=', 3, "the budget spread the purge over $secs s, several rounds");

# VACUUM may cut the end of the table off between two batches of a walk
# (here after a user deleted the last rows): the walk purges the rest,
# without an error.
$node->safe_psql('postgres', q{
CREATE TABLE trunc (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('trunc', 1);
SELECT ttl.pause('trunc');
INSERT INTO trunc SELECT g, jsonb_build_object('n', g) FROM generate_series(1, 20000) g;
});
wait_seconds($node, 2);
my $log_offset = -s $node->logfile;
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
my $log = slurp_file($node->logfile, $log_offset);
unlike($log, qr/could not read block|ttl purge of "trunc" failed/,
	'no read past the end of the table');

$node->stop;
done_testing();
