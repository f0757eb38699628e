# Helpers shared by the TAP tests of ttl: a node with the extension
# preloaded, bounded waits on the server clock, the purge workers' pids.
package TtlTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;

our @EXPORT = qw(ttl_node wait_seconds worker_pids);

# A started node with shared_preload_libraries = $preload ('ttl' unless
# given), ttl.naptime = 1 and any further postgresql.conf lines.
sub ttl_node
{
	my ($name, $extra_conf, $preload) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = '} . ($preload // 'ttl') . qq{'
ttl.naptime = 1
} . ($extra_conf // ''));
	$node->start;
	return $node;
}

# Wait (bounded) until at least $secs seconds of server clock have passed.
sub wait_seconds
{
	my ($node, $secs) = @_;
	my $t0 = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
	$node->poll_query_until('postgres',
		"SELECT clock_timestamp() > '$t0'::timestamptz + interval '$secs s'")
	  or die "clock did not advance by $secs s";
	return;
}

# The pids of the ttl workers connected to a database, comma-separated.
sub worker_pids
{
	my ($node, $db) = @_;
	return $node->safe_psql('postgres',
		"SELECT string_agg(pid::text, ',' ORDER BY pid) FROM pg_stat_activity"
		  . " WHERE backend_type = 'ttl worker' AND datname = '$db'");
}

1;
