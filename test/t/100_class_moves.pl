# test/t/100_class_moves.pl -- moving a partition class while it is used,
# and failures at each phase of a move.
#
# - pgbench clients write (insert, update, delete) to orders and items and,
#   in the same transactions, to local twins, and read what they wrote
#   back through colojoin and from the twins (cj_order_writes), while a class of both moves
#   online from n1 to n3 and another blocking from n2 to n3: no transaction
#   fails, the tables equal their twins afterwards, and the join is still
#   colocated, with tasks on n3.
# - A move stopped at a phase (it waits for an advisory lock the test
#   holds, seen in pg_locks), then: the target node killed, the source node
#   killed, the coordinator killed, the move cancelled.  Each time the
#   class stays where it was and answers as its twin once the servers are
#   back, colojoin.move_cleanup() removes what was left on the nodes (no
#   subscription, publication, slot or target table remains), and the same
#   move then succeeds.
# - a split stopped after its copies by a coordinator crash: the old
#   partitions serve, nothing of the split is left on the nodes.
# - the same with an online split: nothing of it is left once
#   colojoin.move_cleanup() ran.
# - pgbench writes through splits of orders and items to modulus 8 over
#   the three nodes, one class online, then the others blocking: none
#   fails; the tables equal their twins; the join is colocated over the 8
#   classes.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ColojoinTest;

my $c = cj_new_cluster(
	name => 'moves',
	nodes => 3,
	node_conf => "wal_level = logical\nmax_wal_senders = 10\nmax_replication_slots = 10\n");
my $coord = $c->{coordinator};
my ($node1, $node2, $node3) = @{ $c->{nodes} };

cj_order_tables($coord, "ARRAY['n1', 'n2']", 4, 2000);
my $same = cj_twins_equal_sql();
is($coord->safe_psql('postgres', $same), 't', 'the sharded tables start equal to their twins');

# where class c of orders is
sub class_node
{
	my ($cls) = @_;
	return $coord->safe_psql('postgres',
		"SELECT string_agg(DISTINCT node::text, ',') FROM colojoin.shards "
		  . "WHERE table_name::text IN ('orders', 'items') AND partition_class = $cls");
}

# --- writes through a move ---------------------------------------------------

# pgbench in the background, while the moves run
my $writers = cj_order_writes($coord, 4, 400);
ok($coord->poll_query_until('postgres',
		"SELECT sum(o_total) > 200 FROM lorders"),
	'the writers are running');
is($coord->safe_psql('postgres', "SELECT colojoin.move_class('orders', 0, 'n3') > 0"),
	't', 'class 0 moves online from n1 to n3 under writes');
is($coord->safe_psql('postgres', "SELECT colojoin.move_class('orders', 1, 'n3', 'blocking') > 0"),
	't', 'class 1 moves blocking from n2 to n3 under writes');
$writers->{run}->finish;
like(${ $writers->{out} }, qr{processed: 1600/1600}, 'every pgbench transaction ran');
like(${ $writers->{out} }, qr{number of failed transactions: 0},
	'and none failed (each read its writes back alike through colojoin and from the twins)');
is(${ $writers->{err} }, '', 'pgbench reported no error');
is(class_node(0), 'n3', 'class 0 is on n3');
is(class_node(1), 'n3', 'class 1 is on n3');
is($coord->safe_psql('postgres', $same), 't', 'the tables equal their twins after the moves');
like(cj_explain($coord, 'postgres', 'SELECT count(*) FROM orders JOIN items ON i_order = o_id'),
	qr/colocated on orders.o_id = items.i_order.*\n.*\n\s+Tasks: .*n3 2/,
	'the join is colocated, two tasks on n3');

# --- failures at each phase ------------------------------------------------

my $remains = cj_move_remains_sql();
sub no_remains
{
	my ($what) = @_;
	for my $node ($node1, $node2, $node3)
	{
		is($node->safe_psql('postgres', $remains), '0',
			"$what: nothing of the move is left on " . $node->name);
	}
}

# Run $sql in a new session, stopped at $phase of the move or split (it
# waits for the advisory lock a second session holds, seen in pg_locks);
# returns (the holder's session, the runner's).
sub run_paused
{
	my ($phase, $sql, $what) = @_;
	my $holder = cj_session($coord);
	$holder->query_safe('SELECT pg_advisory_lock(7301)');
	my $runner = cj_session($coord);
	$runner->query_until(qr/started\n/,
		"SET colojoin.debug_pause_move = 7301;\n"
		  . "SET colojoin.debug_pause_move_phase = '$phase';\n"
		  . "\\echo started\n"
		  . "$sql;\n"
		  . "\\echo finished\n");
	ok($coord->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 7301 AND NOT granted"),
		"$what waits at $phase");
	return ($holder, $runner);
}

# Start moving class 2 (on n1) to n2, stopped at $phase; run $action while it
# waits; let it go on.  Returns what the mover printed on stderr once it
# ended (undef when the coordinator went).
sub stopped_move
{
	my ($phase, $mode, $action) = @_;
	my ($holder, $mover) = run_paused($phase,
		"SELECT colojoin.move_class('orders', 2, 'n2', '$mode')", "a $mode move");
	my $coordinator_lives = $action->($mover);
	my $err;
	if ($coordinator_lives)
	{
		$holder->query_safe('SELECT pg_advisory_unlock(7301)');
		pump_until($mover->{run}, $mover->{timeout}, \$mover->{stdout}, qr/finished\n/);
		$err = $mover->{stderr};
		$mover->quit;
		$holder->quit;
	}
	else
	{
		eval { $mover->quit };
		eval { $holder->quit };
	}
	return $err;
}

sub after_failure
{
	my ($what) = @_;
	is(class_node(2), 'n1', "$what: class 2 is still on n1");
	is($coord->safe_psql('postgres', $same), 't', "$what: the tables equal their twins");
	$coord->safe_psql('postgres', 'SELECT colojoin.move_cleanup()');
	no_remains($what);
}

my $err = stopped_move('copied', 'online', sub { $node2->stop('immediate'); return 1; });
like($err, qr/ERROR:/, 'target killed after the copy: the move fails');
$node2->start;
after_failure('target killed');

$err = stopped_move('caught_up', 'online', sub { $node1->stop('immediate'); return 1; });
like($err, qr/ERROR:/, 'source killed after the catch-up: the move fails');
$node1->start;
after_failure('source killed');

stopped_move('copied', 'online', sub { $coord->stop('immediate'); return 0; });
$coord->start;
after_failure('coordinator killed after the copy');

stopped_move('switched', 'online', sub { $coord->stop('immediate'); return 0; });
$coord->start;
after_failure('coordinator killed after the switch, before the commit');

stopped_move('copied', 'blocking', sub { $coord->stop('immediate'); return 0; });
$coord->start;
after_failure('coordinator killed during a blocking move');

$err = stopped_move('copied', 'online', sub {
	$coord->safe_psql('postgres',
		"SELECT pg_cancel_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid = 7301 AND NOT granted");
	return 1;
});
like($err, qr/canceling statement due to user request/, 'a cancelled move ends');
after_failure('cancelled');

# the same move, now undisturbed
is($coord->safe_psql('postgres', "SELECT colojoin.move_class('orders', 2, 'n2') > 0"),
	't', 'the move succeeds after the failures');
is(class_node(2), 'n2', 'class 2 is on n2');
is($coord->safe_psql('postgres', $same), 't', 'the tables equal their twins');
no_remains('after the move');

# --- splits stopped by a coordinator crash ----------------------------------

# $call waits after copying its rows; the coordinator is killed there and
# started again: the old partitions serve, the tables equal their twins
sub split_cut_short
{
	my ($call, $what) = @_;
	my ($holder, $splitter) = run_paused('split_copied', $call, $what);
	$coord->stop('immediate');
	eval { $splitter->quit };
	eval { $holder->quit };
	$coord->start;
	is($coord->safe_psql('postgres',
			"SELECT count(*) FROM colojoin.shards WHERE bound LIKE '%modulus 4,%'"),
		'8', "the coordinator killed during $what: the old partitions are there");
	is($coord->safe_psql('postgres', $same), 't', 'and the tables equal their twins');
}

split_cut_short("SELECT colojoin.split_shards('orders', 8, ARRAY['n1', 'n2', 'n3'])", 'a split');
for my $node ($node1, $node2, $node3)
{
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM pg_class WHERE relname LIKE '%\\_m8p%' OR relname LIKE 'colojoin\\_split\\_%'"),
		'0', 'no table of the split is left on ' . $node->name);
}
split_cut_short(
	"SELECT colojoin.split_shards('orders', 8, ARRAY['n1', 'n2', 'n3'], partition_class => 0, mode => 'online')",
	'an online split');
$coord->safe_psql('postgres', 'SELECT colojoin.move_cleanup()');
no_remains('after an online split was cut short');

# --- a split under writes --------------------------------------------------

# every class of orders and items to modulus 8, over the three nodes, while
# the writers run: they wait for the split and go on with the new partitions
my $before = $coord->safe_psql('postgres', 'SELECT sum(o_total) FROM lorders');
$writers = cj_order_writes($coord, 4, 300);
ok($coord->poll_query_until('postgres', "SELECT sum(o_total) > $before + 100 FROM lorders"),
	'the writers are running again');
is( $coord->safe_psql('postgres',
		"SELECT colojoin.split_shards('orders', 8, ARRAY['n1', 'n2', 'n3'], partition_class => 0, mode => 'online')"),
	'4', 'one class of orders and items split online under writes');
is($coord->safe_psql('postgres', "SELECT colojoin.split_shards('orders', 8, ARRAY['n1', 'n2', 'n3'])"),
	'12', 'the other classes split, blocking, under writes');
$writers->{run}->finish;
like(${ $writers->{out} }, qr{processed: 1200/1200}, 'every pgbench transaction ran through the split');
like(${ $writers->{out} }, qr{number of failed transactions: 0}, 'and none failed, reads included');
is(${ $writers->{err} }, '', 'pgbench reported no error');
is($coord->safe_psql('postgres', $same), 't', 'the tables equal their twins after the split');
like(cj_explain($coord, 'postgres', 'SELECT count(*) FROM orders JOIN items ON i_order = o_id'),
	qr/colocated on orders.o_id = items.i_order.*\n\s+Partitions: 8 of 8/,
	'the join of the split tables is colocated over 8 classes');
no_remains('after the split');

done_testing();
