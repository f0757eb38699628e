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
#  - only superusers may change the setting;
#  - one rule for every purge delete: on every path (worker, run_purge,
#    ttl.purge), the direct and the statement path, every purge index mode
#    (btree, BRIN, none, deadline, the two partial indexes of 1.0-1.2) and
#    partitions, each batch's deletes are followed by one message counting
#    them; the origin (read from the commit, track_commit_timestamp) is on
#    the worker's and run_purge's transactions, including what the owner's
#    DELETE triggers write there, and never on ttl.purge()'s.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('mark', q{
wal_level = logical
max_replication_slots = 10
max_wal_senders = 10
track_commit_timestamp = on
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
# (a round skips a container the worker's visit holds at that moment: seen
# on a loaded machine, r untouched; the call is repeated until r is empty,
# at most 60 times; the application's deletes of m are then no-ops)
my $around;
for my $try (1 .. 60)
{
	$around = $node->safe_psql('postgres', qq{
SET ttl.now_override = '$later';
CALL app_around_run_purge(4, 5);
SELECT pg_replication_origin_session_is_setup();
SELECT count(*) FROM r;
});
	last if $around =~ /\n0$/;
	note("run_purge left r to the worker's visit (try $try): again");
	usleep(200_000);
}
is($around, "f\n0", 'on: run_purge purged r and let its origin go');
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
# ttl.run_purge() passes over a container another purger or DDL holds: the
# worker (ttl.naptime = 1) may be in x at any moment, so the call is tried
# again, bounded, until its batch of x ran; a session holding x first
# makes the first try pass over it every time.  The session's next
# statements run only after the cancel.
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE x IN SHARE MODE;');
my $tries = 0;
while ($tries++ < 20)
{
	($ret, $stdout, $stderr) = $node->psql('postgres', qq{
SET lock_timeout = '10s';
SET ttl.now_override = '$later';
CALL ttl.run_purge();
SELECT :'LAST_ERROR_SQLSTATE' = '57014' AS cancelled \\gset
\\if :cancelled
SELECT pg_replication_origin_session_is_setup();
DELETE FROM m WHERE id = 6;
\\endif
}, on_error_stop => 0);
	last if $stderr =~ /canceling statement due to user request/;
	if (defined $locker)
	{
		$locker->quit;
		undef $locker;
	}
}
cmp_ok($tries, '>', 1, 'on: run_purge passed over x while another session held it');
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

# ---- one rule for every purge delete (issue 25, item 4) ----
# Every path (the worker, CALL ttl.run_purge(), ttl.purge() in the caller's
# transaction), on the direct path and the statement path, in every purge
# index mode (the 1.3 btree, BRIN, none, the deadline index, the two
# partial indexes of 1.0-1.2) and on partitioned tables: each batch's
# deletes are followed, in their transaction, by one ttl message counting
# exactly them.  The worker's and run_purge's transactions carry ttl's
# origin, and so does everything the owner's triggers do in them (an audit
# INSERT); ttl.purge()'s, the caller's, carry none.  The origin of a
# transaction is read from its commit (track_commit_timestamp,
# pg_xact_commit_timestamp_origin), what a consumer filtering on origins
# drops from test_decoding's only-local.
$node->safe_psql('postgres', q{
CREATE ROLE app;
CREATE SCHEMA mx AUTHORIZATION app;
SET ROLE app;
CREATE TABLE mx.audit (n bigserial PRIMARY KEY, tab text, id int);
CREATE FUNCTION mx.audit_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO mx.audit (tab, id) VALUES (TG_TABLE_NAME, OLD.id);
	RETURN OLD;
END $$;
CREATE TABLE mx.dir (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE mx.stm (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TRIGGER stm_audit AFTER DELETE ON mx.stm FOR EACH ROW EXECUTE FUNCTION mx.audit_delete();
CREATE TABLE mx.brn (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE mx.nix (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE mx.dln (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE mx.pt (id int PRIMARY KEY, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE mx.pt_a PARTITION OF mx.pt FOR VALUES FROM (0) TO (1000);
CREATE TABLE mx.pt_b PARTITION OF mx.pt FOR VALUES FROM (1000) TO (2000);
CREATE TABLE mx.pts (id int PRIMARY KEY, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE mx.pts_a PARTITION OF mx.pts FOR VALUES FROM (0) TO (1000);
CREATE TABLE mx.pts_b PARTITION OF mx.pts FOR VALUES FROM (1000) TO (2000);
CREATE TRIGGER pts_audit AFTER DELETE ON mx.pts FOR EACH ROW EXECUTE FUNCTION mx.audit_delete();
SELECT ttl.enable(t, 3600) FROM unnest('{mx.dir,mx.stm,mx.brn,mx.nix,mx.pt,mx.pts}'::regclass[]) t;
SELECT ttl.enable('mx.dln', 3600, deadline_property => 'expiresAt');
SELECT ttl.set_append_only('mx.brn', true, 'brin');
SELECT ttl.set_append_only('mx.nix', true, 'none');
});
# the partial indexes of 1.0-1.2: a database whose ttl was created at 1.2
$node->safe_psql('postgres', 'CREATE DATABASE legacy');
$node->safe_psql('legacy', q{
CREATE EXTENSION ttl VERSION '1.2';
CREATE SCHEMA mx AUTHORIZATION app;
SET ROLE app;
CREATE TABLE mx.old (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('mx.old', 3600);
RESET ROLE;
ALTER EXTENSION ttl UPDATE;
SELECT pg_create_logical_replication_slot('sl', 'test_decoding');
});
is( $node->safe_psql('legacy', q{
SELECT string_agg(indexrelid::regclass::text, ',' ORDER BY indexrelid::regclass::text) FROM pg_index
 WHERE indrelid = 'mx.old'::regclass AND NOT indisprimary}),
	'mx.old_ttl_expiry_idx,mx.old_ttl_ts_idx', 'legacy: mx.old has the two partial indexes');
$node->safe_psql('postgres', q{
SELECT pg_create_logical_replication_slot('sm', 'test_decoding');
});

my %matrix = (postgres => [qw(dir stm brn nix dln pt pts)], legacy => ['old']);
my %slot_of = (postgres => 'sm', legacy => 'sl');
# the container a decoded table belongs to (a partition: its parent)
sub container_of
{
	my ($tab) = @_;
	$tab =~ s/^(pts?)_[ab]$/$1/;
	return "mx.$tab";
}

# Decode and consume a slot of the matrix: each transaction with its xid,
# the origin its commit carries ('' for none) and its lines about mx
# tables and ttl messages; once with only-local 0, once with 1.
sub decode_mx
{
	my ($db) = @_;
	my $slot = $slot_of{$db};
	my $lsn = $node->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
	$node->poll_query_until('postgres',
		"SELECT pg_current_wal_flush_lsn() >= '$lsn'::pg_lsn")
	  or die "WAL not flushed up to $lsn";
	my %out;
	for my $local (0, 1)
	{
		my $text = $node->safe_psql($db,
			"SELECT data FROM pg_logical_slot_peek_changes('$slot', '$lsn', NULL,"
			  . " 'skip-empty-xacts', '1', 'include-xids', '1', 'only-local', '$local')");
		my (@txns, $cur);
		for my $line (split /\n/, $text)
		{
			if ($line =~ /^BEGIN (\d+)$/) { $cur = { xid => $1, lines => [] }; }
			elsif ($line =~ /^COMMIT (\d+)$/)
			{
				push @txns, $cur if @{ $cur->{lines} };
				undef $cur;
			}
			elsif ($cur && $line =~ /^(table mx\.|message:)/)
			{
				push @{ $cur->{lines} }, $line;
			}
		}
		for my $t (@txns)
		{
			$t->{origin} = $node->safe_psql($db,
				"SELECT coalesce(o.roname, '') FROM pg_xact_commit_timestamp_origin('$t->{xid}'::xid) c"
				  . " LEFT JOIN pg_replication_origin o ON o.roident = c.roident");
		}
		$out{$local} = \@txns;
	}
	$node->safe_psql($db,
		"SELECT count(*) FROM pg_logical_slot_get_changes('$slot', '$lsn', NULL)");
	return ($out{0}, $out{1});
}

# Check that in each transaction every delete of a container is counted by
# the next ttl message naming it (by $by), none left unannounced; returns
# the deletes per container and a list of problems.
sub announced
{
	my ($txns, $by) = @_;
	my (%deleted, @bad);
	for my $t (@$txns)
	{
		my %pending;
		for (@{ $t->{lines} })
		{
			if (/^table mx\.(\w+): DELETE/)
			{
				my $c = container_of($1);
				$pending{$c}++;
				$deleted{$c}++;
			}
			elsif (/^message:/)
			{
				/prefix: ttl, sz: \d+ content:\{"container": "([^"]+)", "rows": (\d+), "by": "(\w+)"\}$/
				  or push(@bad, "xid $t->{xid}: unexpected message line: $_"), next;
				my ($c, $rows, $who) = ($1, $2, $3);
				push @bad, "xid $t->{xid}: message by $who, not $by" if $who ne $by;
				push @bad, "xid $t->{xid}: message says $rows rows of $c, "
				  . ($pending{$c} // 0) . " deleted before it"
				  if $rows != ($pending{$c} // 0);
				$pending{$c} = 0;
			}
		}
		push @bad, map { "xid $t->{xid}: $pending{$_} deletes of $_ without a message" }
		  grep { $pending{$_} } sort keys %pending;
	}
	return (\%deleted, \@bad);
}

sub remaining
{
	my ($db) = @_;
	return $node->safe_psql($db, 'SELECT '
		  . join(' + ', map { "(SELECT count(*) FROM mx.$_)" } @{ $matrix{$db} }));
}

# $n items of each container of the matrix: due in a second (worker), or
# only under the clock 2 hours ahead (ttl.purge, run_purge)
sub fill
{
	my ($soon) = @_;
	my $doc = $soon ? q{'{"ttl": 1}'} : q{'{}'};
	my $deadline = $soon
	  ? q{jsonb_build_object('ttl', -1, 'expiresAt', extract(epoch FROM now())::bigint - 10)}
	  : q{jsonb_build_object('ttl', -1, 'expiresAt', extract(epoch FROM now())::bigint + 3600)};
	for my $db (sort keys %matrix)
	{
		$node->safe_psql($db, join('', map {
			my $d = $_ eq 'dln' ? $deadline : $doc;
			"INSERT INTO mx.$_ SELECT g, $d FROM generate_series(1, 3) g;"
			  . (/^pts?$/ ? "INSERT INTO mx.$_ SELECT g, $d FROM generate_series(1001, 1002) g;" : '')
		} @{ $matrix{$db} }));
	}
	return;
}
my %expected = map { ("mx.$_" => (/^pts?$/ ? 5 : 3)) } map { @$_ } values %matrix;

# run a path until the matrix is empty (a container another purger held
# at that moment is skipped, and comes again), then check what was decoded
sub check_path
{
	my ($path, $by, $run) = @_;
	for my $try (1 .. 60)
	{
		last if remaining('postgres') == 0 && remaining('legacy') == 0;
		$run->();
	}
	is(remaining('postgres') + remaining('legacy'), 0, "$path: every container of the matrix purged");
	my %seen;
	for my $db (sort keys %matrix)
	{
		my ($all, $local) = decode_mx($db);
		my ($deleted, $bad) = announced($all, $by);
		is_deeply($bad, [], "$path ($db): every batch's deletes are announced by one message each")
		  or diag explain $all;
		%seen = (%seen, %$deleted);
		my @purge_txns = grep { grep { /^table mx\.\w+: DELETE/ } @{ $_->{lines} } } @$all;
		$seen{"$db:origins"} = join(',', sort { $a cmp $b } keys %{ { map { ($_->{origin} =~ s/\d+$/N/r) => 1 } @purge_txns } });
		$seen{"$db:local"} = $local;
		$seen{"$db:all"} = $all;
	}
	is_deeply({ map { ($_ => $seen{$_}) } keys %expected }, \%expected,
		"$path: all the deletes of every container decoded");
	return \%seen;
}

# the worker's and run_purge's purges: ttl's origin on every purge
# transaction, including the audit rows the owner's triggers wrote in them
sub origin_checks
{
	my ($path, $seen) = @_;
	for my $db (sort keys %matrix)
	{
		is($seen->{"$db:origins"}, 'ttl_purge_N',
			"$path ($db): every purge transaction carries ttl's origin");
		# (the matrix's INSERTs, the application's, stay)
		is(lines_of([ map { $_->{lines} } @{ $seen->{"$db:local"} } ],
				qr/^(table mx\.\w+: DELETE|table mx\.audit: INSERT|message:)/), 0,
			"$path ($db): only-local drops the deletes, the audit rows and the messages");
	}
	my @audit = grep { grep { /^table mx\.audit: INSERT/ } @{ $_->{lines} } } @{ $seen->{'postgres:all'} };
	is(lines_of([ map { $_->{lines} } @audit ], qr/^table mx\.audit: INSERT: .* tab\[text\]:'(stm|pts_[ab])'/), 8,
		"$path: the owner's triggers wrote an audit row per delete of mx.stm and mx.pts");
	ok(@audit && !(grep { $_->{origin} !~ /^ttl_purge_\d+$/ || !grep { /^table mx\.\w+: DELETE/ } @{ $_->{lines} } } @audit),
		"$path: in the batches' transactions, so tagged with ttl's origin")
	  or diag explain \@audit;
	return;
}

# -- the worker
fill(1);
my $seen = check_path('worker', 'worker', sub { wait_seconds($node, 1) });
origin_checks('worker', $seen);

# -- CALL ttl.run_purge(), as the owner of the matrix
fill(0);
$seen = check_path('run_purge', 'run_purge', sub {
	$node->safe_psql($_, "SET ttl.now_override = '$later'; SET ROLE app; CALL ttl.run_purge()")
	  for sort keys %matrix;
});
origin_checks('run_purge', $seen);

# -- ttl.purge() in the caller's transaction, which also writes for the
# application; which path each container took is told at DEBUG1
fill(0);
my $debug = '';
$seen = check_path('ttl.purge', 'purge', sub {
	for my $db (sort keys %matrix)
	{
		my $app = $db eq 'postgres' ? q{INSERT INTO mx.audit (tab, id) VALUES ('application', 0);} : '';
		my ($r, $o, $e) = $node->psql($db, qq{
SET ttl.now_override = '$later';
SET ROLE app;
SET client_min_messages = debug1;
BEGIN;
$app
SELECT ttl.purge();
COMMIT;
}, on_error_stop => 1);
		die "ttl.purge() failed: $e" if $r;
		$debug .= $e;
	}
});
for my $t (qw(dir brn nix dln pt old))
{
	like($debug, qr/ttl purge of "$t": direct delete/, "ttl.purge: mx.$t took the direct path");
}
for my $t (qw(stm pts))
{
	like($debug, qr/ttl purge of "$t" runs a DELETE statement/, "ttl.purge: mx.$t took the statement path");
}
for my $db (sort keys %matrix)
{
	is($seen->{"$db:origins"}, '', "ttl.purge ($db): no purge transaction carries an origin");
	is_deeply([ map { $_->{lines} } @{ $seen->{"$db:local"} } ],
		[ map { $_->{lines} } @{ $seen->{"$db:all"} } ],
		"ttl.purge ($db): only-local keeps all of it");
}
my @audit = grep { grep { /^table mx\.audit: INSERT/ } @{ $_->{lines} } } @{ $seen->{'postgres:all'} };
is(lines_of([ map { $_->{lines} } @audit ], qr/^table mx\.audit: INSERT: .* tab\[text\]:'(stm|pts_[ab])'/), 8,
	'ttl.purge: the owner\'s triggers wrote an audit row per delete of mx.stm and mx.pts');
ok(@audit && !(grep { $_->{origin} ne '' } @audit),
	'ttl.purge: in the caller\'s transactions, which carry no origin');
ok(scalar(grep { (grep { /tab\[text\]:'application'/ } @{ $_->{lines} }) && (grep { /^table mx\.stm: DELETE/ } @{ $_->{lines} }) } @audit),
	'ttl.purge: the application\'s own write is in the same transaction as the purge');

$node->safe_psql('legacy', q{SELECT pg_drop_replication_slot('sl')});
$node->safe_psql('postgres', q{SELECT pg_drop_replication_slot('sm')});

# ---- per container (1.9, ttl.set_mark_purge_deletes) ----
# pc.con 'on', pc.coff 'off', pc.cdef 'default' (follows the setting),
# purged together on each path with the setting on, then off: the mode of
# each container decides its message and, on the worker's and run_purge's
# transactions, its origin (one round toggles it per batch); ttl.purge()
# never gets an origin, whatever the mode.
$node->safe_psql('postgres', q{
CREATE SCHEMA pc AUTHORIZATION app;
SET ROLE app;
CREATE TABLE pc.con (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE pc.coff (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE pc.cdef (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable(t, 3600) FROM unnest('{pc.con,pc.coff,pc.cdef}'::regclass[]) t;
RESET ROLE;
SELECT ttl.set_mark_purge_deletes('pc.con', 'on');
SELECT ttl.set_mark_purge_deletes('pc.coff', 'off');
SELECT ttl.set_mark_purge_deletes('pc.cdef', 'default');
SELECT pg_create_logical_replication_slot('sp', 'test_decoding');
});
my @pc = qw(cdef coff con);

# 3 items in each: due in a second (the worker), or under the clock 2 hours
# ahead (the others)
sub fill_pc
{
	my ($soon) = @_;
	my $doc = $soon ? q{'{"ttl": 1}'} : q{'{}'};
	$node->safe_psql('postgres',
		join('', map { "INSERT INTO pc.$_ SELECT g, $doc FROM generate_series(1, 3) g;" } @pc));
	return;
}

# Per container of pc: its deletes decoded, the rows its ttl messages
# count and their "by", the origins of the transactions holding its
# deletes ('' for none, ttl_purge_N for the pool's), and its deletes that
# only-local keeps.  The slot is consumed.
sub decode_pc
{
	my $lsn = $node->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
	$node->poll_query_until('postgres',
		"SELECT pg_current_wal_flush_lsn() >= '$lsn'::pg_lsn")
	  or die "WAL not flushed up to $lsn";
	my %s = map { ($_ => { deleted => 0, announced => 0, by => {}, origin => {}, kept => 0 }) } @pc;
	for my $local (0, 1)
	{
		my $text = $node->safe_psql('postgres',
			"SELECT data FROM pg_logical_slot_peek_changes('sp', '$lsn', NULL,"
			  . " 'skip-empty-xacts', '1', 'include-xids', '1', 'only-local', '$local')");
		my ($xid, %tabs);
		for my $line (split /\n/, $text)
		{
			if ($line =~ /^BEGIN (\d+)$/) { $xid = $1; %tabs = (); }
			elsif ($line =~ /^COMMIT (\d+)$/ && %tabs && !$local)
			{
				my $origin = $node->safe_psql('postgres',
					"SELECT coalesce(o.roname, '') FROM pg_xact_commit_timestamp_origin('$xid'::xid) c"
					  . " LEFT JOIN pg_replication_origin o ON o.roident = c.roident");
				$s{$_}{origin}{ $origin =~ s/\d+$/N/r } = 1 for keys %tabs;
			}
			elsif ($line =~ /^table pc\.(\w+): DELETE/)
			{
				$tabs{$1} = 1;
				$local ? $s{$1}{kept}++ : $s{$1}{deleted}++;
			}
			elsif (!$local && $line =~ /^message: .*prefix: ttl, sz: \d+ content:\{"container": "pc\.(\w+)", "rows": (\d+), "by": "(\w+)"\}$/)
			{
				$s{$1}{announced} += $2;
				$s{$1}{by}{$3} = 1;
			}
		}
	}
	$node->safe_psql('postgres',
		"SELECT count(*) FROM pg_logical_slot_get_changes('sp', '$lsn', NULL)");
	for my $c (@pc)
	{
		$s{$c}{by} = join(',', sort keys %{ $s{$c}{by} });
		$s{$c}{origin} = join(',', sort keys %{ $s{$c}{origin} });
	}
	return \%s;
}

# what a container's 3 purged deletes carried: marked by $by (with the
# origin when $origin), or not marked at all
sub marked
{
	my ($by, $origin) = @_;
	return { deleted => 3, announced => 3, by => $by,
		origin => $origin ? 'ttl_purge_N' : '', kept => $origin ? 0 : 3 };
}
my $unmarked = { deleted => 3, announced => 0, by => '', origin => '', kept => 3 };

# CALL ttl.run_purge(); whether the session holds an origin after it
# (both repeat their purge, at most 60 times, while rows of pc are left: a
# purge skips a container the worker's visit holds at that moment, seen on
# a loaded machine; a purge that finds nothing deletes and marks nothing)
sub run_purge_pc
{
	my $origin;
	for my $try (1 .. 60)
	{
		$origin = $node->safe_psql('postgres',
			"SET ttl.now_override = '$later'; SET ROLE app; CALL ttl.run_purge();"
			  . " RESET ROLE; SELECT pg_replication_origin_session_is_setup()");
		last if remaining_pc() eq '0';
		usleep(200_000);
	}
	return $origin;
}

sub purge_pc
{
	for my $try (1 .. 60)
	{
		$node->safe_psql('postgres',
			"SET ttl.now_override = '$later'; SET ROLE app; SELECT ttl.purge(t) FROM unnest('{pc.con,pc.coff,pc.cdef}'::regclass[]) t");
		last if remaining_pc() eq '0';
		usleep(200_000);
	}
	return;
}

sub remaining_pc
{
	return $node->safe_psql('postgres',
		'SELECT ' . join(' + ', map { "(SELECT count(*) FROM pc.$_)" } @pc));
}

decode_pc();
is($node->safe_psql('postgres', 'SHOW ttl.mark_purge_deletes'), 'on', 'per container: the setting is on');
fill_pc(0);
run_purge_pc();
is(remaining_pc(), '0', 'per container, setting on: run_purge purged pc');
is_deeply(decode_pc(),
	{ con => marked('run_purge', 1), coff => $unmarked, cdef => marked('run_purge', 1) },
	"per container, setting on: run_purge marks 'on' and 'default' (message and origin), not 'off'");

fill_pc(0);
purge_pc();
is_deeply(decode_pc(),
	{ con => marked('purge', 0), coff => $unmarked, cdef => marked('purge', 0) },
	"per container, setting on: ttl.purge() gives 'on' and 'default' a message, never an origin; 'off' nothing");

$node->safe_psql('postgres',
	'ALTER SYSTEM SET ttl.mark_purge_deletes = off; SELECT pg_reload_conf()');
$node->poll_query_until('postgres', 'SHOW ttl.mark_purge_deletes', 'off')
  or die 'reload not seen';

fill_pc(0);
is(run_purge_pc(), 'f',
	'per container, setting off: run_purge lets go of the origin it took for pc.con');
is_deeply(decode_pc(),
	{ con => marked('run_purge', 1), coff => $unmarked, cdef => $unmarked },
	"per container, setting off: run_purge marks 'on' only, taking an origin for it");

fill_pc(1);
ok($node->poll_query_until('postgres', 'SELECT ' . "(SELECT count(*) FROM pc.con) + (SELECT count(*) FROM pc.coff) + (SELECT count(*) FROM pc.cdef)", '0'),
	'per container, setting off: the worker purged pc');
is_deeply(decode_pc(),
	{ con => marked('worker', 1), coff => $unmarked, cdef => $unmarked },
	"per container, setting off: the worker marks 'on' only (message and origin)");

fill_pc(0);
purge_pc();
is_deeply(decode_pc(),
	{ con => marked('purge', 0), coff => $unmarked, cdef => $unmarked },
	"per container, setting off: ttl.purge() gives 'on' a message, no origin");

$node->safe_psql('postgres', q{SELECT pg_drop_replication_slot('sp')});

# the origins are the pool's, none held by a session now
is( $node->safe_psql('postgres',
		"SELECT count(*) > 0 AND bool_and(roname ~ '^ttl_purge_[0-9]+\$')"
		  . " FROM pg_replication_origin"),
	't', 'only ttl_purge_<n> origins exist');

ok(!$node->log_contains('terminated by signal|PANIC|TRAP:'),
	'no crash in the server log');
$node->stop;
done_testing();
