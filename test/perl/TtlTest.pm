# Helpers shared by the TAP tests of ttl: a node with the extension
# preloaded, bounded waits on the server clock, the purge workers' pids.
package TtlTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;

our @EXPORT = qw(ttl_node wait_seconds worker_pids ttl_citus_nodes);

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

# A Citus cluster on 127.0.0.1 for the 05x tests: a coordinator and two
# worker nodes preloading citus and ttl, both extensions created on each,
# the workers added; returns ($coordinator, $worker1, $worker2).  The
# caller skips first when Citus is not installed.
sub ttl_citus_nodes
{
	my ($prefix) = @_;
	my $conf = q{
listen_addresses = '127.0.0.1'
wal_level = logical
max_replication_slots = 10
max_wal_senders = 10
max_worker_processes = 24
citus.shard_count = 4
citus.shard_replication_factor = 1
citus.propagate_set_commands = 'local'
};
	$prefix //= '';
	my @nodes = map { ttl_node($prefix . $_, $conf, 'citus,ttl') } qw(coord w1 w2);
	$_->safe_psql('postgres', 'CREATE EXTENSION citus; CREATE EXTENSION ttl;') for @nodes;
	$nodes[0]->safe_psql('postgres',
		"SELECT citus_set_coordinator_host('127.0.0.1', " . $nodes[0]->port . ");"
		  . join('', map { "SELECT citus_add_node('127.0.0.1', " . $_->port . ");" }
			  @nodes[1, 2]));
	return @nodes;
}

1;
