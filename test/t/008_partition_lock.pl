# A partitioned container (ttl.enable accepts partitioned tables) one of
# whose partitions is locked by someone else: like a locked plain table, it
# must be skipped, not waited on; the worker must go on purging the other
# containers of the database, and purge the partitioned container once the
# lock is gone.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('partlock');

$node->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE TABLE pt (id int PRIMARY KEY, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE pt1 PARTITION OF pt FOR VALUES FROM (0) TO (1000);
CREATE TABLE pt2 PARTITION OF pt FOR VALUES FROM (1000) TO (2000);
SELECT ttl.enable('pt', -1);
CREATE TABLE c (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('c', -1);
INSERT INTO pt SELECT g, '{"ttl": 1}' FROM generate_series(1, 1999) g;
INSERT INTO pt VALUES (0, '{}');
});
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM pt', '1'),
	'partitioned container purged across its partitions');

# lock one partition, then give both containers expired items
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE pt1 IN ACCESS EXCLUSIVE MODE;');
$node->safe_psql('postgres', q{
INSERT INTO pt2 SELECT g, '{"ttl": 1}' FROM generate_series(1001, 1010) g;
INSERT INTO c SELECT g, '{"ttl": 1}' FROM generate_series(1, 10) g;
INSERT INTO c VALUES (11, '{}');
});
# wait until c is purged, or until the worker has queued for a lock for
# 3 s (then it is stuck: fail fast rather than wait out the poll timeout)
$node->poll_query_until('postgres', q{
SELECT (SELECT count(*) FROM c) = 1
    OR EXISTS (SELECT FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                WHERE a.backend_type = 'ttl worker' AND NOT l.granted
                  AND l.waitstart < now() - interval '3 s')})
  or die 'neither purged nor waiting';
is($node->safe_psql('postgres', 'SELECT count(*) FROM c'), '1',
	'other container purged while a partition of a container is locked');
my $waits = $node->safe_psql('postgres',
	"SELECT l.relation::regclass || ' ' || l.mode || ' (' || a.query || ')'"
	  . " FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
	  . " WHERE a.backend_type = 'ttl worker' AND NOT l.granted");
is($waits, '', 'the worker does not queue for the locked partition');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pt2'), '10',
	'partitioned container skipped while locked');
$locker->query_safe('COMMIT');
$locker->quit;

ok($node->poll_query_until('postgres', 'SELECT count(*) FROM pt', '1'),
	'partitioned container purged once the lock is gone');
ok($node->poll_query_until('postgres', 'SELECT count(*) FROM c', '1'),
	'other container purged');
is( $node->safe_psql('postgres',
		"SELECT rows_purged, last_error IS NULL FROM ttl.stats WHERE container = 'pt'::regclass"),
	'2009|t', 'statistics of the partitioned container');

$node->stop;
done_testing();
