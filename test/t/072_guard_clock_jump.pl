# The restore guard after a clock jump: the worker compares how far the
# wall clock (ttl's: ttl.now_override in postgresql.conf moves it for this
# test) moved between two rounds with the monotonic clock.  A jump of 30
# days makes every item of the big container due at once: it is held (the
# reason in ttl.stats and the log); the small container, whose items
# mostly never expire, is purged.  Setting ttl.restore_guard_fraction to 0
# turns the guard off and releases the hold.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('guard_clock');
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE TABLE big (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('big', 86400);
CREATE TABLE small (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('small', 86400);
INSERT INTO big SELECT g, '{}' FROM generate_series(1, 200) g;
INSERT INTO small SELECT g, '{}' FROM generate_series(1, 5) g;
INSERT INTO small SELECT g, '{"ttl": -1}' FROM generate_series(6, 100) g;
CREATE TABLE mid (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('mid', 86400);
INSERT INTO mid SELECT g, '{}' FROM generate_series(1, 30) g;
INSERT INTO mid SELECT g, '{"ttl": -1}' FROM generate_series(31, 100) g;
});

sub rounds
{
	my ($n) = @_;
	my $v = $node->safe_psql('postgres',
		"SELECT coalesce(max(visits), 0) FROM ttl.databases WHERE datname = 'postgres'");
	$node->poll_query_until('postgres',
		"SELECT visits >= $v + $n FROM ttl.databases WHERE datname = 'postgres'")
	  or die "no $n more rounds";
	return;
}

# rounds on the real clock: nothing due, nothing held
rounds(2);
is($node->safe_psql('postgres', 'SELECT count(*) FROM ttl.stats WHERE held_since IS NOT NULL'),
	'0', 'no hold before the jump');

# the clock jumps 30 days ahead
my $later = $node->safe_psql('postgres', q{SELECT (now() + interval '30 days')::text});
$node->append_conf('postgresql.conf', "ttl.now_override = '$later'");
$node->reload;

my $held = q{SELECT held_since IS NOT NULL FROM ttl.stats WHERE container = 'big'::regclass};
ok($node->poll_query_until('postgres', $held), 'after the jump the big container is held');
like($node->safe_psql('postgres',
		q{SELECT hold_reason FROM ttl.stats WHERE container = 'big'::regclass}),
	qr/^the wall clock jumped \d+ s ahead between two purge rounds$/, 'hold_reason');
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM small', '95'),
	'the small container (5% due) is purged');
rounds(2);
is($node->safe_psql('postgres', 'SELECT count(*) FROM big'), '200', 'the held one is not');
is($node->safe_psql('postgres', 'SELECT count(*) FROM big_live'), '0', 'its items are hidden');
my $log = slurp_file($node->logfile);
like($log, qr/ttl restore guard: the wall clock jumped (\d+) s ahead/, 'the jump is logged');
$log =~ /the wall clock jumped (\d+) s ahead/;
cmp_ok(abs($1 - 30 * 86400), '<', 600, 'by about 30 days');
like($log, qr/automatic purge of container "public\.big" held/, 'the hold is logged');

ok($node->poll_query_until('postgres',
		q{SELECT held_since IS NOT NULL FROM ttl.stats WHERE container = 'mid'::regclass}),
	'the mid container (30% due) is held too');
is($node->safe_psql('postgres', 'SELECT count(*) FROM mid'), '100', 'and not purged');

# a higher fraction: each held container is checked again, once
$node->append_conf('postgresql.conf', 'ttl.restore_guard_fraction = 0.5');
$node->reload;
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM mid', '70'),
	'ttl.restore_guard_fraction = 0.5 releases the 30% one, which is purged');
rounds(2);
is($node->safe_psql('postgres', $held), 't', 'the 100% one stays held');
is($node->safe_psql('postgres', 'SELECT count(*) FROM big'), '200', 'and unpurged');
like(slurp_file($node->logfile),
	qr/hold of container "public\.mid" released: ttl\.restore_guard_fraction is now 0\.5/,
	'the release is logged');

# the setting allows it: the guard off releases the hold
$node->append_conf('postgresql.conf', 'ttl.restore_guard_fraction = 0');
$node->reload;
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM big', '0'),
	'with ttl.restore_guard_fraction = 0 the worker purges it');
is($node->safe_psql('postgres', $held), 'f', 'and the hold is released');
like(slurp_file($node->logfile), qr/hold of container "public\.big" released: ttl\.restore_guard_fraction is 0/,
	'the release is logged');

$node->stop;
done_testing();
