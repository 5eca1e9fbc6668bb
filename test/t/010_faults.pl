# test/t/010_faults.pl -- colocated joins when things go wrong: a node down
# before a query, a node killed while its tasks run, statement_timeout,
# pg_cancel_backend (also inside a transaction with a savepoint) and a
# coordinator backend terminated mid-query; and a node held by a lock does
# not keep the other node's tasks from running.  Every failure must be a clear
# error naming the node (and, for a task, its partition class), must leave
# no remote query running, and must leave the coordinator session usable.
#
# No check here rests on time.  Whenever the long join is interrupted (a
# node killed, a timeout, a cancel, a terminated backend), a lock on one of
# n2's shards holds one of n2's tasks while the others run: the join cannot
# end before the interruption, and a statement that ends while the lock is
# still held was interrupted rather than waited for, whatever the machine's
# speed.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ColojoinTest;

my $c = cj_new_cluster(name => 'faults', nodes => 2);
my $coord = $c->{coordinator};
my ($node1, $node2) = @{ $c->{nodes} };

# s_a and s_b: small, colocated (classes 0 and 2 on n1, 1 and 3 on n2).
# big_a and big_b: colocated too, filled directly on the nodes with few
# distinct keys, so that each task's join runs for a long time; their rows
# ignore the hash bounds, which no test here depends on.
$coord->safe_psql(
	'postgres', q{
CREATE TABLE s_a (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('s_a', ARRAY['n1', 'n2'], 4);
CREATE TABLE s_b (k int, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('s_b', ARRAY['n1', 'n2'], colocate_with => 's_a');
CREATE TABLE big_a (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('big_a', ARRAY['n1', 'n2'], colocate_with => 's_a');
CREATE TABLE big_b (k int, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('big_b', ARRAY['n1', 'n2'], colocate_with => 's_a');
INSERT INTO s_a SELECT g, g FROM generate_series(1, 200) g;
INSERT INTO s_b SELECT g % 100, g FROM generate_series(1, 300) g;
ANALYZE s_a, s_b;
});
for my $r (0 .. 3)
{
	my $node = $r % 2 == 0 ? $node1 : $node2;
	$node->safe_psql('postgres',
		    "INSERT INTO big_a_p$r SELECT g % 10, g FROM generate_series(1, 20000) g;\n"
		  . "INSERT INTO big_b_p$r SELECT g % 10, g FROM generate_series(1, 20000) g;\n"
		  . "ANALYZE big_a_p$r, big_b_p$r;");
}

my $small = 'SELECT count(*), sum(s_b.w), min(s_a.v), max(s_a.v) '
  . 'FROM s_a JOIN s_b ON s_a.k = s_b.k';
# a key whose class lives on n1, and a join pruned to it
my $key1 = $coord->safe_psql('postgres',
	"SELECT min(k) FROM generate_series(1, 100) k "
	  . "WHERE satisfies_hash_partition('s_a'::regclass, 4, 0, k)");
my $small_n1 = "$small WHERE s_a.k = $key1";
# (the hint: the nodes' statistics rightly say PostgreSQL's hash join of the
# pulled rows is cheaper, but the tests need the long join on the nodes)
my $big = 'SELECT /*+ ColocatedJoin(a b) */ count(*) FROM (SELECT a.v, b.w FROM big_a a '
  . 'JOIN big_b b ON a.k = b.k OFFSET 0) s';

# the answers, computed by PostgreSQL's own plans
my $expected = $coord->safe_psql('postgres',
	"SET colojoin.enable = off; $small");
my $expected_n1 = $coord->safe_psql('postgres',
	"SET colojoin.enable = off; $small_n1");
like($expected, qr/^[1-9][0-9]*\|/, 'the small join has rows');

like(
	$coord->safe_psql('postgres', "EXPLAIN (COSTS OFF) $small"),
	qr/Custom Scan \(ColocatedJoin\)/,
	'the small join is colocated');
like(
	$coord->safe_psql('postgres', "EXPLAIN (COSTS OFF) $small_n1"),
	qr/Tasks: n1 1\n/,
	'the pruned join runs one task on n1');
like(
	$coord->safe_psql('postgres', "EXPLAIN (COSTS OFF) $big"),
	qr/Custom Scan \(ColocatedJoin\).*Tasks: n1 2, n2 2/s,
	'the long join is colocated, two tasks per node');
is($coord->safe_psql('postgres', $small), $expected, 'the small join is right');

# the node's remote queries of the long join that are still running: its
# tasks' cursors only (the planner's size lookups name the tables too)
my $remote_big_running =
    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
  . "AND state = 'active' AND (query LIKE '%colojoin_cursor%big_a%' OR query LIKE 'FETCH % FROM colojoin_cursor') "
  . "AND pid <> pg_backend_pid()";

sub wait_remote_big_running
{
	my ($node, $what) = @_;
	ok($node->poll_query_until('postgres', "SELECT ($remote_big_running) > 0"),
		"$what: the long join runs on node " . $node->name);
}

sub wait_remote_big_gone
{
	my ($node, $what) = @_;
	ok($node->poll_query_until('postgres', "SELECT ($remote_big_running) = 0"),
		"$what: no remote query of the long join is left on " . $node->name);
}

# A long-lived coordinator session, as an application holds one.
my $session = cj_session($coord);

# the output of one statement in the session, and what it printed on stderr
sub run
{
	return cj_query($session, @_);
}

# start a statement in the session without waiting for it
sub start_statement
{
	my ($sql) = @_;
	$session->{stderr} = '';
	$session->query_until(qr/statement started\n/,
		"\\echo statement started\n$sql;\n\\echo statement finished\n");
}

# wait for the statement started last, as long as it takes up to the
# session's timeout; returns its stdout (undef when it did not finish), its
# stderr, and whether the wait gave up (the session's timeout expired)
sub finish_statement
{
	my $ok = pump_until($session->{run}, $session->{timeout},
		\$session->{stdout}, qr/statement finished\n/);
	my $out = $session->{stdout};
	$out =~ s/statement finished\n//;
	$session->{stdout} = '';
	my $err = $session->{stderr};
	$session->{stderr} = '';
	note("statement stderr: $err");
	return ($ok ? $out : undef, $err, $session->{timeout}->is_expired);
}

# n2's shard of class 3 of the long join locked: the task of that class
# waits (and the join cannot end) until the returned session commits, while
# the other tasks run
sub hold_n2
{
	return cj_lock_tables($node2, 'big_a_p3');
}

sub release
{
	my ($locker) = @_;
	$locker->query_safe('COMMIT');
	$locker->quit;
}

is(run($small), $expected, 'session: the join before any fault');

# --- a node stopped before a query ----------------------------------------

$node2->stop;
my ($rc, $out, $err) = $coord->psql('postgres', $small);
isnt($rc, 0, 'node down, new session: the join fails');
like($err, qr/ERROR:.*node "n2"/, 'the error names the node');
like($err, qr/${\ $node2->port}/, 'and its port');
unlike($err, qr/node "n1"/, 'and not the node that is up');
($rc, $out, $err) = $coord->psql('postgres', $small_n1);
is($out, $expected_n1, 'node down, new session: a join pruned to n1 still runs');

($out, $err) = run($small);
like($err, qr/ERROR:.*node "n2"/,
	'node down, session with a cached connection: the error names the node');
is(run('SELECT 42'), '42', 'the session is usable after the error');
($out, $err) = run($small_n1);
is($out, $expected_n1, 'and a join on the node that is up runs');
is($err, '', 'without a message');
$node2->start;
($out, $err) = run($small);
is($out, $expected, 'node back: the join runs again in the same session')
  or diag($err);

# --- a node killed while its tasks run ------------------------------------

my $locker = hold_n2();
start_statement($big);
wait_remote_big_running($node2, 'kill');
$node2->stop('immediate');
eval { $locker->quit; };    # its session died with node2
my ($bout, $berr) = finish_statement();
ok(defined $bout, 'kill: the statement ended');
like($berr, qr/ERROR:/, 'kill: the statement failed');
like($berr, qr/node "n2"/, 'kill: the error names the node');
like($berr, qr/partition class/, 'kill: and the partition class of the task');
wait_remote_big_gone($node1, 'kill');
is(run('SELECT 42'), '42', 'kill: the session is usable');
($out, $err) = run($small_n1);
is($out, $expected_n1, 'kill: a join on the surviving node runs') or diag($err);
($out, $err) = run($small);
like($err, qr/ERROR:.*node "n2"/, 'kill: a join needing the dead node names it');
$node2->start;
($out, $err) = run($small);
is($out, $expected, 'kill: with the node restarted the join runs again')
  or diag($err);

# --- statement_timeout ------------------------------------------------------

$locker = hold_n2();
run("SET statement_timeout = '1s'");
start_statement($big);
my $expired;
($bout, $berr, $expired) = finish_statement();
like($berr, qr/canceling statement due to statement timeout/,
	'statement_timeout cancels the long join');
ok(defined $bout && !$expired,
	'statement_timeout: promptly, while the lock still held n2\'s tasks');
wait_remote_big_gone($node1, 'statement_timeout');
wait_remote_big_gone($node2, 'statement_timeout');
release($locker);
run('RESET statement_timeout');
($out, $err) = run($small);
is($out, $expected, 'statement_timeout: the session is usable after it')
  or diag($err);

# --- pg_cancel_backend ------------------------------------------------------

my $pid = run('SELECT pg_backend_pid()');
$locker = hold_n2();
start_statement($big);
wait_remote_big_running($node1, 'cancel');
$coord->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
($bout, $berr, $expired) = finish_statement();
like($berr, qr/canceling statement due to user request/,
	'pg_cancel_backend cancels the long join');
ok(defined $bout && !$expired,
	'pg_cancel_backend: promptly, while the lock still held n2\'s tasks');
wait_remote_big_gone($node1, 'cancel');
wait_remote_big_gone($node2, 'cancel');
release($locker);
($out, $err) = run($small);
is($out, $expected, 'cancel: the session is usable after it') or diag($err);

# in a transaction, rolled back to a savepoint: the transaction goes on
run('BEGIN');
($out, $err) = run($small);
is($out, $expected, 'transaction: the join before the savepoint') or diag($err);
run('SAVEPOINT before_big');
$locker = hold_n2();
start_statement($big);
wait_remote_big_running($node2, 'cancel in a transaction');
$coord->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
($bout, $berr) = finish_statement();
like($berr, qr/canceling statement due to user request/,
	'cancel in a transaction: cancelled');
($out, $err) = run('ROLLBACK TO SAVEPOINT before_big');
is($err, '', 'cancel in a transaction: rolled back to the savepoint');
($out, $err) = run($small);
is($out, $expected, 'cancel in a transaction: the join runs after the savepoint')
  or diag($err);
($out, $err) = run('COMMIT');
is($err, '', 'cancel in a transaction: the transaction commits');
wait_remote_big_gone($node1, 'cancel in a transaction');
wait_remote_big_gone($node2, 'cancel in a transaction');
release($locker);
($out, $err) = run($small);
is($out, $expected, 'cancel in a transaction: the next transaction works')
  or diag($err);

$session->quit;

# --- the coordinator backend terminated mid-query ---------------------------

$session = cj_session($coord);
$pid = run('SELECT pg_backend_pid()');
$locker = hold_n2();
start_statement($big);
wait_remote_big_running($node1, 'terminate');
$coord->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
# psql ends when its backend has exited (the statement never finishes)
($bout, $berr, $expired) = finish_statement();
like($berr, qr/terminat/, 'terminate: the session is gone');
ok( !$expired
	  && $coord->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE pid = $pid") eq '0',
	'terminate: the backend exits promptly, while the lock still held n2\'s tasks');
wait_remote_big_gone($node1, 'terminate');
wait_remote_big_gone($node2, 'terminate');
ok( $node1->poll_query_until(
		'postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name LIKE 'colojoin:%'"),
	'terminate: its connections to the nodes are closed');
release($locker);
$session->quit;

is($coord->safe_psql('postgres', $small), $expected, 'a new session joins as before');

# --- every node at once -------------------------------------------------------

# A lock on n1's shards holds its tasks there; n2's tasks must run anyway
# (a scan that waited for n1's rows before sending n2 its tasks never would).
$locker = cj_lock_tables($node1, 's_a_p0', 's_a_p2');
$session = cj_session($coord);
start_statement($small);
ok( $node1->poll_query_until(
		'postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name LIKE 'colojoin:%' "
		  . "AND wait_event_type = 'Lock' AND query LIKE '%s_a_p%'"),
	'at once: the tasks on n1 wait for the lock');
ok( $node2->poll_query_until(
		'postgres',
		"SELECT count(*) >= 2 FROM pg_stat_activity WHERE application_name LIKE 'colojoin:%' "
		  . "AND xact_start IS NOT NULL AND query LIKE '%colojoin_cursor%s_a_p%'"),
	'at once: both tasks on n2 were sent meanwhile');
release($locker);
($bout, $berr) = finish_statement();
chomp $bout if defined $bout;
is($bout, $expected, 'at once: the join is right once n1 is free') or diag($berr);
$session->quit;

$coord->stop;
$node1->stop;
$node2->stop;
done_testing();
