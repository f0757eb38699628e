# The restore guard after pg_dump/pg_restore: the registry row carries the
# system identifier and database of ttl.enable, so a container restored
# into another database (same cluster) or another cluster, with most of
# its items due, is held by the worker, while a small backlog restored
# with it is purged (and that container is at home from then on).
# ttl.resume() releases the hold.  The source database, at home, purges
# the same full backlog without any hold (an ordinary backlog).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('guard_dump', "ttl.enabled = off\n");
$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->safe_psql('src', q{
CREATE EXTENSION ttl;
CREATE TABLE big (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('big', 3600);
CREATE TABLE small (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('small', 3600);
SELECT set_config('ttl.now_override', (now() - interval '2 days')::text, false);
INSERT INTO big SELECT g, '{}' FROM generate_series(1, 300) g;
INSERT INTO small SELECT g, '{}' FROM generate_series(1, 5) g;
RESET ttl.now_override;
INSERT INTO small SELECT g, '{}' FROM generate_series(6, 100) g;
-- a schema after ttl: pg_restore loads its data after ttl.registry's,
-- one leaf at a time; the due items are all in the second leaf
CREATE SCHEMA zz;
CREATE TABLE zz.parts (id int, part int, doc jsonb NOT NULL, PRIMARY KEY (id, part))
  PARTITION BY LIST (part);
CREATE TABLE zz.parts_a PARTITION OF zz.parts FOR VALUES IN (1);
CREATE TABLE zz.parts_b PARTITION OF zz.parts FOR VALUES IN (2);
SELECT ttl.enable('zz.parts', 3600);
INSERT INTO zz.parts SELECT g, 1, '{}' FROM generate_series(1, 100) g;
SELECT set_config('ttl.now_override', (now() - interval '2 days')::text, false);
INSERT INTO zz.parts SELECT g, 2, '{}' FROM generate_series(1, 300) g;
RESET ttl.now_override;
});

my $dump = $node->basedir . '/src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src') ], 'pg_dump');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), $dump ],
	'pg_restore into another database of the cluster');

# another cluster, its worker running while the restore goes on
my $other = ttl_node('guard_other');
$other->safe_psql('postgres', 'CREATE DATABASE dst');
$other->command_ok([ 'pg_restore', '--exit-on-error', '-d', $other->connstr('dst'), $dump ],
	'pg_restore into another cluster');

my $held = q{SELECT held_since IS NOT NULL FROM ttl.stats WHERE container = 'big'::regclass};

# A round while a restore is still loading, its worker running: the
# restore's steps one at a time, two rounds after each.  Until the
# restore's post-data (the stamp trigger comes last) a restored container
# is not judged: the first leaf's live items must not make the whole
# container look at home, leaving the second leaf's due items to purge.
$node->safe_psql('postgres', 'CREATE DATABASE steps');
my $toc = $node->basedir . '/src.toc';
my ($out, $err);
IPC::Run::run([ 'pg_restore', '-l', $dump ], '>', \$out, '2>', \$err) or die "pg_restore -l: $err";
my @items = grep { /^\d+;/ } split /\n/, $out;
my @later = grep { /TABLE DATA zz parts_b / } @items;
is(scalar @later, 1, 'the dump has the second leaf\'s data');
# restore these items of the dump's table of contents into $db of $n
sub restore_items
{
	my ($n, $db, $options, $what, @lines) = @_;
	open my $fh, '>', $toc or die;
	print $fh "$_\n" for @lines;
	close $fh;
	$n->command_ok([ 'pg_restore', '--exit-on-error', @$options, '-L', $toc, '-d', $n->connstr($db),
			$dump ], $what);
}
sub two_rounds
{
	my $v = $node->safe_psql('steps', "SELECT visits FROM ttl.databases WHERE datname = 'steps'");
	$v = 0 if $v eq '';
	$node->poll_query_until('steps',
		"SELECT visits >= $v + 2 FROM ttl.databases WHERE datname = 'steps'")
	  or die 'no rounds in steps';
}
my $parts = q{SELECT (SELECT count(*) FROM zz.parts) || ' ' || (held_since IS NOT NULL) || ' '
	|| (home_database = (SELECT oid FROM pg_database WHERE datname = 'steps'))
	FROM ttl.registry WHERE relid = 'zz.parts'::regclass};
$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl.enabled = on; SELECT pg_reload_conf()');

restore_items($node, 'steps', [], 'restore in steps: the schema, ttl.registry and the first leaf',
	grep { !/TABLE DATA zz parts_b / && !/ (CONSTRAINT|INDEX|TRIGGER) / }
	  @items);
two_rounds();
is($node->safe_psql('steps', $parts), '100 false false',
	'restore in steps: first leaf only: not judged, not at home');
restore_items($node, 'steps', [], 'restore in steps: the second leaf\'s data', @later);
two_rounds();
is($node->safe_psql('steps', $parts), '400 false false',
	'restore in steps: both leaves, no stamp trigger yet: nothing purged, not at home');
$node->command_ok([ 'pg_restore', '--exit-on-error', '--section=post-data', '-d',
		$node->connstr('steps'), $dump ], 'restore in steps: the post-data');
ok($node->poll_query_until('steps',
		q{SELECT held_since IS NOT NULL FROM ttl.registry WHERE relid = 'zz.parts'::regclass}),
	'restore in steps: held once the restore is complete');
is($node->safe_psql('steps', 'SELECT count(*) FROM zz.parts'), '400',
	'restore in steps: nothing purged');

# A data-only restore while a round is under way (ttl.run_purge here, the
# worker off): the round finds big registered but still empty, and big's
# due items are committed before the round reaches it.  An empty
# container is not judged, so the round must leave it alone.
my $round = ttl_node('guard_round', "ttl.worker_enabled = off\n");
$round->safe_psql('postgres', q{
CREATE EXTENSION ttl;
-- first in the round (the lower OID): its delete waits for the test
CREATE TABLE aaa (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('aaa', 3600);
SELECT set_config('ttl.now_override', (now() - interval '2 days')::text, false);
INSERT INTO aaa VALUES (1, '{}');
RESET ttl.now_override;
CREATE FUNCTION aaa_wait() RETURNS trigger LANGUAGE plpgsql
  AS $$BEGIN PERFORM pg_catalog.pg_advisory_xact_lock_shared(71); RETURN OLD; END$$;
CREATE TRIGGER aaa_wait BEFORE DELETE ON aaa FOR EACH ROW EXECUTE FUNCTION aaa_wait();
});
# (the schema ttl is the extension's, there already)
restore_items($round, 'postgres', ['--schema-only'], 'data-only: the schema first',
	grep { !/ SCHEMA - ttl / } @items);
restore_items($round, 'postgres', [ '--data-only', '--disable-triggers' ], 'data-only: ttl.registry',
	grep { /TABLE DATA ttl registry / } @items);
my $gate = $round->background_psql('postgres');
$gate->query_safe('BEGIN; SELECT pg_advisory_xact_lock(71);');
my $runner = $round->background_psql('postgres');
$runner->query_until(qr/started/, "\\echo started\nCALL ttl.run_purge();\n");
ok($round->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted}),
	'data-only: the round waits in its first container');
restore_items($round, 'postgres', [ '--data-only', '--disable-triggers' ],
	'data-only: big\'s data, during the round',
	grep { /TABLE DATA public big / } @items);
$gate->quit;
$runner->quit;
is($round->safe_psql('postgres', 'SELECT count(*) FROM aaa'), '0', 'data-only: the round went on');
is($round->safe_psql('postgres', 'SELECT count(*) FROM big'), '300',
	'data-only: the round that found big empty purged nothing of it');
$round->safe_psql('postgres', 'CALL ttl.run_purge()');
is($round->safe_psql('postgres', $held), 't', 'data-only: the next round holds big');
is($round->safe_psql('postgres', 'SELECT count(*) FROM big'), '300', 'data-only: nothing purged');
$round->stop;

for my $case ([ $node, 'another database' ], [ $other, 'another cluster' ])
{
	my ($n, $what) = @$case;
	ok($n->poll_query_until('dst', $held), "$what: the restored big container is held");
	ok($n->poll_query_until('dst', 'SELECT count(*) FROM small', '95'),
		"$what: the restored small backlog is purged");
	like($n->safe_psql('dst',
			q{SELECT hold_reason FROM ttl.stats WHERE container = 'big'::regclass}),
		qr/^the container was enabled in another database or cluster \(system identifier -?\d+, database \d+\): restored by pg_restore or copied$/,
		"$what: hold_reason");
	is($n->safe_psql('dst', q{
		SELECT home_database = (SELECT oid FROM pg_database WHERE datname = 'dst')
		  FROM ttl.registry WHERE relid = 'small'::regclass}), 't',
		"$what: the small container is at home now");
	my $v = $n->safe_psql('dst', "SELECT visits FROM ttl.databases WHERE datname = 'dst'");
	$n->poll_query_until('dst',
		"SELECT visits >= $v + 2 FROM ttl.databases WHERE datname = 'dst'")
	  or die 'no more rounds';
	is($n->safe_psql('dst', 'SELECT count(*) FROM big'), '300', "$what: nothing purged while held");
	is($n->safe_psql('dst', 'SELECT count(*) FROM big_live'), '0', "$what: still hidden");
	like(slurp_file($n->logfile), qr/automatic purge of container "public\.big" held/,
		"$what: logged");
	$n->safe_psql('dst', q{SELECT ttl.resume('big')});
	ok($n->poll_query_until('dst', 'SELECT count(*) FROM big', '0'),
		"$what: purged after ttl.resume");
	is($n->safe_psql('dst', q{
		SELECT home_system_identifier = (SELECT system_identifier FROM pg_control_system())
		       AND home_database = (SELECT oid FROM pg_database WHERE datname = 'dst')
		  FROM ttl.registry WHERE relid = 'big'::regclass}), 't',
		"$what: ttl.resume recorded the new home");
}

# the source, at home, purges its ordinary backlog
ok($node->poll_query_until('src', 'SELECT count(*) FROM big', '0'), 'the source purges its backlog');
is($node->safe_psql('src', $held), 'f', 'without a hold');

$node->stop;
$other->stop;
done_testing();
