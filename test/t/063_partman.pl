# Retiring whole partitions (1.9) on a container whose leaves pg_partman
# makes (Debian's postgresql-NN-partman on 15, 17 and 18: 4.7.2, 5.2.4,
# 5.5.0; 5.2.4 built by test/partman-build on 16; skipped where it is not
# installed): pg_partman's own retention off, its default partition present
# (which rules out DETACH ... CONCURRENTLY, never used by ttl).  A daily
# leaf whose every item has expired is dropped by ttl.purge(), a leaf with
# an item that never expires and the empty leaves made ahead of time stay,
# and pg_partman's maintenance goes on after the retirement without making
# the retired leaf again.  pg_partman 5 changed create_parent (no 'native'
# type: p_type is 'range' by default and comes after the interval, given as
# an interval, not 'daily') and the leaves' suffix (YYYYMMDD for a daily set
# instead of 4.x's YYYY_MM_DD): the test makes the set each version's way
# and takes the leaves' names from pg_partman's part_config.datetime_string,
# asserting the same things on both.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('partman');
$node->init;
$node->start;

if ($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_partman'") eq '0')
{
	$node->stop;
	plan skip_all => 'pg_partman is not installed (Debian: postgresql-NN-partman)';
}

$node->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE SCHEMA partman;
CREATE EXTENSION pg_partman SCHEMA partman;
CREATE TABLE public.ev (id int NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), doc jsonb NOT NULL)
    PARTITION BY RANGE (created_at);
});
my $version = $node->safe_psql('postgres',
	"SELECT extversion FROM pg_extension WHERE extname = 'pg_partman'");
my ($pm_major) = $version =~ /^(\d+)\./;
note "pg_partman $version";
ok(defined $pm_major && ($pm_major == 4 || $pm_major == 5),
	"pg_partman $version is a 4.x or a 5.x, the two forms this test knows");
my %form = (
	4 => {
		create => q{SELECT partman.create_parent('public.ev', 'created_at', 'native', 'daily',
		                 p_premake := 2, p_start_partition := (current_date - 3)::text)},
		type => 'native', suffix => 'YYYY_MM_DD' },
	5 => {
		create => q{SELECT partman.create_parent('public.ev', 'created_at', '1 day',
		                 p_premake := 2, p_start_partition := (current_date - 3)::text)},
		type => 'range', suffix => 'YYYYMMDD' });
my $f = $form{$pm_major // 0} // $form{5};   # (the ok above failed otherwise)
$node->safe_psql('postgres', $f->{create});
$node->safe_psql('postgres', q{
SELECT ttl.enable('public.ev', 3600);
SELECT ttl.set_retire('public.ev', 'drop');
});
is($node->safe_psql('postgres', q{
    SELECT partition_type || ' ' || partition_interval::interval || ' ' || datetime_string
      FROM partman.part_config WHERE parent_table = 'public.ev'}),
	"$f->{type} 1 day $f->{suffix}", "pg_partman $version made a daily set of range partitions");
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM pg_inherits WHERE inhparent = 'ev'::regclass AND inhrelid = 'ev_default'::regclass}),
	'1', 'pg_partman made its default partition');
is($node->safe_psql('postgres', q{SELECT retention IS NULL FROM partman.part_config WHERE parent_table = 'public.ev'}),
	't', 'pg_partman\'s own retention is off');

$node->safe_psql('postgres', q{
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO ev SELECT g, current_date - 3 + interval '1 hour', '{}' FROM generate_series(1, 5) g;
INSERT INTO ev VALUES (10, current_date - 2 + interval '1 hour', '{"ttl": -1}');
INSERT INTO ev VALUES (11, current_date - 2 + interval '2 hours', '{}');
});
# A leaf's name as pg_partman makes it: the parent's, _p, the day in its suffix.
sub leaf_of
{
	my ($day) = @_;
	return $node->safe_psql('postgres', qq{
	    SELECT 'ev_p' || to_char($day, datetime_string)
	      FROM partman.part_config WHERE parent_table = 'public.ev'});
}
my $leaves = q{SELECT string_agg(inhrelid::regclass::text, ' ' ORDER BY inhrelid::regclass::text)
                 FROM pg_inherits WHERE inhparent = 'ev'::regclass};
my $d3 = leaf_of('current_date - 3');
my $d2 = leaf_of('current_date - 2');
my $before = $node->safe_psql('postgres', $leaves);
like($before, qr/\b$d3\b.*\b$d2\b/, 'pg_partman made the daily leaves');

is($node->safe_psql('postgres', q{
    SET ttl.now_override = '2030-01-02 00:00:00+00';
    SELECT ttl.purge('public.ev')}), '1',
	'ttl.purge: the expired item next to one that never expires is deleted by rows');
is($node->safe_psql('postgres', q{SELECT string_agg(leaf || ':' || mode || ':' || items, ' ') FROM ttl.retired}),
	"public.$d3:drop:5", 'the fully expired leaf is dropped whole');
my $after = $node->safe_psql('postgres', $leaves);
(my $expected = $before) =~ s/\b$d3 //;
is($after, $expected, 'the other leaves stay: the one with a live item, the empty ones ahead, the default');
is($node->safe_psql('postgres', 'SELECT id FROM ev ORDER BY id'), '10', 'the item that never expires is there');

# pg_partman's maintenance after the retirement, and writes routed as before
$node->safe_psql('postgres', q{SELECT partman.run_maintenance('public.ev')});
unlike($node->safe_psql('postgres', $leaves), qr/\b$d3\b/,
	'pg_partman\'s maintenance does not make the retired leaf again');
is($node->safe_psql('postgres', q{
    INSERT INTO ev VALUES (20, now(), '{}') RETURNING tableoid::regclass::text}),
	leaf_of('current_date'),
	'pg_partman\'s maintenance runs after the retirement, and today\'s rows go to today\'s leaf');

$node->stop;
done_testing();
