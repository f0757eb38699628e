# Containers on Citus distributed tables (issue 13): a coordinator and two
# worker nodes on 127.0.0.1.  Enable and distribute in either order,
# reference tables refused (0A000), no partitions retired (0A000), the rules on the shards through the
# coordinator (INSERT, multi-row INSERT, COPY, upsert, UPDATE), router and
# multi-shard reads through <table>_live with the expiry filter in the shard
# query and no leak to a cheap function on the workers, each worker node's
# own ttl worker purging the shards it holds, ttl.purge on the coordinator
# pushing the work to the nodes, a shard move in the middle of a purge
# backlog with the documents byte-identical afterwards.
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
is($coord->safe_psql('postgres', 'SELECT count(*) FROM pg_dist_node'), '3',
	'a coordinator and two worker nodes');

# A leaky function on every node: a cheap function that shows what it sees.
for my $n (@nodes)
{
	$n->safe_psql('postgres', q{
SET citus.enable_ddl_propagation = off;
CREATE FUNCTION public.leaky(d jsonb) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS
$$BEGIN RAISE NOTICE 'leaky saw %', d->>'k'; RETURN true; END$$;
});
}

# ---------------------------------------------------------------- item 1 ----
# distribute, then enable
$coord->safe_psql('postgres', q{
CREATE TABLE s1 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT create_distributed_table('s1', 'id');
});
my ($rc, $out, $err) = $coord->psql('postgres', "SELECT ttl.enable('s1', 3600)");
is($rc, 0, 'ttl.enable on a hash-distributed table works') or diag $err;
# enable, then distribute
$coord->safe_psql('postgres', q{
CREATE TABLE s2 (id text PRIMARY KEY, doc jsonb NOT NULL);
INSERT INTO s2 VALUES ('pre', '{"k": "pre"}');
SELECT ttl.enable('s2', 3600);
});
($rc, $out, $err) = $coord->psql('postgres', "SELECT create_distributed_table('s2', 'id')");
is($rc, 0, 'create_distributed_table on an enabled container works') or diag $err;
is($coord->safe_psql('postgres', "SELECT doc->>'k', (doc->>'_ts')::bigint > 0 FROM s2"),
	'pre|t', 'the existing row was stamped and moved to its shard');

for my $t (qw(s1 s2))
{
	# every shard of both tables has the stamp trigger and the purge index
	# (one btree on ttl.doc_purge_key since 1.3)
	is( $coord->safe_psql('postgres', qq{
SELECT bool_and(r.success AND r.result = '1|1') , count(*)
  FROM run_command_on_shards('$t',
       \$\$SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = '%1\$s'::regclass AND tgname LIKE 'zzz_ttl_stamp%%')
                  || '|' ||
                  (SELECT count(*) FROM pg_index WHERE indrelid = '%1\$s'::regclass
                      AND pg_get_indexdef(indexrelid) ~ 'ttl\\.doc_purge_key')\$\$) r}),
		't|4', "$t: every shard has the stamp trigger and the purge index");
}

# reference tables are refused, in either order
$coord->safe_psql('postgres', q{
CREATE TABLE r1 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT create_reference_table('r1');
CREATE TABLE r2 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('r2', 60);
});
($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT ttl.enable('r1', 60)");
like($err, qr/0A000/, 'ttl.enable on a reference table: 0A000');
like($err, qr/reference table/, '... naming reference tables');
($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT create_reference_table('r2')");
like($err, qr/0A000/, 'create_reference_table on a container: 0A000');
is($coord->safe_psql('postgres',
		"SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'r2'::regclass"),
	'0', '... and r2 stays a local table');

# a distributed container keeps a purge index (1.6): no index-free mode,
# in either order
($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT ttl.set_append_only('s1', true, 'none')");
like($err, qr/0A000.*distributed table and cannot be without a purge index/s,
	'set_append_only(..., none) on a distributed container: 0A000');
is($coord->safe_psql('postgres', "SELECT purge_index FROM ttl.containers WHERE container = 's1'::regclass"),
	'btree', '... and it keeps its btree');
$coord->safe_psql('postgres', q{
CREATE TABLE n1 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('n1', 60);
SELECT ttl.set_append_only('n1', true, 'none');
});
($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT create_distributed_table('n1', 'id')");
like($err, qr/0A000/, 'create_distributed_table on an index-free container: 0A000');
is($coord->safe_psql('postgres',
		"SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'n1'::regclass"),
	'0', '... and n1 stays a local table');
$coord->safe_psql('postgres', q{SELECT ttl.disable('n1'); DROP TABLE n1});

# a distributed container has no purge window of its own (1.9): its nodes
# purge by the policy the shards' triggers carry; in either order
($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT ttl.set_purge_window('s1', '01:00-05:00')");
like($err, qr/0A000.*cannot have a purge window of its own/s,
	'set_purge_window on a distributed container: 0A000');
is($coord->safe_psql('postgres', "SELECT purge_window IS NULL FROM ttl.registry WHERE relid = 's1'::regclass"),
	't', '... and nothing is written');
is($coord->safe_psql('postgres', "SELECT ttl.set_purge_window('s1', NULL)"), '',
	'removing a window is allowed');
$coord->safe_psql('postgres', q{
CREATE TABLE w1 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('w1', 60);
SELECT ttl.set_purge_window('w1', '01:00-05:00');
});
($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT create_distributed_table('w1', 'id')");
like($err, qr/0A000/, 'create_distributed_table on a container with a window: 0A000');
is($coord->safe_psql('postgres',
		"SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'w1'::regclass"),
	'0', '... and w1 stays a local table');
$coord->safe_psql('postgres', q{SELECT ttl.disable('w1'); DROP TABLE w1});

# a distributed container retires no partitions (1.9): its nodes purge its
# shards by the policy the shards' triggers carry, which has no retire
# mode; in either order, 'off' always allowed
$coord->safe_psql('postgres', q{
CREATE TABLE rp1 (id text NOT NULL, created_at timestamptz NOT NULL, doc jsonb NOT NULL)
    PARTITION BY RANGE (created_at);
CREATE TABLE rp1_a PARTITION OF rp1 FOR VALUES FROM ('2029-12-01') TO ('2029-12-02');
SELECT ttl.enable('rp1', 60);
SELECT create_distributed_table('rp1', 'id');
});
($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT ttl.set_retire('rp1', 'drop')");
like($err, qr/0A000.*is a Citus distributed table: retiring partitions is not supported/s,
	'set_retire on a distributed container: 0A000');
is($coord->safe_psql('postgres', "SELECT retire FROM ttl.containers WHERE container = 'rp1'::regclass"),
	'off', '... and nothing is written');
is($coord->safe_psql('postgres', "SELECT ttl.set_retire('rp1', 'off')"), '',
	"set_retire(..., 'off') on a distributed container is allowed");
$coord->safe_psql('postgres', q{
CREATE TABLE rp2 (id text NOT NULL, created_at timestamptz NOT NULL, doc jsonb NOT NULL)
    PARTITION BY RANGE (created_at);
CREATE TABLE rp2_a PARTITION OF rp2 FOR VALUES FROM ('2029-12-01') TO ('2029-12-02');
SELECT ttl.enable('rp2', 60);
SELECT ttl.set_retire('rp2', 'drop');
});
($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT create_distributed_table('rp2', 'id')");
like($err, qr/0A000.*retires partitions and cannot be a Citus distributed table/s,
	'create_distributed_table on a container that retires partitions: 0A000');
is($coord->safe_psql('postgres',
		"SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'rp2'::regclass"),
	'0', '... and rp2 stays a local table');
$coord->safe_psql('postgres', q{
SELECT ttl.disable('rp1'); DROP TABLE rp1;
SELECT ttl.disable('rp2'); DROP TABLE rp2;
});

# The policy is known on every node: ttl.live there reads the container's
# default (3600: a document stamped at second 1 is expired), and follows
# ttl.set_default_ttl on the coordinator.
sub live_on_workers
{
	my ($t) = @_;
	return join(',', map {
		$_->safe_psql('postgres', qq{SELECT ttl.live('{"_ts": 1}', '$t')})
	} @workers);
}
is(live_on_workers('s1'), 'f,f', 'the policy of s1 is known on both workers');
is(live_on_workers('s2'), 'f,f', 'the policy of s2 is known on both workers');
$coord->safe_psql('postgres', "SELECT ttl.set_default_ttl('s1', NULL)");
is(live_on_workers('s1'), 't,t', 'set_default_ttl(NULL) reaches the workers');
$coord->safe_psql('postgres', "SELECT ttl.set_default_ttl('s1', 3600)");
is(live_on_workers('s1'), 'f,f', 'set_default_ttl(3600) reaches the workers');

# ---------------------------------------------------------------- item 2 ----
my $now = $coord->safe_psql('postgres', 'SELECT floor(extract(epoch FROM now()))::bigint');
$coord->safe_psql('postgres', q{
INSERT INTO s1 VALUES ('l1', '{"k": "l1", "_ts": 5}');
INSERT INTO s1 VALUES ('l2', '{"k": "l2"}'), ('l3', '{"k": "l3", "ttl": -1}'), ('l4', '{"k": "l4"}');
COPY s1 FROM STDIN;
l5	{"k": "l5", "_ts": 7}
l6	{"k": "l6"}
\.
INSERT INTO s1 VALUES ('l6', '{"k": "l6", "_ts": 9, "v": 2}')
    ON CONFLICT (id) DO UPDATE SET doc = excluded.doc;
UPDATE s1 SET doc = doc || '{"_ts": 11}' WHERE id = 'l4';
});
is( $coord->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE (doc->>'_ts')::bigint >= $now), count(*) FROM s1"),
	'6|6', 'INSERT, multi-row INSERT, COPY, upsert and UPDATE stamp _ts on the shards');
for my $bad ("INSERT INTO s1 VALUES ('b1', '{\"ttl\": \"60\"}')",
	"INSERT INTO s1 VALUES ('b2', '{}'), ('b3', '{}'), ('b4', '{}'), ('b5', '{\"ttl\": 0}')",
	"UPDATE s1 SET doc = doc || '{\"ttl\": -2}' WHERE id = 'l2'",
	# through the coordinator: Citus copies the rows to the shards (as COPY)
	"INSERT INTO s1 SELECT 'bs' || g, '{\"ttl\": 0}'::jsonb FROM generate_series(1, 3) g")
{
	($rc, $out, $err) = $coord->psql('postgres', "\\set VERBOSITY verbose\n$bad");
	like($err, qr/22023/, 'a bad ttl fails with 22023 through the coordinator: ' . substr($bad, 0, 40));
}
# COPY: Citus re-raises a shard's COPY error with its message but without
# its SQLSTATE (ReportCopyError: XX000); ttl restores it (citus_copy.c)
($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nCOPY s1 FROM STDIN;\nb6\t{}\nb7\t{\"ttl\": 1.5}\n\\.\n");
like($err, qr/ERROR:  22023: invalid ttl in container "public\.s1": 1\.5/,
	'a bad ttl fails a COPY through the coordinator with 22023, naming the distributed table');
($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nCOPY s1 FROM STDIN;\nb8\t[1]\n\\.\n");
like($err, qr/ERROR:  22023: document of container "public\.s1" is not a JSON object/,
	'a document that is no object fails a COPY with 22023');
($rc, $out, $err) = $coord->psql('postgres', q{
DO $$BEGIN
  COPY s1 FROM PROGRAM 'printf "b9\\t{\\"ttl\\": 0}\\n"';
EXCEPTION WHEN invalid_parameter_value THEN RAISE NOTICE 'caught %', SQLSTATE;
END$$;
SELECT 'ok'});
like($err, qr/NOTICE:  caught 22023/,
	'an EXCEPTION block catches the COPY error as invalid_parameter_value') or diag $err;
is( $coord->safe_psql('postgres',
		"SELECT count(*), count(*) FILTER (WHERE doc ? 'ttl' AND id <> 'l3') FROM s1"),
	'6|0', 'nothing of the failed statements was written on any node');

# expired items: stamped in 2001 (SET LOCAL reaches the shards' sessions);
# paused meanwhile, so that the nodes do not purge them before the reads
$coord->safe_psql('postgres', q{
SELECT ttl.pause('s1');
BEGIN;
SET LOCAL ttl.now_override = '2001-01-01 00:00:00+00';
INSERT INTO s1 SELECT 'e' || g, jsonb_build_object('k', 'e' || g) FROM generate_series(1, 20) g;
COMMIT;
});
is($coord->safe_psql('postgres', "SELECT count(*) FROM s1 WHERE doc->>'_ts' = '978307200'"),
	'20', 'a SET LOCAL clock reaches the shards');

# ---------------------------------------------------------------- item 3 ----
is($coord->safe_psql('postgres', 'SELECT count(*) FROM s1_live'), '6',
	'multi-shard count through s1_live: exactly the live items');
is($coord->safe_psql('postgres',
		"SELECT string_agg(id, ',' ORDER BY id) FROM s1_live WHERE doc->>'k' LIKE '%'"),
	'l1,l2,l3,l4,l5,l6', 'multi-shard read through s1_live: exactly the live items');
is($coord->safe_psql('postgres', "SELECT doc->>'k' FROM s1_live WHERE id = 'e3'"), '',
	'router read of an expired item: no row (the "404")');
is($coord->safe_psql('postgres', "SELECT doc->>'k' FROM s1_live WHERE id = 'l2'"), 'l2',
	'router read of a live item');
my $plan = $coord->safe_psql('postgres',
	"EXPLAIN (COSTS OFF) SELECT doc FROM s1_live WHERE id = 'l2'");
like($plan, qr/Task Count: 1\b/, 'a point read by distribution key stays a single-shard router query');
like($plan, qr/Index Scan using s1_pkey_\d+/, '... and uses the shard\'s primary key');
# the filter runs on the workers (it is part of the shard query)
($rc, $out, $err) = $coord->psql('postgres',
	"SET citus.log_remote_commands = on;\nSELECT count(*) FROM s1_live");
like($err, qr/issuing SELECT .*FROM public\.s1_\d+ s1 WHERE ttl\.live\(/,
	'the shard queries carry the expiry filter');
# no leak: the cheap leaky function never sees an expired document
for my $q ("SELECT count(*) FROM s1_live WHERE leaky(doc)",
	"SELECT count(*) FROM s1_live WHERE id = 'e5' AND leaky(doc)",
	"SELECT count(*) FROM s1_live WHERE id IN ('e5', 'l1') AND leaky(doc)")
{
	($rc, $out, $err) = $coord->psql('postgres', $q);
	unlike($err, qr/leaky saw e\d/, "no expired document reaches leaky(): $q");
}
like($err, qr/leaky saw l1/, '... which did run on the worker for the live one');
# the same on a worker node, with the shard query as Citus ships it: the
# barrier is restored there (a subquery of another shape is not protected)
my $shard1 = $w1->safe_psql('postgres', q{
SET citus.show_shards_for_app_name_prefixes = '*';
SELECT relname FROM pg_class WHERE relname ~ '^s1_[0-9]+$' AND relkind = 'r' ORDER BY 1 LIMIT 1});
($rc, $out, $err) = $w1->psql('postgres', qq{
SELECT count(*) FROM (SELECT s1.id, s1.doc FROM public.$shard1 s1
                       WHERE ttl.live(s1.doc, 'public.s1'::regclass)) s1_live WHERE leaky(doc)});
unlike($err, qr/leaky saw e\d/, "the shipped shard query on a worker: no leak ($shard1)");
($rc, $out, $err) = $w1->psql('postgres', q{SELECT count(*) FROM s1_live WHERE leaky(doc)});
unlike($err, qr/leaky saw e\d/, 'reading s1_live on a worker node: no leak');
is($out, '6', '... and exactly the live items');

# ---------------------------------------------------------------- item 4 ----
# each worker node's ttl worker purges the shards it holds
$coord->safe_psql('postgres', "SELECT ttl.resume('s1')");
ok($coord->poll_query_until('postgres', 'SELECT count(*) FROM s1', '6'),
	'the expired items of s1 are purged by the nodes');
for my $i (0, 1)
{
	ok( $workers[$i]->poll_query_until('postgres',
			'SELECT coalesce(sum(rows_purged), 0) > 0 FROM ttl.purge_stats'),
		"worker node " . ($i + 1) . " purged its own shards");
}
is($coord->safe_psql('postgres', 'SELECT count(*) FROM ttl.purge_stats WHERE rows_purged > 0'),
	'0', 'the coordinator did no per-row work');
is($coord->safe_psql('postgres',
		"SELECT rows_purged FROM ttl.distributed_stats WHERE container = 's1'::regclass"),
	'20', 'statistics of the whole container read from the coordinator');

# coordinator ttl.purge pushes to the nodes (s2 paused: no automatic purge)
$coord->safe_psql('postgres', q{
SELECT ttl.pause('s2');
BEGIN;
SET LOCAL ttl.now_override = '2001-01-01 00:00:00+00';
INSERT INTO s2 SELECT 'e' || g, jsonb_build_object('k', 'e' || g) FROM generate_series(1, 30) g;
COMMIT;
});
is($coord->safe_psql('postgres', "SELECT ttl.purge('s2')"), '30',
	'ttl.purge on the coordinator purges the whole distributed container');
is($coord->safe_psql('postgres', 'SELECT count(*) FROM s2'), '1', '... and only its expired items');

# ---------------------------------------------------------------- item 5 ----
# A shard move in the middle of a purge backlog: s3 holds 2000 expired and
# 500 live items, the nodes purge slowly; one shard moves from w1 to w2.
for my $w (@workers)
{
	$w->append_conf('postgresql.conf', "ttl.batch_size = 20\nttl.cost_delay = 50\nttl.cost_limit = 10\n");
	$w->reload;
}
$coord->safe_psql('postgres', q{
CREATE TABLE s3 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT create_distributed_table('s3', 'id');
SELECT ttl.enable('s3', 3600);
SELECT ttl.pause('s3');
BEGIN;
SET LOCAL ttl.now_override = '2001-01-01 00:00:00+00';
INSERT INTO s3 SELECT 'e' || g, jsonb_build_object('k', 'e' || g, 'pad', repeat('x', 200)) FROM generate_series(1, 2000) g;
COMMIT;
INSERT INTO s3 SELECT 'l' || g, jsonb_build_object('k', 'l' || g, 'n', g) FROM generate_series(1, 500) g;
});
my $before = $coord->safe_psql('postgres',
	"SELECT md5(string_agg(id || doc::text, ',' ORDER BY id)) FROM s3 WHERE id LIKE 'l%'");
$coord->safe_psql('postgres', "SELECT ttl.resume('s3')");
my $shard = $coord->safe_psql('postgres', qq{
SELECT s.shardid FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
  JOIN pg_dist_node n ON n.groupid = p.groupid
 WHERE s.logicalrelid = 's3'::regclass AND n.nodeport = } . $w1->port . q{
 ORDER BY s.shardid LIMIT 1});
ok($coord->poll_query_until('postgres',
		"SELECT count(*) < 2500 FROM s3"), 'the nodes have started purging s3');
my $left = $coord->safe_psql('postgres', 'SELECT count(*) - 500 FROM s3');
cmp_ok($left, '>', 200, "the move starts in the middle of the backlog ($left expired items left)");
$coord->safe_psql('postgres', qq{
SELECT citus_move_shard_placement($shard, '127.0.0.1', } . $w1->port . q{, '127.0.0.1', }
	  . $w2->port . q{, shard_transfer_mode := 'force_logical')});
ok($coord->poll_query_until('postgres', 'SELECT count(*) FROM s3', '500'),
	'after the move the backlog is purged completely');
is( $coord->safe_psql('postgres',
		"SELECT md5(string_agg(id || doc::text, ',' ORDER BY id)) FROM s3 WHERE id LIKE 'l%'"),
	$before, 'the live documents are byte-identical after the move (no re-stamp)');
is( $w2->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = 's3_$shard'::regclass AND tgname LIKE 'zzz_ttl_stamp%')
       || '|' ||
       (SELECT count(*) FROM pg_index WHERE indrelid = 's3_$shard'::regclass
           AND pg_get_indexdef(indexrelid) ~ 'ttl\\.doc_purge_key')}),
	'1|1', 'the new placement has the stamp trigger and the purge index');
# the moved shard still stamps and still purges
my $key = $coord->safe_psql('postgres', qq{
SELECT id FROM s3 WHERE get_shard_id_for_distribution_column('s3', id) = $shard LIMIT 1});
$coord->safe_psql('postgres', qq{
UPDATE s3 SET doc = doc || '{"ttl": 1}' WHERE id = '$key'});
ok($coord->poll_query_until('postgres', "SELECT count(*) FROM s3 WHERE id = '$key'", '0'),
	'an item of the moved shard is stamped and purged on its new node');

# A shard split: the new shards get the trigger and the purge indexes after
# their rows (byte-identical documents), and their node purges them.
my ($lo, $hi) = split /\|/, $coord->safe_psql('postgres',
	"SELECT shardminvalue, shardmaxvalue FROM pg_dist_shard WHERE shardid = $shard");
my $mid = int(($lo + $hi) / 2);
my ($n1, $n2) = map {
	$coord->safe_psql('postgres', "SELECT nodeid FROM pg_dist_node WHERE nodeport = " . $_->port)
} @workers;
my $maxshard = $coord->safe_psql('postgres', "SELECT max(shardid) FROM pg_dist_shard");
$before = $coord->safe_psql('postgres',
	"SELECT md5(string_agg(id || doc::text, ',' ORDER BY id)) FROM s3 WHERE id LIKE 'l%'");
$coord->safe_psql('postgres', qq{
SELECT citus_split_shard_by_split_points($shard, ARRAY['$mid'], ARRAY[$n1, $n2], 'block_writes')});
is( $coord->safe_psql('postgres',
		"SELECT md5(string_agg(id || doc::text, ',' ORDER BY id)) FROM s3 WHERE id LIKE 'l%'"),
	$before, 'the live documents are byte-identical after a split');
is( $coord->safe_psql('postgres', qq{
SELECT bool_and(r.success AND r.result = '1|1'), count(*)
  FROM run_command_on_shards('s3',
       \$\$SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = '%1\$s'::regclass AND tgname LIKE 'zzz_ttl_stamp%%')
                  || '|' ||
                  (SELECT count(*) FROM pg_index WHERE indrelid = '%1\$s'::regclass
                      AND pg_get_indexdef(indexrelid) ~ 'ttl\\.doc_purge_key')\$\$) r}),
	't|5', 'after the split every shard of s3 has the stamp trigger and the purge indexes');
my $split_keys = $coord->safe_psql('postgres', qq{
SELECT string_agg(quote_literal(k), ',') FROM (
  SELECT min(id) AS k FROM s3
   WHERE get_shard_id_for_distribution_column('s3', id) > $maxshard
   GROUP BY get_shard_id_for_distribution_column('s3', id)) x});
is(scalar(split /,/, $split_keys), 2, 'an item in each of the two new shards');
$coord->safe_psql('postgres', qq{UPDATE s3 SET doc = doc || '{"ttl": 1}' WHERE id IN ($split_keys)});
ok($coord->poll_query_until('postgres', "SELECT count(*) FROM s3 WHERE id IN ($split_keys)", '0'),
	'items of the new shards are stamped and purged on their nodes');

# ---------------------------------------------------- deadline (issue 14) ----
# Rule 9 on Citus: the deadline property travels in the stamp trigger's
# fourth argument, so the shards validate it, the nodes hide by it and
# ttl.purge on the coordinator purges by it (through the deadline index,
# which CREATE INDEX on the distributed table puts on every shard).
$coord->safe_psql('postgres', q{
CREATE TABLE s4 (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT create_distributed_table('s4', 'id');
SELECT ttl.enable('s4', 3600, deadline_property => 'until');
SELECT ttl.pause('s4');
});
is( join(',', map {
		$_->safe_psql('postgres', q{SELECT ttl.live('{"_ts": 4102444800}', 's4')})
	} @workers),
	't,t', 'a document without a deadline is live on the workers');
is( join(',', map {
		$_->safe_psql('postgres', q{SELECT ttl.live('{"_ts": 4102444800, "until": 1}', 's4')})
	} @workers),
	'f,f', 'the deadline property of s4 is known on both workers');
($rc, $out, $err) = $coord->psql('postgres',
	qq{\\set VERBOSITY verbose
INSERT INTO s4 VALUES ('bad', '{"until": "2030-01-01T00:00:00"}')});
like($err, qr/22007/, 'a deadline without an offset fails with 22007 on the shard');
($rc, $out, $err) = $coord->psql('postgres',
	qq{\\set VERBOSITY verbose
INSERT INTO s4 VALUES ('bad', '{"until": true}')});
like($err, qr/22023/, 'a boolean deadline fails with 22023 on the shard');
$coord->safe_psql('postgres', q{
INSERT INTO s4 SELECT 'd' || g, jsonb_build_object('until', g) FROM generate_series(1, 10) g;
INSERT INTO s4 VALUES ('future', '{"until": "2100-01-01T00:00:00Z"}'), ('none', '{}');
});
is($coord->safe_psql('postgres', 'SELECT count(*) FROM s4_live'), '2',
	'items past their deadline are hidden through the coordinator');
is( $coord->safe_psql('postgres', q{
SELECT bool_and(r.success AND r.result = '1'), count(*) >= 2
  FROM run_command_on_shards('s4',
       $$SELECT count(*) FROM pg_index i JOIN pg_proc p ON p.proname = 'doc_deadline_key'
          WHERE i.indrelid = '%s'::regclass AND pg_get_indexdef(i.indexrelid) ~ p.proname$$) r}),
	't|t', 'every shard has the deadline index');
is($coord->safe_psql('postgres', "SELECT ttl.purge('s4')"), '10',
	'ttl.purge on the coordinator purges the items past their deadline on the nodes');
is($coord->safe_psql('postgres', 'SELECT string_agg(id, \',\' ORDER BY id) FROM s4'), 'future,none',
	'... and only those');
$coord->safe_psql('postgres', "SELECT ttl.set_deadline_property('s4', NULL)");
is( join(',', map {
		$_->safe_psql('postgres', q{SELECT ttl.live('{"_ts": 4102444800, "until": 1}', 's4')})
	} @workers),
	't,t', 'removing the deadline property reaches the workers');
$coord->safe_psql('postgres', q{INSERT INTO s4 VALUES ('free', '{"until": true}')});

# ttl.disable on the coordinator: the trigger leaves every shard and node
$coord->safe_psql('postgres', "SELECT ttl.disable('s2')");
is( $coord->safe_psql('postgres', q{
SELECT bool_and(r.success AND r.result = '0'), count(*) >= 4
  FROM run_command_on_shards('s2',
       $$SELECT count(*) FROM pg_trigger WHERE tgrelid = '%s'::regclass AND NOT tgisinternal$$) r}),
	't|t', 'ttl.disable removes the trigger from every shard (s2 was split with s3, its colocated table)');
is(live_on_workers('s2'), 't,t', '... and the policy from the workers');
$coord->safe_psql('postgres', q{INSERT INTO s2 VALUES ('after', '{"ttl": "free text"}')});
is($coord->safe_psql('postgres', "SELECT doc->>'ttl' FROM s2 WHERE id = 'after'"), 'free text',
	'... writes are no longer checked');

$_->stop for @nodes;
done_testing();
