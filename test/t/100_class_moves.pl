# test/t/100_class_moves.pl -- moving a partition class while it is used,
# and failures at each phase of a move.
#
# - pgbench clients write (insert, update, delete) to orders and items and,
#   in the same transactions, to local twins, while a class of both moves
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

$coord->safe_psql(
	'postgres', q{
CREATE TABLE orders (o_id int NOT NULL, o_cust int, o_total numeric) PARTITION BY HASH (o_id);
SELECT colojoin.create_shards('orders', ARRAY['n1', 'n2'], 4);
CREATE TABLE items (i_order int, i_qty int) PARTITION BY HASH (i_order);
SELECT colojoin.create_shards('items', NULL, colocate_with => 'orders');
CREATE TABLE lorders (o_id int NOT NULL, o_cust int, o_total numeric);
CREATE TABLE litems (i_order int, i_qty int);
INSERT INTO lorders SELECT g, g % 40, 0 FROM generate_series(1, 2000) g;
INSERT INTO litems SELECT g / 4, g % 7 FROM generate_series(1, 8000) g;
INSERT INTO orders SELECT * FROM lorders;
INSERT INTO items SELECT * FROM litems;
});

my $same = q{SELECT
	(SELECT array_agg(o ORDER BY o) FROM (SELECT o::text FROM orders o) s) =
	(SELECT array_agg(o ORDER BY o) FROM (SELECT o::text FROM lorders o) s)
	AND (SELECT array_agg(i ORDER BY i) FROM (SELECT i::text FROM items i) s) =
	(SELECT array_agg(i ORDER BY i) FROM (SELECT i::text FROM litems i) s)
	AND (SELECT array_agg(x ORDER BY x) FROM (SELECT (o_cust, count(*), sum(i_qty))::text AS x
		FROM orders JOIN items ON i_order = o_id GROUP BY o_cust) s) =
	(SELECT array_agg(x ORDER BY x) FROM (SELECT (o_cust, count(*), sum(i_qty))::text AS x
		FROM lorders JOIN litems ON i_order = o_id GROUP BY o_cust) s)};
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

my $writes = <<'SCRIPT';
\set id random(1, 2000)
\set q random(1, 6)
BEGIN;
UPDATE orders SET o_total = o_total + :q WHERE o_id = :id;
UPDATE lorders SET o_total = o_total + :q WHERE o_id = :id;
INSERT INTO items VALUES (:id, :q);
INSERT INTO litems VALUES (:id, :q);
DELETE FROM items WHERE i_order = :id AND i_qty = :q - 1;
DELETE FROM litems WHERE i_order = :id AND i_qty = :q - 1;
END;
SCRIPT
PostgreSQL::Test::Utils::append_to_file($coord->basedir . '/writes.sql', $writes);

# pgbench in the background, while the moves run
my ($pgb_out, $pgb_err) = ('', '');
my $pgbench = IPC::Run::start(
	[
		'pgbench', '-n', '-c', '4', '-j', '4', '-t', '400',
		'-h', $coord->host, '-p', $coord->port,
		'-f', $coord->basedir . '/writes.sql', 'postgres'
	],
	'>', \$pgb_out, '2>', \$pgb_err);
ok($coord->poll_query_until('postgres',
		"SELECT sum(o_total) > 200 FROM lorders"),
	'the writers are running');
is($coord->safe_psql('postgres', "SELECT colojoin.move_class('orders', 0, 'n3') > 0"),
	't', 'class 0 moves online from n1 to n3 under writes');
is($coord->safe_psql('postgres', "SELECT colojoin.move_class('orders', 1, 'n3', 'blocking') > 0"),
	't', 'class 1 moves blocking from n2 to n3 under writes');
$pgbench->finish;
like($pgb_out, qr{processed: 1600/1600}, 'every pgbench transaction ran');
like($pgb_out, qr{number of failed transactions: 0}, 'and none failed');
is($pgb_err, '', 'pgbench reported no error');
is(class_node(0), 'n3', 'class 0 is on n3');
is(class_node(1), 'n3', 'class 1 is on n3');
is($coord->safe_psql('postgres', $same), 't', 'the tables equal their twins after the moves');
like(cj_explain($coord, 'postgres', 'SELECT count(*) FROM orders JOIN items ON i_order = o_id'),
	qr/colocated on orders.o_id = items.i_order.*\n.*\n\s+Tasks: .*n3 2/,
	'the join is colocated, two tasks on n3');

# --- failures at each phase ------------------------------------------------

my $remains = q{SELECT (SELECT count(*) FROM pg_subscription) + (SELECT count(*) FROM pg_publication)
	+ (SELECT count(*) FROM pg_replication_slots)
	+ (SELECT count(*) FROM pg_description WHERE description LIKE 'colojoin: target of move %')};
sub no_remains
{
	my ($what) = @_;
	for my $node ($node1, $node2, $node3)
	{
		is($node->safe_psql('postgres', $remains), '0',
			"$what: nothing of the move is left on " . $node->name);
	}
}

# Start moving class 2 (on n1) to n2, stopped at $phase; run $action while it
# waits; let it go on.  Returns the mover's session and what it printed on
# stderr once it ended (undef when the coordinator went).
sub stopped_move
{
	my ($phase, $mode, $action) = @_;
	my $holder = cj_session($coord);
	$holder->query_safe('SELECT pg_advisory_lock(7301)');
	my $mover = cj_session($coord);
	$mover->query_until(qr/started\n/,
		"SET colojoin.debug_pause_move = 7301;\n"
		  . "SET colojoin.debug_pause_move_phase = '$phase';\n"
		  . "\\echo started\n"
		  . "SELECT colojoin.move_class('orders', 2, 'n2', '$mode');\n"
		  . "\\echo finished\n");
	ok($coord->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 7301 AND NOT granted"),
		"$phase ($mode): the move waits there");
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
	my $holder = cj_session($coord);
	$holder->query_safe('SELECT pg_advisory_lock(7301)');
	my $splitter = cj_session($coord);
	$splitter->query_until(qr/started\n/,
		"SET colojoin.debug_pause_move = 7301;\n"
		  . "SET colojoin.debug_pause_move_phase = 'split_copied';\n"
		  . "\\echo started\n"
		  . "$call;\n");
	ok($coord->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 7301 AND NOT granted"),
		"$what waits after copying its rows");
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
($pgb_out, $pgb_err) = ('', '');
my $before = $coord->safe_psql('postgres', 'SELECT sum(o_total) FROM lorders');
$pgbench = IPC::Run::start(
	[
		'pgbench', '-n', '-c', '4', '-j', '4', '-t', '300',
		'-h', $coord->host, '-p', $coord->port,
		'-f', $coord->basedir . '/writes.sql', 'postgres'
	],
	'>', \$pgb_out, '2>', \$pgb_err);
ok($coord->poll_query_until('postgres', "SELECT sum(o_total) > $before + 100 FROM lorders"),
	'the writers are running again');
is( $coord->safe_psql('postgres',
		"SELECT colojoin.split_shards('orders', 8, ARRAY['n1', 'n2', 'n3'], partition_class => 0, mode => 'online')"),
	'4', 'one class of orders and items split online under writes');
is($coord->safe_psql('postgres', "SELECT colojoin.split_shards('orders', 8, ARRAY['n1', 'n2', 'n3'])"),
	'12', 'the other classes split, blocking, under writes');
$pgbench->finish;
like($pgb_out, qr{processed: 1200/1200}, 'every pgbench transaction ran through the split');
like($pgb_out, qr{number of failed transactions: 0}, 'and none failed');
is($pgb_err, '', 'pgbench reported no error');
is($coord->safe_psql('postgres', $same), 't', 'the tables equal their twins after the split');
like(cj_explain($coord, 'postgres', 'SELECT count(*) FROM orders JOIN items ON i_order = o_id'),
	qr/colocated on orders.o_id = items.i_order.*\n\s+Partitions: 8 of 8/,
	'the join of the split tables is colocated over 8 classes');
no_remains('after the split');

done_testing();
