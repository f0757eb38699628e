# A hot standby never purges (no launcher, no worker), but hides expired
# items, since hiding only reads the clock; once promoted, it starts its
# launcher and worker and purges what expired.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $conf = qq{
shared_preload_libraries = 'ttl'
ttl.naptime = 1
};

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', $conf);
$primary->start;

# the backup is taken before ALTER SYSTEM below: the standby keeps
# ttl.enabled = on (postgresql.auto.conf is not replicated)
$primary->backup('bkp');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'bkp', has_streaming => 1);
$standby->start;

ok( $primary->poll_query_until('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl launcher'", '1'),
	'primary runs a launcher');

# the primary must not purge: the standby's copy is what is looked at
$primary->safe_psql('postgres',
	'ALTER SYSTEM SET ttl.enabled = off; SELECT pg_reload_conf()');
$primary->poll_query_until('postgres', 'SHOW ttl.enabled', 'off')
  or die 'reload not seen';

$primary->safe_psql('postgres', q{
CREATE EXTENSION ttl;
CREATE TABLE c (id int PRIMARY KEY, doc jsonb NOT NULL);
SELECT ttl.enable('c', 3600);
BEGIN;
INSERT INTO c SELECT g, jsonb_build_object('ttl', 1) FROM generate_series(1, 100) g;
INSERT INTO c SELECT g, jsonb_build_object('ttl', -1) FROM generate_series(101, 110) g;
INSERT INTO c SELECT g, '{}' FROM generate_series(111, 120) g;
COMMIT;
});
$primary->wait_for_catchup($standby);

is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't',
	'standby is in recovery');
ok($standby->poll_query_until('postgres', 'SELECT count(*) FROM c_live', '20'),
	'standby hides expired items');
# a few naptimes on the standby, with items expired
my $t0 = $standby->safe_psql('postgres', 'SELECT clock_timestamp()');
$standby->poll_query_until('postgres',
	"SELECT clock_timestamp() > '$t0'::timestamptz + interval '3 s'")
  or die 'clock did not advance';
is($standby->safe_psql('postgres', 'SELECT count(*) FROM c'), '120',
	'standby base table still has every row');
is( $standby->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity"
		  . " WHERE backend_type IN ('ttl launcher', 'ttl worker')"),
	'0', 'no ttl launcher or worker on the standby');
is($standby->safe_psql('postgres', "SELECT ttl.is_expired('c', doc) FROM c WHERE id = 1"),
	't', 'item functions work on the standby');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM c'), '120',
	'primary with ttl.enabled = off purged nothing');
ok(!$standby->log_contains(qr/background worker "ttl|terminated by signal|PANIC/),
	'standby log: no ttl background worker ever started, no crash');

# promotion starts the background purge on the new primary
$standby->promote;
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 'f',
	'standby promoted');
ok( $standby->poll_query_until('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'ttl launcher'", '1'),
	'launcher starts after promotion');
ok($standby->poll_query_until('postgres', 'SELECT count(*) FROM c', '20'),
	'promoted node purges the expired items');
is($standby->safe_psql('postgres', 'SELECT min(id), max(id) FROM c'),
	'101|120', 'only the survivors are left');
is( $standby->safe_psql('postgres',
		"SELECT rows_purged FROM ttl.stats WHERE container = 'c'::regclass"),
	'100', 'promoted node records its purge in ttl.stats');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM c'), '120',
	'old primary untouched');

$standby->stop;
$primary->stop;
done_testing();
