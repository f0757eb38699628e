# ALTER EXTENSION ttl UPDATE while the worker purges the same database: the
# upgrade takes ttl's own tables (ALTER TABLE ttl.registry, ttl.purge_stats
# ...) and the worker reads and writes them in every batch.  Neither may
# fail for the other: no deadlock (seen in CI: the 1.8 -> 1.9 script held
# ttl.registry and waited for ttl.purge_stats, which a worker held while it
# waited for ttl.registry), no worker error (a lock timeout ended the
# worker's visit), no container backed off because of an upgrade.  Each
# update script locks ttl.registry first; the worker takes it without
# waiting at the start of each transaction and leaves the visit when an
# upgrade holds it.  Every old version is upgraded from, each in its own
# database, while the worker is in the middle of purging it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('upworker', qq{
ttl.batch_size = 20
log_lock_waits = on
deadlock_timeout = '100ms'
});
$node->safe_psql('postgres', 'CREATE EXTENSION ttl');
my $latest = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'ttl'");

# every version ALTER EXTENSION can update from
my @from = split /\n/, $node->safe_psql('postgres',
	"SELECT version FROM pg_available_extension_versions WHERE name = 'ttl'"
	  . " AND version::text <> '$latest' ORDER BY string_to_array(version, '.')::int[]");
ok(@from >= 2, 'there are older versions to update from: ' . join(' ', @from));
# the newest three twice each (their scripts run most), the rest once
my @plan = (@from, @from[-3 .. -1]);

my $offset = -s $node->logfile;
my $i = 0;
for my $v (@plan)
{
	$i++;
	my $db = "up$i";
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, qq{
CREATE EXTENSION ttl VERSION '$v';
DO \$\$BEGIN
  FOR t IN 1..8 LOOP
    EXECUTE format('CREATE TABLE c%s (id int PRIMARY KEY, doc jsonb NOT NULL)', t);
    EXECUTE format('SELECT ttl.enable(%L, 1)', 'c' || t);
    EXECUTE format('INSERT INTO c%s SELECT g, %L FROM generate_series(1, 3000) g', t, '{"ttl": 1}');
  END LOOP;
END\$\$;
});
	# the worker is purging this database: some rows are gone, most are not
	ok( $node->poll_query_until($db,
			"SELECT count(*) < 24000 FROM (SELECT 1 FROM c1 UNION ALL SELECT 1 FROM c2"
			  . " UNION ALL SELECT 1 FROM c3 UNION ALL SELECT 1 FROM c4"
			  . " UNION ALL SELECT 1 FROM c5 UNION ALL SELECT 1 FROM c6"
			  . " UNION ALL SELECT 1 FROM c7 UNION ALL SELECT 1 FROM c8) s"),
		"$v: the worker is purging");
	my ($rc, $out, $err) = $node->psql($db, "ALTER EXTENSION ttl UPDATE TO '$latest'");
	is($rc, 0, "$v: ALTER EXTENSION ttl UPDATE TO '$latest' succeeds with the worker at work")
	  or diag($err);
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'ttl'"),
		$latest, "$v: updated");
}

# the worker goes on after every upgrade and purges everything (in
# bigger batches now)
$node->append_conf('postgresql.conf', 'ttl.batch_size = 2000');
$node->reload;
for my $n (1 .. $i)
{
	ok( $node->poll_query_until("up$n",
			"SELECT (SELECT count(*) FROM c1) + (SELECT count(*) FROM c8)", '0'),
		"up$n: the worker purged the containers after the upgrade");
}

my $log = slurp_file($node->logfile, $offset);
unlike($log, qr/deadlock detected/, 'no deadlock between the upgrades and the worker');
unlike($log, qr/canceling statement due to lock timeout/, 'no worker ran into a lock timeout');
unlike($log, qr/ttl purge of "[^"]*" failed/, 'no batch failed');
for my $n (1 .. $i)
{
	is($node->safe_psql("up$n",
			"SELECT count(*) FROM ttl.purge_stats WHERE overruns > 0 OR retry_after IS NOT NULL"),
		'0', "up$n: no container backed off");
}
is($node->safe_psql('postgres',
		"SELECT count(*) FROM ttl.databases WHERE datname LIKE 'up%' AND last_error IS NOT NULL"),
	'0', 'ttl.databases: no visit ended in an error');

$node->stop;
done_testing();
