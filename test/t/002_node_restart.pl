# test/t/002_node_restart.pl -- a coordinator session outlives its nodes:
# after a node restarts, colojoin's cached connection to it is replaced
# rather than reported broken; while a node is down, colojoin's calls fail
# with an error that names the node, leave nothing half-created, and the
# session stays usable; once the node is back, the same calls succeed.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ColojoinTest;

my $c = cj_new_cluster(name => 'restart', nodes => 2);
my $coord = $c->{coordinator};
my ($node1, $node2) = @{ $c->{nodes} };
my $port1 = $node1->port;

# One long-lived coordinator session, as an application would hold it.
my $session = cj_session($coord);

# The result of a query in the long-lived session; errors go to stderr,
# which is returned too so a test can look at it.
sub run
{
	return cj_query($session, @_);
}

sub partition_count
{
	my ($table) = @_;
	return $coord->safe_psql('postgres',
		"SELECT count(*) FROM pg_inherits WHERE inhparent = to_regclass('$table')"
	);
}

my ($out, $err) = run(<<'SQL');
CREATE TABLE t1 (k int NOT NULL, v text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t1', ARRAY['n1', 'n2'], 4);
SQL
is($out, '4', 'create_shards on two nodes') or diag($err);
($out, $err) = run(<<'SQL');
CREATE TABLE t2 (k int NOT NULL, w text) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t2', ARRAY['n1', 'n2'], colocate_with => 't1');
SQL
is($out, '4', 'create_shards colocated with the first table') or diag($err);
run("INSERT INTO t1 SELECT g, 'v' || g FROM generate_series(1, 100) g");
run("INSERT INTO t2 SELECT g, 'w' || g FROM generate_series(1, 100, 2) g");
is(run('SELECT count(*), sum(k) FROM t1'), '100|5050', 'rows routed to the nodes');

my $join = 'SELECT count(*), sum(t1.k), min(t2.w), max(t1.v) '
  . 'FROM t1 JOIN t2 ON t1.k = t2.k';
my $expected = '50|2500|w1|v99';
($out, $err) = run($join);
is($out, $expected, 'join of the two tables') or diag($err);

# --- nodes restart between two statements -----------------------------------

$node1->restart;
($out, $err) = run($join);
is($out, $expected, 'after node1 restarted, the join reconnects and succeeds')
  or diag($err);

$node2->restart;
($out, $err) = run(<<'SQL');
CREATE TABLE t3 (k int NOT NULL) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t3', ARRAY['n1', 'n2'], 4);
SQL
is($out, '4', 'after node2 restarted, create_shards reconnects and succeeds')
  or diag($err);

# --- a node is down --------------------------------------------------------

$node1->stop;
($out, $err) = run(<<'SQL');
CREATE TABLE t4 (k int NOT NULL) PARTITION BY HASH (k);
SELECT colojoin.create_shards('t4', ARRAY['n1', 'n2'], 4);
SQL
like($err, qr/ERROR/, 'create_shards with node1 down fails');
like($err, qr/\bn1\b/, 'the error names the server');
like($err, qr/\b$port1\b/, 'the error gives its port');
is(partition_count('t4'), '0', 'no partition of t4 was left on the coordinator');
is( $node2->safe_psql(
		'postgres', "SELECT count(*) FROM pg_tables WHERE tablename LIKE 't4%'"),
	'0',
	'no shard of t4 was left on node2');
($out, $err) = run($join);
like($err, qr/ERROR/, 'a join over the stopped node fails');
is(run('SELECT 42'), '42', 'the session is still usable');

$node1->start;
($out, $err) = run("SELECT colojoin.create_shards('t4', ARRAY['n1', 'n2'], 4)");
is($out, '4', 'with node1 back, create_shards succeeds in the same session')
  or diag($err);
($out, $err) = run($join);
is($out, $expected, 'and the join works again') or diag($err);

$session->quit;
done_testing();
