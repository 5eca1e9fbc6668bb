# test/t/101_rebalance.pl -- growing the cluster: a rebalance onto a new
# node while pgbench writes, then a drain of that node stopped by failures.
#
# - orders and items (colocated, 8 classes) live on n1 and n2; n3 is new.
#   pgbench clients write to them and, in the same transactions, to local
#   twins while colojoin.rebalance() moves classes onto n3 in its
#   background worker: no transaction fails, the tables equal their twins,
#   n3 holds classes and the join is colocated with tasks there.
# - Draining n3, with the worker stopped at a phase of a move (an advisory
#   lock the test holds, seen in pg_locks): the worker killed (the
#   postmaster starts it again and it goes on with the same move), the
#   coordinator killed (rebalance_resume() goes on), the job cancelled (the
#   class stays, the job and move say cancelled).  Each ends with the
#   tables equal to their twins and nothing of a move left on the nodes.
# - A node without wal_level = logical: an online move from it fails
#   saying so; a blocking one works.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ColojoinTest;

my $c = cj_new_cluster(
	name => 'rebalance',
	nodes => 3,
	node_conf => "wal_level = logical\nmax_wal_senders = 10\nmax_replication_slots = 10\n");
my $coord = $c->{coordinator};
my ($node1, $node2, $node3) = @{ $c->{nodes} };

cj_order_tables($coord, "ARRAY['n1', 'n2']", 8, 4000);
# the nodes count their rows for the planner
$_->safe_psql('postgres', 'ANALYZE') for ($node1, $node2);

my $same = cj_twins_equal_sql();
my $remains = cj_move_remains_sql();
my $on_n3 = "SELECT count(DISTINCT partition_class) FROM colojoin.shards WHERE node = 'n3'";

sub job_ends
{
	my ($job, $state, $what) = @_;
	ok($coord->poll_query_until('postgres',
			"SELECT state FROM colojoin.rebalance_jobs WHERE job = $job", $state),
		"$what: job $job is $state");
}

sub all_clean
{
	my ($what) = @_;
	is($coord->safe_psql('postgres', $same), 't', "$what: the tables equal their twins");
	for my $node ($node1, $node2, $node3)
	{
		is($node->safe_psql('postgres', $remains), '0',
			"$what: nothing of a move is left on " . $node->name);
	}
}

my $plan = $coord->safe_psql('postgres',
	"SELECT count(*) FROM colojoin.rebalance_plan(ARRAY['n1', 'n2', 'n3']) WHERE to_server = 'n3'");
cmp_ok($plan, '>=', 2, 'the plan moves classes onto the new node');

# --- rebalance under writes ------------------------------------------------

my $writers = cj_order_writes($coord, 4, 600);
ok($coord->poll_query_until('postgres', 'SELECT sum(o_total) > 200 FROM lorders'),
	'the writers are running');
my $job = $coord->safe_psql('postgres', "SELECT colojoin.rebalance(ARRAY['n1', 'n2', 'n3'])");
job_ends($job, 'done', 'rebalance under writes');
$writers->{run}->finish;
like(${ $writers->{out} }, qr{processed: 2400/2400}, 'every pgbench transaction ran');
like(${ $writers->{out} }, qr{number of failed transactions: 0},
	'and none failed (each read its writes back alike through colojoin and from the twins)');
is(${ $writers->{err} }, '', 'pgbench reported no error');
is($coord->safe_psql('postgres',
		"SELECT count(*) FROM colojoin.rebalance_moves WHERE job = $job AND state <> 'done'"),
	'0', 'every move of the job is done');
cmp_ok($coord->safe_psql('postgres', $on_n3), '>=', 2, 'n3 holds classes');
is($coord->safe_psql('postgres',
		"SELECT count(*) FROM (SELECT partition_class FROM colojoin.shards GROUP BY 1 HAVING count(DISTINCT node) > 1) s"),
	'0', 'each class of orders and items is on one node');
all_clean('after the rebalance');
like(cj_explain($coord, 'postgres', 'SELECT count(*) FROM orders JOIN items ON i_order = o_id'),
	qr/colocated on orders.o_id = items.i_order.*\n.*\n\s+Tasks: .*n3 \d/,
	'the join is colocated, with tasks on n3');

# --- draining n3, stopped by failures --------------------------------------

$coord->safe_psql('postgres',
	"ALTER DATABASE postgres SET colojoin.debug_pause_move = 7301;"
	  . "ALTER DATABASE postgres SET colojoin.debug_pause_move_phase = 'copied';");
my $holder = cj_session($coord);
$holder->query_safe('SELECT pg_advisory_lock(7301)');
my $waiting = "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = 7301 AND NOT granted";

my $before = $coord->safe_psql('postgres', $on_n3);
$job = $coord->safe_psql('postgres', "SELECT colojoin.rebalance(drain => 'n3')");
ok($coord->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($waiting) w"),
	'the worker waits in its first move');
my $pid = $coord->safe_psql('postgres', $waiting);

# the worker killed: the postmaster starts it again, on the same move
$coord->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok($coord->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($waiting) w WHERE pid <> $pid"),
	'a new worker waits in the same move');
is($coord->safe_psql('postgres',
		"SELECT count(*) FROM colojoin.rebalance_moves WHERE job = $job AND state = 'done'"),
	'0', 'no move was done twice or skipped');

# the coordinator killed: rebalance_resume goes on
$coord->stop('immediate');
eval { $holder->quit };
$coord->start;
$holder = cj_session($coord);
$holder->query_safe('SELECT pg_advisory_lock(7301)');
is($coord->safe_psql('postgres', "SELECT state FROM colojoin.rebalance_jobs WHERE job = $job"),
	'running', 'after the restart the job is unfinished');
is($coord->safe_psql('postgres', 'SELECT colojoin.rebalance_resume()'), $job,
	'rebalance_resume starts it again');
ok($coord->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($waiting) w"),
	'its worker waits in the move');
$holder->query_safe('SELECT pg_advisory_unlock(7301)');
job_ends($job, 'done', 'drain');
is($coord->safe_psql('postgres', $on_n3), '0', 'n3 holds no class');
all_clean('after the drain');

# cancelled: the class stays, the job says so
$holder->query_safe('SELECT pg_advisory_lock(7301)');
$job = $coord->safe_psql('postgres', "SELECT colojoin.rebalance(ARRAY['n1', 'n2', 'n3'])");
ok($coord->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($waiting) w"),
	'the next job\'s worker waits in its first move');
is($coord->safe_psql('postgres', 'SELECT colojoin.rebalance_cancel()'), 't', 'the job is cancelled');
job_ends($job, 'cancelled', 'cancel');
ok($coord->poll_query_until('postgres',
		"SELECT state FROM colojoin.rebalance_moves WHERE job = $job AND move = 1", 'cancelled'),
	'its running move is cancelled');
is($coord->safe_psql('postgres', $on_n3), '0', 'the cancelled move left its class where it was');
$holder->query_safe('SELECT pg_advisory_unlock(7301)');
$holder->quit;
all_clean('after the cancel');

$coord->safe_psql('postgres',
	"ALTER DATABASE postgres RESET colojoin.debug_pause_move;"
	  . "ALTER DATABASE postgres RESET colojoin.debug_pause_move_phase;");

# --- a source without logical decoding --------------------------------------

$node1->append_conf('postgresql.conf', "wal_level = replica\n");
$node1->restart;
my $cls = $coord->safe_psql('postgres',
	"SELECT min(partition_class) FROM colojoin.shards WHERE table_name = 'orders'::regclass AND node = 'n1'");
my ($rc, $out, $err) = $coord->psql('postgres', "SELECT colojoin.move_class('orders', $cls, 'n3')");
like($err, qr/an online move needs wal_level = logical on server "n1"/,
	'an online move from a node without logical decoding says so');
like($err, qr/HINT:  Set wal_level = logical on that node and restart it, or use mode => 'blocking'/,
	'and what to do');
cmp_ok($coord->safe_psql('postgres', "SELECT colojoin.move_class('orders', $cls, 'n3', 'blocking')"),
	'>', 0, 'a blocking move from it works');
all_clean('after the blocking move');
done_testing();
