# What a hot standby sees of a retirement (1.9, docs/retire.md): the
# primary's retire step takes ACCESS EXCLUSIVE on the leaf's parent, which
# the standby replays; a standby query that reads the container at that
# moment conflicts with the replay and is cancelled after
# max_standby_streaming_delay, as for any DROP TABLE.  Afterwards the
# standby sees the container without the retired leaf.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $primary = PostgreSQL::Test::Cluster->new('retire_primary');
$primary->init(allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', q{
SET ttl.now_override = '2030-01-01 00:00:00+00';
CREATE EXTENSION ttl;
CREATE TABLE ev (id int NOT NULL, created_at timestamptz NOT NULL, doc jsonb NOT NULL)
    PARTITION BY RANGE (created_at);
CREATE TABLE ev_a PARTITION OF ev FOR VALUES FROM ('2029-12-01') TO ('2029-12-02');
CREATE TABLE ev_b PARTITION OF ev FOR VALUES FROM ('2029-12-02') TO ('2029-12-03');
SELECT ttl.enable('ev', 3600);
SELECT ttl.set_retire('ev', 'drop');
INSERT INTO ev SELECT g, '2029-12-01 12:00+00', '{}' FROM generate_series(1, 5) g;
INSERT INTO ev VALUES (10, '2029-12-02 12:00+00', '{"ttl": -1}');
});
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('retire_standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->append_conf('postgresql.conf', "max_standby_streaming_delay = 200ms\nhot_standby_feedback = on\n");
$standby->start;
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', 'SELECT count(*) FROM ev'), '6', 'the standby reads the container');

# a standby transaction that has read the container and is still open
my ($out, $err) = ('', '');
my $reader = IPC::Run::start(
	[ 'psql', '-X', '-A', '-t', '-d', $standby->connstr('postgres'), '-c',
	  'BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM ev; SELECT pg_sleep(60); COMMIT;' ],
	'>', \$out, '2>', \$err);
ok($standby->poll_query_until('postgres', q{
    SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
     WHERE l.relation = 'ev'::regclass AND a.query LIKE '%pg_sleep%'}),
	'the standby reader holds the container');

is($primary->safe_psql('postgres', q{
    SET ttl.now_override = '2030-01-02 00:00:00+00';
    SELECT ttl.purge('ev');
    SELECT string_agg(leaf, ' ') FROM ttl.retired}), "0\npublic.ev_a",
	'the primary retires the fully expired leaf');
$primary->wait_for_catchup($standby);
$reader->finish;
like($err, qr/canceling statement due to conflict with recovery/,
	'the standby reader was cancelled by the replayed lock');
is($standby->safe_psql('postgres', q{SELECT to_regclass('ev_a') IS NULL, count(*) FROM ev}),
	't|1', 'then the standby sees the container without the leaf');

$standby->stop;
$primary->stop;
done_testing();
