# Retiring whole partitions (1.9) in the change stream: with
# ttl.mark_purge_deletes on, a leaf retired whole is announced by one
# transactional 'ttl' message (container, the leaf retired, its partition
# bound, mode, rows, by) decoded with the DETACH and DROP, and no delete
# per row; with marking off, a leaf that is in a publication is never
# retired (a subscriber would keep its rows: pgoutput applies neither a
# DROP nor ttl's messages) and its rows are purged one by one, each a
# DELETE in the stream.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('mark_retire', q{
wal_level = logical
max_replication_slots = 4
ttl.worker_enabled = off
});

$node->safe_psql('postgres', q{
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE EXTENSION ttl;
CREATE TABLE ev (id int NOT NULL, created_at timestamptz NOT NULL, doc jsonb NOT NULL)
    PARTITION BY RANGE (created_at);
CREATE TABLE ev_a PARTITION OF ev FOR VALUES FROM ('2029-12-01') TO ('2029-12-02');
CREATE TABLE ev_b PARTITION OF ev FOR VALUES FROM ('2029-12-02') TO ('2029-12-03');
CREATE TABLE ev_c PARTITION OF ev FOR VALUES FROM ('2029-12-03') TO ('2029-12-04');
ALTER TABLE ev REPLICA IDENTITY FULL;
ALTER TABLE ev_a REPLICA IDENTITY FULL;
ALTER TABLE ev_b REPLICA IDENTITY FULL;
ALTER TABLE ev_c REPLICA IDENTITY FULL;
SELECT ttl.enable('ev', 3600);
SELECT ttl.set_retire('ev', 'drop');
INSERT INTO ev SELECT g, '2029-12-01 12:00+00', '{}' FROM generate_series(1, 5) g;
INSERT INTO ev SELECT 10 + g, '2029-12-02 12:00+00', '{}' FROM generate_series(1, 3) g;
INSERT INTO ev SELECT 20 + g, '2029-12-03 12:00+00', '{}' FROM generate_series(1, 2) g;
CREATE PUBLICATION pub_c FOR TABLE ev_c;
SELECT pg_create_logical_replication_slot('s', 'test_decoding');
});

sub changes
{
	return $node->safe_psql('postgres',
		"SELECT data FROM pg_logical_slot_get_changes('s', NULL, NULL, 'include-xids', '0')");
}

# marking on: ev_a and ev_b retire, one message each, no row deletes;
# ev_c is published and marked: it retires too
my $on = $node->safe_psql('postgres', q{
SET ttl.mark_purge_deletes = on;
SET ttl.now_override = '2030-01-02 00:00:00+00';
SELECT ttl.purge('ev');
});
is($on, '0', 'marking on: no row deleted one by one');
my $stream = changes();
my @messages = grep { /^message:/ } split /\n/, $stream;
is(scalar(@messages), 3, 'one message per retired leaf') or diag($stream);
like($messages[0] // '',
	qr/^message: transactional: 1 prefix: ttl, sz: \d+ content:\{"container": "public.ev", "retired": "public.ev_a", "bound": "FOR VALUES FROM \('2029-12-01 00:00:00\+00'\) TO \('2029-12-02 00:00:00\+00'\)", "mode": "drop", "rows": 5, "by": "purge"\}$/,
	'the message names the container, the leaf, its bound, the mode, its rows and the path');
is(scalar(grep { /^table public\.ev_[abc]: DELETE/ } split /\n/, $stream), 0,
	'and no delete per row');
is($node->safe_psql('postgres', q{SELECT string_agg(leaf || ':' || items, ' ' ORDER BY leaf) FROM ttl.retired}),
	'public.ev_a:5 public.ev_b:3 public.ev_c:2', 'all three leaves retired');

# marking off: a published leaf is not retired, its rows are deleted one by one
$node->safe_psql('postgres', q{
SET ttl.now_override = '2030-01-03 00:00:00+00';
CREATE TABLE ev_d PARTITION OF ev FOR VALUES FROM ('2029-12-04') TO ('2029-12-05');
CREATE TABLE ev_e PARTITION OF ev FOR VALUES FROM ('2029-12-05') TO ('2029-12-06');
ALTER TABLE ev_d REPLICA IDENTITY FULL;
ALTER TABLE ev_e REPLICA IDENTITY FULL;
INSERT INTO ev SELECT 30 + g, '2029-12-04 12:00+00', '{}' FROM generate_series(1, 2) g;
INSERT INTO ev SELECT 40 + g, '2029-12-05 12:00+00', '{}' FROM generate_series(1, 2) g;
ALTER PUBLICATION pub_c ADD TABLE ev_d;
});
changes();
is($node->safe_psql('postgres', q{
SET ttl.now_override = '2030-01-04 00:00:00+00';
SELECT ttl.purge('ev');
}), '2', 'marking off: the published leaf\'s 2 rows are deleted one by one');
$stream = changes();
is(scalar(grep { /^table public\.ev_d: DELETE/ } split /\n/, $stream), 2,
	'each a DELETE in the stream');
is(scalar(grep { /^message:/ } split /\n/, $stream), 0, 'no message with marking off');
is($node->safe_psql('postgres', q{SELECT to_regclass('ev_d') IS NOT NULL, to_regclass('ev_e') IS NULL}),
	't|t', 'the published leaf stays, the unpublished one is retired');

$node->safe_psql('postgres', q{SELECT pg_drop_replication_slot('s')});
$node->stop;
done_testing();
