# A purge batch has a time bound of its own (issue 10, item 9): a BEFORE
# DELETE trigger that sleeps no longer holds the worker.  The timed-out
# batch is recorded as that container's error (ttl.stats.last_error) and
# the worker goes on with the other containers, round after round.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('batch_timeout', qq{
ttl.batch_timeout = '1s'
});

$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE DATABASE db1 OWNER alice;
});
$node->safe_psql('db1', q{
CREATE EXTENSION ttl;
SET ROLE alice;
CREATE SCHEMA app;
CREATE FUNCTION app.stall() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_catalog.pg_sleep(3600);
    RETURN OLD;
END $$;
-- created first, so a round visits it first
CREATE TABLE app.a_slow (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('app.a_slow', -1);
CREATE TRIGGER a_slow_stall BEFORE DELETE ON app.a_slow
    FOR EACH ROW EXECUTE FUNCTION app.stall();
CREATE TABLE app.b_fast (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('app.b_fast', -1);
INSERT INTO app.a_slow SELECT g, '{"ttl": 1}' FROM generate_series(1, 5) g;
INSERT INTO app.b_fast SELECT g, '{"ttl": 1}' FROM generate_series(1, 5) g;
});

ok($node->poll_query_until('db1', 'SELECT count(*) FROM app.b_fast', '0'),
	'the other container is purged while one has a stalling trigger');
ok( $node->poll_query_until('db1',
		"SELECT last_error_at IS NOT NULL FROM ttl.stats WHERE container = 'app.a_slow'::regclass"),
	'the stalled container has an error recorded');
like( $node->safe_psql('db1',
		"SELECT last_error FROM ttl.stats WHERE container = 'app.a_slow'::regclass"),
	qr/ttl\.batch_timeout/, 'the timed-out batch is the container\'s last_error');
is($node->safe_psql('db1', 'SELECT count(*) FROM app.a_slow'),
	'5', 'the timed-out batch was rolled back');

# later rounds go on: new expired rows elsewhere are purged again
$node->safe_psql('db1', q{
INSERT INTO app.b_fast SELECT g, '{"ttl": 1}' FROM generate_series(11, 15) g;
});
ok($node->poll_query_until('db1', 'SELECT count(*) FROM app.b_fast', '0'),
	'the worker keeps purging in later rounds');
ok( $node->log_contains(qr/ttl purge of "a_slow" failed: .*ttl\.batch_timeout/),
	'the timeout is logged');
# (issue 12: workers leave after each round; db1 is served on and on, and
# no visit ended in an error)
is( $node->safe_psql('db1',
		"SELECT visits >= 2, last_error IS NULL FROM ttl.databases WHERE datname = 'db1'"),
	't|t', 'db1 is still served, no worker died');

is($node->safe_psql('postgres', 'SHOW ttl.batch_timeout'), '1s',
	'ttl.batch_timeout is a setting');
# 0 turns the bound off (settable per session too)
is( $node->safe_psql('db1', "SET ttl.batch_timeout = 0; SHOW ttl.batch_timeout"),
	'0', 'ttl.batch_timeout = 0 is off');

$node->safe_psql('db1', 'SET ROLE alice; DROP TRIGGER a_slow_stall ON app.a_slow');
$node->stop;
done_testing();
