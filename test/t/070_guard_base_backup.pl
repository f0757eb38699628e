# The restore guard after a start from a base backup: a copy of a cluster
# whose big container is all due is not mass-purged (the hold shows in
# ttl.stats and the log, the items stay hidden), a small backlog in the
# same database is purged as usual, and ttl.resume() releases the hold.
# The same for a start with recovery.signal (point-in-time recovery) and
# no backup_label.  A plain restart of the original, and a restart after a
# crash of the copy once its recovery is over (a new postmaster after an
# immediate stop, and a crash restart within the same postmaster), purge a
# full backlog without any hold.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $conf = qq{
shared_preload_libraries = 'ttl'
ttl.naptime = 1
ttl.enabled = off
};

my $primary = PostgreSQL::Test::Cluster->new('guard_primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', $conf);
$primary->start;

# big: 200 items all due (written two days ago); small: 5 of 100 due
$primary->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE TABLE big (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('big', 3600);
CREATE TABLE small (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('small', 3600);
SELECT set_config('ttl.now_override', (now() - interval '2 days')::text, false);
INSERT INTO big SELECT g, '{}' FROM generate_series(1, 200) g;
INSERT INTO small SELECT g, '{}' FROM generate_series(1, 5) g;
RESET ttl.now_override;
INSERT INTO small SELECT g, '{}' FROM generate_series(6, 100) g;
});
$primary->backup('bk');

my $held = q{SELECT held_since IS NOT NULL FROM ttl.stats WHERE container = 'big'::regclass};

# wait until the worker has served the database $n more times
sub rounds
{
	my ($node, $n) = @_;
	my $v = $node->safe_psql('postgres',
		"SELECT coalesce(max(visits), 0) FROM ttl.databases WHERE datname = 'postgres'");
	$node->poll_query_until('postgres',
		"SELECT visits >= $v + $n FROM ttl.databases WHERE datname = 'postgres'")
	  or die "the worker did not serve the database $n more times";
	return;
}

# ---- a copy started from the base backup (backup_label) ----
my $copy = PostgreSQL::Test::Cluster->new('guard_copy');
$copy->init_from_backup($primary, 'bk');
$copy->append_conf('postgresql.conf', qq{
ttl.enabled = on
restart_after_crash = on
});
ok(-f $copy->data_dir . '/backup_label', 'the copy starts with backup_label');
$copy->start;

ok($copy->poll_query_until('postgres', $held), 'the big container is held');
ok($copy->poll_query_until('postgres', 'SELECT count(*) FROM small', '95'),
	'the small backlog (5%) is purged as usual');
like($copy->safe_psql('postgres',
		q{SELECT hold_reason FROM ttl.stats WHERE container = 'big'::regclass}),
	qr/^the server started from a base backup \(backup_label\)$/, 'hold_reason says why');
is($copy->safe_psql('postgres',
		q{SELECT held_since IS NULL FROM ttl.stats WHERE container = 'small'::regclass}),
	't', 'the small container is not held');
rounds($copy, 2);
is($copy->safe_psql('postgres', 'SELECT count(*) FROM big'), '200',
	'rounds later, the held container still has every row');
is($copy->safe_psql('postgres', 'SELECT count(*) FROM big_live'), '0',
	'its expired items stay hidden');
my $log = slurp_file($copy->logfile);
like($log, qr/ttl restore guard: the server started from a base backup/, 'the start is logged');
like($log, qr/automatic purge of container "public\.big" held/, 'the hold is logged');
like($log, qr/At least 41 of about 200 rows are due, more than ttl\.restore_guard_fraction \(0\.2\)/,
	'with the due estimate (the walk stops past the fraction), the rows and the setting');
is(scalar(() = $log =~ /automatic purge of container "public\.big" held/g), 1,
	'logged once per hold');

$copy->safe_psql('postgres', q{SELECT ttl.resume('big')});
ok($copy->poll_query_until('postgres', 'SELECT count(*) FROM big', '0'),
	'after ttl.resume the worker purges it');
ok(!-f $copy->data_dir . '/backup_label', 'the startup process renamed backup_label');

# a crash restart of the copy: recovery is over, nothing holds a new backlog
$copy->safe_psql('postgres', q{
SELECT set_config('ttl.now_override', (now() - interval '2 days')::text, false);
INSERT INTO big SELECT g, '{}' FROM generate_series(1, 200) g;
});
$copy->stop('immediate');
$copy->start;
ok($copy->poll_query_until('postgres', 'SELECT count(*) FROM big', '0'),
	'after a crash restart a full backlog is purged');
is($copy->safe_psql('postgres', $held), 'f', 'and not held');

# a crash restart within the same postmaster (a child killed: shared memory
# is made anew), with purge off meanwhile so that the first round after it
# is the one that meets the backlog
$copy->safe_psql('postgres', 'ALTER SYSTEM SET ttl.enabled = off; SELECT pg_reload_conf()');
$copy->poll_query_until('postgres', 'SHOW ttl.enabled', 'off') or die 'reload not seen';
$copy->safe_psql('postgres', q{
SELECT set_config('ttl.now_override', (now() - interval '2 days')::text, false);
INSERT INTO big SELECT g, '{}' FROM generate_series(1, 200) g;
});
my $launcher = $copy->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'ttl launcher'");
kill 'KILL', $launcher;
$copy->poll_query_until('postgres', 'SELECT 1', '1') or die 'no restart';
like(slurp_file($copy->logfile), qr/all server processes terminated; reinitializing/,
	'the postmaster reinitialized after the crash');
$copy->safe_psql('postgres', 'ALTER SYSTEM SET ttl.enabled = on; SELECT pg_reload_conf()');
ok($copy->poll_query_until('postgres', 'SELECT count(*) FROM big', '0'),
	'after a crash restart in the same postmaster a full backlog is purged');
is($copy->safe_psql('postgres', $held), 'f', 'and not held');
is(scalar(() = slurp_file($copy->logfile) =~ /ttl restore guard: the server started/g), 1,
	'the start from the backup was seen once only');
$copy->stop;

# ---- a copy started for point-in-time recovery (recovery.signal only) ----
my $pitr = PostgreSQL::Test::Cluster->new('guard_pitr');
$pitr->init_from_backup($primary, 'bk');
# a first start consumes backup_label (ttl.enabled is still off: no round)
$pitr->start;
$pitr->stop;
ok(!-f $pitr->data_dir . '/backup_label', 'backup_label consumed');
$pitr->append_conf('postgresql.conf', qq{
ttl.enabled = on
restore_command = 'false'
});
$pitr->set_recovery_mode;
$pitr->start;
ok($pitr->poll_query_until('postgres', $held), 'recovery.signal: the big container is held');
like($pitr->safe_psql('postgres',
		q{SELECT hold_reason FROM ttl.stats WHERE container = 'big'::regclass}),
	qr/point-in-time recovery \(recovery\.signal\)/, 'hold_reason says why');
ok($pitr->poll_query_until('postgres', 'SELECT count(*) FROM small', '95'),
	'the small backlog is purged');
rounds($pitr, 2);
is($pitr->safe_psql('postgres', 'SELECT count(*) FROM big'), '200', 'the held one is not');
$pitr->safe_psql('postgres', q{SELECT ttl.resume('big')});
ok($pitr->poll_query_until('postgres', 'SELECT count(*) FROM big', '0'),
	'after ttl.resume the worker purges it');
$pitr->stop;

# ---- a plain restart of the original: a full backlog is purged, no hold ----
$primary->append_conf('postgresql.conf', 'ttl.enabled = on');
$primary->restart;
ok($primary->poll_query_until('postgres', 'SELECT count(*) FROM big', '0'),
	'plain restart: the full backlog is purged');
ok($primary->poll_query_until('postgres', 'SELECT count(*) FROM small', '95'),
	'and the small one');
is($primary->safe_psql('postgres', $held), 'f', 'nothing held');
unlike(slurp_file($primary->logfile), qr/ttl restore guard/, 'no guard message at all');
$primary->stop;

done_testing();
