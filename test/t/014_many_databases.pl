# No fixed caps in the scheduler (issue 29), at a size that fits CI.
#
# 1. Many databases: 40 without ttl and 20 tenants with a container of
#    expired items, made with CREATE DATABASE ... STRATEGY FILE_COPY, are
#    all tracked (ttl.databases lists each, the plain ones as without ttl)
#    and every tenant is purged.  The launcher's table is a dshash in
#    dynamic shared memory now: no count of databases makes it skip one.
#    (The old cap was 1024 databases; bench/many-databases runs 1,100.)
# 2. Concurrent database commands: 20 sessions (more than the old 16
#    places) run ALTER DATABASE ... RENAME on 20 tenant databases at once,
#    each held waiting on the database's lock by another session.  Every
#    one of them must hold its guard while it waits: the launcher starts no
#    worker in any of the 20 (their visits do not move) while it keeps
#    serving another tenant; then all 20 renames succeed.  Before the fix
#    the 17th and later ran unguarded: the launcher kept visiting those.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

# Clones of a template: the restore guard would hold their due items
# (TAP 071); this test is about the scheduler, guard off.
my $node = ttl_node('many', qq{
ttl.restore_guard_fraction = 0
ttl.max_workers = 2
max_connections = 60
});

$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl.enabled = off');
$node->reload;
$node->safe_psql('postgres', 'CREATE DATABASE tmpl');
$node->safe_psql('tmpl', q{
CREATE EXTENSION ttl;
CREATE TABLE d (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('d', 1);
INSERT INTO d SELECT g, jsonb_build_object('n', g) FROM generate_series(1, 20) g;
});
$node->safe_psql('postgres', 'ALTER DATABASE tmpl IS_TEMPLATE true');
my @plain = map { "plain$_" } 1 .. 40;
my @tenants = map { "t$_" } 1 .. 20;
$node->safe_psql('postgres',
	"CREATE DATABASE $_ TEMPLATE template0 STRATEGY FILE_COPY") for @plain;
$node->safe_psql('postgres',
	"CREATE DATABASE $_ TEMPLATE tmpl STRATEGY FILE_COPY") for (@tenants, 'other');

wait_seconds($node, 1.5);	# every item is due now
$node->safe_psql('postgres', 'ALTER SYSTEM SET ttl.enabled = on');
$node->reload;

# ---- 1. every tenant purged, every database tracked ----
for my $db (@tenants, 'other')
{
	ok($node->poll_query_until($db, 'SELECT count(*) = 0 FROM d'),
		"$db purged");
}
my $ndb = $node->safe_psql('postgres',
	'SELECT count(*) FROM pg_database WHERE datallowconn AND NOT datistemplate');
# (ttl's views live in a database with the extension: "other")
ok( $node->poll_query_until('other', qq{
SELECT count(*) = $ndb AND count(*) FILTER (WHERE has_ttl IS NULL) = 0
  FROM ttl.databases}),
	"ttl.databases tracks all $ndb databases, each visited");
is( $node->safe_psql('other',
		"SELECT count(*) FROM ttl.databases WHERE datname LIKE 'plain%' AND NOT has_ttl"),
	'40', 'the 40 plain databases are remembered as without ttl');

# ---- 2. 20 concurrent guarded database commands ----
my $in = '';
my ($hout, $herr) = ('', '');
my $holder = IPC::Run::start(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
	'<', \$in, '>', \$hout, '2>', \$herr);
$in .= "BEGIN;\n" . join('', map { "COMMENT ON DATABASE $_ IS 'held';\n" } @tenants);
$holder->pump while length $in;
ok( $node->poll_query_until('postgres', q{
SELECT count(*) = 20 FROM pg_locks
 WHERE locktype = 'object' AND classid = 'pg_database'::regclass
   AND mode = 'ShareUpdateExclusiveLock' AND granted}),
	'the holder has the 20 tenant databases locked');

my %oid = map {
	$_ => $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = '$_'")
} @tenants;
my @renames;
for my $db (@tenants)
{
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
		  '-c', "ALTER DATABASE $db RENAME TO ${db}_renamed" ],
		'>', \$out, '2>', \$err);
	push @renames, [ $db, $h, \$out, \$err ];
}
ok( $node->poll_query_until('postgres', q{
SELECT count(*) = 20 FROM pg_locks
 WHERE locktype = 'object' AND classid = 'pg_database'::regclass
   AND mode = 'AccessExclusiveLock' AND NOT granted}),
	'20 renames wait at once');

# while they wait, the launcher serves "other" again and again, and none
# of the 20
my $oids = join(',', values %oid);
my $before = $node->safe_psql('other',
	"SELECT sum(visits) FROM ttl.databases WHERE datid IN ($oids)");
my $other0 = $node->safe_psql('other',
	"SELECT visits FROM ttl.databases WHERE datname = 'other'");
ok( $node->poll_query_until('other', qq{
SELECT visits >= $other0 + 3 FROM ttl.databases WHERE datname = 'other'}),
	'the launcher keeps serving another tenant meanwhile');
is( $node->safe_psql('other',
		"SELECT sum(visits) FROM ttl.databases WHERE datid IN ($oids)"),
	$before, 'no worker started in any of the 20 guarded databases');
is( $node->safe_psql('postgres', qq{
SELECT count(*) FROM pg_stat_activity
 WHERE backend_type = 'ttl worker' AND datid IN ($oids)}),
	'0', 'no worker connected to any of them');

$in .= "COMMIT;\n";
$holder->finish;
is($holder->result(0), 0, 'the holder committed');
for my $r (@renames)
{
	my ($db, $h, $out, $err) = @$r;
	$h->finish;
	is($h->result(0), 0, "ALTER DATABASE $db RENAME succeeded")
	  or diag($$err);
}
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_database WHERE datname LIKE 't%\\_renamed'"),
	'20', 'all 20 renamed');

# the renamed tenants are served again
$node->safe_psql('t1_renamed',
	q{INSERT INTO d VALUES (1000, '{"ttl": 1}'); });
wait_seconds($node, 1.5);
ok($node->poll_query_until('t1_renamed', 'SELECT count(*) = 0 FROM d'),
	'a renamed tenant is purged again');

$node->stop;
done_testing();
