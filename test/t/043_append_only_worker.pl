# The worker purges an append-only container (BRIN purge index: walks of
# page ranges, every row re-checked) and an append-only container without
# a purge index (1.6: walks of every page) over several budgeted rounds
# exactly as it purges the same data in the default mode (btree), updated
# rows included: the same rows survive, each purged row counted once, and
# the backlog figures agree before the purge and are zero after it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('append_only', q{
ttl.batch_size = 500
ttl.cost_limit = 200
ttl.cost_delay = 20
});

$node->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE TABLE ao (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE df (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE sw (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('ao', 1), ttl.enable('df', 1), ttl.enable('sw', 1);
SELECT ttl.set_append_only('ao', true);
SELECT ttl.set_append_only('sw', true, 'none');
SELECT ttl.pause('ao'), ttl.pause('df'), ttl.pause('sw');
INSERT INTO ao SELECT g, CASE WHEN g % 5 = 0 THEN jsonb_build_object('n', g, 'ttl', 1)
                              WHEN g % 17 = 0 THEN jsonb_build_object('n', g, 'ttl', 3600)
                              WHEN g % 19 = 0 THEN jsonb_build_object('n', g, 'ttl', -1)
                              ELSE jsonb_build_object('n', g) END
  FROM generate_series(1, 20000) g;
INSERT INTO df SELECT * FROM ao;
INSERT INTO sw SELECT * FROM ao;
-- updates: rows that gain a long ttl (they move to other pages)
UPDATE ao SET doc = doc || '{"ttl": 3600}' WHERE id % 7 = 0;
UPDATE df SET doc = doc || '{"ttl": 3600}' WHERE id % 7 = 0;
UPDATE sw SET doc = doc || '{"ttl": 3600}' WHERE id % 7 = 0;
});
$node->safe_psql('postgres', "VACUUM ANALYZE $_") for qw(ao df sw);
is( $node->safe_psql('postgres', q{
	SELECT am.amname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
	 WHERE i.indrelid = 'ao'::regclass AND obj_description(i.indexrelid, 'pg_class') = 'ttl purge index'}),
	'brin', 'the append-only container purges through a BRIN index');
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_index WHERE indrelid = 'sw'::regclass
	   AND pg_get_indexdef(indexrelid) LIKE '%ttl.%'}),
	'0', 'the index-free container has no purge index');
wait_seconds($node, 2);

my $due = $node->safe_psql('postgres',
	q{SELECT count(*) FROM df WHERE ttl.is_expired('df', doc)});
cmp_ok($due, '>', 10000, "$due rows due in each container");
is( $node->safe_psql('postgres',
		q{SELECT (SELECT expired FROM ttl.backlog('ao')), (SELECT expired FROM ttl.backlog('df')),
		         (SELECT expired FROM ttl.backlog('sw'))}),
	"$due|$due|$due", 'the three backlogs count exactly the due rows');

$node->safe_psql('postgres', "SELECT ttl.resume('ao'), ttl.resume('df'), ttl.resume('sw')");
ok( $node->poll_query_until('postgres', q{
	SELECT (SELECT count(*) FROM ao WHERE ttl.is_expired('ao', doc))
	     + (SELECT count(*) FROM df WHERE ttl.is_expired('df', doc))
	     + (SELECT count(*) FROM sw WHERE ttl.is_expired('sw', doc))},
		'0'),
	'the worker purged the three containers');
is( $node->safe_psql('postgres', q{
	SELECT (SELECT array_agg(id ORDER BY id) FROM ao) = (SELECT array_agg(id ORDER BY id) FROM df),
	       (SELECT array_agg(id ORDER BY id) FROM sw) = (SELECT array_agg(id ORDER BY id) FROM df),
	       (SELECT count(*) FROM ao)}),
	't|t|' . (20000 - $due), 'the same rows survive in the three modes');
is( $node->safe_psql('postgres', q{
	SELECT string_agg(container::text || ':' || rows_purged || ':' || coalesce(last_error, 't'), ',' ORDER BY container::text)
	  FROM ttl.stats}),
	"ao:$due:t,df:$due:t,sw:$due:t", 'each purged row counted once, no error');
is( $node->safe_psql('postgres',
		q{SELECT (SELECT expired FROM ttl.backlog('ao')), (SELECT expired FROM ttl.backlog('df')),
		         (SELECT expired FROM ttl.backlog('sw'))}),
	'0|0|0', 'no backlog left');

$node->stop;
done_testing();
