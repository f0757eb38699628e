# TTL deletes marked in the change stream (ttl.mark_purge_deletes, mark.c),
# read through a logical slot with test_decoding, exactly as the README
# documents it:
#  - off (the default): no message, no origin; a purge's deletes look like
#    an application's, also with only-local;
#  - on: the worker's and ttl.run_purge()'s own transactions carry ttl's
#    replication origin (only-local drops them) and a 'ttl' message per
#    batch naming the container and its row count; ttl.purge() runs in the
#    caller's transaction: a message per batch, no origin; what a procedure
#    runs around CALL ttl.run_purge() is not marked;
#  - only superusers may change the setting.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('mark', q{
wal_level = logical
max_replication_slots = 10
max_wal_senders = 10
ttl.batch_size = 2
});

# w: purged by the worker (items with "ttl": 1); p: by ttl.purge(); r: by
# CALL ttl.run_purge() (both with a long default, due only under a clock
# 2 hours ahead); m: the application's deletes (items that never expire)
$node->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE TABLE w (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE p (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE r (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE m (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('w', -1);
SELECT ttl.enable('p', 3600);
SELECT ttl.enable('r', 3600);
SELECT ttl.enable('m', 3600);
INSERT INTO m SELECT g, '{"ttl": -1}' FROM generate_series(1, 20) g;
CREATE ROLE plain LOGIN;
CREATE PROCEDURE app_around_run_purge(a int, b int) LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM m WHERE id = a;
	CALL ttl.run_purge();
	DELETE FROM m WHERE id = b;
END $$;
SELECT pg_create_logical_replication_slot('s', 'test_decoding');
});

my $later = $node->safe_psql('postgres', "SELECT (now() + interval '2 hours')::text");

# The slot's changes up to now, as test_decoding prints them: with
# only-local 0 and 1 over the same WAL, then consumed.  Each a list of
# transactions, each the list of its lines about m, p, r, w and messages.
sub decode
{
	# the purge's own transactions commit without waiting for a WAL flush:
	# up to where WAL is inserted (pg_current_wal_lsn() is where it is
	# written), once the WAL writer has flushed it, as any consumer of the
	# stream sees them
	my $lsn = $node->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
	my %out;
	$node->poll_query_until('postgres',
		"SELECT pg_current_wal_flush_lsn() >= '$lsn'::pg_lsn")
	  or die "WAL not flushed up to $lsn";
	for my $local (0, 1)
	{
		my $text = $node->safe_psql('postgres',
			"SELECT data FROM pg_logical_slot_peek_changes('s', '$lsn', NULL,"
			  . " 'skip-empty-xacts', '1', 'include-xids', '0', 'only-local', '$local')");
		my (@txns, $cur);
		for my $line (split /\n/, $text)
		{
			if ($line =~ /^BEGIN/) { $cur = []; }
			elsif ($line =~ /^COMMIT/) { push @txns, $cur if @$cur; undef $cur; }
			elsif ($cur && $line =~ /^(table public\.[mprw]:|message:)/)
			{
				push @$cur, $line;
			}
		}
		$out{$local} = \@txns;
	}
	$node->safe_psql('postgres',
		"SELECT count(*) FROM pg_logical_slot_get_changes('s', '$lsn', NULL)");
	return ($out{0}, $out{1});
}

sub lines_of
{
	my ($txns, $re) = @_;
	return scalar grep { /$re/ } map { @$_ } @$txns;
}

# the ttl messages of a transaction: [container, rows, by] each
sub messages
{
	my ($txn) = @_;
	my @m;
	for (@$txn)
	{
		next unless /^message:/;
		/transactional: 1 prefix: ttl, sz: \d+ content:\{"container": "([^"]+)", "rows": (\d+), "by": "(\w+)"\}$/
		  or die "unexpected message line: $_";
		push @m, [ $1, $2, $3 ];
	}
	return @m;
}

is($node->safe_psql('postgres', 'SHOW ttl.mark_purge_deletes'), 'off',
	'marking is off by default');

# ---- marking off ----
$node->safe_psql('postgres', q{
INSERT INTO w SELECT g, '{"ttl": 1}' FROM generate_series(1, 5) g;
INSERT INTO p SELECT g, '{}' FROM generate_series(1, 3) g;
DELETE FROM m WHERE id = 1;
});
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM w', '0'),
	'off: the worker purged w');
is( $node->safe_psql('postgres',
		"SET ttl.now_override = '$later'; SELECT ttl.purge('p')"),
	'3', 'off: ttl.purge() purged p');
my ($all, $local) = decode();
is(lines_of($all, qr/^table public\.w: DELETE/), 5, 'off: the 5 worker deletes are decoded');
is(lines_of($all, qr/^table public\.p: DELETE/), 3, 'off: the 3 ttl.purge() deletes are decoded');
is(lines_of($all, qr/^table public\.m: DELETE: id\[integer\]:1$/), 1,
	'off: the application delete is decoded');
is(lines_of($all, qr/^message:/), 0, 'off: no message');
is_deeply($local, $all, 'off: no origin, only-local drops nothing');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_replication_origin WHERE roname LIKE 'ttl%'"),
	'0', 'off: no replication origin created');

# ---- only superusers decide ----
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	'SET ROLE plain; SET ttl.mark_purge_deletes = on');
like($stderr, qr/permission denied to set parameter "ttl.mark_purge_deletes"/,
	'a plain role may not turn marking on');
($ret, $stdout, $stderr) = $node->psql('postgres',
	'SET ROLE plain; SET ttl.mark_purge_deletes = off');
like($stderr, qr/permission denied to set parameter "ttl.mark_purge_deletes"/,
	'nor off');

# ---- marking on ----
$node->safe_psql('postgres',
	'ALTER SYSTEM SET ttl.mark_purge_deletes = on; SELECT pg_reload_conf()');
$node->poll_query_until('postgres', 'SHOW ttl.mark_purge_deletes', 'on')
  or die 'reload not seen';
# a worker that started with marking on has taken the pool's first origin
# (one worker per database at a time: those after it mark too)
ok( $node->poll_query_until('postgres',
		"SELECT count(*) FROM pg_replication_origin WHERE roname = 'ttl_purge_0'", '1'),
	'on: the worker created the origin ttl_purge_0');

# the worker
$node->safe_psql('postgres', q{
INSERT INTO w SELECT g, '{"ttl": 1}' FROM generate_series(11, 15) g;
DELETE FROM m WHERE id = 2;
});
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM w', '0'),
	'on: the worker purged w');
($all, $local) = decode();
my @wtx = grep { grep { /^table public\.w: DELETE/ } @$_ } @$all;
is(lines_of(\@wtx, qr/^table public\.w: DELETE/), 5, 'on: the 5 worker deletes are decoded');
cmp_ok(scalar @wtx, '>=', 3, 'on: in batches of at most ttl.batch_size (2)');
my $ok = 1;
for my $t (@wtx)
{
	my @m = messages($t);
	my $dels = grep { /^table public\.w: DELETE/ } @$t;
	$ok = 0 unless @m == 1 && $m[0][0] eq 'public.w' && $m[0][1] == $dels
	  && $m[0][2] eq 'worker' && $t->[-1] =~ /^message:/;
	$ok = 0 if grep { /^table public\.m:/ } @$t;
}
ok($ok, 'on: each worker batch ends with one ttl message naming w, its rows, by worker')
  or diag explain $all;
is(lines_of($local, qr/^table public\.w: DELETE/), 0, 'on: only-local drops the worker deletes');
is(lines_of($local, qr/^message:/), 0, 'on: and their messages');
is(lines_of($local, qr/^table public\.m: DELETE: id\[integer\]:2$/), 1,
	'on: only-local keeps the application delete');

# ttl.purge(), in a transaction that also deletes for the application:
# a message per batch, no origin (the caller's transaction is not ttl's)
$node->safe_psql('postgres', q{
INSERT INTO p SELECT g, '{}' FROM generate_series(11, 15) g;
});
decode();
is( $node->safe_psql('postgres', qq{
BEGIN;
DELETE FROM m WHERE id = 3;
SET LOCAL ttl.now_override = '$later';
SELECT ttl.purge('p');
COMMIT;
}), '5', 'on: ttl.purge() purged p');
($all, $local) = decode();
is(scalar @$all, 1, 'on: ttl.purge() in one transaction, the caller\'s')
  or diag explain $all;
is_deeply([ messages($all->[0]) ], [ [ 'public.p', 5, 'purge' ] ],
	'on: ttl.purge(): one message for its batch, naming p and 5 rows, by purge');
is( join(',', map { /^(table public\.\w+: DELETE|message)/ ? $1 : () } @{ $all->[0] }),
	join(',', 'table public.m: DELETE', ('table public.p: DELETE') x 5, 'message'),
	'on: the message follows the deletes of its batch');
is_deeply($local, $all, 'on: ttl.purge() carries no origin: only-local keeps it all');

# CALL ttl.run_purge() inside a procedure that deletes before and after it
$node->safe_psql('postgres', q{
INSERT INTO r SELECT g, '{}' FROM generate_series(1, 5) g;
});
decode();
is( $node->safe_psql('postgres', qq{
SET ttl.now_override = '$later';
CALL app_around_run_purge(4, 5);
SELECT pg_replication_origin_session_is_setup();
SELECT count(*) FROM r;
}), "f\n0", 'on: run_purge purged r and let its origin go');
($all, $local) = decode();
my @rtx = grep { grep { /^table public\.r: DELETE/ } @$_ } @$all;
is(lines_of(\@rtx, qr/^table public\.r: DELETE/), 5, 'on: the 5 run_purge deletes are decoded');
cmp_ok(scalar @rtx, '>=', 3, 'on: in batches of at most ttl.batch_size');
$ok = 1;
for my $t (@rtx)
{
	my @m = messages($t);
	my $dels = grep { /^table public\.r: DELETE/ } @$t;
	$ok = 0 unless @m == 1 && $m[0][0] eq 'public.r' && $m[0][1] == $dels
	  && $m[0][2] eq 'run_purge';
	$ok = 0 if grep { /^table public\.m:/ } @$t;
}
ok($ok, 'on: each run_purge batch has one ttl message naming r and its rows, and no application change');
is(lines_of($local, qr/^table public\.r: DELETE/) + lines_of($local, qr/^message:/), 0,
	'on: only-local drops the run_purge transactions');
is(lines_of($local, qr/^table public\.m: DELETE: id\[integer\]:[45]$/), 2,
	'on: the application deletes before and after CALL ttl.run_purge() are not marked');

# an origin of the pool held elsewhere: a purger takes the next one.  A
# session holds ttl_purge_0 (retrying while a worker has it, bounded)...
my $holder = $node->background_psql('postgres');
$holder->query_safe(q{
DO $$
BEGIN
	FOR i IN 1 .. 600 LOOP
		BEGIN
			PERFORM pg_replication_origin_session_setup('ttl_purge_0');
			RETURN;
		EXCEPTION WHEN object_in_use THEN
			PERFORM pg_sleep(0.05);
		END;
	END LOOP;
	RAISE 'ttl_purge_0 stayed busy';
END $$;
});
# ...while ttl.run_purge() purges with another origin of the pool
$node->safe_psql('postgres', q{
INSERT INTO r SELECT g, '{}' FROM generate_series(11, 13) g;
});
decode();
is( $node->safe_psql('postgres', qq{
SET ttl.now_override = '$later';
CALL ttl.run_purge();
SELECT count(*) FROM r;
}), '0', 'on: ttl_purge_0 held by a session: run_purge still purges');
($all, $local) = decode();
is(lines_of($all, qr/^table public\.r: DELETE/), 3, 'on: its deletes are decoded');
my $rows = 0;
$rows += $_->[1] for grep { $_->[0] eq 'public.r' && $_->[2] eq 'run_purge' } map { messages($_) } @$all;
is($rows, 3, 'on: with their messages, 3 rows in all');
is(lines_of($local, qr/^table public\.r: DELETE/), 0,
	'on: under another origin of the pool, dropped by only-local');
cmp_ok($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_replication_origin WHERE roname LIKE 'ttl_purge_%'"),
	'>=', 2, 'on: the pool grew by one');
$holder->quit;

# ttl.run_purge() cancelled after it took its origin (a DELETE trigger
# cancels the batch): the abort lets the origin go; what the session does
# next is not marked
$node->safe_psql('postgres', q{
CREATE TABLE x (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('x', 3600);
CREATE FUNCTION cancel_me() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_cancel_backend(pg_backend_pid());
	PERFORM pg_sleep(5);
	RETURN OLD;
END $$;
CREATE TRIGGER x_cancel BEFORE DELETE ON x FOR EACH ROW EXECUTE FUNCTION cancel_me();
INSERT INTO x VALUES (1, '{}');
});
decode();
($ret, $stdout, $stderr) = $node->psql('postgres', qq{
SET ttl.now_override = '$later';
CALL ttl.run_purge();
SELECT pg_replication_origin_session_is_setup();
DELETE FROM m WHERE id = 6;
}, on_error_stop => 0);
like($stderr, qr/canceling statement due to user request/, 'on: run_purge cancelled');
is($stdout, 'f', 'on: its origin is let go at the abort');
($all, $local) = decode();
is(lines_of($local, qr/^table public\.m: DELETE: id\[integer\]:6$/), 1,
	'on: the session\'s next delete is not marked');
is(lines_of($all, qr/^table public\.x:/) + lines_of($all, qr/^message:/), 0,
	'on: nothing of the cancelled batch is decoded');
$node->safe_psql('postgres', 'DROP TABLE x CASCADE');

# pgoutput: a subscription with origin = none (16+) does not receive the
# worker's purge, and does receive the application's deletes; on 15 a
# subscription has no origin option and receives both
my $v16 = $node->pg_version >= 16;
my $sub = PostgreSQL::Test::Cluster->new('sub');
$sub->init;
$sub->start;
$node->safe_psql('postgres', 'CREATE PUBLICATION pub FOR TABLE w, m');
$sub->safe_psql('postgres', q{
CREATE TABLE w (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE m (id int PRIMARY KEY, doc jsonb NOT NULL);
});
my $connstr = $node->connstr . ' dbname=postgres';
$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION sub CONNECTION '$connstr' PUBLICATION pub"
	  . ($v16 ? ' WITH (origin = none)' : ''));
$sub->wait_for_subscription_sync($node, 'sub');
$node->safe_psql('postgres', q{
INSERT INTO w SELECT g, '{"ttl": 1}' FROM generate_series(21, 25) g;
DELETE FROM m WHERE id = 7;
});
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM w', '0'),
	'on: the worker purged w on the publisher');
# the worker's purge commits asynchronously: its commit record may not be
# written yet (pg_current_wal_lsn(), wait_for_catchup's default target, is
# the write position), so wait for the subscriber to replay up to where WAL
# is inserted (the walsender sends it once the WAL writer has flushed it)
$node->wait_for_catchup('sub', 'replay',
	$node->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()'));
is($sub->safe_psql('postgres', 'SELECT count(*) FROM w'), $v16 ? '5' : '0',
	$v16
	? 'pgoutput, origin = none: the purged items stay on the subscriber'
	: 'pgoutput on 15 (no origin option): the purge reaches the subscriber');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM m WHERE id = 7'), '0',
	'pgoutput: the application delete reaches the subscriber');
$sub->stop;
decode();

# the origins are the pool's, none held by a session now
is( $node->safe_psql('postgres',
		"SELECT count(*) > 0 AND bool_and(roname ~ '^ttl_purge_[0-9]+\$')"
		  . " FROM pg_replication_origin"),
	't', 'only ttl_purge_<n> origins exist');

ok(!$node->log_contains('terminated by signal|PANIC|TRAP:'),
	'no crash in the server log');
$node->stop;
done_testing();
