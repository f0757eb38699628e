# Rule 10 on Citus distributed containers (issue 26): a coordinator and two
# worker nodes on 127.0.0.1.  A write through the distributed table lands on
# a shard, whose stamp trigger replaces an expired item holding its key as
# on a plain container: INSERT of an expired id (single-shard and
# multi-shard), COPY, ON CONFLICT DO NOTHING and DO UPDATE with an expired
# key (the INSERT path, nothing merged); a live item conflicts as before.
# The replacements are counted on the nodes (ttl.distributed_stats).  The
# container setting cannot turn rule 10 off on a distributed container
# (0A000), nor can a container with it off be distributed.
#
# Skipped (not failed) only when Citus is not installed in the PostgreSQL
# tree under test (test/run-all installs it for 15: test/citus-build).
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

my ($coord, $w1, $w2) = ttl_citus_nodes('r10');
is($coord->safe_psql('postgres', 'SELECT count(*) FROM pg_dist_node'), '3',
	'a coordinator and two worker nodes');

# d: distributed by id, paused (the nodes' workers leave its items alone);
# e1..e8 stamped in 2001 (expired under the default of an hour), l1 live
$coord->safe_psql('postgres', q{
CREATE TABLE d (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT create_distributed_table('d', 'id');
SELECT ttl.enable('d', 3600);
SELECT ttl.pause('d');
BEGIN;
SET LOCAL ttl.now_override = '2001-01-01 00:00:00+00';
INSERT INTO d SELECT 'e' || g, jsonb_build_object('v', 'old') FROM generate_series(1, 8) g;
COMMIT;
INSERT INTO d VALUES ('l1', '{"v": "old"}');
});
is($coord->safe_psql('postgres', 'SELECT count(*) FROM d_live'), '1',
	'e1..e8 are expired, l1 is live');
is( $coord->safe_psql('postgres', q{
SELECT count(DISTINCT n.nodeport) FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
 WHERE p.shardid IN (SELECT get_shard_id_for_distribution_column('d', 'e' || g)
                       FROM generate_series(1, 8) g)}),
	'2', 'the expired items live on both worker nodes');

# an INSERT of an expired id, routed to its shard
my ($rc, $out, $err) = $coord->psql('postgres', q{INSERT INTO d VALUES ('e1', '{"v": "new"}')});
is($rc, 0, 'INSERT of an expired id through the distributed table succeeds') or diag $err;
# a multi-row INSERT over several shards
($rc, $out, $err) = $coord->psql('postgres',
	q{INSERT INTO d VALUES ('e2', '{"v": "new"}'), ('e3', '{"v": "new"}'), ('e4', '{"v": "new"}')});
is($rc, 0, 'a multi-shard INSERT of expired ids succeeds') or diag $err;
# COPY
($rc, $out, $err) = $coord->psql('postgres', qq{COPY d FROM stdin;\ne5\t{"v": "new"}\n\\.\n});
is($rc, 0, 'COPY of an expired id succeeds') or diag $err;
# ON CONFLICT DO NOTHING with an expired key: the write takes effect
($rc, $out, $err) = $coord->psql('postgres',
	q{INSERT INTO d VALUES ('e6', '{"v": "new"}') ON CONFLICT DO NOTHING});
is($rc, 0, 'ON CONFLICT DO NOTHING with an expired key') or diag $err;
($rc, $out, $err) = $coord->psql('postgres',
	q{INSERT INTO d VALUES ('e7', '{"v": "new"}') ON CONFLICT (id) DO NOTHING});
is($rc, 0, 'ON CONFLICT (id) DO NOTHING with an expired key') or diag $err;
# ON CONFLICT DO UPDATE: the INSERT path, never merged into the expired row
($rc, $out, $err) = $coord->psql('postgres',
	q{INSERT INTO d VALUES ('e8', '{"v": "new"}') ON CONFLICT (id) DO UPDATE SET doc = d.doc || '{"merged": true}'});
is($rc, 0, 'ON CONFLICT DO UPDATE with an expired key') or diag $err;

is( $coord->safe_psql('postgres',
		q{SELECT string_agg(id || '=' || (doc ->> 'v') || coalesce('+' || (doc ->> 'merged'), ''), ',' ORDER BY id) FROM d}),
	'e1=new,e2=new,e3=new,e4=new,e5=new,e6=new,e7=new,e8=new,l1=old',
	'every expired item was replaced by the new write, one row per id, nothing merged');
is($coord->safe_psql('postgres', 'SELECT count(*) FROM d_live'), '9',
	'the new items are live');

# a live item conflicts as before
($rc, $out, $err) = $coord->psql('postgres', q{INSERT INTO d VALUES ('l1', '{"v": "new"}')});
isnt($rc, 0, 'INSERT of a live id fails');
like($err, qr/duplicate key value violates unique constraint/, '... with 23505');
($rc, $out, $err) = $coord->psql('postgres',
	q{INSERT INTO d VALUES ('l1', '{"v": "new"}') ON CONFLICT DO NOTHING RETURNING id});
is($out, '', 'ON CONFLICT DO NOTHING with a live key does nothing');
is($coord->safe_psql('postgres', q{SELECT doc ->> 'v' FROM d WHERE id = 'l1'}), 'old',
	'the live item is untouched');

# counted on the nodes, read from the coordinator
is( $coord->safe_psql('postgres',
		"SELECT rows_purged FROM ttl.distributed_stats WHERE container = 'd'::regclass"),
	'8', 'the 8 replacements are counted (ttl.distributed_stats)');
is( $coord->safe_psql('postgres', 'SELECT coalesce(sum(rows_purged), 0) FROM ttl.stats'),
	'0', 'the coordinator deleted nothing itself');

# the setting stays on for a distributed container
($rc, $out, $err) = $coord->psql('postgres', q{SELECT ttl.set_replace_expired('d', false)});
like($err, qr/ERROR:  container "d" is a Citus distributed table and cannot turn rule 10 off/,
	'ttl.set_replace_expired(d, false) is refused on a distributed container');
is($coord->safe_psql('postgres', q{SELECT ttl.set_replace_expired('d', true)}), '',
	'... true is accepted (nothing changes)');
$coord->safe_psql('postgres', q{
CREATE TABLE d2 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('d2', 3600);
SELECT ttl.set_replace_expired('d2', false);
});
($rc, $out, $err) = $coord->psql('postgres', q{SELECT create_distributed_table('d2', 'id')});
like($err, qr/ERROR:  container "d2" is a Citus distributed table and cannot turn rule 10 off/,
	'a container with rule 10 off cannot be distributed');

$_->stop for ($coord, $w1, $w2);
done_testing();
