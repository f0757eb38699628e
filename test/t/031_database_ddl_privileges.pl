# Only a role allowed to run DROP DATABASE, ALTER DATABASE ... RENAME or
# CREATE DATABASE ... TEMPLATE stops the purge worker of that database for
# the command: a role that core refuses (CREATEDB only, cloning a database
# it does not own; not the owner; the owner without CREATEDB; an OWNER it
# cannot become) gets its permission error and the worker keeps running
# (no worker is terminated).  The permitted owner's own commands still work.
# (Issue 12: a worker serves a database for a round and leaves, so not "the
# same pid" but "no worker terminated"; a slow backlog keeps a worker in
# each database.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $node = ttl_node('dbpriv');

$node->safe_psql('postgres', q{
CREATE ROLE creator LOGIN CREATEDB;
CREATE ROLE vowner LOGIN;
CREATE ROLE cowner LOGIN CREATEDB;
CREATE DATABASE victim OWNER vowner;
CREATE DATABASE mine OWNER cowner;
});
for my $db ('victim', 'mine')
{
	$node->safe_psql($db, q{
CREATE EXTENSION ttl;
CREATE TABLE c (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('c', -1);
CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_catalog.pg_sleep(0.005); RETURN OLD; END $$;
CREATE TRIGGER c_slow BEFORE DELETE ON c FOR EACH ROW EXECUTE FUNCTION public.slow();
INSERT INTO c SELECT g, '{"ttl": 1}' FROM generate_series(1, 20000) g;
});
}

sub settled_worker
{
	my ($db) = @_;
	$node->poll_query_until('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl worker'"
		  . " AND datname = '$db' AND query ~ '^ttl purge of c: '", '1')
	  or die "no busy worker in $db";
	return 1;
}

# Run $sql as $role; it must fail with $err_re, and terminate no worker.
sub refused_keeps_worker
{
	my ($role, $sql, $db, $err_re, $name) = @_;
	settled_worker($db);
	my $log_offset = -s $node->logfile;
	my ($rc, $out, $err) = $node->psql('postgres', $sql,
		extra_params => [ '-U', $role ]);
	isnt($rc, 0, "$name: refused");
	like($err, $err_re, "$name: core's permission error");
	ok( !$node->log_contains(
			qr/terminating background worker "ttl worker" due to administrator command/,
			$log_offset),
		"$name: the worker of $db was not stopped");
	return;
}

# CREATEDB only, cloning a database it does not own (not a template)
refused_keeps_worker('creator', 'CREATE DATABASE x TEMPLATE victim', 'victim',
	qr/permission denied to copy database "victim"/,
	'CREATEDB role, TEMPLATE of a database it does not own');
# ... and again: it cannot kill the worker repeatedly either
refused_keeps_worker('creator', 'CREATE DATABASE x TEMPLATE victim', 'victim',
	qr/permission denied to copy database "victim"/,
	'CREATEDB role, second try');
# the owner of the template, giving the new database to a role it cannot
# become
refused_keeps_worker('cowner', 'CREATE DATABASE x TEMPLATE mine OWNER vowner', 'mine',
	# 15: "must be member of role"; 16+: "must be able to SET ROLE"
	qr/must be (member of|able to SET) role "vowner"/i,
	'template owner, OWNER a role it is not a member of');
# conflicting options: core refuses the command before it looks for
# connections
refused_keeps_worker('cowner', 'CREATE DATABASE x TEMPLATE mine OWNER cowner OWNER cowner', 'mine',
	qr/conflicting or redundant options/,
	'template owner, an option given twice');
# not the owner
refused_keeps_worker('creator', 'DROP DATABASE victim', 'victim',
	qr/must be owner of database victim/, 'DROP DATABASE by a non-owner');
refused_keeps_worker('creator', 'ALTER DATABASE victim RENAME TO v2', 'victim',
	qr/must be owner of database victim/, 'RENAME by a non-owner');
# the owner without CREATEDB may not rename
refused_keeps_worker('vowner', 'ALTER DATABASE victim RENAME TO v2', 'victim',
	qr/permission denied to rename database/, 'RENAME by an owner without CREATEDB');

# control: the permitted owner clones and renames its database; the worker
# is stopped for the command, so no "being accessed by other users"
settled_worker('mine');
my ($rc, $out, $err) = $node->psql('postgres', 'CREATE DATABASE minecopy TEMPLATE mine',
	extra_params => [ '-U', 'cowner' ]);
is($rc, 0, 'the owner (CREATEDB) clones its own database') or diag $err;
settled_worker('mine');
($rc, $out, $err) = $node->psql('postgres', 'ALTER DATABASE mine RENAME TO mine2',
	extra_params => [ '-U', 'cowner' ]);
is($rc, 0, 'the owner (CREATEDB) renames its own database') or diag $err;
# a superuser clones any database
settled_worker('victim');
($rc, $out, $err) = $node->psql('postgres', 'CREATE DATABASE victimcopy TEMPLATE victim');
is($rc, 0, 'a superuser clones a database it does not own') or diag $err;
# and the renamed database is served again
ok(settled_worker('mine2'), 'mine2 has a worker again');

$node->stop;
done_testing();
