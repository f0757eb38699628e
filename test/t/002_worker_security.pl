# The background purge runs as the table's owner, never as the superuser
# the worker connects as: plain and deferred DELETE triggers see the owner,
# a trigger that tries to escalate fails (recorded in ttl.stats, other
# containers go on), a table locked by someone else is skipped rather than
# waited on, and DROP TABLE under the worker's feet does not hurt it.
# (DROP DATABASE: 005_drop_database.pl.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('security', qq{
ttl.batch_size = 50
});

my $superuser = $node->safe_psql('postgres', 'SELECT current_user');

$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE DATABASE db1;
});

# Every object below belongs to alice; every trigger is SECURITY INVOKER and
# schema-qualifies what it uses (purge runs with search_path pg_catalog).
$node->safe_psql('db1', q{
CREATE EXTENSION ttl;
CREATE SCHEMA app AUTHORIZATION alice;
SET ROLE alice;
CREATE TABLE app.purge_log (tbl text, tg_when text, cur_user name, is_super boolean);
CREATE FUNCTION app.log_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO app.purge_log
    VALUES (TG_TABLE_NAME, TG_WHEN, current_user,
            (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user));
    IF TG_WHEN = 'BEFORE' THEN RETURN OLD; END IF;
    RETURN NULL;
END $$;
CREATE FUNCTION app.escalate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    ALTER ROLE alice SUPERUSER;
    RETURN OLD;
END $$;
CREATE FUNCTION app.slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_catalog.pg_sleep(0.005);
    RETURN OLD;
END $$;

-- c1: BEFORE and AFTER DELETE triggers that log who runs them
CREATE TABLE app.c1 (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('app.c1', -1);
CREATE TRIGGER c1_before BEFORE DELETE ON app.c1
    FOR EACH ROW EXECUTE FUNCTION app.log_delete();
CREATE TRIGGER c1_after AFTER DELETE ON app.c1
    FOR EACH ROW EXECUTE FUNCTION app.log_delete();
-- c2: a trigger that tries ALTER ROLE ... SUPERUSER
CREATE TABLE app.c2 (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('app.c2', -1);
CREATE TRIGGER c2_escalate BEFORE DELETE ON app.c2
    FOR EACH ROW EXECUTE FUNCTION app.escalate();
-- c3: plain
CREATE TABLE app.c3 (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('app.c3', -1);
-- c4: a deferred constraint trigger
CREATE TABLE app.c4 (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('app.c4', -1);
CREATE CONSTRAINT TRIGGER c4_deferred AFTER DELETE ON app.c4
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION app.log_delete();
-- c5, c6: plain, for the lock test
CREATE TABLE app.c5 (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('app.c5', -1);
CREATE TABLE app.c6 (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('app.c6', -1);
-- big: slow to purge (5 ms per row), for DROP TABLE under the worker
CREATE TABLE app.big (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('app.big', -1);
CREATE TRIGGER big_slow BEFORE DELETE ON app.big
    FOR EACH ROW EXECUTE FUNCTION app.slow();
});

# -------------------------------------------------------------------------
# triggers run as the owner, also deferred ones; escalation fails
$node->safe_psql('db1', q{
BEGIN;
INSERT INTO app.c1 SELECT g, '{"ttl": 1}' FROM generate_series(1, 10) g;
INSERT INTO app.c1 VALUES (11, '{"ttl": -1}');
INSERT INTO app.c2 SELECT g, '{"ttl": 1}' FROM generate_series(1, 10) g;
INSERT INTO app.c3 SELECT g, '{"ttl": 1}' FROM generate_series(1, 10) g;
INSERT INTO app.c3 VALUES (11, '{}');
INSERT INTO app.c4 SELECT g, '{"ttl": 1}' FROM generate_series(1, 10) g;
COMMIT;
});

ok($node->poll_query_until('db1', 'SELECT count(*) FROM app.c1', '1'),
	'container with logging triggers purged');
ok($node->poll_query_until('db1', 'SELECT count(*) FROM app.c4', '0'),
	'container with a deferred trigger purged');
ok($node->poll_query_until('db1', 'SELECT count(*) FROM app.c3', '1'),
	'plain container purged while another one fails');
ok( $node->poll_query_until('db1',
		"SELECT last_error IS NOT NULL FROM ttl.stats WHERE container = 'app.c2'::regclass"),
	'failing container: ttl.stats.last_error set');

is( $node->safe_psql('db1',
		"SELECT tg_when, cur_user, is_super, count(*) FROM app.purge_log"
		  . " WHERE tbl = 'c1' GROUP BY 1, 2, 3 ORDER BY 1"),
	"AFTER|alice|f|10\nBEFORE|alice|f|10",
	'BEFORE and AFTER DELETE triggers ran as the owner, not as superuser');
is( $node->safe_psql('db1',
		"SELECT tg_when, cur_user, is_super, count(*) FROM app.purge_log"
		  . " WHERE tbl = 'c4' GROUP BY 1, 2, 3"),
	"AFTER|alice|f|10",
	'deferred constraint trigger ran as the owner, not as superuser');
is( $node->safe_psql('db1',
		"SELECT count(*) FROM app.purge_log WHERE cur_user = '$superuser' OR is_super"),
	'0', 'no trigger ever ran as the superuser');

is($node->safe_psql('db1', "SELECT rolsuper FROM pg_roles WHERE rolname = 'alice'"),
	'f', 'the escalating trigger did not make the owner superuser');
like( $node->safe_psql('db1',
		"SELECT last_error FROM ttl.stats WHERE container = 'app.c2'::regclass"),
	# 15: "must be superuser to alter superuser roles ..."; 16+: "permission
	# denied to alter role" (the SUPERUSER attribute is in the detail)
	qr/superuser|permission denied to alter role/,
	'last_error tells why the purge failed');
is( $node->safe_psql('db1',
		"SELECT last_error_at IS NOT NULL FROM ttl.stats WHERE container = 'app.c2'::regclass"),
	't', 'last_error_at set');
is($node->safe_psql('db1', 'SELECT count(*) FROM app.c2'),
	'10', 'failing container keeps its rows (its batch rolled back)');
ok( $node->log_contains(qr/WARNING: .*ttl purge of "c2" failed/),
	'the failure is logged as a WARNING');
is( $node->safe_psql('db1',
		"SELECT rows_purged, last_error IS NULL FROM ttl.stats WHERE container = 'app.c3'::regclass"),
	'10|t', 'the other container has clean statistics');

# stop the failing container from spamming the log
$node->safe_psql('db1', 'SET ROLE alice; DROP TRIGGER c2_escalate ON app.c2');
ok($node->poll_query_until('db1', 'SELECT count(*) FROM app.c2', '0'),
	'fixed container purged');
is( $node->safe_psql('db1',
		"SELECT last_error IS NULL FROM ttl.stats WHERE container = 'app.c2'::regclass"),
	't', 'a successful purge clears last_error');

# -------------------------------------------------------------------------
# a table locked by someone else is skipped, not waited on
$node->safe_psql('db1', q{
SELECT ttl.pause('app.c5');
INSERT INTO app.c5 SELECT g, '{"ttl": 1}' FROM generate_series(1, 20) g;
INSERT INTO app.c5 VALUES (21, '{}');
});
my $locker = $node->background_psql('db1');
$locker->query_safe('BEGIN; LOCK TABLE app.c5 IN ACCESS EXCLUSIVE MODE;');
$node->safe_psql('db1', q{
SELECT ttl.resume('app.c5');
INSERT INTO app.c6 SELECT g, '{"ttl": 1}' FROM generate_series(1, 20) g;
INSERT INTO app.c6 VALUES (21, '{}');
});
# c6's items expire after c5's: the round that purges c6 found c5 due too
ok($node->poll_query_until('db1', 'SELECT count(*) FROM app.c6', '1'),
	'other container purged while one is locked');
is( $node->safe_psql('db1',
		"SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
		  . " WHERE a.backend_type = 'ttl worker' AND NOT l.granted"),
	'0', 'the worker does not queue for the locked table');
# ask through the locker (c5 itself cannot be read by anyone else now)
is($locker->query_safe('SELECT count(*) FROM app.c5'),
	'21', 'locked container skipped: its rows are still there');
$locker->query_safe('COMMIT');
$locker->quit;
ok($node->poll_query_until('db1', 'SELECT count(*) FROM app.c5', '1'),
	'container purged once the lock is released');
is( $node->safe_psql('db1',
		"SELECT rows_purged, last_error IS NULL FROM ttl.stats WHERE container = 'app.c5'::regclass"),
	'20|t', 'skipping for a lock is not an error');

# -------------------------------------------------------------------------
# DROP TABLE of a container while the worker purges it
$node->safe_psql('db1',
	q{INSERT INTO app.big SELECT g, '{"ttl": 1}' FROM generate_series(1, 1000) g});
ok( $node->poll_query_until('db1',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'ttl worker'"
		  . " AND datname = 'db1' AND query ~ '^ttl purge of big: [1-9]'"),
	'worker busy purging big');
$node->safe_psql('db1', 'DROP TABLE app.big CASCADE');
is( $node->safe_psql('db1',
		"SELECT count(*) FROM ttl.registry WHERE relid::oid NOT IN (SELECT oid FROM pg_class)"),
	'0', 'registry forgets the dropped container');
$node->safe_psql('db1',
	q{INSERT INTO app.c3 SELECT g, '{"ttl": 1}' FROM generate_series(100, 130) g});
ok($node->poll_query_until('db1', 'SELECT count(*) FROM app.c3', '1'),
	'worker still purges after DROP TABLE of a container it was purging');
# (issue 12: workers leave after each round, so not "the same pid" but: no
# visit of db1 ended in an error)
is($node->safe_psql('db1', "SELECT last_error FROM ttl.databases WHERE datname = 'db1'"),
	'', 'the worker did not die: no visit of db1 ended in an error');
ok(!$node->log_contains('terminated by signal|PANIC|TRAP:|server process .* exited with exit code [1-9]'),
	'no crash in the server log');

$node->stop;
done_testing();
