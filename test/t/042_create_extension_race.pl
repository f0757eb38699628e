# CREATE EXTENSION ttl tells the launcher when its transaction commits, not
# before: a worker that visits the database while the CREATE EXTENSION is
# still uncommitted finds no extension, and that finding must not keep the
# new installation waiting for the slow rescan (ttl.rescan_interval) once
# the transaction commits.  (Seen on PostgreSQL 18 in TAP 005: a database
# created and given the extension while the launcher was picking it was
# not served for minutes.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;
use Time::HiRes qw(time);

my $node = ttl_node('extrace', qq{
ttl.rescan_interval = '10min'
});
$node->safe_psql('postgres', 'CREATE EXTENSION ttl');

# a new database without the extension: visited once, found without it
$node->safe_psql('postgres', 'CREATE DATABASE late');
ok( $node->poll_query_until('postgres',
		"SELECT has_ttl IS false AND visits >= 1 FROM ttl.databases WHERE datname = 'late'"),
	'the new database is visited and found without the extension');

# CREATE EXTENSION ttl and a container with due items, left uncommitted
# for a few launcher naptimes: the launcher may start workers there
my $session = $node->background_psql('late');
$session->query_safe(q{
BEGIN;
CREATE EXTENSION ttl;
CREATE TABLE d (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('d', 1);
INSERT INTO d SELECT g, '{"ttl": 1}' FROM generate_series(1, 10) g;
});
wait_seconds($node, 3);
is($node->safe_psql('postgres',
		"SELECT has_ttl FROM ttl.databases WHERE datname = 'late'"),
	'f', 'uncommitted CREATE EXTENSION: the launcher does not count on it yet');

# once it commits, the database is served within a few naptimes, far
# sooner than the rescan
my $t0 = time;
$session->query_safe('COMMIT');
$session->quit;
ok($node->poll_query_until('late', 'SELECT count(*) FROM d', '0'),
	'the items are purged after the commit');
my $elapsed = time - $t0;
cmp_ok($elapsed, '<', 30, 'served within a few naptimes of the commit, not at the rescan');
is($node->safe_psql('postgres',
		"SELECT has_ttl AND last_error IS NULL FROM ttl.databases WHERE datname = 'late'"),
	't', 'ttl.databases says the database has ttl');

$node->stop;
done_testing();
