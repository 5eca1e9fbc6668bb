# test/t/020_redistribution_faults.pl -- a redistributed join fails
# cleanly when a node dies or the statement is cancelled while rows move,
# and two sessions redistribute the same tables at once without getting in
# each other's way.  In every case no temporary table of a move
# (colojoin_move_*) is left on a node that is still up, no node session is
# left inside a transaction, and the coordinator session goes on.
#
# The moved table, big, is range partitioned on k (half its rows on each
# node) and joined on big.ref to dim's hash partition key, so its rows are
# repartitioned by dim's hash function: every row crosses the coordinator
# on its way to the node of its class.
#
# Nothing here hopes to catch a move in time: a lock on node2's partition
# (big_p2) holds every move at a known point, after the move into node1 has
# copied node1's own rows and while it waits for node2's, for as long as
# the test needs.  A node is stopped, a statement cancelled or terminated,
# and two sessions checked side by side only once pg_stat_activity shows the
# moves waiting there.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ColojoinTest;

my $c = cj_new_cluster(name => 'redist', nodes => 2);
my $coord = $c->{coordinator};
my ($node1, $node2) = @{ $c->{nodes} };
my $nbig = 200_000;

# --- the tables ---------------------------------------------------------------

for my $i (1, 2)
{
	my $node = $c->{nodes}[ $i - 1 ];
	my ($lo, $hi) = ($i == 1) ? (0, $nbig / 2 - 1) : ($nbig / 2, $nbig - 1);
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE big_p$i (k int, ref int, pad text);
INSERT INTO big_p$i SELECT g, g % 2500, repeat(md5(g::text), 2)
	FROM generate_series($lo, $hi) g;
ANALYZE big_p$i;
});
}
# dim: hash modulus 4 on id; remainders 0 and 2 on n1, 1 and 3 on n2
my $ddl = qq{
CREATE TABLE big (k int, ref int, pad text) PARTITION BY RANGE (k);
CREATE FOREIGN TABLE big_p1 PARTITION OF big FOR VALUES FROM (MINVALUE) TO (@{[ $nbig / 2 ]})
	SERVER n1 OPTIONS (table_name 'big_p1');
CREATE FOREIGN TABLE big_p2 PARTITION OF big FOR VALUES FROM (@{[ $nbig / 2 ]}) TO (MAXVALUE)
	SERVER n2 OPTIONS (table_name 'big_p2');
CREATE TABLE dim (id int, name text) PARTITION BY HASH (id);
};
for my $r (0 .. 3)
{
	my $node = $c->{nodes}[ $r % 2 ];
	$node->safe_psql('postgres', "CREATE TABLE dim_p$r (id int, name text)");
	$ddl .= "CREATE FOREIGN TABLE dim_p$r PARTITION OF dim "
	  . "FOR VALUES WITH (MODULUS 4, REMAINDER $r) "
	  . "SERVER n@{[ $r % 2 + 1 ]} OPTIONS (table_name 'dim_p$r');\n";
}
$ddl .= q{
INSERT INTO dim SELECT g, 'name' || g % 97 FROM generate_series(1, 2000) g;
ANALYZE big, dim;
};
$coord->safe_psql('postgres', $ddl);

# The join: big moves, repartitioned like dim, and its pad column with it.
my $join = '/*+ Redistribute(big) */ SELECT count(*), sum(big.k), '
  . 'sum(length(big.pad)), count(DISTINCT dim.name) '
  . 'FROM dim JOIN big ON big.ref = dim.id';

# The right answer, from PostgreSQL's own plan, and from the numbers.
my $expected = $coord->safe_psql('postgres',
	'SET colojoin.enable = off; ' . ($join =~ s{/\*\+.*?\*/ }{}r));
is( $expected,
	$coord->safe_psql(
		'postgres',
		"SELECT count(*), sum(g), 64 * count(*), 97 FROM generate_series(0, $nbig - 1) g "
		  . 'WHERE g % 2500 BETWEEN 1 AND 2000'),
	'the data are there');
like(
	$coord->safe_psql('postgres', "EXPLAIN (COSTS OFF) $join"),
	qr/Strategy: .*big repartitioned by hash of big\.ref like dim.*\n(?:.*\n)*\s+Moves: big to n1; big to n2/,
	'big is repartitioned like dim, to both nodes');
is($coord->safe_psql('postgres', $join), $expected, 'the redistributed join is right');

# --- helpers ------------------------------------------------------------------

# What a node holds of the coordinator's sessions: temporary tables of
# moves (other sessions' temporary tables are in pg_class once committed),
# sessions inside a transaction (an open remote transaction would hide
# uncommitted ones) and COPY statements still running.
sub node_state
{
	my ($node) = @_;
	return $node->safe_psql(
		'postgres', q{
SELECT (SELECT count(*) FROM pg_class WHERE relname LIKE 'colojoin\_move%') || ' move tables, '
	|| (SELECT count(*) FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
		  AND xact_start IS NOT NULL) || ' sessions in a transaction, '
	|| (SELECT count(*) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND query ILIKE 'COPY%' AND state = 'active')
	|| ' copies running'
});
}
my $clean = '0 move tables, 0 sessions in a transaction, 0 copies running';

# The COPY statements of moves reading big_p2 on node2 that wait for a lock
# (the one cj_lock_tables holds).
my $moves_waiting_on_node2 =
    "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
  . "AND wait_event_type = 'Lock' AND query LIKE 'COPY (SELECT %big\\_p2%) TO STDOUT%'";

# Wait, as long as it takes, until $n moves wait for node2's rows.
sub wait_moves_held
{
	my ($n) = @_;
	return $node2->poll_query_until('postgres',
		"SELECT ($moves_waiting_on_node2) >= $n");
}

# Hold the moves: a session on node2 locking big_p2, and its backend pid.
sub hold_moves
{
	my $locker = cj_lock_tables($node2, 'big_p2');
	return ($locker, $locker->query_safe('SELECT pg_backend_pid()'));
}

# Start $sql in a background session without waiting for it to end.
sub start_query
{
	my ($session, $sql) = @_;
	$session->query_until(qr/started\n/, "\\echo started\n$sql;\n");
}

# Wait for what a session started to end: its output and its errors.
sub finish_query
{
	my ($session) = @_;
	my $out = $session->query('SELECT 1 AS finished');
	my $err = $session->{stderr};
	$session->{stderr} = '';
	$out =~ s/\n?1\z//;
	return ($out, $err);
}

my $session = cj_session($coord);
my $pid = $session->query_safe('SELECT pg_backend_pid()');
my ($out, $err, $locker, $locker_pid);

# --- a node dies while rows move ------------------------------------------------

# The lock on node2's partition holds its COPY there, so that the node surely
# dies during the move and not after it.
($locker) = hold_moves();
start_query($session, $join);
ok(wait_moves_held(1), 'rows of node2 are moving: the move waits for them');
$node2->stop('immediate');
eval { $locker->quit; };    # its session died with node2
($out, $err) = finish_query($session);
is($out, '', 'node2 stopped during the move: no result');
like($err, qr/ERROR: .*\bn2\b/, 'but an error that names node2') or diag($err);
note("the error: $err");
like($err, qr/moving big/, 'and says it happened while moving big') or diag($err);
is(node_state($node1), $clean, 'node1 keeps no move table and no open transaction');
is($session->query_safe('SELECT 42'), '42', 'the session goes on');
$node2->start;
($out, $err) = cj_query($session, $join);
is($out, $expected, 'node2 back: the join is right again') or diag($err);
is(node_state($_), $clean, 'and leaves nothing behind on ' . $_->name)
  for ($node1, $node2);

# --- cancel during a move -------------------------------------------------------

# Held by the lock, the move cannot end before the cancel arrives.
($locker) = hold_moves();
start_query($session, $join);
ok(wait_moves_held(1), 'rows are moving again: the move waits for node2');
is($coord->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"),
	't', 'pg_cancel_backend');
($out, $err) = finish_query($session);
is($out, '', 'cancelled: no result');
like($err, qr/canceling statement due to user request/, 'cancelled') or diag($err);
is($node2->safe_psql('postgres', $moves_waiting_on_node2),
	'0', 'the move\'s COPY on node2 was cancelled with the statement');
$locker->query_safe('COMMIT');
$locker->quit;
is(node_state($_), $clean, 'nothing left on ' . $_->name . ' after the cancel')
  for ($node1, $node2);

# --- statement_timeout during a move -------------------------------------------

like($session->query_safe("EXPLAIN (ANALYZE, COSTS OFF) $join"),
	qr/Move Time: [0-9.]+ ms/, 'EXPLAIN ANALYZE shows the time of the moves');

# While the lock holds node2's rows the moves cannot end, so a statement that
# ends was interrupted.  That the timeout fell inside the move, not before
# it, node2's log tells: the COPY reading big_p2 was cancelled there (abort
# processing waits for the node's answer, so the line is written by then).
# A timeout that fired before the move reached node2 (a slow machine) says
# nothing: try again with twice the time, until one falls inside the move.
my ($in_move, $timeout_ms) = (0, 500);
($locker) = hold_moves();
while (!$in_move && $timeout_ms <= 1000 * $PostgreSQL::Test::Utils::timeout_default)
{
	my $logstart = -s $node2->logfile;
	$session->query_safe("SET statement_timeout = '${timeout_ms}ms'");
	($out, $err) = cj_query($session, $join);
	$session->query_safe('RESET statement_timeout');
	last if $out ne '' || $err !~ /canceling statement due to statement timeout/;
	$in_move = slurp_file($node2->logfile, $logstart) =~
	  /ERROR:  canceling statement due to user request\n.*STATEMENT:  COPY \(SELECT [^\n]*big_p2[^\n]*\) TO STDOUT(?: \(FORMAT binary\))?\n/;
	note("statement_timeout = ${timeout_ms}ms: "
		  . ($in_move ? 'fell inside the move' : 'fired before the move reached node2'));
	$timeout_ms *= 2;
}
is($out, '', 'statement_timeout: no result');
like($err, qr/canceling statement due to statement timeout/, 'timed out') or diag($err);
ok($in_move, 'inside the move, before the moves could have ended: '
	  . 'node2\'s COPY, held by the lock, was cancelled');
is($node2->safe_psql('postgres', $moves_waiting_on_node2),
	'0', 'no COPY of the move is left waiting on node2');
$locker->query_safe('COMMIT');
$locker->quit;
is(node_state($_), $clean, 'nothing left on ' . $_->name . ' after the timeout')
  for ($node1, $node2);
is($session->query_safe($join), $expected, 'the session goes on');

# --- two sessions redistribute the same tables at once ------------------------

# The lock holds both sessions inside their moves at the same time: each has
# filled its move table on node1 with node1's rows and waits for node2's.
my $other = cj_session($coord);
($locker) = hold_moves();
start_query($session, $join);
start_query($other, $join);
ok(wait_moves_held(2), 'both sessions\' moves wait for node2\'s rows at once');
is( $node1->safe_psql(
		'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'colojoin:%' "
		  . "AND xact_start IS NOT NULL AND query LIKE '%pg\\_temp.\"colojoin\\_move%'"),
	'2',
	'both sessions move rows into node1 at once: two move tables open there');
$locker->query_safe('COMMIT');
$locker->quit;
my ($out1, $err1) = finish_query($session);
my ($out2, $err2) = finish_query($other);
is($out1, $expected, 'first session: right') or diag($err1);
is($out2, $expected, 'second session: right') or diag($err2);
is($err1 . $err2, '', 'no errors (no name collisions)');
is(node_state($_), $clean, 'nothing left on ' . $_->name . ' after both')
  for ($node1, $node2);

# --- the coordinator's session dies during a move --------------------------

# The nodes' sessions end with it, and their temporary tables go too: on
# node1 by the closed connection, on node2, where the lock holds the COPY,
# by the cancel the dying backend sends.
($locker, $locker_pid) = hold_moves();
start_query($other, $join);
ok(wait_moves_held(1), 'a third time, rows are moving: the move waits for node2');
my $other_pid = $coord->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
	  . "AND query LIKE '%Redistribute(big)%' AND state = 'active'");
like($other_pid, qr/^\d+$/, 'the moving session is found');
is($coord->safe_psql('postgres', "SELECT pg_terminate_backend($other_pid)"),
	't', 'pg_terminate_backend');
for my $node ($node1, $node2)
{
	ok( $node->poll_query_until(
			'postgres', qq{
SELECT count(*) = 0 FROM pg_stat_activity
WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
  AND pid <> $locker_pid
  AND (xact_start IS NOT NULL OR query ILIKE 'COPY%')}),
		'the sessions of the terminated backend on ' . $node->name . ' end');
}
$locker->query_safe('COMMIT');
$locker->quit;
is(node_state($_), $clean, 'nothing left on ' . $_->name) for ($node1, $node2);
is($session->query_safe($join), $expected, 'the other session goes on');

eval { $other->quit; };    # its psql lost its connection already
$session->quit;
done_testing();
