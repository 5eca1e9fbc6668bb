# test/t/050_failover.pl -- when a node cannot be reached, the tasks whose
# partition classes have another placement run there, in the same
# statement: a node stopped before a query, and a node killed while its
# tasks wait (before any of their rows reached the caller).  EXPLAIN ANALYZE
# says which tasks moved; the planner then goes around the node for a
# while; a class with no other placement keeps the clear error naming the
# node.  Every answer is compared with the same query on local tables.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ColojoinTest;

my $c = cj_new_cluster(name => 'failover', nodes => 3);
my $coord = $c->{coordinator};
my ($node1, $node2, $node3) = @{ $c->{nodes} };

# a, b: 6 classes, class r on n(r % 3 + 1) and a replica on the next node;
# c: the same placement, no replicas
$coord->safe_psql(
	'postgres', q{
CREATE TABLE a (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('a', ARRAY['n1', 'n2', 'n3'], 6);
CREATE TABLE b (k int, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('b', NULL, colocate_with => 'a');
CREATE TABLE c (k int, x int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('c', NULL, colocate_with => 'a');
CREATE TABLE la (k int, v int);
CREATE TABLE lb (k int, w int);
INSERT INTO la SELECT g % 700, g FROM generate_series(1, 3000) g;
INSERT INTO lb SELECT (g * 7) % 800, g FROM generate_series(1, 3000) g;
INSERT INTO a SELECT * FROM la;
INSERT INTO b SELECT * FROM lb;
INSERT INTO c SELECT * FROM la;
SELECT colojoin.add_replica(format('%s_p%s', t, r)::regclass, 'n' || ((r + 1) % 3 + 1))
FROM unnest(ARRAY['a', 'b']) t, generate_series(0, 5) r;
});

my $join = 'SELECT count(*), sum(v), sum(w) FROM a JOIN b USING (k)';
my $ljoin = 'SELECT count(*), sum(v), sum(w) FROM la JOIN lb USING (k)';
my $expected = $coord->safe_psql('postgres', $ljoin);
is($coord->safe_psql('postgres', $join), $expected, 'the join is right with every node up');
like($coord->safe_psql('postgres', "EXPLAIN (COSTS OFF) $join"),
	qr/ColocatedJoin.*Tasks: n1 2, n2 2, n3 2/s, 'two tasks per node');

# --- a node stopped before the query ---------------------------------------------

my $session = cj_session($coord);
is(cj_query($session, 'SELECT 1'), '1', 'a session');
$node1->stop;
my ($out, $err) = cj_query($session, $join);
is($out, $expected, 'node stopped: the join is right through the replicas') or diag($err);
($out, $err) = cj_query($session, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $join");
unlike($out, qr/Tasks: [^\n]*n1/, 'node stopped: the planner goes around n1 now');
($out, $err) =
  cj_query($session, 'SET colojoin.node_failure_memory = 0; '
	  . "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $join");
like($out, qr/Failed Over: .*from n1 to n\d/, 'EXPLAIN ANALYZE says which tasks moved')
  or diag($out, $err);
is(cj_query($session, "RESET colojoin.node_failure_memory; $join"), $expected,
	'and the join is still right');
# the other way round: a new session, which knows nothing of the failure
my $fresh = cj_session($coord);
($out, $err) = cj_query($fresh, $join);
is($out, $expected, 'node stopped: a new session fails over too') or diag($err);
# no other placement: the clear error of today
($out, $err) = cj_query($fresh, 'SELECT count(*) FROM a JOIN c USING (k)');
like($err, qr/could not connect to node "n1"/, 'a class without another placement: the error names the node');
$fresh->quit;

$node1->start;
($out, $err) = cj_query($session, 'SET colojoin.node_failure_memory = 0; ' . $join);
is($out, $expected, 'node back: the join is right');
($out, $err) = cj_query($session, "EXPLAIN (COSTS OFF) $join");
like($out, qr/Tasks: n1 2, n2 2, n3 2/, 'node back: the plan uses n1 again, once the memory is off');
cj_query($session, 'RESET colojoin.node_failure_memory');

# --- a node killed while its tasks wait -------------------------------------------

# node1's shards are locked: its tasks wait there, with no row returned yet
my $locker = cj_lock_tables($node1, 'a_p0', 'a_p3');
my $victim = cj_session($coord);
$victim->query_until(qr/started/, "\\echo started\n$join;\n");
ok( $node1->poll_query_until(
		'postgres', q{SELECT count(*) > 0 FROM pg_stat_activity
		WHERE wait_event_type = 'Lock' AND query LIKE '%colojoin_cursor%'}),
	'kill: a task waits on node1');
$node1->stop('immediate');
($out, $err) = cj_query($victim, 'SELECT 1 AS after');
like($out, qr/\A\Q$expected\E\n1\z/, 'kill: the statement returned the right answer') or diag($out, $err);
unlike($err, qr/ERROR/, 'kill: without an error');
is(cj_query($victim, $join), $expected, 'kill: the next statement is right too');
$victim->quit;
$locker->{run}->kill_kill;
$node1->start;

# --- rows moved: no failover, the error names the node ---------------------------

$node2->stop;
($out, $err) = cj_query($session,
	'SELECT count(*) FROM a JOIN b ON a.v = b.w');
like($err, qr/ERROR:.*node "n2"/, 'a join that moves rows does not fail over: the error names the node');
$node2->start;

$session->quit;
done_testing();
