# Rule 10's purge deletes in the change stream (ttl.mark_purge_deletes,
# mark.c; the replacement is src/replace.c + src/purge_replace.c), read
# through a logical slot with test_decoding:
#  - marking on: a write that replaces an expired item carries, in the
#    writer's own transaction, the item's DELETE followed by one 'ttl'
#    message naming the container, 1 row, by "purge", then the new row's
#    INSERT; the writer's transaction carries no replication origin
#    (only-local keeps it, application changes and all);
#  - a replacement that is refused (a RESTRICT child) leaves neither the
#    DELETE nor a message;
#  - marking off (the default): the DELETE and the INSERT, no message.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

# the worker never purges here (paused containers, a long nap): every
# delete decoded is the writer's
my $node = ttl_node('mark10', q{
wal_level = logical
max_replication_slots = 10
max_wal_senders = 10
ttl.naptime = 3600
});

$node->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE TABLE c (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE m (id int PRIMARY KEY, note text);
CREATE TABLE kid (id int PRIMARY KEY, cid int REFERENCES c (id) ON DELETE RESTRICT);
SELECT ttl.enable('c', 60);
SELECT ttl.pause('c');
SET ttl.now_override = '2030-01-01 00:00:00+00';
INSERT INTO c SELECT g, '{"v": "old"}' FROM generate_series(1, 6) g;
INSERT INTO kid VALUES (1, 5);
SELECT pg_create_logical_replication_slot('s', 'test_decoding');
});

# The slot's changes up to now, with only-local 0 and 1, then consumed: each
# a list of transactions, each the list of its lines about c, m, kid and
# messages.
sub decode
{
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
			elsif ($cur && $line =~ /^(table public\.(c|m|kid):|message:)/)
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

# a transaction's lines, each shortened to what the checks compare
sub shape
{
	my ($txn) = @_;
	return [
		map {
			/^table public\.(\w+): (INSERT|DELETE): id\[integer\]:(\d+)/ ? "$2 $1 $3"
			  : /^message: transactional: 1 prefix: ttl, sz: \d+ content:(.*)$/ ? "message $1"
			  : "other: $_"
		} @$txn
	];
}

my $msg = 'message {"container": "public.c", "rows": 1, "by": "purge"}';

# ---- marking off (the default) ----
decode();
$node->safe_psql('postgres', q{
SET ttl.now_override = '2030-01-01 00:05:00+00';
INSERT INTO c VALUES (1, '{"v": "new"}');
});
my ($all, $local) = decode();
is_deeply([ map { shape($_) } @$all ], [ [ 'DELETE c 1', 'INSERT c 1' ] ],
	'off: the replaced item\'s DELETE, then the new INSERT, no message')
  or diag explain $all;

# ---- marking on ----
$node->safe_psql('postgres',
	'ALTER SYSTEM SET ttl.mark_purge_deletes = on; SELECT pg_reload_conf()');
$node->poll_query_until('postgres', 'SHOW ttl.mark_purge_deletes', 'on')
  or die 'reload not seen';

# an INSERT of an expired id, in a transaction that also writes for the
# application before and after it
$node->safe_psql('postgres', q{
BEGIN;
SET LOCAL ttl.now_override = '2030-01-01 00:05:00+00';
INSERT INTO m VALUES (1, 'before');
INSERT INTO c VALUES (2, '{"v": "new"}');
INSERT INTO m VALUES (2, 'after');
COMMIT;
});
($all, $local) = decode();
is_deeply([ map { shape($_) } @$all ],
	[ [ 'INSERT m 1', 'DELETE c 2', $msg, 'INSERT c 2', 'INSERT m 2' ] ],
	'on: one transaction, the writer\'s: the DELETE, right after it the ttl message, then the INSERT')
  or diag explain $all;
is_deeply($local, $all,
	'on: the writer\'s transaction carries no replication origin (only-local keeps all of it)');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_replication_origin WHERE roname LIKE 'ttl%'"),
	'0', 'on: no ttl replication origin was taken');

# ON CONFLICT DO NOTHING and DO UPDATE, two replacements in one statement
$node->safe_psql('postgres', q{
SET ttl.now_override = '2030-01-01 00:05:00+00';
INSERT INTO c VALUES (3, '{"v": "new"}'), (4, '{"v": "new"}') ON CONFLICT DO NOTHING;
INSERT INTO c VALUES (6, '{"v": "new"}') ON CONFLICT (id) DO UPDATE SET doc = c.doc || '{"merged": true}';
});
($all, $local) = decode();
is_deeply([ map { shape($_) } @$all ],
	[
		[ 'DELETE c 3', $msg, 'INSERT c 3', 'DELETE c 4', $msg, 'INSERT c 4' ],
		[ 'DELETE c 6', $msg, 'INSERT c 6' ]
	],
	'on: ON CONFLICT DO NOTHING / DO UPDATE: each replaced item\'s DELETE and message precede its INSERT')
  or diag explain $all;
is_deeply($local, $all, 'on: no origin there either');
is($node->safe_psql('postgres', "SELECT doc ->> 'merged' IS NULL FROM c WHERE id = 6"),
	't', 'on: DO UPDATE took its INSERT path (nothing merged)');

# a refused replacement (a RESTRICT child holds item 5): under ON CONFLICT
# DO NOTHING the write does nothing and its transaction commits; neither
# the delete nor a message reaches the stream
$node->safe_psql('postgres', q{
SET ttl.now_override = '2030-01-01 00:05:00+00';
INSERT INTO m VALUES (3, 'beside');
INSERT INTO c VALUES (5, '{"v": "new"}') ON CONFLICT DO NOTHING;
});
($all, $local) = decode();
is_deeply([ map { shape($_) } @$all ], [ [ 'INSERT m 3' ] ],
	'on: a refused replacement leaves no DELETE and no message')
  or diag explain $all;
is($node->safe_psql('postgres', "SELECT doc ->> 'v' FROM c WHERE id = 5"),
	'old', 'on: the refused item stays');

$node->stop;
done_testing();
