# The background purge with no configuration at all: a launcher, a pool of
# workers that serve each database that has the extension in turn, items
# that carry "ttl": 1 purged in every such database, survivors (own ttl -1,
# long default) kept, ttl.stats filled, databases created later picked up,
# databases without the extension visited once and then left alone,
# ttl.pause / ttl.resume, and ttl.enabled.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('basic');

# A container c with default 3600 s: 20 items expire after 1 s, 5 never
# ("ttl": -1), 5 inherit the long default.  ids 1..20 expire, 21..30 stay.
my $setup = q{
CREATE EXTENSION ttl;
CREATE TABLE c (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('c', 3600);
INSERT INTO c SELECT g, jsonb_build_object('n', g, 'ttl', 1) FROM generate_series(1, 20) g;
INSERT INTO c SELECT g, jsonb_build_object('n', g, 'ttl', -1) FROM generate_series(21, 25) g;
INSERT INTO c SELECT g, jsonb_build_object('n', g) FROM generate_series(26, 30) g;
};

$node->safe_psql('postgres', 'CREATE DATABASE db1');
$node->safe_psql('postgres', 'CREATE DATABASE db2');
$node->safe_psql('postgres', 'CREATE DATABASE noext');
$node->safe_psql($_, $setup) for qw(db1 db2);

for my $db (qw(db1 db2))
{
	ok( $node->poll_query_until($db, 'SELECT count(*) FROM c', '10'),
		"$db: expired items purged by the worker");
	is( $node->safe_psql($db,
			'SELECT string_agg(id::text, \',\' ORDER BY id) FROM c'),
		join(',', 21 .. 30),
		"$db: exactly the items with ttl -1 and the long default survive");
	is( $node->safe_psql($db,
			'SELECT rows_purged, last_purge_at IS NOT NULL, last_error IS NULL'
			  . ' FROM ttl.stats WHERE container = \'c\'::regclass'),
		'20|t|t',
		"$db: ttl.stats counts the purged rows");
}

# the processes
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl launcher'"),
	'1', 'one ttl launcher runs');
# (issue 12: a worker serves a database for one round and leaves, so a
# worker no longer persists across rounds; what persists is the service)
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > 0 AND bool_and(application_name = 'ttl worker')"
		  . " AND count(DISTINCT datname) = count(*)"
		  . " FROM pg_stat_activity WHERE backend_type = 'ttl worker'"),
	"ttl workers (application_name 'ttl worker') run, one per database at most");

# db1 and db2 are served round after round; the database without the
# extension was visited once and is left alone
my %visits = map {
	$_ => $node->safe_psql('db1', "SELECT visits FROM ttl.databases WHERE datname = '$_'")
} qw(db1 db2 noext);
wait_seconds($node, 3.5);
for my $db (qw(db1 db2))
{
	cmp_ok($node->safe_psql('db1', "SELECT visits FROM ttl.databases WHERE datname = '$db'"),
		'>=', $visits{$db} + 2, "$db is served again every naptime");
}
is( $node->safe_psql('db1',
		"SELECT has_ttl, visits FROM ttl.databases WHERE datname = 'noext'"),
	'f|1', 'the database without the extension was visited once only');

# ttl.worker_enabled off for one database (ALTER DATABASE): workers still
# arrive there (the setting is read as they connect) but purge nothing,
# while another database is purged; ttl.purge() there is not affected
$node->safe_psql('postgres', 'CREATE DATABASE optout');
$node->safe_psql('postgres', 'ALTER DATABASE optout SET ttl.worker_enabled = off');
$node->safe_psql('optout', $setup);
$node->safe_psql('db1', "INSERT INTO c SELECT g, jsonb_build_object('ttl', 1) FROM generate_series(101, 110) g");
ok( $node->poll_query_until('db1',
		"SELECT visits >= 3 FROM ttl.databases WHERE datname = 'optout'"),
	'workers keep arriving in the database with ttl.worker_enabled off');
ok($node->poll_query_until('db1', 'SELECT count(*) FROM c', '10'),
	'db1 is purged meanwhile');
is($node->safe_psql('optout', 'SELECT count(*) FROM c'), '30',
	'the database with ttl.worker_enabled off keeps its expired items');
is($node->safe_psql('optout', 'SELECT ttl.purge()'), '20',
	'ttl.purge() works there');
$node->safe_psql('postgres', 'ALTER DATABASE optout RESET ttl.worker_enabled');
$node->safe_psql('optout', "INSERT INTO c SELECT g, jsonb_build_object('ttl', 1) FROM generate_series(101, 105) g");
ok($node->poll_query_until('optout', 'SELECT count(*) FROM c', '10'),
	'reset, the worker purges it again');

# what the launcher waits on between rounds: since 17, ttl's own wait events by name
# (WaitEventExtensionNew); before, the generic Extension
my $v17 = $node->pg_version >= 17;
ok( $node->poll_query_until('postgres',
		"SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity"
		  . " WHERE backend_type = 'ttl launcher'",
		$v17 ? 'Extension:TtlLauncherNaptime' : 'Extension:Extension'),
	'the launcher naps under its own wait event (17+)');

# a database created later, and given the extension later, is picked up
$node->safe_psql('postgres', 'CREATE DATABASE db3');
$node->safe_psql('db3',
	'CREATE TABLE pre (id int); INSERT INTO pre VALUES (1)');
wait_seconds($node, 1.5);
$node->safe_psql('db3', $setup);
ok($node->poll_query_until('db3', 'SELECT count(*) FROM c', '10'),
	'db3: extension installed later, expired items purged');
is( $node->safe_psql('db3',
		"SELECT has_ttl, visits > 0 FROM ttl.databases WHERE datname = 'db3'"),
	't|t', 'db3 is served');

# pause: a paused container is left alone while its neighbour is purged
# (both filled in one transaction, so with the same _ts)
$node->safe_psql('db1', q{
CREATE TABLE p1 (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE p2 (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('p1', -1);
SELECT ttl.enable('p2', -1);
SELECT ttl.pause('p1');
BEGIN;
INSERT INTO p1 SELECT g, '{"ttl": 1}' FROM generate_series(1, 50) g;
INSERT INTO p1 SELECT g, '{"ttl": -1}' FROM generate_series(51, 55) g;
INSERT INTO p2 SELECT g, '{"ttl": 1}' FROM generate_series(1, 50) g;
INSERT INTO p2 SELECT g, '{}' FROM generate_series(51, 55) g;
COMMIT;
});
ok($node->poll_query_until('db1', 'SELECT count(*) FROM p2', '5'),
	'unpaused container purged');
is($node->safe_psql('db1', 'SELECT count(*) FROM p1'),
	'55', 'paused container keeps its expired items');
is($node->safe_psql('db1', 'SELECT count(*) FROM p1_live'),
	'5', 'paused container still hides its expired items');
is( $node->safe_psql('db1',
		"SELECT rows_purged FROM ttl.stats WHERE container = 'p1'::regclass"),
	'0', 'nothing purged from the paused container');
$node->safe_psql('db1', "SELECT ttl.resume('p1')");
ok($node->poll_query_until('db1', 'SELECT count(*) FROM p1', '5'),
	'resumed container purged');
is($node->safe_psql('db1', 'SELECT min(id) FROM p1'),
	'51', 'only the expired items left the resumed container');

# ttl.enabled = off stops the automatic purge
$node->safe_psql('postgres',
	'ALTER SYSTEM SET ttl.enabled = off; SELECT pg_reload_conf()');
$node->poll_query_until('postgres', 'SHOW ttl.enabled', 'off')
  or die 'reload not seen';
$node->safe_psql('db1', q{
CREATE TABLE e (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('e', -1);
INSERT INTO e SELECT g, '{"ttl": 1}' FROM generate_series(1, 40) g;
INSERT INTO e VALUES (41, '{}');
});
$node->safe_psql('db2', q{
INSERT INTO c SELECT g, jsonb_build_object('ttl', 1) FROM generate_series(101, 140) g;
});
# several naptimes pass with the items expired (they are hidden)...
ok($node->poll_query_until('db1', 'SELECT count(*) FROM e_live', '1'),
	'items expired (hidden) while ttl.enabled is off');
wait_seconds($node, 3.5);
# ...and are still there
is($node->safe_psql('db1', 'SELECT count(*) FROM e'),
	'41', 'ttl.enabled = off: db1 purges nothing');
is($node->safe_psql('db2', 'SELECT count(*) FROM c'),
	'50', 'ttl.enabled = off: db2 purges nothing');
is($node->safe_psql('db1', 'SELECT count(*) FROM c_live'), '10',
	'hiding goes on while purge is off');

$node->safe_psql('postgres',
	'ALTER SYSTEM RESET ttl.enabled; SELECT pg_reload_conf()');
ok($node->poll_query_until('db1', 'SELECT count(*) FROM e', '1'),
	'ttl.enabled back on: db1 purges again');
ok($node->poll_query_until('db2', 'SELECT count(*) FROM c', '10'),
	'ttl.enabled back on: db2 purges again');

# the worker's own purge transactions commit asynchronously (issue 15): a
# DELETE trigger on a container records the setting each purge runs under,
# while the sessions of the database keep the server's default
$node->safe_psql('db1', q{
CREATE TABLE ac (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE ac_seen (sync text);
CREATE FUNCTION ac_seen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.ac_seen VALUES (pg_catalog.current_setting('synchronous_commit'));
    RETURN OLD;
END $$;
CREATE TRIGGER ac_seen AFTER DELETE ON ac FOR EACH ROW EXECUTE FUNCTION ac_seen();
SELECT ttl.enable('ac', -1);
INSERT INTO ac SELECT g, '{"ttl": 1}' FROM generate_series(1, 30) g;
INSERT INTO ac VALUES (31, '{}');
});
ok($node->poll_query_until('db1', 'SELECT count(*) FROM ac', '1'),
	'the worker purged a container with a DELETE trigger');
is($node->safe_psql('db1',
		q{SELECT string_agg(DISTINCT sync, ',') || '|' || count(*) FROM ac_seen}),
	'off|30', "the worker's purge transactions ran with synchronous_commit = off");
is($node->safe_psql('db1', 'SHOW synchronous_commit'),
	'on', 'sessions keep the default');

ok(!$node->log_contains('terminated by signal|PANIC|TRAP:'),
	'no crash in the server log');

$node->stop;
done_testing();
