# Containers on Citus distributed tables (issue 13), the gaps 050 left: a
# container whose shard names Citus hashes (a long table name), a renamed
# document column, a non-superuser owner and a role that does not own the
# container, ttl.purge() without a container on the coordinator, and
# rebalance_table_shards.  The same set-up as 050 (TtlTest::ttl_citus_nodes):
# a coordinator and two worker nodes on 127.0.0.1.
#
# Skipped (not failed) only when Citus is not installed in the PostgreSQL
# tree under test (test/run-all installs it with test/citus-build on every
# major: Citus 13.2.2 on 15, 14.0.1 on 16, 17 and 18).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my ($pkglib) = `pg_config --pkglibdir`;
chomp $pkglib if defined $pkglib;
if (!defined $pkglib || !-f "$pkglib/citus.so")
{
	plan skip_all => 'Citus is not installed in this PostgreSQL tree'
	  . ' (no citus.so in ' . ($pkglib // '?') . ')';
}

my ($coord, $w1, $w2) = ttl_citus_nodes();
my @workers = ($w1, $w2);
my @nodes = ($coord, @workers);
my ($rc, $out, $err);

# $n expired items (stamped in 2001) and the ids from $prefix, as a superuser
sub add_expired
{
	my ($t, $prefix, $n) = @_;
	$coord->safe_psql('postgres', qq{
BEGIN;
SET LOCAL ttl.now_override = '2001-01-01 00:00:00+00';
INSERT INTO $t SELECT '$prefix' || g, jsonb_build_object('k', '$prefix' || g) FROM generate_series(1, $n) g;
COMMIT;
});
	return;
}

# the stamp trigger and the purge index on every shard of a table: "t|<shards>"
sub shards_equipped
{
	my ($t) = @_;
	return $coord->safe_psql('postgres', qq{
SELECT bool_and(r.success AND r.result = '1|1'), count(*)
  FROM run_command_on_shards('$t',
       \$\$SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = '%1\$s'::regclass AND tgname LIKE 'zzz_ttl_stamp%%')
                  || '|' ||
                  (SELECT count(*) FROM pg_index WHERE indrelid = '%1\$s'::regclass
                      AND pg_get_indexdef(indexrelid) ~ 'ttl\\.doc_purge_key')\$\$) r});
}

# ------------------------------------------------ hashed shard names ----
# 58 bytes (the longest a container's name may be: <name>_live): Citus
# names its shards <cut name>_<hash>_<shardid>
my $long = 'container_with_a_name_long_enough_for_citus_to_hash_shard';
cmp_ok(length($long), '>=', 57, 'a container name too long for <name>_<shardid> in 63 bytes');
$coord->safe_psql('postgres', qq{
CREATE TABLE $long (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT create_distributed_table('$long', 'id');
SELECT ttl.enable('$long', 3600);
SELECT ttl.pause('$long');
INSERT INTO $long VALUES ('live1', '{}'), ('live2', '{}');
});
like( $coord->safe_psql('postgres', qq{
SELECT string_agg(r.result, ',') FROM run_command_on_shards('$long', \$\$SELECT '%s'\$\$) r}),
	qr/^container_with_a_name_\w+_[0-9a-f]{8}_\d+,/,
	'Citus hashes the names of its shards');
is(shards_equipped($long), 't|4', 'every shard of it has the stamp trigger and the purge index');
($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nINSERT INTO $long VALUES ('bad', '{\"ttl\": \"x\"}')");
like($err, qr/22023: invalid ttl in container "public\.$long"/,
	'a bad ttl is refused on the shard, naming the distributed table');
add_expired($long, 'e', 30);
is($coord->safe_psql('postgres', "SELECT ttl.purge('$long')"), '30',
	'ttl.purge on the coordinator purges the shards with hashed names');

# ------------------------------------------- renamed document column ----
$coord->safe_psql('postgres', q{
CREATE TABLE d5 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT create_distributed_table('d5', 'id');
SELECT ttl.enable('d5', 3600);
SELECT ttl.pause('d5');
INSERT INTO d5 VALUES ('before', '{"k": "before"}');
ALTER TABLE d5 RENAME COLUMN doc TO body;
});
is( $coord->safe_psql('postgres', q{
SELECT bool_and(r.success AND r.result = 'body'), count(*)
  FROM run_command_on_shards('d5',
       $$SELECT (ttl._trigger_args_decode((pg_catalog.string_to_array(
                    pg_catalog.encode(tgargs, 'escape'), '\000'))[1:tgnargs])).doc_column
           FROM pg_trigger WHERE tgrelid = '%s'::regclass AND tgname LIKE 'zzz_ttl_stamp%%'$$) r}),
	't|4', 'the stamp trigger of every shard follows the renamed document column');
# 1.9: the marking of purge deletes per container travels to every shard
# in the stamp trigger (the key mark=; absent for 'default'), where each
# node's purge reads it (purge/mark.c)
sub shard_marks
{
	return $coord->safe_psql('postgres', q{
SELECT string_agg(DISTINCT r.result, ',') || '|' || count(*)
  FROM run_command_on_shards('d5',
       $$SELECT coalesce(pg_catalog.string_agg(a, ','), 'none') FROM pg_trigger t,
                pg_catalog.unnest((pg_catalog.string_to_array(pg_catalog.encode(t.tgargs, 'escape'), '\000'))[1:t.tgnargs]) a
          WHERE t.tgrelid = '%s'::regclass AND t.tgname LIKE 'zzz_ttl_stamp%%' AND a LIKE 'mark=%%'$$) r
 WHERE r.success});
}
is(shard_marks(), 'none|4', 'd5: no marking key on the shards (default)');
$coord->safe_psql('postgres', q{SELECT ttl.set_mark_purge_deletes('d5', 'on')});
is(shard_marks(), 'mark=on|4', "d5: 'on' reaches every shard's stamp trigger");
$coord->safe_psql('postgres', q{SELECT ttl.set_mark_purge_deletes('d5', 'off')});
is(shard_marks(), 'mark=off|4', "d5: and 'off'");
$coord->safe_psql('postgres', q{SELECT ttl.set_mark_purge_deletes('d5', 'default')});
is(shard_marks(), 'none|4', "d5: 'default' takes the key away");
$coord->safe_psql('postgres', q{SELECT ttl.set_mark_purge_deletes('d5', 'on')});
($rc, $out, $err) = $coord->psql('postgres', q{INSERT INTO d5 VALUES ('after', '{"k": "after"}')});
is($rc, 0, 'a write after the rename works through the coordinator') or diag $err;
is($coord->safe_psql('postgres', "SELECT (body->>'_ts')::bigint > 0 FROM d5 WHERE id = 'after'"),
	't', '... and is stamped on its shard');
($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nINSERT INTO d5 VALUES ('bad', '{\"ttl\": 0}')");
like($err, qr/22023: invalid ttl in container "public\.d5"/, 'a bad ttl is still refused with 22023');
is( join(',', map { $_->safe_psql('postgres', q{SELECT ttl.live('{"_ts": 1}', 'd5')}) } @workers),
	'f,f', 'the policy stays known on both workers');
add_expired('d5', 'e', 12);
is($coord->safe_psql('postgres', q{SELECT string_agg(id, ',' ORDER BY id) FROM d5_live}),
	'after,before', 'the live view reads the renamed column on the shards: only the live items');
is($coord->safe_psql('postgres', q{SELECT body->>'k' FROM d5_live WHERE id = 'after'}),
	'after', '... also by distribution key');
is($coord->safe_psql('postgres', "SELECT ttl.purge('d5')"), '12',
	'the expired items are purged on the nodes after the rename');

# -------------------------------- ttl.purge() without a container, roles ----
# the nodes' own purge off meanwhile (the coordinator's too, which purges
# its local container gl): what is purged here is ttl.purge's
for my $w (@nodes)
{
	$w->safe_psql('postgres', 'ALTER SYSTEM SET ttl.enabled = off; SELECT pg_reload_conf()');
}
# (a round that started before the reload has ended after a naptime)
wait_seconds($coord, 2);
$coord->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE SCHEMA app AUTHORIZATION alice;
GRANT USAGE ON SCHEMA app TO bob;
CREATE TABLE g1 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT create_distributed_table('g1', 'id');
SELECT ttl.enable('g1', 3600);
CREATE TABLE g2 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('g2', 3600);
SELECT create_distributed_table('g2', 'id');
CREATE TABLE g3 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT create_distributed_table('g3', 'id');
SELECT ttl.enable('g3', 3600);
SELECT ttl.pause('g3');
CREATE TABLE gl (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('gl', 3600);
});
is($coord->safe_psql('postgres', 'SELECT count(*) FROM pg_roles WHERE rolname IN (\'alice\', \'bob\')'),
	'2', 'two roles');
is( join(',', map {
	$_->safe_psql('postgres', q{SELECT count(*) FROM pg_roles WHERE rolname IN ('alice', 'bob')})
} @workers), '2,2', '... known on the workers (Citus propagates roles)');

# a non-superuser owner does everything through the coordinator
($rc, $out, $err) = $coord->psql('postgres', q{
SET ROLE alice;
CREATE TABLE app.a1 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT create_distributed_table('app.a1', 'id');
SELECT ttl.enable('app.a1', 3600);
INSERT INTO app.a1 VALUES ('a', '{"k": "a"}'), ('b', '{"k": "b", "ttl": -1}');
COPY app.a1 FROM STDIN;
c	{"k": "c"}
\.
}, on_error_stop => 1);
is($rc, 0, 'a non-superuser creates, distributes, enables and writes its container') or diag $err;
is(shards_equipped('app.a1'), 't|4', 'every shard of app.a1 has the trigger and the purge index');
($rc, $out, $err) = $coord->psql('postgres',
	"SET ROLE alice;\n\\set VERBOSITY verbose\nINSERT INTO app.a1 VALUES ('bad', '{\"ttl\": 1.5}')");
like($err, qr/22023/, '... its bad ttl is refused with 22023');
add_expired('app.a1', 'e', 7);
add_expired('g1', 'e', 10);
add_expired('g2', 'e', 15);
add_expired('g3', 'e', 5);
add_expired('gl', 'e', 4);
is($coord->safe_psql('postgres', 'SET ROLE alice; SELECT count(*) FROM app.a1_live'), '3',
	'the owner reads exactly the live items through the view');
is($coord->safe_psql('postgres', "SET ROLE alice; SELECT doc->>'k' FROM app.a1_live WHERE id = 'e3'"),
	'', '... and an expired one is hidden on a router read');

# a role that does not own it
for my $q ("SELECT ttl.purge('app.a1')", "SELECT ttl.pause('app.a1')",
	"SELECT ttl.set_default_ttl('app.a1', 60)", "SELECT ttl._purge_placements('app.a1')",
	"SELECT count(*) FROM app.a1_live")
{
	($rc, $out, $err) = $coord->psql('postgres', "SET ROLE bob;\n\\set VERBOSITY verbose\n$q");
	like($err, qr/42501/, "a role that does not own the container cannot: $q");
}
($rc, $out, $err) = $w1->psql('postgres',
	"SET ROLE bob;\n\\set VERBOSITY verbose\nSELECT ttl._purge_placements('app.a1')");
like($err, qr/42501/, '... nor on a worker node');
is($coord->safe_psql('postgres', 'SET ROLE bob; SELECT ttl.purge()'), '0',
	"its ttl.purge() purges nothing of others' containers");

# ttl.purge() without a container: the caller's due containers, the
# distributed ones on the nodes
is($coord->safe_psql('postgres', 'SET ROLE alice; SELECT ttl.purge()'), '7',
	"the owner's ttl.purge() purges its distributed container on the nodes");
is($coord->safe_psql('postgres', 'SELECT count(*) FROM app.a1'), '3', '... leaving the live items');
is($coord->safe_psql('postgres', 'SELECT ttl.purge()'), '29',
	"a superuser's ttl.purge() purges every due container: g1 and g2 on the nodes, gl here");
is( $coord->safe_psql('postgres',
		q{SELECT (SELECT count(*) FROM g1) || ',' || (SELECT count(*) FROM g2) || ','
		      || (SELECT count(*) FROM g3) || ',' || (SELECT count(*) FROM gl)}),
	'0,0,5,0', '... but not the paused g3');
$coord->safe_psql('postgres', "SELECT ttl.resume('g3')");
is($coord->safe_psql('postgres', 'SELECT ttl.purge(NULL, 3)'), '3', 'max_rows bounds the total');

# the nodes' own purge of a non-superuser's container (as its owner)
for my $w (@nodes)
{
	$w->safe_psql('postgres', 'ALTER SYSTEM RESET ttl.enabled; SELECT pg_reload_conf()');
}
add_expired('app.a1', 'f', 9);
ok($coord->poll_query_until('postgres', 'SELECT count(*) FROM app.a1', '3'),
	"the nodes' ttl workers purge the non-superuser's shards");

# ------------------------------------------------ rebalance_table_shards ----
# An imbalance (every shard of the colocation group on worker 1), then a
# rebalance moves half of them back to worker 2 while expired items wait.
$coord->safe_psql('postgres', q{
CREATE TABLE r6 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT create_distributed_table('r6', 'id');
SELECT ttl.enable('r6', 3600);
SELECT ttl.pause('r6');
INSERT INTO r6 SELECT 'l' || g, jsonb_build_object('k', 'l' || g, 'n', g) FROM generate_series(1, 300) g;
});
add_expired('r6', 'e', 100);
my $on_w2 = $coord->safe_psql('postgres', q{
SELECT string_agg(s.shardid::text, ',' ORDER BY s.shardid)
  FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid) JOIN pg_dist_node n ON n.groupid = p.groupid
 WHERE s.logicalrelid = 'r6'::regclass AND n.nodeport = } . $w2->port);
for my $shard (split /,/, $on_w2)
{
	$coord->safe_psql('postgres', "SELECT citus_move_shard_placement($shard, '127.0.0.1', "
		  . $w2->port . ", '127.0.0.1', " . $w1->port . ", shard_transfer_mode := 'block_writes')");
}
my $nodes_of_r6 = q{
SELECT count(DISTINCT n.nodeport)
  FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid) JOIN pg_dist_node n ON n.groupid = p.groupid
 WHERE s.logicalrelid = 'r6'::regclass};
is($coord->safe_psql('postgres', $nodes_of_r6), '1', 'every shard of r6 is on one worker');
my $md5 = q{SELECT md5(string_agg(id || doc::text, ',' ORDER BY id)) FROM r6};
my $before = $coord->safe_psql('postgres', $md5);
$coord->safe_psql('postgres', q{
SELECT rebalance_table_shards('r6', shard_transfer_mode := 'force_logical')});
is($coord->safe_psql('postgres', $nodes_of_r6), '2', 'rebalance_table_shards spread r6 over both workers');
is($coord->safe_psql('postgres', $md5), $before,
	'the documents are byte-identical after the rebalance (no re-stamp)');
is(shards_equipped('r6'), 't|4', 'every placement has the stamp trigger and the purge index');
($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nINSERT INTO r6 VALUES ('bad', '{\"ttl\": 0}')");
like($err, qr/22023/, 'the new placements refuse a bad ttl');
is($coord->safe_psql('postgres', 'SELECT count(*) FROM r6_live'), '300',
	'the live view reads exactly the live items after the rebalance');
$coord->safe_psql('postgres', "SELECT ttl.resume('r6')");
ok($coord->poll_query_until('postgres', 'SELECT count(*) FROM r6', '300'),
	'the expired items are purged on the new placements by their nodes');
ok( $w2->poll_query_until('postgres', q{
SELECT coalesce(sum(s.rows_purged), 0) > 0 FROM ttl.purge_stats s
 WHERE s.relid::regclass::text LIKE 'r6\_%'}),
	'... worker 2 among them (it holds only moved placements of r6)');
my $key = $coord->safe_psql('postgres', q{
SELECT id FROM r6 WHERE get_shard_id_for_distribution_column('r6', id) IN (
  SELECT s.shardid FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
    JOIN pg_dist_node n ON n.groupid = p.groupid
   WHERE s.logicalrelid = 'r6'::regclass AND n.nodeport = } . $w2->port . q{) ORDER BY id LIMIT 1});
$coord->safe_psql('postgres', qq{UPDATE r6 SET doc = doc || '{"ttl": 1}' WHERE id = '$key'});
ok($coord->poll_query_until('postgres', "SELECT count(*) FROM r6 WHERE id = '$key'", '0'),
	'an item of a moved placement is stamped and purged on its new node');

# (last: before the fix this waited for the poll's timeout)
add_expired($long, 'f', 20);
$coord->safe_psql('postgres', "SELECT ttl.resume('$long')");
ok($coord->poll_query_until('postgres', "SELECT count(*) FROM $long", '2'),
	"the nodes' own ttl workers purge the shards with hashed names");

$_->stop for @nodes;
done_testing();
