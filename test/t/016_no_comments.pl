# Issue 28: ttl's purge and deadline indexes are known by the registry
# (ttl.indexes, dumped with it), not by their COMMENT.  After pg_dump
# --no-comments and a restore, the purge takes the direct path (not the
# statement fallback with the 1.0-1.2 expressions), set_append_only and
# set_deadline_property find the indexes, and ttl.disable drops exactly the
# indexes ttl made, never a user's index of the same shape.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('nocomments');
$node->init;
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->safe_psql('src', q{
    SET ttl.now_override = '2026-01-01 00:00:00+00';
    CREATE EXTENSION ttl;
    CREATE SCHEMA app;
    -- plain, with a user's index of the purge index's shape
    CREATE TABLE app.plain (id int PRIMARY KEY, doc jsonb NOT NULL);
    SELECT ttl.enable('app.plain', 60);
    CREATE INDEX user_key_idx ON app.plain ((ttl.doc_purge_key(doc)));
    INSERT INTO app.plain SELECT g, '{}' FROM generate_series(1, 10) g;
    -- partitioned
    CREATE TABLE app.parted (id int, doc jsonb NOT NULL) PARTITION BY RANGE (id);
    CREATE TABLE app.parted_1 PARTITION OF app.parted FOR VALUES FROM (0) TO (100);
    CREATE TABLE app.parted_2 PARTITION OF app.parted FOR VALUES FROM (100) TO (200);
    SELECT ttl.enable('app.parted', 60);
    INSERT INTO app.parted SELECT g, '{}' FROM generate_series(1, 150) g;
    -- append-only, BRIN
    CREATE TABLE app.log (id int PRIMARY KEY, doc jsonb NOT NULL);
    SELECT ttl.enable('app.log', 60);
    SELECT ttl.set_append_only('app.log', true);
    INSERT INTO app.log SELECT g, '{}' FROM generate_series(1, 10) g;
    -- a deadline property, with a user's index of the deadline index's shape
    CREATE TABLE app.dl (id int PRIMARY KEY, doc jsonb NOT NULL);
    SELECT ttl.enable('app.dl', -1, deadline_property => 'until');
    CREATE INDEX user_dl_idx ON app.dl ((ttl.doc_deadline_key(doc, 'until'::text)))
        WHERE ttl.doc_deadline_key(doc, 'until'::text) IS NOT NULL;
    INSERT INTO app.dl SELECT g, '{"until": 1767225600}' FROM generate_series(1, 10) g;
});

my $dump = $node->basedir . '/src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '--no-comments', '-f', $dump, '-d', $node->connstr('src') ],
    'pg_dump --no-comments');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), $dump ],
    'pg_restore into an empty database');

is($node->safe_psql('dst', q{
    SELECT count(*) FROM pg_index WHERE obj_description(indexrelid, 'pg_class') IS NOT NULL}),
    '0', 'no index has a comment after the restore');

# The purge of each container: the direct path (DEBUG1 tells them apart).
sub purge_paths
{
    my ($table) = @_;
    my ($ret, $out, $err) = $node->psql('dst', qq{
        SET ttl.now_override = '2026-01-01 01:00:00+00';
        SET client_min_messages = debug1;
        SELECT ttl.purge('$table');});
    is($ret, 0, "purge of $table runs");
    return ($out, $err);
}
for my $t ([ 'app.plain', 10 ], [ 'app.parted', 150 ], [ 'app.log', 10 ], [ 'app.dl', 10 ])
{
    my ($table, $rows) = @$t;
    my ($out, $err) = purge_paths($table);
    is($out, $rows, "$table: every due row purged");
    like($err, qr/direct delete/, "$table: the direct path runs");
    unlike($err, qr/runs a DELETE statement/, "$table: not the statement fallback");
}
like($node->safe_psql('dst', q{SELECT ttl._purge_statement('app.plain', false)}),
    qr/doc_purge_key/, 'the statement path would also name the purge key, not the 1.0-1.2 expressions');

# set_append_only finds the BRIN made by ttl (and the btree, and leaves the user's)
my $indexes = sub {
    my ($table) = @_;
    return $node->safe_psql('dst', qq{
        SELECT string_agg(c.relname || ':' || a.amname, ',' ORDER BY c.relname)
          FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
         WHERE i.indrelid = '$table'::regclass AND NOT i.indisprimary});
};
$node->safe_psql('dst', q{SELECT ttl.set_append_only('app.log', false)});
is($indexes->('app.log'), 'log_ttl_purge_idx:btree',
    'set_append_only(false) drops the restored BRIN and makes the btree');
$node->safe_psql('dst', q{SELECT ttl.set_append_only('app.plain', true)});
is($indexes->('app.plain'), 'plain_ttl_brin_idx:brin,user_key_idx:btree',
    'set_append_only(true) drops the restored btree made by ttl, not the user\'s');
$node->safe_psql('dst', q{SELECT ttl.set_deadline_property('app.dl', 'due')});
is($indexes->('app.dl'), 'dl_ttl_deadline_idx:btree,dl_ttl_purge_idx:btree,user_dl_idx:btree',
    'set_deadline_property drops the restored deadline index of the old property, not the user\'s');
is($node->safe_psql('dst', q{
    SELECT pg_get_indexdef('app.dl_ttl_deadline_idx'::regclass) LIKE '%''due''%'}), 't',
    'and makes the new property\'s');

# disable drops exactly ttl's indexes
$node->safe_psql('dst', q{SELECT ttl.disable('app.plain'); SELECT ttl.disable('app.dl');
                          SELECT ttl.disable('app.parted'); SELECT ttl.disable('app.log')});
is($indexes->('app.plain'), 'user_key_idx:btree', 'disable keeps the user\'s purge-shaped index');
is($indexes->('app.dl'), 'user_dl_idx:btree', 'disable keeps the user\'s deadline-shaped index');
is($node->safe_psql('dst', q{
    SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
     WHERE c.relname LIKE 'parted%'}), '0', 'disable drops the partitioned purge index and its partitions\'');
is($indexes->('app.log'), '', 'disable drops the append-only container\'s index');
is($node->safe_psql('dst', 'SELECT count(*) FROM ttl.indexes'), '0', 'no record is left');

$node->stop;
done_testing();
