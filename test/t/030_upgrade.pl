# test/t/030_upgrade.pl -- a database that has colojoin 1.0 reaches the
# current version with ALTER EXTENSION colojoin UPDATE, keeping its sharded
# tables and replicas; joins, replicas and what the new version adds work
# afterwards; and pg_dump of the updated database restores into a new one
# where the same joins give the same answers.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ColojoinTest;

my $c = cj_new_cluster(name => 'upgrade', nodes => 2);
my $coord = $c->{coordinator};
my ($node1, $node2) = @{ $c->{nodes} };

my $default = $coord->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'colojoin'");
isnt($default, '1.0', "the current version ($default) is newer than 1.0");

# --- a database at version 1.0 --------------------------------------------------

$coord->safe_psql('postgres', 'CREATE DATABASE up');
my $servers = '';
for my $i (1, 2)
{
	my $node = $c->{nodes}[ $i - 1 ];
	$servers .=
	    "CREATE SERVER n$i FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '"
	  . $node->host
	  . "', port '"
	  . $node->port
	  . "', dbname 'postgres');\n"
	  . "CREATE USER MAPPING FOR CURRENT_USER SERVER n$i;\n";
}
$coord->safe_psql(
	'up', qq{
CREATE EXTENSION postgres_fdw;
CREATE EXTENSION colojoin VERSION '1.0';
$servers
CREATE TABLE a (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('a', ARRAY['n1', 'n2'], 4);
CREATE TABLE b (k int, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('b', ARRAY['n2', 'n1'], 4);
CREATE TABLE la (k int, v int);
CREATE TABLE lb (k int, w int);
INSERT INTO la SELECT g % 300, g FROM generate_series(1, 900) g;
INSERT INTO lb SELECT (g * 7) % 320, g FROM generate_series(1, 900) g;
INSERT INTO a SELECT * FROM la;
INSERT INTO b SELECT * FROM lb;
-- b's partitions are on the other node than a's: replicas make them meet
SELECT colojoin.add_replica(format('b_p%s', r)::regclass, CASE WHEN r % 2 = 0 THEN 'n1' ELSE 'n2' END)
FROM generate_series(0, 3) r;
});
is($coord->safe_psql('up', "SELECT extversion FROM pg_extension WHERE extname = 'colojoin'"),
	'1.0', 'the database has colojoin 1.0');
is( $coord->safe_psql(
		'up', q{SELECT count(*) FROM pg_attribute
		WHERE attrelid = 'colojoin.shards'::regclass AND attnum > 0}),
	'7',
	'1.0 has the shards view of seven columns');

my $join = 'SELECT count(*), sum(v), sum(w) FROM a JOIN b USING (k)';
my $ljoin = 'SELECT count(*), sum(v), sum(w) FROM la JOIN lb USING (k)';
my $expected = $coord->safe_psql('up', $ljoin);
is($coord->safe_psql('up', $join), $expected, 'the join is right at 1.0');
like($coord->safe_psql('up', "EXPLAIN (COSTS OFF) $join"),
	qr/ColocatedJoin.*Rows Moved: 0/s, 'and colocated through the replicas');
my $shards_before = $coord->safe_psql('up',
	'SELECT leaf, node, remote_relation, is_replica FROM colojoin.shards ORDER BY 1, 2');

# 1.0 has no write path of its own: the write guard refuses a write that
# would skip a replica
my ($rc, $out, $err) = $coord->psql('up', 'INSERT INTO b VALUES (1, 1)');
isnt($rc, 0, 'at 1.0, a write to a table with replicas is refused');
like($err, qr/cannot insert into "b": leaves .* have replica placements/, 'naming the leaves');

# --- the update -------------------------------------------------------------------

$coord->safe_psql('up', 'ALTER EXTENSION colojoin UPDATE');
is($coord->safe_psql('up', "SELECT extversion FROM pg_extension WHERE extname = 'colojoin'"),
	$default, "ALTER EXTENSION UPDATE reaches $default");
is( $coord->safe_psql(
		'up', 'SELECT leaf, node, remote_relation, is_replica FROM colojoin.shards ORDER BY 1, 2'),
	$shards_before,
	'every placement, replicas included, is still there');
is($coord->safe_psql('up', 'SELECT count(*) FROM colojoin.replicas'), '4', 'the replicas table kept its rows');
is($coord->safe_psql('up', $join), $expected, 'the join is right after the update');
like($coord->safe_psql('up', "EXPLAIN (COSTS OFF) $join"),
	qr/ColocatedJoin.*Rows Moved: 0/s, 'and still colocated');
is( $coord->safe_psql(
		'up', q{SELECT count(DISTINCT node), count(DISTINCT physical_node),
		bool_and(physical_node LIKE '%/postgres') FROM colojoin.shards}),
	'2|2|t',
	'the new physical_node column names the database behind each server');

# this version writes every placement itself
$coord->safe_psql('up', 'INSERT INTO b VALUES (1, 1); INSERT INTO lb VALUES (1, 1)');
$expected = $coord->safe_psql('up', $ljoin);
is($coord->safe_psql('up', $join), $expected, 'after the update a write reaches every placement');
for my $r (0 .. 3)
{
	my $digest = "SELECT count(*), sum(w) FROM public.b_p$r";
	is($node1->safe_psql('postgres', $digest), $node2->safe_psql('postgres', $digest),
		"b_p$r: the replica equals its primary");
}

# --- pg_dump of the updated database restores ---------------------------------------

my $dump = $coord->basedir . '/up.sql';
$coord->command_ok(
	[ 'pg_dump', '--no-sync', '-d', $coord->connstr('up'), '-f', $dump ],
	'pg_dump of the updated database');
$coord->safe_psql('postgres', 'CREATE DATABASE restored');
$coord->command_ok(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $coord->connstr('restored'), '-f', $dump ],
	'the dump restores into a new database');
is($coord->safe_psql('restored', "SELECT extversion FROM pg_extension WHERE extname = 'colojoin'"),
	$default, "the restored database has colojoin $default");
is( $coord->safe_psql(
		'restored', 'SELECT leaf, node, remote_relation, is_replica FROM colojoin.shards ORDER BY 1, 2'),
	$shards_before,
	'with every placement and replica');
is($coord->safe_psql('restored', $join), $expected, 'the join is right in the restored database');
like($coord->safe_psql('restored', "EXPLAIN (COSTS OFF) $join"),
	qr/ColocatedJoin.*Rows Moved: 0/s, 'and colocated there too');

# tables made under 1.0 were never recorded as colojoin's: drop_shards of
# the new version leaves them (and their partitions) alone
is($coord->safe_psql('up', "SELECT colojoin.drop_shards('a')"), '0',
	'drop_shards drops nothing colojoin 1.0 made');
is($coord->safe_psql('up', $join), $expected, 'and the join is still right');
# what 1.1 makes, it records, and drop_shards drops
is( $coord->safe_psql(
		'up', q{CREATE TABLE c (k int) PARTITION BY HASH (k);
		SELECT colojoin.create_shards('c', ARRAY['n1', 'n2'], 2);
		SELECT colojoin.drop_shards('c')}),
	"2\n2",
	'drop_shards drops the remote tables create_shards made after the update');
is($node1->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname LIKE 'c\\_p%'"),
	'0', 'gone from the node');

done_testing();
