# Canary for code planted against ttl (issue 10, item 1; issue 25, item 1),
# generated from the catalog.
#
# Two kinds of plants:
#
# - Search-path plants: exact-type overloads of the operators and functions
#   ttl's own SQL uses, in `public` and in a schema named after the
#   bootstrap superuser ("$user" resolves to it), the database's
#   search_path putting both before pg_catalog.  None may ever run.
#
# - Owner plants: alice, an unprivileged role, owns the containers and has
#   planted functions of hers in every place PostgreSQL runs a table
#   owner's code: an index expression (`((doc ->> evil.k()))`, an IMMUTABLE
#   plpgsql function that constant folding runs), a partial-index
#   predicate, the predicate of an index shaped like ttl's deadline index,
#   a row-level security policy (ENABLE + FORCE on evil.box), a column
#   default, a check constraint and a row trigger; on plain tables and on a
#   partitioned one (evil.parts, the plants cloned to its partition).  Running as alice is
#   fine (ttl works on her table as her, in a security-restricted
#   operation); running as anyone else (the superuser or the reader who
#   called a ttl function) is the escalation of issue 25.
#
# - Plants of another owner (1.9, one owner per container tree): mallory
#   owns one partition of alice's partitioned container evil.mixed and has
#   planted an index expression and a row trigger of hers there; alice's
#   container evil.arch_m_c archives into a partitioned table with a
#   partition of mallory's carrying her BEFORE INSERT trigger, and
#   evil.arch_u_c into one with an unlogged partition.  Mallory's plants
#   ("mallory ..." in the log) may run as mallory only, never as alice:
#   ttl skips her partition and refuses those archives (their containers'
#   purges fail, deleting nothing: their rows are counted at the end).
#
# Every plant records itself with RAISE LOG (the server log survives the
# rollback of a call that fails): which plant, current_user, session_user
# and application_name, which names the call.
#
# The calls are generated from the catalog: every function and procedure
# the installed extension owns (pg_depend deptype 'e'), internal ones
# included, is called once per argument list its entry in %calls gives,
# both by the superuser and by `reader` (SELECT, INSERT and UPDATE on the
# containers, nothing else), each call in a FRESH session (index
# expressions are folded once per session and cached) under the hostile
# search_path.  Errors are allowed, except that a superuser call must
# succeed unless its entry says why not (so an argument list cannot rot
# into one that tests nothing).  Trigger and event-trigger functions count
# as called when the statements that fire them ran; those statements are
# run on the container and, as a control, on a twin table with the same
# plants that is no container: a plant that runs as a non-owner on the
# container more often than on the twin is ttl's doing (PostgreSQL itself
# runs defaults, checks and triggers as the writer of an INSERT, and
# folds index expressions as whoever plans a query).
#
# The test fails when a signature of the catalog has no entry in %calls,
# when an entry names no signature of the catalog, and when the set of
# functions called differs from the catalog's: a function added later
# cannot be forgotten.  Positive controls show that both kinds of plant
# fire and are seen when code runs them as the caller.
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
# pg_catalog first, and never read alice's tables (as the superuser that
# would fold her index expressions, which is PostgreSQL's own doing).
# Calls run with this unset (the hostile database default applies).
$ENV{PGOPTIONS} = '-c search_path=pg_catalog';

# ---------------------------------------------------------------------------
# search-path plants
# ---------------------------------------------------------------------------

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

$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE mallory LOGIN;
CREATE ROLE reader LOGIN;
CREATE ROLE writer LOGIN;
CREATE ROLE heir;
CREATE DATABASE canary;
GRANT CREATE ON DATABASE canary TO alice;
});

# What every plant runs to record itself.  RAISE LOG goes to the server
# log only (client_min_messages stays NOTICE) and is not undone by the
# rollback of a call that fails.
sub record_sql
{
	my ($what) = @_;
	return qq{RAISE LOG 'ttl-canary|%|%|%|%|', $what, current_user, session_user,
              pg_catalog.current_setting('application_name');};
}

my $plant_sql = qq{CREATE SCHEMA "$super";\n};
my $n = 0;
for my $schema ('public', $super)
{
	my $qs = qq{"$schema"};
	for my $o (@operators)
	{
		my ($op, $l, $r, $ret, $body) = @$o;
		$n++;
		my $rec = record_sql("'search path: $schema.$op($l, $r)'");
		$plant_sql .= qq{
CREATE FUNCTION $qs.canary_op_$n($l, $r) RETURNS $ret LANGUAGE plpgsql AS \$c\$
BEGIN
    $rec
    RETURN $body;
END \$c\$;
CREATE OPERATOR $qs.$op (LEFTARG = $l, RIGHTARG = $r, FUNCTION = $qs.canary_op_$n);
};
	}
	for my $f (@functions)
	{
		my ($name, $args, $ret, $body) = @$f;
		my $rec = record_sql("'search path: $schema.$name($args)'");
		$plant_sql .= qq{
CREATE FUNCTION $qs.$name($args) RETURNS $ret LANGUAGE plpgsql AS \$c\$
BEGIN
    $rec
    RETURN $body;
END \$c\$;
};
	}
}
$plant_sql .= qq{
ALTER DATABASE canary SET search_path = "\$user", public, pg_catalog;
};
$node->safe_psql('canary', $plant_sql);

# ---------------------------------------------------------------------------
# owner plants: alice's schema evil, her plants and her tables
# ---------------------------------------------------------------------------

$node->safe_psql('canary', q{
CREATE EXTENSION ttl;
CREATE SCHEMA evil AUTHORIZATION alice;
CREATE SCHEMA evil2 AUTHORIZATION alice;
GRANT USAGE ON SCHEMA evil, evil2 TO reader, writer, heir;
});

my $rec = record_sql('plant');
my $owner_sql = qq{
CREATE FUNCTION evil.rec(plant text) RETURNS void LANGUAGE plpgsql VOLATILE AS \$\$
BEGIN
    $rec
END \$\$;
-- an IMMUTABLE function may call a VOLATILE one from plpgsql
CREATE FUNCTION evil.k() RETURNS text LANGUAGE plpgsql IMMUTABLE AS \$\$
BEGIN PERFORM evil.rec('index expression'); RETURN 'k'; END \$\$;
CREATE FUNCTION evil.p() RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS \$\$
BEGIN PERFORM evil.rec('partial-index predicate'); RETURN true; END \$\$;
CREATE FUNCTION evil.dp() RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS \$\$
BEGIN PERFORM evil.rec('deadline-index predicate'); RETURN true; END \$\$;
CREATE FUNCTION evil.pol(id integer) RETURNS boolean LANGUAGE plpgsql VOLATILE AS \$\$
BEGIN PERFORM evil.rec('row-level security policy'); RETURN true; END \$\$;
CREATE FUNCTION evil.dflt() RETURNS text LANGUAGE plpgsql VOLATILE AS \$\$
BEGIN PERFORM evil.rec('column default'); RETURN 'd'; END \$\$;
CREATE FUNCTION evil.chk(doc jsonb) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS \$\$
BEGIN PERFORM evil.rec('check constraint'); RETURN true; END \$\$;
CREATE FUNCTION evil.trg() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM evil.rec('trigger');
    IF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN RETURN OLD; END IF;
    RETURN NEW;
END \$\$;
-- a table with every plant; a container (with the deadline property
-- "until") when asked; partitioned (one partition, the plants cloned to
-- it) when asked
CREATE FUNCTION evil.make(t name, enable boolean, deadline boolean, rls boolean,
                          part boolean DEFAULT false, split boolean DEFAULT false) RETURNS void
LANGUAGE plpgsql AS \$\$
BEGIN
    EXECUTE pg_catalog.format('CREATE TABLE evil.%I (id integer PRIMARY KEY, doc jsonb NOT NULL,'
                              ' note text DEFAULT evil.dflt(), CONSTRAINT %I CHECK (evil.chk(doc)))%s',
                              t, t OPERATOR(pg_catalog.||) '_ev_chk',
                              CASE WHEN part THEN ' PARTITION BY RANGE (id)' ELSE '' END);
    IF part THEN
        -- split: a second partition from 500 on (ids 501 to 503), for mallory
        EXECUTE pg_catalog.format('CREATE TABLE evil.%I PARTITION OF evil.%I FOR VALUES FROM (MINVALUE) TO (%s)',
                                  t OPERATOR(pg_catalog.||) '_p1', t, CASE WHEN split THEN '500' ELSE 'MAXVALUE' END);
        EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE ON evil.%I TO reader', t OPERATOR(pg_catalog.||) '_p1');
    END IF;
    IF split THEN
        EXECUTE pg_catalog.format('CREATE TABLE evil.%I PARTITION OF evil.%I FOR VALUES FROM (500) TO (MAXVALUE)',
                                  t OPERATOR(pg_catalog.||) '_p2', t);
        EXECUTE pg_catalog.format('INSERT INTO evil.%I (id, doc) SELECT g, %L FROM pg_catalog.generate_series(501, 503) g',
                                  t, '{"ttl": 100000, "until": 4070908800}');
    END IF;
    EXECUTE pg_catalog.format('CREATE INDEX %I ON evil.%I ((doc OPERATOR(pg_catalog.->>) evil.k()))',
                              t OPERATOR(pg_catalog.||) '_ev_expr', t);
    EXECUTE pg_catalog.format('CREATE INDEX %I ON evil.%I (id) WHERE evil.p()',
                              t OPERATOR(pg_catalog.||) '_ev_pred', t);
    EXECUTE pg_catalog.format('CREATE INDEX %I ON evil.%I ((ttl.doc_deadline_key(doc, %L::pg_catalog.text)))'
                              ' WHERE ttl.doc_deadline_key(doc, %L::pg_catalog.text) IS NOT NULL AND evil.dp()',
                              t OPERATOR(pg_catalog.||) '_ev_dl', t, 'until', 'until');
    EXECUTE pg_catalog.format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE OR DELETE ON evil.%I'
                              ' FOR EACH ROW EXECUTE FUNCTION evil.trg()', t OPERATOR(pg_catalog.||) '_ev_trg', t);
    EXECUTE pg_catalog.format('CREATE POLICY %I ON evil.%I USING (evil.pol(id))',
                              t OPERATOR(pg_catalog.||) '_ev_pol', t);
    IF rls THEN
        EXECUTE pg_catalog.format('ALTER TABLE evil.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE pg_catalog.format('ALTER TABLE evil.%I FORCE ROW LEVEL SECURITY', t);
    END IF;
    EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE ON evil.%I TO reader', t);
    EXECUTE pg_catalog.format('INSERT INTO evil.%I (id, doc) SELECT g, %L FROM pg_catalog.generate_series(1, 3) g',
                              t, '{"ttl": 100000, "until": 4070908800}');
    IF enable THEN
        PERFORM ttl.enable(pg_catalog.format('evil.%I', t)::pg_catalog.regclass, 100000,
                           deadline_property => CASE WHEN deadline THEN 'until' END);
        EXECUTE pg_catalog.format('GRANT SELECT ON evil.%I TO reader', t OPERATOR(pg_catalog.||) '_live');
    END IF;
END \$\$;
SELECT evil.make('box', true, true, true);
SELECT evil.make('box_twin', false, true, true);
SELECT evil.make('open', true, false, false);
SELECT evil.make('open_twin', false, false, false);
SELECT evil.make('parts', true, false, false, true);
SELECT evil.make('parts_twin', false, false, false, true);
SELECT evil.make('mixed', true, false, false, true, true);
SELECT evil.make('mixed_twin', false, false, false, true, true);
-- containers whose archives have a partition of mallory's, or an unlogged one
CREATE TABLE evil.arch_m_c (id integer PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE evil.arch_u_c (id integer PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('evil.arch_m_c', 100000), ttl.enable('evil.arch_u_c', 100000);
INSERT INTO evil.arch_m_c SELECT g, '{}' FROM pg_catalog.generate_series(1, 3) g;
INSERT INTO evil.arch_m_c SELECT g, '{}' FROM pg_catalog.generate_series(501, 503) g;
INSERT INTO evil.arch_u_c SELECT g, '{}' FROM pg_catalog.generate_series(1, 3) g;
INSERT INTO evil.arch_u_c SELECT g, '{}' FROM pg_catalog.generate_series(501, 503) g;
CREATE TABLE evil.arch_m (id integer, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE evil.arch_m_p1 PARTITION OF evil.arch_m FOR VALUES FROM (MINVALUE) TO (500);
CREATE TABLE evil.arch_m_p2 PARTITION OF evil.arch_m FOR VALUES FROM (500) TO (MAXVALUE);
CREATE TABLE evil.arch_u (id integer, doc jsonb NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE evil.arch_u_p1 PARTITION OF evil.arch_u FOR VALUES FROM (MINVALUE) TO (500);
SELECT ttl.set_archive('evil.arch_m_c', 'evil.arch_m'), ttl.set_archive('evil.arch_u_c', 'evil.arch_u');
CREATE UNLOGGED TABLE evil.arch_u_p2 PARTITION OF evil.arch_u FOR VALUES FROM (500) TO (MAXVALUE);
-- rule 10 under row-level security: evil.r10 (RLS forced, a deadline
-- property) is written by "writer", who has INSERT only; each key it
-- writes is held by an item of alice's that expired at its deadline
-- (1970), so the write replaces it: the DELETE, its trigger and the
-- forced policy run as alice, never as the writer.  Paused, so that no
-- purge removes those items first (a paused container replaces as usual).
SELECT evil.make('r10', true, true, true);
SELECT evil.make('r10_twin', false, true, true);
REVOKE ALL ON evil.r10, evil.r10_twin FROM reader;
GRANT INSERT ON evil.r10, evil.r10_twin TO writer;
INSERT INTO evil.r10 (id, doc)
    SELECT g, '{"until": 1, "secret": "alice"}' FROM pg_catalog.generate_series(5001, 5010) g;
SELECT ttl.pause('evil.r10');
};
alice_psql($owner_sql);

# mallory's plants, on her partitions (given to her by the superuser after
# ttl.enable and ttl.set_archive, the rows already there)
my $mrec = record_sql(q{'mallory ' OPERATOR(pg_catalog.||) plant});
$node->safe_psql('canary', q{
CREATE SCHEMA evilm AUTHORIZATION mallory;
GRANT USAGE ON SCHEMA evilm TO PUBLIC;
GRANT USAGE, CREATE ON SCHEMA evil TO mallory;    -- CREATE INDEX needs CREATE there
ALTER TABLE evil.mixed_p2 OWNER TO mallory;
ALTER TABLE evil.mixed_twin_p2 OWNER TO mallory;
ALTER TABLE evil.arch_m_p2 OWNER TO mallory;
});
{
	local $ENV{PGAPPNAME} = 'setup';
	$node->safe_psql('canary', qq{
CREATE FUNCTION evilm.rec(plant text) RETURNS void LANGUAGE plpgsql VOLATILE AS \$\$
BEGIN
    $mrec
END \$\$;
CREATE FUNCTION evilm.k() RETURNS text LANGUAGE plpgsql IMMUTABLE AS \$\$
BEGIN PERFORM evilm.rec('index expression'); RETURN 'k'; END \$\$;
CREATE FUNCTION evilm.trg() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM evilm.rec('trigger');
    IF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN RETURN OLD; END IF;
    RETURN NEW;
END \$\$;
CREATE INDEX mixed_p2_m ON evil.mixed_p2 ((doc OPERATOR(pg_catalog.->>) evilm.k()));
CREATE INDEX mixed_twin_p2_m ON evil.mixed_twin_p2 ((doc OPERATOR(pg_catalog.->>) evilm.k()));
CREATE TRIGGER m BEFORE INSERT OR UPDATE OR DELETE ON evil.mixed_p2 FOR EACH ROW EXECUTE FUNCTION evilm.trg();
CREATE TRIGGER m BEFORE INSERT OR UPDATE OR DELETE ON evil.mixed_twin_p2 FOR EACH ROW EXECUTE FUNCTION evilm.trg();
CREATE TRIGGER m BEFORE INSERT ON evil.arch_m_p2 FOR EACH ROW EXECUTE FUNCTION evilm.trg();
}, extra_params => [ '-U', 'mallory' ]);
}

# Containers of the search-path part: w_* for the worker (w_trig has a
# DELETE trigger: the statement path).
alice_psql(q{
CREATE SCHEMA w;
CREATE FUNCTION w.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$;
CREATE TABLE w.w_plain (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE w.w_trig (id int PRIMARY KEY, doc jsonb NOT NULL);
CREATE TRIGGER w_trig_noop BEFORE DELETE ON w.w_trig FOR EACH ROW EXECUTE FUNCTION w.noop();
SELECT ttl.enable('w.w_plain', -1);
SELECT ttl.enable('w.w_trig', -1);
});

# A worker connected before the search_path was set would not see it.
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
	  . " WHERE backend_type = 'ttl worker' AND datname = 'canary'");

# SQL as alice (her own session: everything her plants do here runs as her).
sub alice_psql
{
	my ($sql) = @_;
	local $ENV{PGAPPNAME} = 'setup';
	$node->safe_psql('canary', $sql, extra_params => [ '-U', 'alice' ]);
	return;
}

# ---------------------------------------------------------------------------
# the calls
# ---------------------------------------------------------------------------

my $call_no = 0;
my %call_of_app;    # application_name -> call
my @calls;

# SQL in a fresh session as $c{role} under the hostile search_path;
# returns the call.
sub run_call
{
	my (%c) = @_;
	local $ENV{PGOPTIONS};
	delete $ENV{PGOPTIONS};
	$call_no++;
	my $app = "ttl-canary-call-$call_no";
	local $ENV{PGAPPNAME} = $app;
	my ($ret, $out, $err) = $node->psql('canary', $c{sql},
		extra_params => [ '-U', $c{role} ]);
	my $call = { %c, app => $app, ret => $ret, err => $err };
	$call_of_app{$app} = $call;
	push @calls, $call;
	return $call;
}

my $doc = q{'{"ttl": 60, "_ts": 1700000000, "until": 4070908800, "n": 5, "a": {"b": 1}}'::jsonb};
# box: RLS forced, a deadline property; open: neither; parts: partitioned;
# mixed: partitioned, its second partition mallory's
my @containers = ('evil.box', 'evil.open', 'evil.parts', 'evil.mixed');
my $fresh_no = 0;

# A new table with every plant, made by alice: 'table' (no container),
# 'container', 'deadline' (a container with a deadline property), 'pair'
# (a container and its twin: returns both names).
sub fresh
{
	my ($kind) = @_;
	$fresh_no++;
	my $t = "f$fresh_no";
	my $enable = $kind eq 'table' ? 'false' : 'true';
	my $deadline = $kind eq 'deadline' ? 'true' : 'false';
	my $sql = "SELECT evil.make('$t', $enable, $deadline, false);";
	$sql .= "SELECT evil.make('${t}_twin', false, false, false);" if $kind eq 'pair';
	alice_psql($sql);
	return $kind eq 'pair' ? ("evil.$t", "evil.${t}_twin") : "evil.$t";
}

sub sel { my ($f, @args) = @_; return "SELECT $f(" . join(', ', @args) . ');'; }
sub reg { return "'$_[0]'::regclass"; }
sub on_containers { my ($f, @rest) = @_; return map { sel($f, reg($_), @rest) } @containers; }

# After "SET ttl.now_override" to 2100 (superuser only) every item of the
# containers is due.
my $future = q{SET ttl.now_override = '2100-01-01 00:00:00+00';};
my $id = 1000;

# Statements that fire the trigger and event-trigger functions: each runs
# on a container and on its twin.
sub stamp_statements
{
	return map {
		my ($c) = $_;
		(map { { sql => $_ =~ s/%t/$c/gr, twin => $_ =~ s/%t/${c}_twin/gr } }
		  "INSERT INTO %t (id, doc) VALUES (" . $id++ . ", '{\"ttl\": 100000}');",
		  "UPDATE %t SET doc = doc WHERE id = 1;")
	} @containers;
}

# Rule 10 by the INSERT-only writer: a key of evil.r10 held by an expired
# item (5001.., made above), and a fresh key on the twin (whose insert
# then runs the same plants as the writer: a conflict there would stop
# before some of them).
my $r10_id = 5001;
my $r10_twin_id = 6001;
sub r10_statements
{
	return { as => 'writer',
			 sql => "INSERT INTO evil.r10 (id, doc) VALUES (" . $r10_id++ . ", '{\"ttl\": 100000, \"by\": \"writer\"}');",
			 twin => "INSERT INTO evil.r10_twin (id, doc) VALUES (" . $r10_twin_id++ . ", '{\"ttl\": 100000, \"by\": \"writer\"}');" };
}

# ALTER TABLE of a fresh container and its twin; %t the table, %n its bare name.
my @alter_table = (
	[ 'ALTER TABLE %t ADD COLUMN extra int;' ],
	[ 'ALTER TABLE %t RENAME COLUMN note TO note2;' ],
	[ 'ALTER TABLE %t DROP COLUMN note;' ],
	[ 'ALTER TABLE %t ALTER COLUMN note TYPE varchar(100);' ],
	[ 'ALTER TABLE %t RENAME COLUMN doc TO body;' ],
	[ 'ALTER TABLE %t ENABLE ROW LEVEL SECURITY; ALTER TABLE %t FORCE ROW LEVEL SECURITY;'
	  . ' ALTER TABLE %t NO FORCE ROW LEVEL SECURITY; ALTER TABLE %t DISABLE ROW LEVEL SECURITY;' ],
	[ 'ALTER TABLE %t RENAME TO %n_renamed;' ],
	[ 'ALTER TABLE %t SET SCHEMA evil2;' ],
	[ 'ALTER TABLE %t OWNER TO heir;' ],
	[ 'ALTER TABLE %t DROP COLUMN doc;', 'a container refuses to lose its document column (0A000)' ],
);
my @drop_table = ([ 'DROP TABLE %t CASCADE;' ]);

sub on_fresh_pairs
{
	my ($list) = @_;
	return map {
		my ($tmpl, $fails) = @$_;
		my ($c, $t) = fresh('pair');
		my %s;
		for ([ sql => $c ], [ twin => $t ])
		{
			my ($k, $name) = @$_;
			(my $bare = $name) =~ s/^evil\.//;
			$s{$k} = $tmpl =~ s/%t/$name/gr =~ s/%n/$bare/gr;
		}
		$s{fails} = $fails;
		\%s
	} @$list;
}

# Every function and procedure of the extension, by its signature in the
# catalog (pg_catalog first: "ttl.f(regclass,integer)"): a sub returning the
# calls for one role, each a statement or { sql, twin, fails }.  Optional
# keys: future => 1 (the superuser's calls run with every item due),
# fails => why the superuser's call raises.  Arguments: regclass -> the
# containers (or a fresh table where the call changes or drops it), jsonb
# -> a document, integer -> 60, text -> a property name, timestamptz ->
# ttl.now().
my %calls = (
	'ttl.now()' => { calls => sub { sel('ttl.now') } },
	'ttl.doc_ts(jsonb)' => { calls => sub { sel('ttl.doc_ts', $doc) } },
	'ttl.doc_ttl(jsonb)' => { calls => sub { sel('ttl.doc_ttl', $doc) } },
	'ttl.doc_expiry(jsonb)' => { calls => sub { sel('ttl.doc_expiry', $doc) } },
	'ttl.doc_expired(jsonb,integer,bigint)' => { calls => sub { sel('ttl.doc_expired', $doc, 60, 1700000100) } },
	'ttl.doc_expired(jsonb,integer,bigint,text)' =>
	  { calls => sub { sel('ttl.doc_expired', $doc, 60, 1700000100, q{'until'}) } },
	'ttl.live(jsonb,regclass)' => { calls => sub { map { sel('ttl.live', $doc, reg($_)) } @containers } },
	'ttl.field(jsonb,text)' => { calls => sub { sel('ttl.field', $doc, q{'until'}) } },
	'ttl.field_bigint(jsonb,text)' => { calls => sub { sel('ttl.field_bigint', $doc, q{'n'}) } },
	'ttl.field_float(jsonb,text)' => { calls => sub { sel('ttl.field_float', $doc, q{'n'}) } },
	'ttl.path(jsonb,text[])' => { calls => sub { sel('ttl.path', $doc, q{'a'}, q{'b'}) } },    # VARIADIC
	'ttl.contains(jsonb,jsonb)' => { calls => sub { sel('ttl.contains', $doc, q{'{"n": 5}'::jsonb}) } },
	'ttl.doc_purge_key(jsonb)' => { calls => sub { sel('ttl.doc_purge_key', $doc) } },
	'ttl.doc_deadline_key(jsonb,text)' => { calls => sub { sel('ttl.doc_deadline_key', $doc, q{'until'}) } },
	'ttl.calculate(integer,integer,bigint,timestamp with time zone,timestamp with time zone)' =>
	  { calls => sub { sel('ttl.calculate', 60, 'NULL', 1700000000, 'ttl.now()', 'NULL') } },
	'ttl.state(regclass,jsonb)' => { calls => sub { on_containers('ttl.state', $doc) } },
	'ttl.expires_at(regclass,jsonb)' => { calls => sub { on_containers('ttl.expires_at', $doc) } },
	'ttl.is_expired(regclass,jsonb)' => { calls => sub { on_containers('ttl.is_expired', $doc) } },
	'ttl._validate(regclass,jsonb,name)' => { calls => sub { on_containers('ttl._validate', $doc, q{'doc'}) } },

	# policy and container administration
	'ttl.enable(regclass,integer,name,text)' => {
		calls => sub {
			(sel('ttl.enable', reg(fresh('table')), 60),
			 sel('ttl.enable', reg(fresh('table')), 60, q{'doc'}, q{'until'}))
		} },
	'ttl._register(regclass,integer,name)' => { calls => sub { sel('ttl._register', reg(fresh('table')), 60, q{'doc'}) } },
	'ttl._existing_rows(regclass,name,boolean)' =>
	  { calls => sub { map { (sel('ttl._existing_rows', reg($_), q{'doc'}, 'false'),
	                          sel('ttl._existing_rows', reg($_), q{'doc'}, 'true')) } @containers } },
	'ttl._set_objects(regclass,regclass)' =>
	  { calls => sub { my $t = fresh('container'); sel('ttl._set_objects', reg($t), reg("${t}_live")) } },
	'ttl._unregister(regclass)' => { calls => sub { sel('ttl._unregister', reg(fresh('container'))) } },
	# the stamp trigger's arguments (1.9): ttl.enable's writer, the codec for tests
	'ttl._stamp_trigger(regclass,name)' =>
	  { calls => sub { sel('ttl._stamp_trigger', reg(fresh('table')), q{'doc'}) } },
	'ttl._trigger_args(name,text,boolean,integer,boolean,text,integer)' =>
	  { calls => sub { sel('ttl._trigger_args', q{'doc'}, q{'until'}, 'true', 60, 'false', q{'public.arch'}, 'NULL') } },
	'ttl._trigger_args_decode(text[])' =>
	  { calls => sub { sel('ttl._trigger_args_decode', q{'{format=2,doc=doc,deadline=until}'}) } },
	# rule 10's floor (1.9): probes and skips of this database
	'ttl._rule10_counts()' => { calls => sub { sel('ttl._rule10_counts') } },
	'ttl.disable(regclass)' => { calls => sub { sel('ttl.disable', reg(fresh('deadline'))) } },
	'ttl.set_default_ttl(regclass,integer)' => { calls => sub { on_containers('ttl.set_default_ttl', 100000) } },
	'ttl.pause(regclass)' => { calls => sub { sel('ttl.pause', reg(fresh('container'))) } },
	'ttl.resume(regclass)' => {
		calls => sub {
			my $t = fresh('container');
			alice_psql("SELECT ttl.pause('$t');");
			sel('ttl.resume', reg($t))
		} },
	'ttl._follow_table(regclass)' => { calls => sub { on_containers('ttl._follow_table') } },
	'ttl._purge_index_name(name,boolean)' => { calls => sub { sel('ttl._purge_index_name', q{'box'}, 'false') } },
	'ttl.upgrade_purge_index_sql(regclass)' => { calls => sub { on_containers('ttl.upgrade_purge_index_sql') } },
	'ttl._set_append_only(regclass,boolean)' =>
	  { calls => sub { sel('ttl._set_append_only', reg(fresh('container')), 'true') } },
	'ttl._set_append_only(regclass,boolean,text)' =>
	  { calls => sub { sel('ttl._set_append_only', reg(fresh('container')), 'true', q{'none'}) } },
	'ttl.set_replace_expired(regclass,boolean)' =>
	  { calls => sub { (sel('ttl.set_replace_expired', reg(fresh('container')), 'false'),
						sel('ttl.set_replace_expired', reg(fresh('container')), 'true')) } },
	# purge windows (1.9): a window, then none; the parser's questions
	'ttl.set_purge_window(regclass,text)' =>
	  { calls => sub { (sel('ttl.set_purge_window', reg(fresh('container')), q{'22:00-02:00, 12:00-13:00 Europe/Berlin'}),
						sel('ttl.set_purge_window', reg(fresh('container')), 'NULL')) } },
	'ttl._in_purge_window(text,timestamp with time zone)' =>
	  { calls => sub { sel('ttl._in_purge_window', q{'01:00-05:00'}, 'ttl.now()') } },
	'ttl._next_purge_window(text,timestamp with time zone)' =>
	  { calls => sub { sel('ttl._next_purge_window', q{'01:00-05:00 UTC'}, 'ttl.now()') } },
	# retiring partitions (1.9): off on the partitioned containers (a
	# retire mode would drop evil.parts' partition under the later purge
	# calls, which run in any order)
	'ttl.set_retire(regclass,text)' =>
	  { calls => sub { (sel('ttl.set_retire', reg('evil.parts'), q{'off'}),
						sel('ttl.set_retire', reg('evil.mixed'), q{'off'})) } },
	# archives (1.8): a fresh table of the same shape, then none
	'ttl.set_archive(regclass,regclass)' =>
	  { calls => sub { (sel('ttl.set_archive', reg(fresh('container')), reg(fresh('table'))),
						sel('ttl.set_archive', reg(fresh('container')), 'NULL')) } },
	# metrics for monitoring roles (1.9; pg_read_all_stats, walks as the owner)
	'ttl._monitor_backlog(regclass)' => { calls => sub { on_containers('ttl._monitor_backlog') } },
	# change-stream marking per container (1.9; superuser only)
	'ttl.set_mark_purge_deletes(regclass,text)' =>
	  { calls => sub { (sel('ttl.set_mark_purge_deletes', reg(fresh('container')), q{'on'}),
						on_containers('ttl.set_mark_purge_deletes', q{'default'})) } },
	'ttl.set_append_only(regclass,boolean)' =>
	  { calls => sub { sel('ttl.set_append_only', reg(fresh('deadline')), 'true') } },
	'ttl.set_append_only(regclass,boolean,text)' =>
	  { calls => sub { (sel('ttl.set_append_only', reg(fresh('deadline')), 'true', q{'none'}),
	                    sel('ttl.set_append_only', reg(fresh('container')), 'true', q{'brin'})) } },

	# rule 9: deadlines
	'ttl._set_deadline_property(regclass,text)' =>
	  { calls => sub { sel('ttl._set_deadline_property', reg(fresh('container')), q{'until'}) } },
	'ttl._check_deadlines(regclass)' => { calls => sub { on_containers('ttl._check_deadlines') } },
	'ttl._is_deadline_index(regclass,regclass)' => {
		calls => sub {
			map { my $c = $_; map { sel('ttl._is_deadline_index', reg("${c}_$_"), reg($c)) } qw(ev_expr ev_dl ev_pred) }
			  @containers
		} },
	# issue 28: which indexes ttl made (ttl.indexes), and what an index is to purge
	'ttl._own_index(regclass,text)' =>
	  { calls => sub { map { sel('ttl._own_index', reg("${_}_ttl_purge_idx"), q{'purge'}) } @containers } },
	'ttl._purge_index_kind(regclass,regclass)' => {
		calls => sub {
			map { my $c = $_; map { sel('ttl._purge_index_kind', reg("${c}_$_"), reg($c)) } qw(ev_expr ev_dl ev_pred ttl_purge_idx) }
			  @containers
		} },
	'ttl._owned_indexes(regclass,text)' => { calls => sub { on_containers('ttl._owned_indexes', 'NULL') } },
	'ttl._deadline_index_name(name,boolean)' => { calls => sub { sel('ttl._deadline_index_name', q{'box'}, 'false') } },
	'ttl.set_deadline_property(regclass,text)' => {
		calls => sub {
			(sel('ttl.set_deadline_property', reg(fresh('container')), q{'until'}),
			 sel('ttl.set_deadline_property', reg(fresh('deadline')), q{'other'}),
			 sel('ttl.set_deadline_property', reg(fresh('deadline')), 'NULL'))
		} },
	'ttl.deadline_index_sql(regclass,text)' =>
	  { calls => sub { map { (sel('ttl.deadline_index_sql', reg($_), q{'until'}),
	                          sel('ttl.deadline_index_sql', reg($_), q{'other'})) } @containers } },

	# purge
	'ttl.purge(regclass,bigint)' => {
		future => 1,
		calls => sub {
			(on_containers('ttl.purge'), on_containers('ttl.purge', 1),
			 { sql => sel('ttl.purge', reg('evil.arch_m_c')),
			   fails => 'a partition of its archive is mallory\'s (42501)' },
			 { sql => sel('ttl.purge', reg('evil.arch_u_c')),
			   fails => 'a partition of its archive is unlogged (0A000)' },
			 { sql => sel('ttl.purge'),
			   fails => 'evil.arch_*_c fail their batches (ttl.purge() of all containers fails with the first, issue 38 item 6)' })
		} },
	'ttl.run_purge()' => { future => 1, calls => sub { 'CALL ttl.run_purge();' } },
	'ttl._purge_statement(regclass,boolean)' =>
	  { calls => sub { (on_containers('ttl._purge_statement', 'false'), on_containers('ttl._purge_statement', 'true')) } },
	'ttl._purge_plan_options()' => { calls => sub { sel('ttl._purge_plan_options') } },
	'ttl.schedule_purge(text,name)' =>
	  { fails => 'pg_cron is not installed', calls => sub { sel('ttl.schedule_purge', q{'* * * * *'}, q{'canary'}) } },
	'ttl.unschedule_purge(name)' =>
	  { fails => 'pg_cron is not installed', calls => sub { sel('ttl.unschedule_purge', q{'canary'}) } },

	# statistics, previews and the pool
	'ttl.backlog(regclass)' => { future => 1, calls => sub { on_containers('ttl.backlog') } },
	'ttl._behind(regclass,timestamp with time zone)' =>
	  { calls => sub { on_containers('ttl._behind', q{'2000-01-01 00:00+00'}) } },
	'ttl._backlog(regclass)' =>
	  { future => 1, calls => sub { on_containers('ttl._backlog') } },
	# 1.9: ttl.stats' own, the purge key btree read in C where it can
	'ttl._stats_backlog(regclass)' =>
	  { future => 1, calls => sub { (on_containers('ttl._stats_backlog'), 'SELECT * FROM ttl.stats;') } },
	# legal holds (1.8): held_expired walks as the owner, like the backlog
	'ttl._legal_hold_expired(regclass,jsonb)' =>
	  { future => 1,
		calls => sub { (on_containers('ttl._legal_hold_expired', q{'{"n": 5}'::jsonb}),
						'SELECT * FROM ttl.legal_holds;') } },
	'ttl.set_legal_hold(regclass,text,jsonb)' =>
	  { calls => sub { sel('ttl.set_legal_hold', reg(fresh('container')), q{'h'}, q{'{"n": 5}'::jsonb}) } },
	'ttl.release_legal_hold(regclass,text)' => {
		calls => sub {
			my $t = fresh('container');
			alice_psql(qq{SELECT ttl.set_legal_hold('$t', 'h', '{"n": 5}');});
			sel('ttl.release_legal_hold', reg($t), q{'h'})
		} },
	'ttl.preview(regclass,integer,timestamp with time zone)' =>
	  { calls => sub { (on_containers('ttl.preview', 60, 'ttl.now()'), on_containers('ttl.preview', 60)) } },
	'ttl.expiring(regclass,interval,timestamp with time zone)' =>
	  { calls => sub { on_containers('ttl.expiring', q{'1 day'}, 'ttl.now()') } },
	'ttl._databases()' => { calls => sub { (sel('ttl._databases'), 'SELECT * FROM ttl.databases;') } },
	'ttl._worker_pool()' => { calls => sub { (sel('ttl._worker_pool'), 'SELECT * FROM ttl.worker_pool;') } },
	'ttl._purge_progress()' =>
	  { calls => sub { (sel('ttl._purge_progress'), 'SELECT * FROM ttl.purge_progress;') } },

	# Citus (absent here: the functions must still be harmless)
	'ttl._citus_kind(regclass)' => { calls => sub { on_containers('ttl._citus_kind') } },
	'ttl._citus_sync_policy(regclass)' => { calls => sub { on_containers('ttl._citus_sync_policy') } },
	'ttl._local_placements(regclass)' => { calls => sub { on_containers('ttl._local_placements') } },
	'ttl._purge_placements(regclass,bigint)' => { future => 1, calls => sub { on_containers('ttl._purge_placements') } },
	'ttl._placement_stats(regclass)' => { calls => sub { on_containers('ttl._placement_stats') } },
	'ttl._distributed_stats()' =>
	  { calls => sub { (sel('ttl._distributed_stats'), 'SELECT * FROM ttl.distributed_stats;') } },

	# fired by statements
	'ttl.stamp()' => { statements => sub { (stamp_statements(), r10_statements()) } },
	'ttl._ddl_start()' => { statements => sub { on_fresh_pairs(\@alter_table) }, same_as => 'ttl._ddl_end()' },
	'ttl._ddl_end()' => { statements => sub { on_fresh_pairs(\@alter_table) } },
	'ttl._on_sql_drop()' => { statements => sub { on_fresh_pairs(\@drop_table) } },
);

# ---------------------------------------------------------------------------
# the catalog
# ---------------------------------------------------------------------------

my @catalog = split /\n/, $node->safe_psql('canary', q{
SELECT p.oid::regprocedure::text || '|' || p.prokind::text || '|' || p.prorettype::regtype::text
  FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
 WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
   AND d.refclassid = 'pg_extension'::regclass
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'ttl')
 ORDER BY 1});
my %in_catalog;
for (@catalog)
{
	my ($sig, $kind, $ret) = split /\|/;
	$in_catalog{$sig} = { kind => $kind, ret => $ret };
}
cmp_ok(scalar(keys %in_catalog), '>', 50, 'the catalog lists the extension\'s functions');
for my $sig (sort keys %in_catalog)
{
	ok(exists $calls{$sig}, "$sig has an entry in \%calls")
	  or diag("add an argument builder for $sig to test/t/011_canary.pl");
}
for my $sig (sort keys %calls)
{
	ok(exists $in_catalog{$sig}, "entry $sig names a function of the extension");
}

# ---------------------------------------------------------------------------
# positive controls
# ---------------------------------------------------------------------------

sub control
{
	my ($role, $sql) = @_;
	return run_call(control => 1, role => $role, sql => $sql);
}
my @control = (
	control($super, q{SELECT 1::oid = 'pg_class'::regclass, 1::bigint + 1::bigint}),
	control($super, q{SET search_path = public, pg_catalog; SELECT pg_catalog.count(*) FROM pg_class WHERE oid = 'pg_class'::regclass}),
	# PostgreSQL itself folds alice's index expressions for whoever plans a
	# query on her table, and applies her policy to the reader
	control($super, q{SELECT pg_catalog.count(*) FROM evil.open}),
	control('reader', q{SELECT pg_catalog.count(*) FROM evil.box}),
	# core runs mallory's trigger as whoever writes to her partition
	control('reader', q{INSERT INTO evil.mixed_twin (id, doc) VALUES (900, '{}')}),
);

# ---------------------------------------------------------------------------
# the worker
# ---------------------------------------------------------------------------

alice_psql(q{
INSERT INTO w.w_plain SELECT g, '{"ttl": 1}' FROM generate_series(1, 20) g;
INSERT INTO w.w_trig SELECT g, '{"ttl": 1}' FROM generate_series(1, 20) g;
});
ok( $node->poll_query_until('canary',
		'SELECT (SELECT pg_catalog.count(*) FROM w.w_plain)'
		  . ' OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM w.w_trig)', '0'),
	'worker purged both containers');

# ---------------------------------------------------------------------------
# every function, as the superuser and as the reader
# ---------------------------------------------------------------------------

my %called;    # signature -> number of statements run
my %done_statements;
for my $sig (sort keys %calls)
{
	next unless exists $in_catalog{$sig};
	my $e = $calls{$sig};
	for my $role ($super, 'reader')
	{
		if ($e->{statements})
		{
			# one set of statements fires both event triggers
			if ($e->{same_as} && $done_statements{"$e->{same_as}|$role"})
			{
				$called{$sig} += $done_statements{"$e->{same_as}|$role"};
				next;
			}
			for my $s ($e->{statements}->())
			{
				my $as = $s->{as} // $role;
				my $c = run_call(sig => $sig, role => $as, sql => $s->{sql},
					fails => $s->{fails}, as => $s->{as});
				my $t = run_call(sig => $sig, role => $as, sql => $s->{twin}, twin => 1);
				$c->{twin_call} = $t;
				$called{$sig}++;
				$done_statements{"$sig|$role"}++;
			}
			next;
		}
		# a call is its SQL, or { sql, fails } for one allowed to fail
		for my $item ($e->{calls}->($role))
		{
			my ($sql, $fails) = ref $item ? ($item->{sql}, $item->{fails}) : ($item, $e->{fails});
			$sql = $future . $sql if $e->{future} && $role eq $super;
			run_call(sig => $sig, role => $role, sql => $sql, fails => $fails);
			$called{$sig}++;
		}
	}
}
# the worker's rounds over all those containers
wait_seconds($node, 2);

is_deeply([ sort keys %called ], [ sort keys %in_catalog ],
	'the functions called are exactly the catalog\'s');

for my $c (grep { !$_->{control} && !$_->{twin} && $_->{role} eq $super } @calls)
{
	if ($c->{fails})
	{
		note("$c->{sql} (superuser) failed as expected: $c->{fails}") if $c->{ret} != 0;
		next;
	}
	is($c->{ret}, 0, "superuser: $c->{sql} runs") or diag($c->{err});
}

# the writer's rule 10 statements replaced the expired items: the fixture
# ran the path it is for
my @r10 = grep { ($_->{as} // '') eq 'writer' && !$_->{twin} } @calls;
cmp_ok(scalar(@r10), '>', 0, 'the INSERT-only writer wrote through rule 10');
for my $c (@r10)
{
	is($c->{ret}, 0, "writer: $c->{sql} runs") or diag($c->{err});
}
is($node->safe_psql('canary',
		"SELECT pg_catalog.count(*) FROM evil.r10 WHERE id OPERATOR(pg_catalog.<) $r10_id"
		  . " AND doc OPERATOR(pg_catalog.->>) 'by' OPERATOR(pg_catalog.=) 'writer'",
		extra_params => [ '-U', 'alice' ]),
	scalar(@r10), 'each replaced the expired item of alice\'s that held its key');

# the reader reaches the paths that read the containers' definitions (no
# RLS applies to it on open and parts)
for my $c (grep { $_->{role} eq 'reader' && !$_->{control} && !$_->{twin} } @calls)
{
	next unless $c->{sql} =~ /ttl\.(?:preview|expiring|backlog|_backlog|_stats_backlog|_legal_hold_expired)\('evil\.(?:open|parts)'|ttl\.stats/;
	is($c->{ret}, 0, "reader: $c->{sql} runs") or diag($c->{err});
}

# ---------------------------------------------------------------------------
# what the plants saw
# ---------------------------------------------------------------------------

my %owner = (alice => 1, heir => 1);
my @runs;    # [plant, current_user, session_user, application_name]
for my $line (split /\n/, slurp_file($node->logfile))
{
	push @runs, [ $1, $2, $3, $4 ]
	  if $line =~ /LOG:  ttl-canary\|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)\|/;
}
my %runs_of_app;
push @{ $runs_of_app{ $_->[3] } }, $_ for @runs;

# controls
my $seen = sub {
	my ($call) = @_;
	return join("\n", map { "$_->[0] as $_->[1]" } @{ $runs_of_app{ $call->{app} } || [] });
};
like($seen->($control[0]), qr/^search path: \Q$super\E\.=\(oid, regclass\) as \Q$super\E$/m,
	'control: a plant in the superuser\'s schema fires when called unqualified');
like($seen->($control[0]), qr/^search path: \Q$super\E\.\+\(bigint, bigint\) as /m,
	'control: ... also one that pg_catalog has too, pg_catalog being last');
like($seen->($control[1]), qr/^search path: public\.=\(oid, regclass\) as /m,
	'control: ... and a plant in public');
like($seen->($control[2]), qr/^index expression as \Q$super\E$/m,
	'control: an owner plant runs as the superuser who plans a query on the table, and is seen');
like($seen->($control[3]), qr/^row-level security policy as reader$/m,
	'control: ... and the policy plant as the reader');
like($seen->($control[4]), qr/^mallory trigger as reader$/m,
	'control: mallory\'s plant on her partition runs as the writer routed there, and is seen');

# A plant that ran as someone other than its table's owner: alice's (or
# heir's, who inherits her tables) as anyone else, mallory's as anyone but
# mallory, a search-path plant at all.
sub foreign_run
{
	my ($r) = @_;
	return 1 if $r->[0] =~ /^search path: /;
	return $r->[1] ne 'mallory' if $r->[0] =~ /^mallory /;
	return !$owner{ $r->[1] };
}

# Per call: the plants that ran as someone other than the table's owner.
sub foreign_runs
{
	my ($call) = @_;
	my %n;
	$n{"$_->[0] as $_->[1]"}++ for grep { foreign_run($_) } @{ $runs_of_app{ $call->{app} } || [] };
	return \%n;
}

my %by_function;    # signature -> "plant as role" -> 1
for my $c (grep { !$_->{control} && !$_->{twin} } @calls)
{
	my $mine = foreign_runs($c);
	my $twin = $c->{twin_call} ? foreign_runs($c->{twin_call}) : {};
	# what PostgreSQL does to the twin (no container) is not ttl's
	my @bad = map { $mine->{$_} > ($twin->{$_} // 0) ? ($_) : () } sort keys %$mine;
	$by_function{ $c->{sig} }{$_} = 1 for @bad;
	is(join(', ', @bad), '', "no plant ran as a non-owner in: $c->{sql} (as $c->{role})");
}

# the worker, alice's setup sessions and anything else not a call
my @other = grep { !$call_of_app{ $_->[3] } && foreign_run($_) } @runs;
is(join("\n", map { join('|', @$_) } @other), '',
	'no plant ran as a non-owner outside the calls (worker, setup)');

# mallory's partition was left alone by every purge path (counted as her:
# her index expression is folded by whoever plans a query there), and the
# container's last_error names it and both owners
is( $node->safe_psql('canary', 'SELECT pg_catalog.count(*) FROM evil.mixed_p2 WHERE id OPERATOR(pg_catalog.<=) 503',
		extra_params => [ '-U', 'mallory' ]),
	'3', 'mallory\'s partition kept its rows');
like($node->safe_psql('canary', q{SELECT last_error FROM ttl.purge_stats WHERE relid = 'evil.mixed'::regclass}),
	qr/partition evil\.mixed_p2 of container evil\.mixed is owned by mallory, not by the container's owner alice/,
	'last_error names her partition and both owners');

# the archives that do not fit took no row, and their containers lost none
is($node->safe_psql('canary', q{SELECT (SELECT pg_catalog.count(*) FROM evil.arch_m_c), (SELECT pg_catalog.count(*) FROM evil.arch_m),
  (SELECT pg_catalog.count(*) FROM evil.arch_u_c), (SELECT pg_catalog.count(*) FROM evil.arch_u)}),
	'6|0|6|0', 'archives with a partition of another owner or an unlogged one: nothing deleted, nothing archived');

diag("functions that ran a plant as a non-owner:\n"
	  . join('', map { "  $_: " . join(', ', sort keys %{ $by_function{$_} }) . "\n" } sort keys %by_function))
  if %by_function;

$node->stop;
done_testing();
