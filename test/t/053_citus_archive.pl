# Archives and legal holds on Citus (issues 31, 32).
#
# Archives: the archive of a hash-distributed container is a
# hash-distributed table colocated with it.  ttl.set_archive accepts that
# (the stamp triggers of the container's shards then name the archive) and
# refuses a table of one node, a reference table and a distributed table of
# another colocation group (0A000, nothing changed), as it refuses a Citus
# table as the archive of a container that is not distributed.  Each shard
# archives into the archive's shard of the same hash range, on its own node,
# in the statement of its delete: ttl.purge on the coordinator, the nodes'
# own workers and rule 10 on a shard.  A failing archive insert deletes
# nothing.  Citus table makers that break the rule are refused:
# create_distributed_table of a container whose archive is not colocated,
# undistribute_table of an archive.  A dropped archive stops the purge
# (nothing deleted).
#
# Legal holds: ttl.set_legal_hold refuses a distributed container (0A000,
# no hold written); a container with legal holds cannot be distributed
# (0A000).
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

my ($coord, $w1, $w2) = ttl_citus_nodes('arch');
my %node_by_port = map { $_->port => $_ } ($w1, $w2);

# d: distributed, paused (the nodes' workers leave it alone until resumed);
# d_arch colocated with it; d_other distributed in another colocation
# group; d_ref a reference table; local_arch a table of the coordinator
$coord->safe_psql('postgres', q{
CREATE TABLE d (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT create_distributed_table('d', 'id');
SELECT ttl.enable('d', 3600);
SELECT ttl.pause('d');
CREATE TABLE d_arch (id text, doc jsonb NOT NULL);
SELECT create_distributed_table('d_arch', 'id', colocate_with => 'd');
CREATE TABLE d_other (id text, doc jsonb NOT NULL);
SELECT create_distributed_table('d_other', 'id', colocate_with => 'none');
CREATE TABLE d_ref (id text, doc jsonb NOT NULL);
SELECT create_reference_table('d_ref');
CREATE TABLE local_arch (id text, doc jsonb NOT NULL);
CREATE TABLE local (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('local', 3600);
});

# the stamp trigger's definition on the coordinator's table (the shards'
# are the same, Citus propagates them)
sub trigger_args
{
	my ($table) = @_;
	return $coord->safe_psql('postgres', qq{
SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = '$table'::regclass AND tgname = 'zzz_ttl_stamp'});
}

# ---- refusals: nothing changed ----
my ($rc, $out, $err);
for my $case (
	[ 'local_arch', 'a table of one node only' ],
	[ 'd_ref', 'a Citus reference table' ],
	[ 'd_other', 'a hash-distributed table of another colocation group' ])
{
	my ($archive, $what) = @$case;
	($rc, $out, $err) = $coord->psql('postgres', qq{SELECT ttl.set_archive('d', '$archive')},
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err,
		qr/ERROR:  0A000: archive public\.$archive of distributed container public\.d is not colocated with it/,
		"$archive as the archive of a distributed container: 0A000 naming both");
	like($err, qr/DETAIL:  The archive is \Q$what\E\./, "... the detail says why ($what)");
}
($rc, $out, $err) = $coord->psql('postgres', q{SELECT ttl.set_archive('local', 'd_arch')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  0A000: archive public\.d_arch of container public\.local is a Citus table/,
	'a distributed table as the archive of a container of one node: 0A000');
is($coord->safe_psql('postgres', q{SELECT count(*) FROM ttl.containers WHERE archive IS NOT NULL}),
	'0', 'nothing changed in the registry');
unlike(trigger_args('d'), qr/archive=/, '... nor in the stamp trigger (no archive key)');

# ---- a colocated archive ----
$coord->safe_psql('postgres', q{SELECT ttl.set_archive('d', 'd_arch')});
is($coord->safe_psql('postgres', q{SELECT archive FROM ttl.containers WHERE container = 'd'::regclass}),
	'd_arch', 'a colocated distributed table is accepted as the archive');
like(trigger_args('d'), qr/'archive=public\.d_arch'\)/, 'the stamp trigger carries the archive (its archive key)');

# e1..e40 stamped in 2001 (expired under the default of an hour), l1..l10 live
$coord->safe_psql('postgres', q{
BEGIN;
SET LOCAL ttl.now_override = '2001-01-01 00:00:00+00';
INSERT INTO d SELECT 'e' || g, jsonb_build_object('v', 'old', 'n', g) FROM generate_series(1, 40) g;
COMMIT;
INSERT INTO d SELECT 'l' || g, jsonb_build_object('v', 'live') FROM generate_series(1, 10) g;
});
is( $coord->safe_psql('postgres', q{
SELECT count(DISTINCT get_shard_id_for_distribution_column('d', 'e' || g)) FROM generate_series(1, 40) g}),
	'4', 'the expired items are in every shard');
is($coord->safe_psql('postgres', q{SELECT count(*) FROM d_live}), '10',
	'the live view on the shards reads the policy with its archive (10 live items)');
is($coord->safe_psql('postgres', q{SELECT ttl.purge('d')}), '40',
	'ttl.purge on the coordinator purges the expired items on the nodes');
is( $coord->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM d) || ' ' || (SELECT count(*) FROM d_arch)
       || ' ' || (SELECT count(*) FROM d JOIN d_arch USING (id))}),
	'10 40 0', 'container + archive = every item, none in both');
is( $coord->safe_psql('postgres', q{
SELECT string_agg(DISTINCT left(id, 1), ',') || ' ' || min(doc ->> 'v') || ' '
       || count(DISTINCT doc ->> 'n') FROM d_arch}),
	'e old 40', 'the archive holds the 40 expired items, as they were');

# every archived row is in the archive's shard of its own hash range, on
# the node of the container's shard it left
sub archive_placement
{
	my $shards = $coord->safe_psql('postgres', q{
SELECT s.shardid || ' ' || p.nodeport FROM pg_dist_shard s JOIN pg_dist_shard_placement p USING (shardid)
 WHERE s.logicalrelid = 'd_arch'::regclass ORDER BY s.shardid});
	my ($rows, $misplaced, $nodes) = (0, 0, 0);
	my %seen;
	for my $line (split /\n/, $shards)
	{
		my ($shardid, $port) = split / /, $line;
		my $node = $node_by_port{$port} or die "no worker on port $port";
		$seen{$port} = 1;
		my ($n, $bad) = split /\|/, $node->safe_psql('postgres', qq{
SELECT count(*), count(*) FILTER (WHERE get_shard_id_for_distribution_column('d_arch', id) <> $shardid)
  FROM public.d_arch_$shardid});
		$rows += $n;
		$misplaced += $bad;
	}
	return "$rows rows, $misplaced misplaced, " . scalar(keys %seen) . ' nodes';
}
is(archive_placement(), '40 rows, 0 misplaced, 2 nodes',
	"each shard archived into the archive's shard of its hash range, on both nodes");

# ---- rule 10 on a shard: the replaced item is archived ----
$coord->safe_psql('postgres', q{
BEGIN;
SET LOCAL ttl.now_override = '2001-01-01 00:00:00+00';
INSERT INTO d VALUES ('r1', '{"v": "old"}'), ('r2', '{"v": "old"}');
COMMIT;
});
($rc, $out, $err) = $coord->psql('postgres',
	q{INSERT INTO d VALUES ('r1', '{"v": "new"}'), ('r2', '{"v": "new"}')});
is($rc, 0, 'INSERT of expired ids replaces them (rule 10 on the shards)') or diag $err;
is( $coord->safe_psql('postgres', q{
SELECT (SELECT string_agg(id || '=' || (doc ->> 'v'), ',' ORDER BY id) FROM d WHERE id LIKE 'r%')
       || ' ' || (SELECT string_agg(id || '=' || (doc ->> 'v'), ',' ORDER BY id) FROM d_arch WHERE id LIKE 'r%')}),
	'r1=new,r2=new r1=old,r2=old', 'the replaced items are in the archive, the new ones in the container');

# ---- a row the archive refuses is isolated on its shard, the rest purged ----
$coord->safe_psql('postgres', q{
ALTER TABLE d_arch ADD CONSTRAINT not_bad CHECK (doc ->> 'bad' IS NULL);
BEGIN;
SET LOCAL ttl.now_override = '2001-01-01 00:00:00+00';
INSERT INTO d VALUES ('b1', '{"bad": true}');
COMMIT;
});
($rc, $out, $err) = $coord->psql('postgres', q{SELECT ttl.purge('d')});
is($rc, 0, 'a row the archive refuses does not fail the purge (its shard\'s batch isolates it)')
  or diag $err;
my $failures = join(';', grep { $_ ne '' } map {
	$_->safe_psql('postgres', q{SELECT string_agg(sqlstate || ' ' || message, ';') FROM ttl.purge_failures})
} ($w1, $w2));
like($failures, qr/^23514 .*into archive public\.d_arch_\d+ failed: new row for relation "d_arch_\d+" violates check constraint "not_bad_\d+"/,
	'... recorded in ttl.purge_failures on its node, naming the archive shard and its constraint');
is( $coord->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM d WHERE id = 'b1') || ' ' || (SELECT count(*) FROM d_arch WHERE id = 'b1')}),
	'1 0', 'the refused row is still in the container, not in the archive');
$coord->safe_psql('postgres', q{DELETE FROM d WHERE id = 'b1'; ALTER TABLE d_arch DROP CONSTRAINT not_bad});

# ---- the nodes' own workers archive too ----
$coord->safe_psql('postgres', q{
BEGIN;
SET LOCAL ttl.now_override = '2001-01-01 00:00:00+00';
INSERT INTO d SELECT 'w' || g, jsonb_build_object('v', 'old') FROM generate_series(1, 20) g;
COMMIT;
SELECT ttl.resume('d');
});
ok($coord->poll_query_until('postgres', q{SELECT count(*) FROM d_arch WHERE id LIKE 'w%'}, '20'),
	"the nodes' workers archive what they purge");
$coord->safe_psql('postgres', q{SELECT ttl.pause('d')});
is( $coord->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM d) || ' ' || (SELECT count(*) FROM d_arch)
       || ' ' || (SELECT count(*) FROM d JOIN d_arch USING (id))}),
	'12 62 2', 'container + archive = every item; only the replaced ids r1, r2 in both (new and old)');
is(archive_placement(), '62 rows, 0 misplaced, 2 nodes', '... each in its colocated shard');

# ---- Citus table makers that would break the rule ----
($rc, $out, $err) = $coord->psql('postgres', q{SELECT undistribute_table('d_arch')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err,
	qr/ERROR:  0A000: archive public\.d_arch of distributed container public\.d is not colocated with it/,
	'undistribute_table of the archive: 0A000');
($rc, $out, $err) = $coord->psql('postgres',
	q{SELECT alter_distributed_table('d_arch', colocate_with := 'none')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err,
	qr/ERROR:  0A000: archive public\.d_arch of distributed container public\.d is not colocated with it/,
	'alter_distributed_table of the archive out of the colocation group: 0A000');
is( $coord->safe_psql('postgres', q{
SELECT count(*) FROM pg_dist_partition a, pg_dist_partition c
 WHERE a.logicalrelid = 'd_arch'::regclass AND c.logicalrelid = 'd'::regclass
   AND a.colocationid = c.colocationid}),
	'1', 'the archive stays distributed, colocated with the container');

$coord->safe_psql('postgres', q{SELECT ttl.set_archive('local', 'local_arch')});
($rc, $out, $err) = $coord->psql('postgres', q{SELECT create_distributed_table('local', 'id')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err,
	qr/ERROR:  0A000: archive public\.local_arch of distributed container public\.local is not colocated with it/,
	'a container with an archive of one node cannot be distributed');
is( $coord->safe_psql('postgres',
		q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'local'::regclass}),
	'0', 'it stays local');

# the way there: distribute the archive, then the container colocated with it
$coord->safe_psql('postgres', q{
CREATE TABLE pre (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('pre', 3600);
SELECT ttl.pause('pre');
CREATE TABLE pre_arch (id text, doc jsonb NOT NULL);
SELECT ttl.set_archive('pre', 'pre_arch');
SELECT create_distributed_table('pre_arch', 'id');
});
($rc, $out, $err) = $coord->psql('postgres',
	q{SELECT create_distributed_table('pre', 'id', colocate_with => 'pre_arch')});
is($rc, 0, 'a container can be distributed colocated with its distributed archive') or diag $err;
$coord->safe_psql('postgres', q{
BEGIN;
SET LOCAL ttl.now_override = '2001-01-01 00:00:00+00';
INSERT INTO pre SELECT 'e' || g, '{}' FROM generate_series(1, 12) g;
COMMIT;
});
is($coord->safe_psql('postgres', q{SELECT ttl.purge('pre')}), '12', '... and then archives');
is( $coord->safe_psql('postgres',
		q{SELECT (SELECT count(*) FROM pre) || ' ' || (SELECT count(*) FROM pre_arch)}),
	'0 12', '... every purged row');

# ---- a dropped archive stops the purge: nothing deleted ----
$coord->safe_psql('postgres', q{
DROP TABLE pre_arch;
BEGIN;
SET LOCAL ttl.now_override = '2001-01-01 00:00:00+00';
INSERT INTO pre SELECT 'x' || g, '{}' FROM generate_series(1, 8) g;
COMMIT;
});
($rc, $out, $err) = $coord->psql('postgres', q{SELECT ttl.purge('pre')});
isnt($rc, 0, 'the purge of a container whose archive was dropped fails');
like($err, qr/archive public\.pre_arch of distributed container pre_\d+ does not exist on this node/,
	'... naming the archive');
is($coord->safe_psql('postgres', q{SELECT count(*) FROM pre}), '8', '... and deletes nothing');
$coord->safe_psql('postgres', q{SELECT ttl.resume('pre')});
ok( $w1->poll_query_until('postgres', q{
SELECT count(*) > 0 FROM ttl.purge_stats
 WHERE last_error LIKE '%archive public.pre_arch of distributed container pre\_% does not exist on this node%'}),
	"the node's worker records the missing archive as its shard's last_error");
$coord->safe_psql('postgres', q{SELECT ttl.pause('pre')});
is($coord->safe_psql('postgres', q{SELECT count(*) FROM pre}), '8', '... and deletes nothing either');
($rc, $out, $err) = $coord->psql('postgres',
	q{CREATE TABLE plain (id text PRIMARY KEY); SELECT create_distributed_table('plain', 'id')});
is($rc, 0, 'a Citus table maker is not refused for an archive dropped before it') or diag $err;

# legal holds (issue 32)
($rc, $out, $err) = $coord->psql('postgres',
	q{SELECT ttl.set_legal_hold('d', 'case 1', '{"case": 1}')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  0A000: container \S*d is a distributed table: legal holds are not supported there/,
	'a legal hold on a distributed container: 0A000');
is($coord->safe_psql('postgres', q{SELECT count(*) FROM ttl.legal_holds}),
	'0', 'no hold written');
$coord->safe_psql('postgres', q{
CREATE TABLE held (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('held', 3600);
SELECT ttl.set_legal_hold('held', 'case 1', '{"case": 1}');
});
($rc, $out, $err) = $coord->psql('postgres', q{SELECT create_distributed_table('held', 'id')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  0A000: container \S*held has legal holds and cannot be a Citus distributed table/,
	'a container with legal holds cannot be distributed');
is( $coord->safe_psql('postgres',
		q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'held'::regclass}),
	'0', 'it stays local');

$_->stop for ($coord, $w1, $w2);
done_testing();
