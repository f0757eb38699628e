# Canary for code planted against ttl's elevated SQL (issue 10, item 1).
#
# Exact-type overloads of the operators and functions ttl's own SQL uses
# are planted in `public` and in a schema named after the bootstrap
# superuser ("$user" resolves to it), and the database's search_path puts
# both before pg_catalog.  Each overload, when run, writes a row to
# public.canary.  Then every path that runs SQL with rights other than the
# caller's is driven: the worker, superuser ttl.purge() / CALL
# ttl.run_purge(), ttl.enable / set_default_ttl / pause / resume / disable,
# the sql_drop event trigger, the ALTER TABLE event triggers (every change
# a container follows or refuses), ttl.stats in a fresh session.  The canary must
# stay empty.  A positive control shows a plant does fire when called
# unqualified, so the test can fail.
#
# Adding a path is one line in @paths; adding a plant is one line in
# @operators or @functions.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('canary');
my $super = $node->safe_psql('postgres', 'SELECT current_user');

# The test's own sessions are not under attack: they read the catalogs with
# pg_catalog first.  Paths under test run with this unset (the hostile
# database default applies).
$ENV{PGOPTIONS} = '-c search_path=pg_catalog';

# [operator, left type, right type, result type, body expression]
my @operators = (
	[ '=',  'oid',      'regclass', 'boolean', '$1 OPERATOR(pg_catalog.=) $2::oid' ],
	[ '=',  'regclass', 'oid',      'boolean', '$1::oid OPERATOR(pg_catalog.=) $2' ],
	[ '=',  'regclass', 'regclass', 'boolean', '$1::oid OPERATOR(pg_catalog.=) $2::oid' ],
	[ '=',  'oid',      'oid',      'boolean', '$1 OPERATOR(pg_catalog.=) $2' ],
	[ '=',  'oid',      'integer',  'boolean', '$1 OPERATOR(pg_catalog.=) $2::oid' ],
	[ '=',  'tid',      'tid',      'boolean', '$1 OPERATOR(pg_catalog.=) $2' ],
	[ '=',  'name',     'name',     'boolean', '$1 OPERATOR(pg_catalog.=) $2' ],
	[ '=',  'name',     'text',     'boolean', '$1 OPERATOR(pg_catalog.=) $2' ],
	[ '=',  'text',     'text',     'boolean', '$1 OPERATOR(pg_catalog.=) $2' ],
	[ '=',  'integer',  'integer',  'boolean', '$1 OPERATOR(pg_catalog.=) $2' ],
	[ '=',  'bigint',   'bigint',   'boolean', '$1 OPERATOR(pg_catalog.=) $2' ],
	[ '<>', 'text',     'text',     'boolean', '$1 OPERATOR(pg_catalog.<>) $2' ],
	[ '>=', 'bigint',   'bigint',   'boolean', '$1 OPERATOR(pg_catalog.>=) $2' ],
	[ '<=', 'bigint',   'bigint',   'boolean', '$1 OPERATOR(pg_catalog.<=) $2' ],
	[ '>',  'integer',  'integer',  'boolean', '$1 OPERATOR(pg_catalog.>) $2' ],
	[ '+',  'bigint',   'bigint',   'bigint',  '$1 OPERATOR(pg_catalog.+) $2' ],
	[ '-',  'bigint',   'bigint',   'bigint',  '$1 OPERATOR(pg_catalog.-) $2' ],
	[ '-',  'bigint',   'integer',  'bigint',  '$1 OPERATOR(pg_catalog.-) $2' ],
	[ '+',  'bigint',   'integer',  'bigint',  '$1 OPERATOR(pg_catalog.+) $2' ],
	[ '||', 'text',     'text',     'text',    '$1 OPERATOR(pg_catalog.||) $2' ],
	[ '?',  'jsonb',    'text',     'boolean', '$1 OPERATOR(pg_catalog.?) $2' ],
	[ '-',  'timestamptz', 'timestamptz', 'interval', '$1 OPERATOR(pg_catalog.-) $2' ],
);

# [name, argument types, result type, body expression]
my @functions = (
	[ 'now',                 '',              'timestamptz', 'pg_catalog.now()' ],
	[ 'jsonb_typeof',        'jsonb',         'text', 'pg_catalog.jsonb_typeof($1)' ],
	[ 'format',              'text',          'text', 'pg_catalog.format($1)' ],
	[ 'format',              'text, text',    'text', 'pg_catalog.format($1, $2)' ],
	[ 'format',              'text, name, text', 'text', 'pg_catalog.format($1, $2, $3)' ],
	[ 'left',                'text, integer', 'text', 'pg_catalog.left($1, $2)' ],
	[ 'length',              'text',          'integer', 'pg_catalog.length($1)' ],
	[ 'to_regclass',         'text',          'regclass', 'pg_catalog.to_regclass($1)' ],
	[ 'obj_description',     'oid, name',     'text', 'pg_catalog.obj_description($1, $2)' ],
	[ 'has_table_privilege', 'regclass, text', 'boolean', 'pg_catalog.has_table_privilege($1::oid, $2)' ],
	[ 'floor',               'numeric',       'numeric', 'pg_catalog.floor($1)' ],
	[ 'to_timestamp',        'bigint',        'timestamptz', 'pg_catalog.to_timestamp($1)' ],
	[ 'current_database',    '',              'name', 'pg_catalog.current_database()' ],
);

# The paths that run SQL with elevated rights, each run by the superuser in
# a fresh session under the hostile search_path: [label, SQL].  Rows in the
# p_* containers expire only at ttl.now_override = 2100 (the worker never
# sees them due).
my $future = q{SET ttl.now_override = '2100-01-01 00:00:00+00';};
my @paths = (
	[ 'superuser SELECT ttl.purge()', "$future SELECT ttl.purge();" ],
	[ 'superuser SELECT ttl.purge(container)', "$future SELECT ttl.purge('app.p_trig');" ],
	[ 'superuser CALL ttl.run_purge()', "$future CALL ttl.run_purge();" ],
	[ 'ttl.enable', "SELECT ttl.enable('app.fresh', 60);" ],
	[ 'ttl.set_default_ttl', "SELECT ttl.set_default_ttl('app.fresh', 120);" ],
	# rule 9 (issue 14): the deadline property's index, trigger and check
	[ 'ttl.set_deadline_property', "SELECT ttl.set_deadline_property('app.fresh', 'until');" ],
	[ 'ttl.set_deadline_property(NULL)', "SELECT ttl.set_deadline_property('app.fresh', NULL);" ],
	[ 'ttl.enable with a deadline property', "SELECT ttl.enable('app.fresh2', 60, deadline_property => 'until');" ],
	[ 'ttl.deadline_index_sql', "SELECT ttl.deadline_index_sql('app.fresh2', 'other');" ],
	[ 'ttl.backlog of a deadline container', "$future SELECT * FROM ttl.backlog('app.d_plain');" ],
	[ 'superuser SELECT ttl.purge(deadline container), statement path', "$future SELECT ttl.purge('app.d_trig', 5); SELECT ttl.purge('app.d_trig');" ],
	[ 'ttl.pause / ttl.resume', "SELECT ttl.pause('app.fresh'); SELECT ttl.resume('app.fresh');" ],
	[ 'ttl.disable', "SELECT ttl.disable('app.fresh');" ],
	[ 'sql_drop event trigger (DROP TABLE)', "DROP TABLE app.dropme CASCADE;" ],
	[ 'SELECT * FROM ttl.stats', "SELECT * FROM ttl.stats;" ],
	[ 'ttl.backlog', "SELECT * FROM ttl.backlog('app.p_plain');" ],
	# the ALTER TABLE event triggers (containers follow their table)
	[ 'ALTER TABLE ADD COLUMN', "ALTER TABLE app.alt ADD COLUMN extra int;" ],
	[ 'ALTER TABLE RENAME COLUMN', "ALTER TABLE app.alt RENAME COLUMN extra TO extra2;" ],
	[ 'ALTER TABLE DROP COLUMN', "ALTER TABLE app.alt DROP COLUMN extra2;" ],
	[ 'ALTER TABLE ALTER COLUMN TYPE', "ALTER TABLE app.alt ALTER COLUMN note TYPE varchar(100);" ],
	[ 'ALTER TABLE RENAME the document column', "ALTER TABLE app.alt RENAME COLUMN doc TO body;" ],
	[ 'ALTER TABLE ENABLE ROW LEVEL SECURITY', "ALTER TABLE app.alt ENABLE ROW LEVEL SECURITY;" ],
	[ 'ALTER TABLE FORCE / DISABLE ROW LEVEL SECURITY',
	  "ALTER TABLE app.alt FORCE ROW LEVEL SECURITY; ALTER TABLE app.alt DISABLE ROW LEVEL SECURITY;" ],
	[ 'ALTER TABLE RENAME TO', "ALTER TABLE app.alt RENAME TO alt2;" ],
	[ 'ALTER TABLE SET SCHEMA', "ALTER TABLE app.alt2 SET SCHEMA app2;" ],
	[ 'ALTER TABLE OWNER TO', "ALTER TABLE app2.alt2 OWNER TO bob;" ],
	[ 'refused ALTER TABLE DROP the document column',
	  "DO \$\$ BEGIN ALTER TABLE app2.alt2 DROP COLUMN body; EXCEPTION WHEN feature_not_supported THEN NULL; END \$\$;" ],
	[ 'insert after the changes (stamping trigger)', "INSERT INTO app2.alt2 (id, note, body) VALUES (1, 'x', '{}');" ],
);

$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob;
CREATE DATABASE canary;
});

# the plants, in public and in the superuser's own schema
my $plant_sql = qq{
CREATE TABLE public.canary (what text, who name, backend text,
                            at timestamptz DEFAULT pg_catalog.clock_timestamp());
GRANT INSERT, SELECT ON public.canary TO PUBLIC;
CREATE SCHEMA "$super";
};
my $n = 0;
for my $schema ('public', $super)
{
	my $qs = qq{"$schema"};
	for my $o (@operators)
	{
		my ($op, $l, $r, $ret, $body) = @$o;
		$n++;
		$plant_sql .= qq{
CREATE FUNCTION $qs.canary_op_$n($l, $r) RETURNS $ret LANGUAGE plpgsql AS \$c\$
BEGIN
    INSERT INTO public.canary (what, who, backend) VALUES
        ('$schema.$op($l, $r)', pg_catalog.current_user(),
         pg_catalog.current_setting('application_name'));
    RETURN $body;
END \$c\$;
CREATE OPERATOR $qs.$op (LEFTARG = $l, RIGHTARG = $r, FUNCTION = $qs.canary_op_$n);
};
	}
	for my $f (@functions)
	{
		my ($name, $args, $ret, $body) = @$f;
		$plant_sql .= qq{
CREATE FUNCTION $qs.$name($args) RETURNS $ret LANGUAGE plpgsql AS \$c\$
BEGIN
    INSERT INTO public.canary (what, who, backend) VALUES
        ('$schema.$name($args)', pg_catalog.current_user(),
         pg_catalog.current_setting('application_name'));
    RETURN $body;
END \$c\$;
};
	}
}
$plant_sql .= qq{
ALTER DATABASE canary SET search_path = "\$user", public, pg_catalog;
};
$node->safe_psql('canary', $plant_sql);

# Containers owned by alice.  p_plain takes the direct path, p_trig (a
# DELETE trigger) the statement path; w_* are for the worker.
$node->safe_psql('canary', q{
CREATE EXTENSION ttl;
CREATE SCHEMA app AUTHORIZATION alice;
CREATE SCHEMA app2 AUTHORIZATION alice;
GRANT USAGE ON SCHEMA app2 TO bob;
SET ROLE alice;
CREATE FUNCTION app.noop() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RETURN OLD; END $$;
CREATE TABLE app.p_plain (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE app.p_trig (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE app.w_plain (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE app.w_trig (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE app.fresh (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE app.fresh2 (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE app.d_plain (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE app.d_trig (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TRIGGER d_trig_noop BEFORE DELETE ON app.d_trig FOR EACH ROW EXECUTE FUNCTION app.noop();
CREATE TABLE app.dropme (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TRIGGER p_trig_noop BEFORE DELETE ON app.p_trig FOR EACH ROW EXECUTE FUNCTION app.noop();
CREATE TRIGGER w_trig_noop BEFORE DELETE ON app.w_trig FOR EACH ROW EXECUTE FUNCTION app.noop();
SELECT ttl.enable('app.p_plain', -1);
SELECT ttl.enable('app.p_trig', -1);
SELECT ttl.enable('app.w_plain', -1);
SELECT ttl.enable('app.w_trig', -1);
SELECT ttl.enable('app.dropme', 60);
SELECT ttl.enable('app.d_plain', -1, deadline_property => 'until');
SELECT ttl.enable('app.d_trig', -1, deadline_property => 'until');
CREATE TABLE app.alt (id int PRIMARY KEY, note text, doc jsonb NOT NULL);
SELECT ttl.enable('app.alt', 60);
INSERT INTO app.fresh SELECT g, '{}' FROM generate_series(1, 5) g;
});

# A worker connected before the search_path was set would not see it.
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
	  . " WHERE backend_type = 'ttl worker' AND datname = 'canary'");

sub canary_rows
{
	return $node->safe_psql('canary',
		'SELECT what, who, backend FROM public.canary ORDER BY at');
}

sub reset_canary
{
	$node->safe_psql('canary', 'TRUNCATE public.canary');
	return;
}

# As the attacked superuser: a fresh session with the database's default
# search_path.
sub hostile_psql
{
	my ($sql) = @_;
	local $ENV{PGOPTIONS};
	delete $ENV{PGOPTIONS};
	my ($ret, $out, $err) = $node->psql('canary', $sql);
	diag($err) if $ret != 0;
	return $ret;
}

# Positive control: an unqualified call picks the plant, in each schema.
hostile_psql(q{SELECT 1::oid = 'pg_class'::regclass, 1::bigint + 1::bigint});
hostile_psql(q{SET search_path = public, pg_catalog; SELECT pg_catalog.count(*) FROM pg_class WHERE oid = 'pg_class'::regclass});
my $control = canary_rows();
like($control, qr/^\Q$super\E\.=\(oid, regclass\)\|\Q$super\E\|/m,
	'control: a plant in the superuser\'s schema fires when called unqualified');
like($control, qr/^\Q$super\E\.\+\(bigint, bigint\)\|/m,
	'control: ... also one that pg_catalog has too, pg_catalog being last');
like($control, qr/^public\.=\(oid, regclass\)\|/m,
	'control: ... and a plant in public');
reset_canary();

# The worker: it purges the w_* containers (real clock, ttl 1 s).
$node->safe_psql('canary', q{
SET ROLE alice;
INSERT INTO app.w_plain SELECT g, '{"ttl": 1}' FROM generate_series(1, 20) g;
INSERT INTO app.w_trig SELECT g, '{"ttl": 1}' FROM generate_series(1, 20) g;
INSERT INTO app.p_plain SELECT g, '{"ttl": 100000}' FROM generate_series(1, 20) g;
INSERT INTO app.p_trig SELECT g, '{"ttl": 100000}' FROM generate_series(1, 20) g;
INSERT INTO app.d_plain SELECT g, '{"until": "2099-01-01T00:00:00Z"}' FROM generate_series(1, 20) g;
INSERT INTO app.d_trig SELECT g, '{"until": 4070908800}' FROM generate_series(1, 20) g;
});
ok( $node->poll_query_until('canary',
		'SELECT (SELECT pg_catalog.count(*) FROM app.w_plain)'
		  . ' OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM app.w_trig)', '0'),
	'worker purged both containers');
# one more full round after that, with nothing to delete
wait_seconds($node, 2);
is(canary_rows(), '', 'canary empty after the worker\'s rounds');
reset_canary();

for my $path (@paths)
{
	my ($label, $sql) = @$path;
	is(hostile_psql($sql), 0, "$label runs");
	is(canary_rows(), '', "canary empty after $label");
	reset_canary();
}

is( $node->safe_psql('canary',
		'SELECT (SELECT pg_catalog.count(*) FROM app.p_plain)'
		  . ' OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM app.p_trig)'),
	'0', 'the superuser purges deleted the p_* rows (the paths ran)');
is( $node->safe_psql('canary',
		'SELECT (SELECT pg_catalog.count(*) FROM app.d_plain)'
		  . ' OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM app.d_trig)'),
	'0', 'the superuser purges deleted the d_* rows by their deadline (the paths ran)');
is( $node->safe_psql('canary',
		"SELECT pg_catalog.count(*) FROM ttl.registry WHERE relid::oid OPERATOR(pg_catalog.=) 'app.fresh'::regclass::oid"),
	'0', 'ttl.disable ran');
is( $node->safe_psql('canary',
		"SELECT c.relowner::pg_catalog.regrole::pg_catalog.text, r.doc_column"
		  . " FROM ttl.registry r JOIN pg_catalog.pg_class c"
		  . " ON c.oid OPERATOR(pg_catalog.=) r.live_view::pg_catalog.oid"
		  . " WHERE r.live_view OPERATOR(pg_catalog.=) 'app2.alt2_live'::pg_catalog.regclass"),
	'bob|body', 'the ALTER TABLE paths ran (view renamed, moved, given away; document column followed)');

# after everything, the worker's later rounds still planted nothing
wait_seconds($node, 2);
is(canary_rows(), '', 'canary still empty at the end');

$node->stop;
done_testing();
