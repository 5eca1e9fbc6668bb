# test/t/090_observability.pl -- colojoin.activity and colojoin.progress
# seen from another session: a session's colocated join held on a node by
# a lock shows in colojoin.activity (its coordinator pid, the node backend
# waiting for the lock and the node backend it waits for), and a
# create_shards held on a node shows its phase in colojoin.progress.  Every
# wait is on an event (a lock, pg_stat_activity, a row of a view), never
# on time.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use ColojoinTest;

# colojoin.decisions keeps two queries here, to see the oldest go
my $c = cj_new_cluster(
	name => 'observe',
	nodes => 2,
	conf => "colojoin.decisions_max = 2\ncompute_query_id = on\n");
my $coord = $c->{coordinator};
my ($node1, $node2) = @{ $c->{nodes} };

cj_pair_tables($coord);
my $join = 'SELECT count(*), coalesce(sum(b.w), 0) FROM a JOIN b ON a.k = b.k';
my $expected = $coord->safe_psql('postgres', "SET colojoin.enable = off; $join");
like($coord->safe_psql('postgres', "EXPLAIN (COSTS OFF) $join"),
	qr/ColocatedJoin/, 'the join is colocated');

# --- activity ------------------------------------------------------------

# a's partitions on n1 locked: session A's tasks there wait for the lock
my @n1_leaves = split /\n/, $node1->safe_psql('postgres',
	"SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
	  . "WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname LIKE 'a\\_%' ORDER BY 1");
ok(@n1_leaves > 0, 'n1 holds partitions of a');
my $locker = cj_lock_tables($node1, @n1_leaves);
my $locker_pid = $locker->query_safe('SELECT pg_backend_pid()');
$locker_pid =~ s/\s+//g;

my $sess = cj_session($coord);
my $sess_pid = $sess->query_safe('SELECT pg_backend_pid()');
$sess_pid =~ s/\s+//g;
$sess->{stderr} = '';
$sess->query_until(qr/statement started\n/,
	"\\echo statement started\n$join;\n\\echo statement finished\n");
ok( $node1->poll_query_until(
		'postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name LIKE 'colojoin:%:$sess_pid' "
		  . "AND wait_event_type = 'Lock'"),
	'activity: A waits for the lock on n1');

# session B sees A's backends on both nodes, the one waiting and whom for
my $seen = $coord->safe_psql('postgres',
	"SELECT count(DISTINCT server), bool_or(wait_event_type = 'Lock'), "
	  . "bool_or($locker_pid = ANY (blocked_by)) "
	  . "FROM colojoin.activity WHERE coordinator_pid = $sess_pid");
is($seen, '2|t|t', 'activity: another session sees A on both nodes, waiting for the locker');
is( $coord->safe_psql('postgres',
		"SELECT count(*) FROM colojoin.activity WHERE coordinator_pid = pg_backend_pid()"),
	'0', 'activity: B itself holds no node backend');

$locker->query_safe('COMMIT');
my $ok = pump_until($sess->{run}, $sess->{timeout}, \$sess->{stdout}, qr/statement finished\n/);
ok($ok, 'activity: A finished once the lock went');
like($sess->{stdout}, qr/\Q$expected\E/, 'activity: and its answer is right');
$sess->{stdout} = '';
$locker->quit;

# --- progress ------------------------------------------------------------

# pg_class on n2 locked against writes: create_shards's table there waits
# after the foreign partitions are made
$locker = cj_session($node2);
$locker->query_safe('BEGIN; LOCK TABLE pg_catalog.pg_class IN EXCLUSIVE MODE');
$coord->safe_psql('postgres', 'CREATE TABLE big (k int, v text) PARTITION BY HASH (k)');
$sess->{stderr} = '';
$sess->query_until(qr/statement started\n/,
	"\\echo statement started\nSELECT colojoin.create_shards('big', ARRAY['n1', 'n2'], 6);\n\\echo statement finished\n");
ok( $coord->poll_query_until(
		'postgres',
		"SELECT count(*) = 1 FROM colojoin.progress WHERE pid = $sess_pid "
		  . "AND phase = 'creating the tables on the nodes'"),
	'progress: create_shards is seen creating the tables on the nodes');
is( $coord->safe_psql('postgres',
		"SELECT command, relid, units_total, units_done < units_total "
		  . "FROM colojoin.progress WHERE pid = $sess_pid"),
	'create_shards|big|6|t', 'progress: its table, total and units done');
$locker->query_safe('COMMIT');
$ok = pump_until($sess->{run}, $sess->{timeout}, \$sess->{stdout}, qr/statement finished\n/);
ok($ok && $sess->{stdout} =~ /^6$/m, 'progress: create_shards finished');
is($coord->safe_psql('postgres', "SELECT count(*) FROM colojoin.progress WHERE pid = $sess_pid"),
	'0', 'progress: its row is gone');
$locker->quit;
$sess->quit;

# --- decisions: bounded, the query seen longest ago goes ----------------------

sub query_id
{
	my ($sql) = @_;
	my $plan = $coord->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) $sql");
	return $plan =~ /Query Identifier: (-?\d+)/ ? $1 : undef;
}
my @queries = (
	'SELECT count(*) FROM a JOIN b ON a.k = b.k',
	'SELECT count(*) FROM a JOIN b ON a.k = b.k WHERE a.v > 10',
	'SELECT count(*) FROM a JOIN b ON a.k = b.k WHERE b.w < 100');
my @ids = map { query_id($_) } @queries;
ok(defined $ids[0] && defined $ids[2], 'decisions: the queries have ids');
$coord->safe_psql('postgres', 'SELECT colojoin.decisions_reset()');
$coord->safe_psql('postgres', $_) for @queries;
is($coord->safe_psql('postgres', 'SELECT count(*) FROM colojoin.decisions'),
	'2', 'decisions: two entries kept');
is( $coord->safe_psql('postgres',
		"SELECT string_agg(queryid::text, ',' ORDER BY queryid) FROM colojoin.decisions"),
	join(',', sort { $a <=> $b } @ids[1, 2]),
	'decisions: the query seen longest ago made room');

done_testing();
