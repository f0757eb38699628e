# ttl.pause() on a container the worker is purging right now: the purge of
# that container stops (at most the batch in flight completes), it does not
# go on until the whole backlog is gone; other containers go on; after
# ttl.resume() the rest is purged.  ttl.set_default_ttl(NULL) in flight
# stops it too (nothing expires any more).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('pause', qq{
ttl.batch_size = 100
});

# 5 ms per deleted row: a batch of 100 takes half a second, 2000 rows 10 s
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_catalog.pg_sleep(0.005); RETURN OLD; END $$;
CREATE TABLE big (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('big', -1);
CREATE TRIGGER big_slow BEFORE DELETE ON big FOR EACH ROW EXECUTE FUNCTION slow();
CREATE TABLE big2 (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('big2', -1);
CREATE TRIGGER big2_slow BEFORE DELETE ON big2 FOR EACH ROW EXECUTE FUNCTION slow();
CREATE TABLE other (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('other', -1);
INSERT INTO big SELECT g, '{"ttl": 1}' FROM generate_series(1, 2000) g;
});

ok( $node->poll_query_until('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker'"
		  . " AND query ~ '^ttl purge of big: [1-9]'", '1'),
	'worker in the middle of purging big');
$node->safe_psql('postgres', "SELECT ttl.pause('big')");
my $at_pause = $node->safe_psql('postgres', 'SELECT count(*) FROM big');
cmp_ok($at_pause, '>', 1000, 'most of big still to purge when paused');

# another container still gets purged meanwhile
$node->safe_psql('postgres',
	q{INSERT INTO other SELECT g, '{"ttl": 1}' FROM generate_series(1, 10) g});
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM other', '0'),
	'another container purged after the pause');
wait_seconds($node, 2.5);
my $later = $node->safe_psql('postgres', 'SELECT count(*) FROM big');
note "big: $at_pause rows when paused, $later rows 2.5 s later";
cmp_ok($at_pause - $later, '<=', 100,
	'paused container: at most the batch in flight purged after ttl.pause()');

$node->safe_psql('postgres', "SELECT ttl.resume('big')");
$node->safe_psql('postgres', 'DROP TRIGGER big_slow ON big');
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM big', '0'),
	'resumed container purged');

# the same with set_default_ttl(NULL): purge stops, the rest stays
$node->safe_psql('postgres',
	q{INSERT INTO big2 SELECT g, '{"ttl": 1}' FROM generate_series(1, 3000) g});
ok( $node->poll_query_until('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker'"
		  . " AND query ~ '^ttl purge of big2: [1-9]'", '1'),
	'worker in the middle of purging big2');
$node->safe_psql('postgres', "SELECT ttl.set_default_ttl('big2', NULL)");
$at_pause = $node->safe_psql('postgres', 'SELECT count(*) FROM big2');
wait_seconds($node, 2.5);
$later = $node->safe_psql('postgres', 'SELECT count(*) FROM big2');
note "big2: $at_pause rows when TTL was turned off, $later rows 2.5 s later";
is($later, $at_pause, 'TTL turned off in flight: nothing purged after it');

$node->stop;
done_testing();
