# Every example in README.md and docs/*.md runs as written.
#
# Each page gets a fresh database on a preloaded server (as a user's would
# be); its blocks run in page order, each in its own psql session:
#   ```sql blocks    run with ON_ERROR_STOP: any error fails the page;
#   ``` blocks       whose first line is an SQL statement are excerpts of a
#                    psql session: every statement runs, and every line of
#                    output the page shows must appear, in order, in what
#                    psql printed (spaces collapsed, column rules reduced to
#                    "---", so widths may differ; output the page leaves out
#                    is not compared);
# other blocks (sh, text, ...) are not run.  A page none of whose sql
# blocks says CREATE EXTENSION ttl gets the extension created first.  An HTML comment on the line
# before a block's fence steers it (invisible when the page is rendered):
#   <!-- doc-test: fragment: REASON -->   not run, for the reason given
#   <!-- doc-test: setup: SQL -->         SQL run first, in the same session
#                                         (the clock the prose sets, say)
#   <!-- doc-test: errors -->             the block shows an error on purpose
#   <!-- doc-test: needs: pg_cron -->     (any block of a page) the page runs
#                                         where pg_cron is installed (it is
#                                         preloaded with cron.database_name
#                                         = this page's database)
# A page's database is doc_<page name> (doc_readme, doc_pg_cron, ...).
# A page that drifts from the code fails this file on every major.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use TtlTest;

my $root = "$FindBin::Bin/../..";
my @pages = ("$root/README.md", sort glob("$root/docs/*.md"));

# pg_cron preloaded too, its database the one of docs/pg-cron.md.
my $pkglib = `pg_config --pkglibdir`;
chomp $pkglib;
my $have_cron = -e "$pkglib/pg_cron.so";
# Version numbers the pages quote are the one ttl.control installs.
open my $ctl, '<', "$root/ttl.control" or die "ttl.control: $!";
my ($version) = map { /^default_version\s*=\s*'([^']+)'/ ? $1 : () } <$ctl>;
close $ctl;
for my $page (@pages)
{
	(my $name = $page) =~ s{^\Q$root\E/}{};
	open my $fh, '<', $page or die "$page: $!";
	my $text = do { local $/; <$fh> };
	close $fh;
	my @quoted = (
		$text =~ /postgresql-\d+-ttl_(\d+\.\d+)-\d+_\w+\.deb/g,
		$text =~ /\bttl-(\d+\.\d+)\.\d+\.zip/g,
		$text =~ /newest (?:SQL )?version \((\d+\.\d+)\)/g);
	next unless @quoted;
	is_deeply([ grep { $_ ne $version } @quoted ], [],
		"$name quotes the version of ttl.control ($version)");
}

my $node = ttl_node('docs', "wal_level = logical\n" . ($have_cron ? "cron.database_name = 'doc_pg_cron'" : ''),
	$have_cron ? 'ttl,pg_cron' : 'ttl');

my $stmt_start = qr/^(?:SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|CALL|SET|RESET|WITH|TABLE|BEGIN|COMMIT|ROLLBACK|EXPLAIN|GRANT|REVOKE|VALUES|COPY|TRUNCATE|PREPARE|EXECUTE|SHOW|ANALYZE|VACUUM)\b/i;

# The fenced blocks of a page: { lang, first_line, lines, marks }.
sub blocks
{
	my ($file) = @_;
	open my $fh, '<', $file or die "$file: $!";
	my @lines = <$fh>;
	close $fh;
	chomp @lines;
	my (@blocks, $cur, @marks);
	for my $i (0 .. $#lines)
	{
		my $l = $lines[$i];
		if (!$cur)
		{
			if ($l =~ /^\s*<!-- doc-test: (.*?) -->\s*$/)
			{
				push @marks, $1;
				next;
			}
			if ($l =~ /^\s*```\s*(\S*)\s*$/)
			{
				my $lang = $1;
				my ($indent) = $l =~ /^(\s*)/;
				$cur = { lang => $lang, line => $i + 1, lines => [], marks => [@marks],
					indent => $indent };
				next;
			}
			@marks = () if $l =~ /\S/;
			next;
		}
		if ($l =~ /^\s*```\s*$/)
		{
			push @blocks, $cur;
			undef $cur;
			@marks = ();
			next;
		}
		$l =~ s/^\Q$cur->{indent}\E//;
		push @{ $cur->{lines} }, $l;
	}
	die "$file: unterminated code block at line $cur->{line}\n" if $cur;
	return @blocks;
}

sub norm
{
	my ($l) = @_;
	$l =~ s/^psql:<stdin>:\d+: //;
	$l =~ s/\s+$//;
	$l =~ s/^\s+//;
	return '---' if $l =~ /^[-+]+$/;
	$l =~ s/\s+/ /g;
	return $l;
}

# psql on database $db reading $sql; returns (exit code, stdout+stderr).
sub run_psql
{
	my ($db, $sql, $stop) = @_;
	my ($out, $err) = ('', '');
	my $script = "\\set ON_ERROR_STOP " . ($stop ? 1 : 0) . "\n"
	  . "\\pset null '(null)'\n" . $sql . "\n";
	my $rc = IPC::Run::run(
		[
			$node->installed_command('psql'), '-X', '-q', '-d',
			$node->connstr($db)
		],
		'<', \$script, '>&', \$out);
	return ($rc ? 0 : 1, $out);
}

for my $page (@pages)
{
	(my $name = $page) =~ s{^\Q$root\E/}{};
	my @bl = blocks($page);
	next unless grep { $_->{lang} eq 'sql' || (!$_->{lang} && @{ $_->{lines} } && $_->{lines}[0] =~ $stmt_start) } @bl;
	(my $db = 'doc_' . lc($name)) =~ s{^doc_docs/}{doc_};
	$db =~ s/\.md$//;
	$db =~ s/[^a-z0-9_]/_/g;
	if (!$have_cron && grep { /^needs: pg_cron$/ } map { @{ $_->{marks} } } @bl)
	{
		note "$name: skipped, pg_cron is not installed here ($pkglib)";
		next;
	}
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	# A page that does not install ttl itself assumes it installed.
	$node->safe_psql($db, 'CREATE EXTENSION ttl')
	  unless grep { $_->{lang} eq 'sql' && join("\n", @{ $_->{lines} }) =~ /CREATE EXTENSION (IF NOT EXISTS )?ttl/i } @bl;
	for my $b (@bl)
	{
		my @marks = @{ $b->{marks} };
		my ($fragment) = map { /^fragment: (.*)/ ? $1 : () } @marks;
		my @setup = map { /^setup: (.*)/ ? $1 : () } @marks;
		my $errors = grep { $_ eq 'errors' } @marks;
		my $where = "$name:$b->{line}";
		my $is_excerpt = !$b->{lang} && @{ $b->{lines} } && $b->{lines}[0] =~ $stmt_start;
		next unless $b->{lang} eq 'sql' || $is_excerpt;
		if (defined $fragment)
		{
			note "$where: fragment ($fragment)";
			next;
		}
		my $setup = join("\n", @setup);
		if ($b->{lang} eq 'sql')
		{
			my ($rc, $out) = run_psql($db, join("\n", "\\set QUIET on", $setup, @{ $b->{lines} }), !$errors);
			ok($rc == 0 && ($errors || $out !~ /^(psql:<stdin>:\d+: )?ERROR:/m),
				"$where runs") or diag($out);
			next;
		}
		# An excerpt: statements and the output shown after each.
		my (@stmts, $cur);
		for my $l (@{ $b->{lines} })
		{
			if (!$cur || ($cur->{done} && $l =~ $stmt_start))
			{
				$cur = { sql => [], want => [], done => 0 };
				push @stmts, $cur;
			}
			if (!$cur->{done})
			{
				push @{ $cur->{sql} }, $l;
				$cur->{done} = 1 if $l =~ /;\s*(--.*)?$/;
			}
			else
			{
				push @{ $cur->{want} }, $l;
			}
		}
		my ($script, @want) = ($setup);
		for my $s (@stmts)
		{
			my $tag = '@@doc-test statement ' . scalar(@want) . '@@';
			$script .= "\n\\echo '$tag'\n" . join("\n", @{ $s->{sql} });
			push @want, [ grep { $_ ne '' } map { norm($_) } @{ $s->{want} } ];
		}
		my ($rc, $out) = run_psql($db, $script, 0);
		my @parts = split /^\@\@doc-test statement \d+\@\@\n/m, $out;
		shift @parts;    # the set-up's output
		my $ok = @parts == @want;
		my $why = $ok ? '' : "ran " . scalar(@parts) . " statements of " . scalar(@want);
		for my $k (0 .. $#want)
		{
			last unless $ok;
			my @got = grep { $_ ne '' } map { norm($_) } split /\n/, $parts[$k];
			my $j = 0;
			for my $w (@{ $want[$k] })
			{
				$j++ while $j < @got && $got[$j] ne $w;
				if ($j >= @got)
				{
					$ok = 0;
					$why = "statement " . ($k + 1) . ": shown line not printed: $w\nprinted:\n" . join("\n", @got);
					last;
				}
				$j++;
			}
		}
		ok($ok, "$where shows what psql prints") or diag($why);
	}
}

$node->stop;
done_testing();
