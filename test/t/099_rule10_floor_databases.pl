# Rule 10's due floors are partitioned by database (src/stamp/
# replace_floor.c): a policy change resets the floors of its container's
# leaves in its own database only.  Two databases, each with a container
# in the append-only mode without a purge index (so a floor, once reset,
# cannot be recomputed while the table has rows: every later row probes,
# which ttl._rule10_counts() shows).  Each first INSERT finds its table
# empty and sets the floor; then, 20 times, an owner in database a calls
# ttl.set_default_ttl and both databases write a row: a's rows probe (its
# floor is unknown), b's skip the probe (its floor untouched: its probe
# count does not move).  A floor or epoch shared by the databases would
# make b's rows probe too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('floor_dbs', "ttl.enabled = off\n");

for my $db ('a', 'b')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
CREATE EXTENSION ttl;
CREATE TABLE c (id text PRIMARY KEY, doc jsonb NOT NULL) WITH (autovacuum_enabled = off);
SELECT ttl.enable('c', 3600);
SELECT ttl.pause('c');
SELECT ttl.set_append_only('c', true, 'none');
});
	$node->safe_psql($db, q{INSERT INTO c VALUES ('first', '{}')});
}

sub counts
{
	my ($db) = @_;
	return split /\|/, $node->safe_psql($db, 'SELECT probes, skipped FROM ttl._rule10_counts()');
}

my @a0 = counts('a');
my @b0 = counts('b');
is_deeply(\@b0, [0, 1], 'b: the first row skipped the probe (empty table)');
for my $i (1 .. 20)
{
	$node->safe_psql('a', 'SELECT ttl.set_default_ttl(' . "'c', " . (3600 + $i) . ')');
	$node->safe_psql('a', "INSERT INTO c VALUES ('a$i', '{}')");
	$node->safe_psql('b', "INSERT INTO c VALUES ('b$i', '{}')");
}
my @a1 = counts('a');
my @b1 = counts('b');
is($a1[0] - $a0[0], 20, "a: each row after a's policy change probed");
is($b1[0] - $b0[0], 0, "b: a's policy changes left b's probe count unchanged");
is($b1[1] - $b0[1], 20, 'b: every row skipped the probe');

# and the other way round: b's change, a's count (a's floor stays unknown)
$node->safe_psql('b', "SELECT ttl.set_default_ttl('c', 60)");
$node->safe_psql('b', "INSERT INTO c VALUES ('b-after', '{}')");
my @b2 = counts('b');
is($b2[0] - $b1[0], 1, "b: its own policy change makes its next row probe");
is((counts('a'))[0], $a1[0], "a: b's policy change probed nothing in a");

done_testing();
