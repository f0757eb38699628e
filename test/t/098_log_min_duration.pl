# ttl.log_min_duration (1.9): one LOG line per container a purge visited,
# read from the server log.
#
# - ttl.purge() with a row locked by another session and a row under a
#   legal hold, into an archive: the line counts them (deleted, archived,
#   skipped: locked 1, held 1), with batches, elapsed and throttled time
#   and WAL bytes;
# - the worker's visits: lines "by the worker" whose deleted rows add up to
#   the backlog;
# - -1 (the default) logs nothing, and a threshold above what a visit takes
#   neither.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('log_min_duration');
$node->safe_psql('postgres', q{
ALTER DATABASE postgres SET ttl.worker_enabled = off;
});
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE TABLE t (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE t_archive (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('t', 60);
SELECT ttl.set_archive('t', 't_archive');
SELECT ttl.set_legal_hold('t', 'keep', '{"keep": true}');
INSERT INTO t SELECT g, '{}' FROM generate_series(1, 99) g;
INSERT INTO t VALUES (100, '{"keep": true}');
});
is($node->safe_psql('postgres', 'SHOW ttl.log_min_duration'), '-1', 'off by default');

# another session holds row 1
my ($in, $out, $err) = ('', '', '');
my $holder = IPC::Run::start(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
	'<', \$in, '>', \$out, '2>', \$err);
$in .= "BEGIN;\nSELECT id FROM t WHERE id = 1 FOR UPDATE;\n";
$holder->pump while length $in;
ok( $node->poll_query_until('postgres', q{
SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
 WHERE a.query LIKE '%FOR UPDATE%' AND l.locktype = 'transactionid' AND l.granted}, '1'),
	'row 1 is locked by another session');

my $clock = q{SET ttl.now_override = '2100-01-01 00:00:00+00';};

# off: nothing logged
my $offset = -s $node->logfile;
$node->safe_psql('postgres', "$clock SELECT ttl.purge('t', 0)");
# a line from ttl.purge() is written before the call returns
unlike(slurp_file($node->logfile, $offset), qr/ttl purge of/, '-1: no line');

# a threshold no visit reaches: nothing
$node->safe_psql('postgres', "$clock SET ttl.log_min_duration = '1h'; SELECT ttl.purge('t', 1)");
unlike(slurp_file($node->logfile, $offset), qr/ttl purge of/, '1h: no line');

# 0: every visit
$offset = -s $node->logfile;
is($node->safe_psql('postgres', "$clock SET ttl.log_min_duration = 0; SELECT ttl.purge('t')"),
	'97', 'ttl.purge() deletes all but the locked and the held row (and the one before)');
my $log = slurp_file($node->logfile, $offset);
my @lines = $log =~ /^.*LOG:  ttl purge of public\.t by ttl\.purge\(\): .*$/mg;
is(scalar(@lines), 1, 'one line for the visit') or diag($log);
like( $lines[0] // '',
	qr/: 97 rows deleted, 97 archived, 2 skipped \(locked 1, held 1, quarantined 0\), \d+ batches, elapsed \d+\.\d{3} s, throttled 0\.000 s, WAL [1-9]\d* bytes$/,
	'rows deleted, archived, skipped by cause, batches, elapsed, throttled, WAL');

$in .= "ROLLBACK;\n\\q\n";
$holder->finish;

# the worker's visits, throttled
$node->safe_psql('postgres', q{
ALTER SYSTEM SET ttl.log_min_duration = 0;
ALTER SYSTEM SET ttl.cost_limit = 10;
ALTER SYSTEM SET ttl.cost_delay = 20;
SELECT pg_reload_conf();
SELECT ttl.release_legal_hold('t', 'keep');
CREATE TABLE w (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('w', 1);
INSERT INTO w SELECT g, '{}' FROM generate_series(1, 3000) g;
});
wait_seconds($node, 2);
$offset = -s $node->logfile;
$node->safe_psql('postgres', 'ALTER DATABASE postgres RESET ttl.worker_enabled');
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM w', '0'), 'the worker purges w');
# the line of the visit that deleted the last rows follows within a moment
my $sum = 0;
for (my $i = 0; $i < 10 * $PostgreSQL::Test::Utils::timeout_default && $sum < 3000; $i++)
{
	$log = slurp_file($node->logfile, $offset);
	$sum = 0;
	$sum += $_ for ($log =~ /LOG:  ttl purge of public\.w by the worker: (\d+) rows deleted/g);
	select(undef, undef, undef, 0.1) if $sum < 3000;
}
is($sum, 3000, 'the worker\'s lines add up to the rows it deleted');
like($log, qr/LOG:  ttl purge of public\.w by the worker: [1-9]\d* rows deleted, 0 archived, 0 skipped \(locked 0, held 0, quarantined 0\), [1-9]\d* batches, elapsed \d+\.\d{3} s, throttled \d+\.\d{3} s, WAL [1-9]\d* bytes/,
	'a worker line has every figure');
my @throttled = $log =~ /by the worker: .* throttled (\d+\.\d{3}) s/g;
ok((grep { $_ > 0 } @throttled), 'the throttled time is counted') or diag($log);

$node->stop;
done_testing();
