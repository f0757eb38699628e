# An error raised while rule 10 acts as the table's owner for a writer
# that may not read the table: the writer gets ttl's message (the SQLSTATE,
# the container), never the row, even with client_min_messages = log; the
# server log gets the original, with the writer's role, once per error.
# (sql/rule10_redact.sql checks what the writer sees on every path; only
# a TAP test can read the server log.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('owner_error_log');
$node->init;
$node->start;

$node->safe_psql('postgres', q{
    CREATE EXTENSION ttl;
    CREATE ROLE oe_owner;
    CREATE ROLE oe_writer LOGIN;
    GRANT CREATE ON SCHEMA public TO oe_owner;
    SET ttl.now_override = '2030-01-01 00:00:00+00';
    SET ROLE oe_owner;
    CREATE TABLE oe (id text PRIMARY KEY, doc jsonb NOT NULL);
    SELECT ttl.enable('oe', 60);
    CREATE TABLE oe_archive (id text PRIMARY KEY, doc jsonb NOT NULL, CHECK (NOT doc ? 'secret'));
    SELECT ttl.set_archive('oe', 'oe_archive');
    GRANT INSERT ON oe TO oe_writer;
    INSERT INTO oe VALUES ('k1', '{"secret": "TOPSECRET-LOG-1"}');
});

my $offset = -s $node->logfile;
# the writer cannot set ttl.now_override: the superuser's database default
# moves its clock past the item's expiry
$node->safe_psql('postgres', q{ALTER ROLE oe_writer SET ttl.now_override = '2030-01-01 00:05:00+00'});
my ($ret, $out, $err) = $node->psql('postgres',
	q{SET client_min_messages = log; INSERT INTO oe VALUES ('k1', '{}');},
	extra_params => [ '-U', 'oe_writer', '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'the write fails');
like($err, qr/ERROR:  23514: rule 10's replacement of an expired item of container public\.oe failed with SQLSTATE 23514/,
	'the writer gets the SQLSTATE and the container');
unlike($err, qr/TOPSECRET|Failing row|oe_archive/, '... and nothing of the row or the archive');

my $log = slurp_file($node->logfile, $offset);
my @lines = $log =~ /^.*LOG:  rule 10's replacement of an expired item of container public\.oe failed as the table's owner for role oe_writer, which is shown only the SQLSTATE: .*TOPSECRET-LOG-1.*$/mg;
is(scalar(@lines), 1, 'the server log has the original error once, with the writer\'s role');
like($log, qr/DETAIL:  Failing row contains \(k1, .*TOPSECRET-LOG-1/, '... and its detail');
is($node->safe_psql('postgres', q{SELECT doc ->> 'secret' FROM oe WHERE id = 'k1'}), 'TOPSECRET-LOG-1',
	'the item stays');

$node->stop;
done_testing();
