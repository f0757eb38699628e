# Archives and legal holds on Citus (issues 31, 32): not supported yet, and
# refused so that no shard is ever purged without its archive or past a
# hold.  ttl.set_archive refuses a distributed container, and a Citus table
# as the archive (0A000, nothing changed); a container with an archive
# cannot be distributed (0A000).  ttl.set_legal_hold refuses a distributed
# container (0A000, no hold written); a container with legal holds cannot
# be distributed (0A000).
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
$coord->safe_psql('postgres', q{
CREATE TABLE d (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT create_distributed_table('d', 'id');
SELECT ttl.enable('d', 3600);
CREATE TABLE d_arch (id text, doc jsonb NOT NULL);
SELECT create_distributed_table('d_arch', 'id', colocate_with => 'd');
CREATE TABLE local (id text PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('local', 3600);
CREATE TABLE local_arch (id text, doc jsonb NOT NULL);
});

my ($rc, $out, $err) = $coord->psql('postgres', q{SELECT ttl.set_archive('d', 'd_arch')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  0A000: container public.d or archive public.d_arch is a Citus table/,
	'a distributed container, even with a colocated distributed archive: 0A000');
($rc, $out, $err) = $coord->psql('postgres', q{SELECT ttl.set_archive('local', 'd_arch')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  0A000: container public.local or archive public.d_arch is a Citus table/,
	'a distributed table as the archive of a local container: 0A000');
is($coord->safe_psql('postgres', q{SELECT count(*) FROM ttl.containers WHERE archive IS NOT NULL}),
	'0', 'nothing changed');

$coord->safe_psql('postgres', q{SELECT ttl.set_archive('local', 'local_arch')});
($rc, $out, $err) = $coord->psql('postgres', q{SELECT create_distributed_table('local', 'id')});
like($err, qr/ERROR:  container "local" is a Citus distributed table and cannot have an archive/,
	'a container with an archive cannot be distributed');
is( $coord->safe_psql('postgres',
		q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'local'::regclass}),
	'0', 'it stays local');

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
