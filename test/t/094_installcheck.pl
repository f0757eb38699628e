# `make installcheck` as a user runs it: against a running server that
# preloads ttl (its worker on, ttl.naptime = 1), then against the same
# server without the preload.  The Makefile makes the scratch databases with
# ttl.worker_enabled off, adds the preload-only tests where the server
# preloads ttl and says which case it found; every test must pass in both.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $root = "$FindBin::Bin/../..";
# a server as a user has it: the preload and otherwise the defaults (the
# test cluster's log_statement = all would put LOG lines in the tests'
# output where they raise client_min_messages)
my $node = PostgreSQL::Test::Cluster->new('installcheck');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ttl'\nlog_statement = none\n");
$node->start;

# a copy of the sources of its own: installcheck writes results/ and
# output_iso/ where it runs, beside the other suites' jobs
my $src = PostgreSQL::Test::Utils::tempdir('installcheck_src');
for my $entry (qw(Makefile ttl.control sql expected test))
{
	system('cp', '-a', "$root/$entry", "$src/") == 0
	  or BAIL_OUT("copy of $entry failed");
}
system("cp -a $root/ttl--*.sql $src/") == 0 or BAIL_OUT('copy of the scripts failed');

my $pg_config = $node->config_data('--bindir') . '/pg_config';

sub installcheck
{
	my ($what, @vars) = @_;
	my ($out, $err) = ('', '');
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	local $ENV{PGDATABASE};
	delete $ENV{PGDATABASE};
	my $ok = IPC::Run::run(
		[ 'make', '-C', $src, "PG_CONFIG=$pg_config", @vars, 'installcheck' ],
		'>', \$out, '2>', \$err);
	ok($ok, "make installcheck passes on a server $what")
	  or diag("$out\n$err\n" . (-e "$src/regression.diffs" ? slurp_file("$src/regression.diffs") : ''));
	return $out;
}

my $out = installcheck('that preloads ttl');
like($out, qr/installcheck: the server preloads ttl/, 'it says the server preloads ttl');
like($out, qr/All \d+ tests passed/, 'the regression suite ran');
like($out, qr/isolation install-check/, 'the isolation suite ran');
like($out, qr/\brule10_floor_rows\b/, 'the preload-only tests ran');
# the worker stayed out of the scratch databases the whole time
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase"
		  . " WHERE d.datname IN ('contrib_regression', 'isolation_regression')"
		  . " AND 'ttl.worker_enabled=off' = ANY (s.setconfig)"),
	'2', 'both scratch databases keep the worker out');

$node->stop;
$node->append_conf('postgresql.conf', "shared_preload_libraries = ''");
$node->start;
# Without the preload, a few tests of each suite: every test runs without
# the preload in test/run-all's regress and isolation jobs already; what
# this case adds is the Makefile's choice of tests and databases on a
# running server, which a few show as well as all of them (the whole of
# both suites twice made this file the longest of the run).
$out = installcheck('without the preload',
	'REGRESS_ALL=rules validation purge rule10 retire',
	'ISOLATION_ALL=purge_vs_update rule10_race');
like($out, qr/installcheck: the server does not preload ttl/, 'it says the server does not preload ttl');
like($out, qr/All 5 tests passed/, 'the five regression tests named ran');
unlike($out, qr/\brule10_floor_rows\b/, 'no preload-only test ran');

$node->stop;
done_testing();
