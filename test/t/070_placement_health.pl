# test/t/070_placement_health.pl -- a placement that misses a write is
# stale and never read until colojoin.repair_placement brings it back:
# - with a node stopped, INSERT, UPDATE, DELETE and COPY of a table whose
#   leaves have a replica elsewhere go on; the placements on the stopped
#   node are marked stale (a WARNING says so; colojoin.shards shows it);
# - reads avoid them, also once the node is back with its old rows;
# - a write that fails after marking leaves nothing marked (same transaction);
# - repair_placement copies the leaf back; the placement is then read again
#   and equals its peer.
# Every answer is compared with the same statements on a local twin.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ColojoinTest;

my $c = cj_new_cluster(name => 'health', nodes => 3);
my $coord = $c->{coordinator};
my ($node1, $node2, $node3) = @{ $c->{nodes} };

# a: 4 classes on n1 and n2, each leaf with a replica on n3
$coord->safe_psql(
	'postgres', q{
CREATE TABLE a (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('a', ARRAY['n1', 'n2'], 4);
CREATE TABLE la (k int, v int);
INSERT INTO a SELECT g, g FROM generate_series(1, 400) g;
INSERT INTO la SELECT g, g FROM generate_series(1, 400) g;
SELECT colojoin.add_replica(format('a_p%s', r)::regclass, 'n3') FROM generate_series(0, 3) r;
});

sub same_as_twin
{
	return $coord->safe_psql('postgres',
		'SELECT (SELECT count(*) FROM (SELECT * FROM a EXCEPT ALL SELECT * FROM la) x) + '
		  . '(SELECT count(*) FROM (SELECT * FROM la EXCEPT ALL SELECT * FROM a) y)');
}

sub states
{
	return $coord->safe_psql('postgres',
		"SELECT string_agg(leaf::text || '\@' || node || '=' || state, ' ' ORDER BY leaf::text, node) "
		  . "FROM colojoin.shards WHERE table_name = 'a'::regclass");
}

is(same_as_twin(), '0', 'the table matches its twin');
like(states(), qr/^(\S+=healthy ?)+$/, 'every placement is healthy');

# --- writes with node 1 stopped ----------------------------------------------------

$node1->stop;
my ($rc, $out, $err) = $coord->psql('postgres',
	'INSERT INTO a SELECT g, g FROM generate_series(401, 500) g');
is($rc, 0, 'an INSERT with node 1 down goes on') or diag($err);
like($err, qr/placement of leaf "a_p0" on node "n1" missed this write and is now stale/,
	'a WARNING says which placement missed it');
$coord->safe_psql('postgres', 'INSERT INTO la SELECT g, g FROM generate_series(401, 500) g');
is( states(),
	'a_p0@n1=stale a_p0@n3=healthy a_p1@n2=healthy a_p1@n3=healthy '
	  . 'a_p2@n1=stale a_p2@n3=healthy a_p3@n2=healthy a_p3@n3=healthy',
	'colojoin.shards shows node 1\'s placements stale');
is(same_as_twin(), '0', 'reads go to the healthy placements and are right');

# UPDATE, DELETE and COPY while node 1 is down
($rc, $out, $err) = $coord->psql('postgres',
	"UPDATE a SET v = v + 1 WHERE k % 3 = 0; DELETE FROM a WHERE k % 7 = 0; "
	  . "COPY a FROM STDIN;\n9001\t1\n9002\t2\n9003\t3\n\\.\n");
is($rc, 0, 'UPDATE, DELETE and COPY go on with node 1 down') or diag($err);
$coord->safe_psql('postgres',
	'UPDATE la SET v = v + 1 WHERE k % 3 = 0; DELETE FROM la WHERE k % 7 = 0; '
	  . 'INSERT INTO la VALUES (9001, 1), (9002, 2), (9003, 3)');
is(same_as_twin(), '0', 'and the table is right');

# a failed write marks nothing: the mark is part of the write's transaction
$coord->safe_psql('postgres', 'SELECT colojoin.drop_replica(\'a_p1\', \'n3\')');
$node2->stop;
($rc, $out, $err) = $coord->psql('postgres', 'INSERT INTO a SELECT g, g FROM generate_series(600, 700) g');
isnt($rc, 0, 'a write reaching a leaf with no placement up fails');
like($err, qr/could not connect to node "n2"/, 'naming the node');
$node2->start;
is($coord->safe_psql('postgres', "SELECT count(*) FROM colojoin.stale_placements WHERE server = 'n2'"),
	'0', 'and marked nothing stale');
is(same_as_twin(), '0', 'nor wrote anything');

# --- node 1 back: its placements stay stale, never read ------------------------------

$node1->start;
is(same_as_twin(), '0', 'node 1 back: still right (its old copies are not read)');
my $plan = $coord->safe_psql('postgres', 'EXPLAIN (COSTS OFF) SELECT count(*) FROM a WHERE k = 1');
unlike($plan, qr/Tasks: n1/, 'a point lookup of a stale class does not go to node 1');
is($node1->safe_psql('postgres', 'SELECT count(*) FROM public.a_p0 WHERE k > 400'),
	'0', 'node 1 really holds the old rows');
($rc, $out, $err) = $coord->psql('postgres', 'SELECT count(*) FROM a_p0');
like($err, qr/cannot read "a_p0" through postgres_fdw: its placement on node "n1" is stale/,
	'the stale foreign partition read directly through postgres_fdw is refused');

# --- repair ------------------------------------------------------------------------------

for my $leaf ('a_p0', 'a_p2')
{
	my $rows = $coord->safe_psql('postgres', "SELECT colojoin.repair_placement('$leaf', 'n1')");
	my $expected = $node3->safe_psql('postgres', "SELECT count(*) FROM public.$leaf");
	is($rows, $expected, "repair_placement copies $leaf back: $expected rows");
	my $digest = "SELECT count(*) || ':' || md5(string_agg(x::text, ',' ORDER BY x::text)) FROM public.$leaf x";
	is($node1->safe_psql('postgres', $digest), $node3->safe_psql('postgres', $digest),
		"$leaf on node 1 equals its copy on node 3");
}
like(states(), qr/^(\S+=healthy ?)+$/, 'every placement is healthy again');
($rc, $out, $err) = $coord->psql('postgres', "SELECT colojoin.repair_placement('a_p0', 'n1')");
like($err, qr/is not stale/, 'repairing a healthy placement is refused');
is(same_as_twin(), '0', 'the table is right');
$plan = $coord->safe_psql('postgres', 'EXPLAIN (COSTS OFF) SELECT count(*), sum(v) FROM a');
like($plan, qr/n1/, 'node 1 is read again');
$coord->safe_psql('postgres', 'INSERT INTO a VALUES (10001, 1); INSERT INTO la VALUES (10001, 1)');
is(same_as_twin(), '0', 'and written again');

done_testing();
