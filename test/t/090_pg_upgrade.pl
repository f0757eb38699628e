# pg_upgrade across majors with ttl installed and preloaded: an old
# cluster (the installation in TTL_UPGRADE_OLD_INSTALL, its bin/ and lib/,
# with ttl installed; test/run-all builds one of PostgreSQL 15 for the
# majors above it) holding containers with purge state (rows purged and
# archived, statistics), an archive, a legal hold with its floors, a paused
# container and one with rule 10 off is upgraded with pg_upgrade to the
# installation under test.  The registry, the holds and the statistics come
# through unchanged (pg_upgrade keeps the tables' OIDs and moves ttl's own
# tables as files), and then the purge and rule 10's replacement work as
# before.  All times come from ttl.now_override in the future, and
# ttl.enabled is off until the end (the launcher preloaded on both sides,
# no worker), so that the purge state compared is the test's own; then the
# workers are turned on in the upgraded cluster and visit its database.
#
# Debian's 15.20 (and 17.12) keep a reserved attribute option pg_attver on
# every column, which a new pg_dump --binary-upgrade copies and a server
# that does not know it (16.14, 18.6) refuses ("unrecognized parameter"), so
# pg_upgrade from 15.20 to those fails for any table, with ttl or without.
# Both sides are probed for it first; where the old side has it and the new
# refuses it, the option is removed from the old cluster's user columns
# (pg_attribute.attoptions, as a superuser, after the last DDL and before
# the old server stops), as a user upgrading such a cluster must: the
# option carries nothing pg_upgrade or ttl needs (RESET cannot remove it;
# docs/install.md says so).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Path qw(make_path);

my $old_install = $ENV{TTL_UPGRADE_OLD_INSTALL};
if (!$old_install || !-x "$old_install/bin/pg_ctl")
{
	plan skip_all => 'no older PostgreSQL installation with ttl '
	  . '(TTL_UPGRADE_OLD_INSTALL unset: test/run-all sets it on the majors above 15)';
}

# jit off: test/run-all leaves the old installation's llvmjit.so without
# its LLVM where the old major's own suite is not the system's.
my $conf = qq{
shared_preload_libraries = 'ttl'
ttl.naptime = 1
ttl.enabled = off
jit = off
};

# Checksums on both sides: 18 enables them by default, older majors do not,
# and pg_upgrade needs the same on both.
my $old = PostgreSQL::Test::Cluster->new('old', install_path => $old_install);
$old->init(extra => ['--data-checksums']);
$old->append_conf('postgresql.conf', $conf);
$old->start;
my $old_version = $old->pg_version;

my $new = PostgreSQL::Test::Cluster->new('new');
$new->init(extra => ['--data-checksums']);
$new->append_conf('postgresql.conf', $conf);
my $new_version = $new->pg_version;

# The pg_attver probe (see above): on a temporary table, so that the new
# cluster stays empty for pg_upgrade.
my $old_attver = $old->safe_psql('postgres', q{
    SELECT count(*) FROM pg_attribute
     WHERE array_to_string(attoptions, ',') LIKE 'pg_attver=%'
        OR array_to_string(attoptions, ',') LIKE '%,pg_attver=%'});
$new->start;
my ($probe_ret, $probe_out, $probe_err) = $new->psql('postgres', q{
    CREATE TEMP TABLE probe (a int);
    ALTER TABLE probe ALTER COLUMN a SET (pg_attver = 1)});
$new->stop;
my $scrub_attver = $old_attver ne '0' && $probe_err =~ /unrecognized parameter "pg_attver"/;
note("pg_attver: $old_attver columns of the old cluster have it, the new refuses it:"
	  . " removed before the upgrade") if $scrub_attver;

$old->safe_psql('postgres', 'CREATE DATABASE app');
$old->safe_psql('app', q{
    SET ttl.now_override = '2030-01-01 00:00:00+00';
    CREATE EXTENSION ttl;
    CREATE SCHEMA "Case Files";
    CREATE TABLE "Case Files".docs (id int PRIMARY KEY, doc jsonb NOT NULL);
    CREATE TABLE "Case Files".docs_arch (id int, doc jsonb NOT NULL,
                                         archived_at timestamptz DEFAULT now());
    SELECT ttl.enable('"Case Files".docs', 60);
    SELECT ttl.set_archive('"Case Files".docs', '"Case Files".docs_arch');
    INSERT INTO "Case Files".docs
    SELECT g, jsonb_build_object('case', CASE WHEN g <= 3 THEN 'X' ELSE 'Y' END)
      FROM generate_series(1, 10) g;
    SELECT ttl.set_legal_hold('"Case Files".docs', 'case X', '{"case": "X"}');
    CREATE TABLE public.cache (k int PRIMARY KEY, body jsonb);
    SELECT ttl.enable('public.cache', 60, 'body');
    INSERT INTO public.cache SELECT g, '{}' FROM generate_series(1, 4) g;
    SELECT ttl.pause('public.cache');
    CREATE TABLE public.events (id int PRIMARY KEY, doc jsonb NOT NULL);
    SELECT ttl.enable('public.events', 60);
    SELECT ttl.set_replace_expired('public.events', false);
    INSERT INTO public.events VALUES (1, '{}');
    -- purge state: 7 rows purged and archived, 3 held, floors past them
    -- (kept by a batch that walks in key order: with max_rows)
    SET ttl.now_override = '2030-01-01 01:00:00+00';
    SELECT ttl.purge('"Case Files".docs', 100);
});
is($old->safe_psql('app', 'SELECT count(*) FROM "Case Files".docs_arch'), '7',
	'old cluster: the purge archived the 7 unheld items');

my $registry = q{SELECT container, doc_column, default_ttl, live_view, paused,
                        replace_expired, archive FROM ttl.containers ORDER BY container::text};
my $holds = q{SELECT container, name, match, held_expired FROM ttl.legal_holds};
my $stats = q{SELECT container, rows_purged FROM ttl.stats ORDER BY container::text};
my $floors = 'SELECT count(*) FROM ttl.legal_hold_floor';
my %before = map { $_ => $old->safe_psql('app', "SET ttl.now_override = '2030-01-01 01:00:00+00'; $_") }
  ($registry, $holds, $stats, $floors);
is($before{$floors}, '2', 'old cluster: floors past the held rows (one per key range)');
my $extversion = $old->safe_psql('app', q{SELECT extversion FROM pg_extension WHERE extname = 'ttl'});
if ($scrub_attver)
{
	# user columns only (FirstNormalObjectId), in every database that
	# pg_upgrade dumps; an emptied list becomes NULL, as if never set
	for my $db (split /\n/, $old->safe_psql('postgres',
			q{SELECT datname FROM pg_database WHERE datallowconn}))
	{
		$old->safe_psql($db, q{
			UPDATE pg_catalog.pg_attribute
			   SET attoptions = NULLIF(ARRAY(SELECT o FROM unnest(attoptions) o
			                                  WHERE o NOT LIKE 'pg\_attver=%'), '{}')
			 WHERE attrelid >= 16384
			   AND EXISTS (SELECT FROM unnest(attoptions) o WHERE o LIKE 'pg\_attver=%')});
	}
	is($old->safe_psql('app', q{SELECT count(*) FROM pg_catalog.pg_attribute
	                             WHERE attrelid >= 16384
	                               AND array_to_string(attoptions, ',') LIKE '%pg\_attver=%'}),
		'0', 'old cluster: no user column keeps pg_attver');
}
$old->stop;

# pg_upgrade writes its logs into its working directory (and from 15 on
# into the new data directory); the old binaries find their libraries in
# the old installation's lib/ (test/run-all puts there the ones the system
# under test lacks).
my $cwd = PostgreSQL::Test::Utils::tempdir;
{
	local $ENV{LD_LIBRARY_PATH} =
	  "$old_install/lib" . ($ENV{LD_LIBRARY_PATH} ? ":$ENV{LD_LIBRARY_PATH}" : '');
	my @cmd = (
		'pg_upgrade', '--no-sync',
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-b', "$old_install/bin", '-B', $new->config_data('--bindir'),
		'-s', $new->host, '-p', $old->port, '-P', $new->port, '--copy');
	my $ok = run_log([ 'sh', '-c', 'cd "$1" && shift && exec "$@"', 'sh', $cwd, @cmd ]);
	ok($ok, "pg_upgrade from $old_version to $new_version with ttl installed");
	if (!$ok)
	{
		# the reason is in pg_upgrade's own logs
		system("cat $cwd/*.txt $cwd/*.log " . $new->data_dir
			  . "/pg_upgrade_output.d/*/*.txt " . $new->data_dir
			  . "/pg_upgrade_output.d/*/log/*.log 2>/dev/null | tail -n 80 1>&2");
	}
}
$new->start;

is($new->safe_psql('app', q{SELECT extversion FROM pg_extension WHERE extname = 'ttl'}),
	$extversion, 'the extension keeps its version');
for my $q ($registry, $holds, $stats, $floors)
{
	is($new->safe_psql('app', "SET ttl.now_override = '2030-01-01 01:00:00+00'; $q"),
		$before{$q}, "unchanged by the upgrade: " . (split /\n/, $q)[0]);
}
is($new->safe_psql('app', q{SELECT string_agg(id::text, ',' ORDER BY id) FROM "Case Files".docs}),
	'1,2,3', 'the held items are still there');

# The purge goes on: new items expire and go to the archive, held ones stay.
is($new->safe_psql('app', q{
    SET ttl.now_override = '2030-01-01 02:00:00+00';
    INSERT INTO "Case Files".docs VALUES (11, '{"case": "Y"}'), (12, '{"case": "X"}');
    SET ttl.now_override = '2030-01-01 03:00:00+00';
    SELECT ttl.purge('"Case Files".docs')}), '1',
	'after the upgrade the purge removes the new expired unheld item');
is($new->safe_psql('app', q{SELECT string_agg(id::text, ',' ORDER BY id) FROM "Case Files".docs}),
	'1,2,3,12', 'and keeps every held one');
is($new->safe_psql('app', 'SELECT count(*), max(id) FROM "Case Files".docs_arch'), '8|11',
	'the purged item is archived next to the ones archived before the upgrade');
is($new->safe_psql('app', q{SELECT rows_purged FROM ttl.stats WHERE container = '"Case Files".docs'::regclass}),
	'8', 'the statistics go on from the old count');
is($new->safe_psql('app', q{
    SET ttl.now_override = '2030-01-01 03:00:00+00';
    SELECT ttl.purge('public.cache')}), '4', 'a paused container is purged when named');

# Rule 10: a write replaces an expired item that holds its key ...
is($new->safe_psql('app', q{
    SET ttl.now_override = '2030-01-01 03:00:00+00';
    INSERT INTO "Case Files".docs VALUES (20, '{"v": 1}');
    SET ttl.now_override = '2030-01-01 04:00:00+00';
    INSERT INTO "Case Files".docs VALUES (20, '{"v": 2}');
    SELECT doc->>'v' FROM "Case Files".docs WHERE id = 20}), '2',
	'rule 10 replaces an expired item after the upgrade');
# ... but not where it was turned off before the upgrade.
my ($ret, $out, $err) = $new->psql('app', q{
    SET ttl.now_override = '2030-01-01 04:00:00+00';
    INSERT INTO public.events VALUES (1, '{}')});
isnt($ret, 0, 'rule 10 stays off where it was off');
like($err, qr/duplicate key value violates unique constraint/, 'the write conflicts');

# A hold released after the upgrade lets the purge take the held items.
$new->safe_psql('app', q{SELECT ttl.release_legal_hold('"Case Files".docs', 'case X')});
is($new->safe_psql('app', q{
    SET ttl.now_override = '2030-01-01 05:00:00+00';
    SELECT ttl.purge('"Case Files".docs')}), '5',
	'the released hold lets the purge take its items (and the replaced one)');

# The workers, turned on, visit the upgraded database.
$new->safe_psql('postgres', 'ALTER SYSTEM SET ttl.enabled = on; SELECT pg_reload_conf()');
ok($new->poll_query_until('app',
		q{SELECT visits > 0 FROM ttl.databases WHERE datname = 'app'}),
	'a purge worker visits the upgraded database');

$new->stop;
done_testing();
