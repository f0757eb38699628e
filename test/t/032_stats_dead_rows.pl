# Registry rows whose table cannot be read by anyone here: a table that is
# gone (a TEMP container whose session ended: no sql_drop fires then) and a
# temporary table of another session.  ttl.stats keeps working for
# everyone (the gone row is skipped, the other session's temp table shows
# NULL backlog columns), ttl.backlog gives NULLs for both, and the worker
# warns about neither, round after round.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('deadrows');

$node->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE TABLE c (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('c', 1);
});

# a registry row whose table is gone
$node->safe_psql('postgres', q{
CREATE TABLE gone (doc jsonb NOT NULL);
SELECT ttl.enable('gone', 60);
});
my $gone = $node->safe_psql('postgres', q{SELECT 'gone'::regclass::oid});
$node->safe_psql('postgres', q{
ALTER EVENT TRIGGER ttl_sql_drop DISABLE;
DROP TABLE gone CASCADE;
ALTER EVENT TRIGGER ttl_sql_drop ENABLE;
});
is($node->safe_psql('postgres',
		"SELECT count(*) FROM ttl.registry WHERE relid::oid = $gone"),
	'1', 'the dangling registry row is there');

my $log_offset = -s $node->logfile;
$node->safe_psql('postgres', q{INSERT INTO c SELECT g, '{}' FROM generate_series(1, 10) g});
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM c', '0'),
	'the worker purges the other container');

my ($rc, $out, $err) = $node->psql('postgres',
	'SELECT container, rows_purged, expired_backlog FROM ttl.stats ORDER BY 1');
is($rc, 0, 'ttl.stats works with a dangling row') or diag $err;
is($out, 'c|10|0', 'ttl.stats skips the row whose table is gone');
is($node->safe_psql('postgres',
		"SELECT expired IS NULL AND oldest_expired_at IS NULL FROM ttl.backlog($gone)"),
	't', 'ttl.backlog of a gone table: NULLs');

# three more rounds, then the log: nothing about the dangling row
wait_seconds($node, 3);
my $log = slurp_file($node->logfile, $log_offset);
unlike($log, qr/WARNING/, 'the worker does not warn about the dangling row');

# a temporary table of another session, registered (as ttl.enable on a temp
# table did in 1.0): other sessions read ttl.stats and ttl.backlog without
# error, with NULL backlog columns, and the worker leaves it alone
$log_offset = -s $node->logfile;
my $session = $node->background_psql('postgres');
$session->query_safe(q{
CREATE TEMP TABLE tt (doc jsonb NOT NULL);
INSERT INTO tt VALUES ('{"_ts": 1}');
CREATE INDEX ON tt ((ttl.doc_ts(doc))) WHERE ttl.doc_ttl(doc) IS NULL;
INSERT INTO ttl.registry (relid, doc_column, default_ttl, paused)
VALUES ('tt'::regclass, 'doc', 60, false);
});
my $tt = $session->query_safe(q{SELECT 'tt'::regclass::oid});
chomp $tt;
($rc, $out, $err) = $node->psql('postgres',
	"SELECT expired_backlog IS NULL, oldest_expired_at IS NULL FROM ttl.stats WHERE container::oid = $tt");
is($rc, 0, 'ttl.stats works with another session\'s temp table') or diag $err;
is($out, 't|t', 'another session\'s temp table: NULL backlog columns');
is($node->safe_psql('postgres',
		"SELECT expired IS NULL AND oldest_expired_at IS NULL FROM ttl.backlog($tt)"),
	't', 'ttl.backlog of another session\'s temp table: NULLs');
wait_seconds($node, 3);
$log = slurp_file($node->logfile, $log_offset);
unlike($log, qr/WARNING/, 'the worker does not warn about another session\'s temp table');
# in its own session the backlog is computed
is($session->query_safe("SELECT expired FROM ttl.backlog('tt')"), '1',
	'ttl.backlog of its own temp table');
$session->quit;

$node->safe_psql('postgres', "DELETE FROM ttl.registry WHERE relid::oid = $gone");
$node->stop;
done_testing();
