# Database-level commands that, like DROP DATABASE, need a database nobody
# is connected to: the extension stops the purge worker of that database
# for the duration of the command (and keeps the launcher from starting a
# new one), so they never fail with "is being accessed by other users".
# The same commands on a database without the extension work as usual, and
# the renamed database is purged again afterwards.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('dbddl');

$node->safe_psql('postgres', 'CREATE DATABASE withttl');
$node->safe_psql('postgres', 'CREATE DATABASE plain');
$node->safe_psql('withttl', q{
CREATE EXTENSION ttl;
CREATE TABLE c (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('c', -1);
INSERT INTO c VALUES (1, '{"ttl": -1}');
CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_catalog.pg_sleep(0.005); RETURN OLD; END $$;
CREATE TRIGGER c_slow BEFORE DELETE ON c FOR EACH ROW EXECUTE FUNCTION public.slow();
INSERT INTO c SELECT g, '{"ttl": 1}' FROM generate_series(100001, 101000) g;
});
# (issue 12: a worker serves a database for a round and leaves; a slow
# backlog keeps one there)
ok( $node->poll_query_until('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker'"
		  . " AND datname = 'withttl' AND query ~ '^ttl purge of c: '", '1'),
	'a worker purges in withttl');

# without the extension, no worker gets in the way (workers for such a
# database exit at once)
my ($rc, $out, $err) =
  $node->psql('postgres', 'CREATE DATABASE plaincopy TEMPLATE plain');
is($rc, 0, 'CREATE DATABASE ... TEMPLATE of a database without ttl') or diag $err;
($rc, $out, $err) = $node->psql('postgres', 'ALTER DATABASE plain RENAME TO plain2');
is($rc, 0, 'ALTER DATABASE RENAME of a database without ttl') or diag $err;

{
	($rc, $out, $err) =
	  $node->psql('postgres', 'CREATE DATABASE ttlcopy TEMPLATE withttl');
	is($rc, 0, 'CREATE DATABASE ... TEMPLATE of a database with ttl') or diag $err;
	unlike($err, qr/being accessed by other users/,
		'TEMPLATE: no "being accessed" error');

	($rc, $out, $err) =
	  $node->psql('postgres', 'ALTER DATABASE withttl RENAME TO withttl2');
	is($rc, 0, 'ALTER DATABASE RENAME of a database with ttl') or diag $err;
	unlike($err, qr/being accessed by other users/,
		'RENAME: no "being accessed" error');
}

# whatever happened, the database with ttl is still served
my $db = $node->safe_psql('postgres',
	"SELECT datname FROM pg_database WHERE datname LIKE 'withttl%' ORDER BY 1 LIMIT 1");
$node->safe_psql($db, q{DROP TRIGGER c_slow ON c;
INSERT INTO c SELECT g, '{"ttl": 1}' FROM generate_series(2, 20) g});
ok($node->poll_query_until($db, 'SELECT count(*) FROM c', '1'),
	"database $db still purged");

$node->stop;
done_testing();
