# test/t/011_concurrency.pl -- colocated joins from several sessions at
# once: pgbench clients run colocated joins (simple, extended and prepared
# protocol, the latter with generic plans pruned at run time) and compare
# every answer with the same join over plain local tables; no client may
# fail.  A session never holds more connections to a node than
# colojoin.max_connections_per_node, alone or among others.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use ColojoinTest;

my $c = cj_new_cluster(name => 'concurrency', nodes => 2);
my $coord = $c->{coordinator};
my ($node1, $node2) = @{ $c->{nodes} };

# a and b: 8 classes, 4 on each node; la and lb: the same rows, local
cj_pair_tables($coord);

my $point = 'SELECT count(*), coalesce(sum(b.w), 0) FROM a JOIN b ON a.k = b.k WHERE a.k = 7';
my $whole = 'SELECT count(*), coalesce(sum(b.w), 0) FROM a LEFT JOIN b ON a.k = b.k AND b.w > 100';
like($coord->safe_psql('postgres', "EXPLAIN (COSTS OFF) $point"),
	qr/ColocatedJoin/, 'the point join is colocated');
like($coord->safe_psql('postgres', "EXPLAIN (COSTS OFF) $whole"),
	qr/ColocatedJoin.*Tasks: n1 4, n2 4/s, 'the whole join is colocated, 4 tasks per node');

# Each transaction compares three colocated joins with their local twins;
# a difference divides by zero, which fails the client.
my $script = <<'SCRIPT';
\set k random(0, 520)
SELECT count(*) AS c1, coalesce(sum(b.w), 0) AS s1 FROM a JOIN b ON a.k = b.k WHERE a.k = :k \gset
SELECT count(*) AS c2, coalesce(sum(lb.w), 0) AS s2 FROM la JOIN lb ON la.k = lb.k WHERE la.k = :k \gset
\if :c1 != :c2 or :s1 != :s2
SELECT 1 / 0 AS point_join_differs;
\endif
SELECT count(*) AS c3, coalesce(sum(b.w), 0) AS s3 FROM a LEFT JOIN b ON a.k = b.k AND b.w > :k \gset
SELECT count(*) AS c4, coalesce(sum(lb.w), 0) AS s4 FROM la LEFT JOIN lb ON la.k = lb.k AND lb.w > :k \gset
\if :c3 != :c4 or :s3 != :s4
SELECT 1 / 0 AS left_join_differs;
\endif
SELECT count(*) AS c5 FROM a WHERE EXISTS (SELECT FROM b WHERE b.k = a.k AND b.w % 7 = :k % 7) \gset
SELECT count(*) AS c6 FROM la WHERE EXISTS (SELECT FROM lb WHERE lb.k = la.k AND lb.w % 7 = :k % 7) \gset
\if :c5 != :c6
SELECT 1 / 0 AS semi_join_differs;
\endif
SCRIPT

for my $mode ('simple', 'extended', 'prepared')
{
	$coord->pgbench(
		"-n -c 4 -j 4 -t 25 -M $mode",
		0,
		[qr{processed: 100/100}, qr{number of failed transactions: 0}],
		[qr{^$}],
		"pgbench, $mode protocol: 4 clients, right answers, no errors",
		{ "011_colocated_$mode" => $script });
}

# --- hints over the extended and prepared protocols ------------------------

# With colocated joins disabled for the database, a ColocatedJoin hint still
# makes the nodes run the join: node1's log shows the joins it received.
$coord->safe_psql('postgres',
	'ALTER DATABASE postgres SET colojoin.enable_colocated_join = off');
$node1->append_conf('postgresql.conf', "log_statement = 'all'");
$node1->reload;
# A reload only signals the postmaster: wait until a new session, as the
# nodes' sessions of the coming clients are, gets the new setting.
ok($node1->poll_query_until('postgres', 'SHOW log_statement', 'all'),
	'node1 logs every statement');
my $hinted = <<'SCRIPT';
SELECT /*+ ColocatedJoin(a b) */ count(*) AS h1 FROM a JOIN b ON a.k = b.k WHERE b.w > 1990 \gset
SELECT count(*) AS h2 FROM la JOIN lb ON la.k = lb.k WHERE lb.w > 1990 \gset
\if :h1 != :h2
SELECT 1 / 0 AS hinted_join_differs;
\endif
SCRIPT
for my $mode ('extended', 'prepared')
{
	my $logstart = -s $node1->logfile;
	$coord->pgbench(
		"-n -c 1 -t 6 -M $mode",
		0,
		[qr{processed: 6/6}],
		[qr{^$}],
		"pgbench, $mode protocol: a hinted join, right answers",
		{ "011_hinted_$mode" => $hinted });
	my $log = slurp_file($node1->logfile, $logstart);
	like($log, qr/INNER JOIN "public"\."b_p\d+"/,
		"$mode protocol: the hint made the nodes run the join");
}
my $unhinted = "SELECT count(*) FROM a JOIN b ON a.k = b.k WHERE b.w > 1990;\n";
my $logstart = -s $node1->logfile;
$coord->pgbench('-n -c 1 -t 2 -M extended', 0, [qr{processed: 2/2}], [qr{^$}],
	'pgbench, extended protocol, no hint', { '011_unhinted' => $unhinted });
unlike(slurp_file($node1->logfile, $logstart), qr/INNER JOIN/,
	'without the hint the setting keeps the join on the coordinator');
# a forcing hint that cannot be honoured fails in every protocol
$coord->safe_psql('postgres', q{
CREATE TABLE m (k int, q int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('m', ARRAY['n1', 'n2'], 4);
});
for my $mode ('simple', 'extended', 'prepared')
{
	$coord->pgbench(
		"-n -c 1 -t 1 -M $mode",
		2,
		[qr{}],
		[qr{cannot be honoured}],
		"pgbench, $mode protocol: an impossible hint is an error",
		{ "011_bad_$mode" =>
			  "SELECT /*+ ColocatedJoin(a m) */ count(*) FROM a JOIN m ON a.k = m.k;\n" });
}
$node1->adjust_conf('postgresql.conf', 'log_statement', "'none'");
$node1->reload;
$coord->safe_psql('postgres',
	'ALTER DATABASE postgres RESET colojoin.enable_colocated_join');

# --- connections per session ----------------------------------------------

sub wait_connections
{
	my ($expected, $what) = @_;
	cj_wait_colojoin_connections($_, $expected, $what) for ($node1, $node2);
}

my $expected_whole = $coord->safe_psql('postgres',
	'SELECT count(*), coalesce(sum(lb.w), 0) FROM la LEFT JOIN lb ON la.k = lb.k AND lb.w > 100');
wait_connections(0, 'no session');

my $s = cj_session($coord);
$s->query_safe('SET colojoin.max_connections_per_node = 1');
is($s->query_safe($whole), $expected_whole, 'one connection per node: right answer');
wait_connections(1, 'max_connections_per_node = 1');
$s->query_safe('SET colojoin.max_connections_per_node = 2');
is($s->query_safe($whole), $expected_whole, 'two connections per node: right answer');
wait_connections(2, 'max_connections_per_node = 2');
$s->query_safe('RESET colojoin.max_connections_per_node');
is($s->query_safe($whole), $expected_whole, 'the default: right answer');
wait_connections(4, 'max_connections_per_node = 4 (the default), 4 tasks per node');
$s->quit;
wait_connections(0, 'session closed');

# Many sessions at once: never more than clients x max per node.
$coord->safe_psql('postgres',
	'ALTER DATABASE postgres SET colojoin.max_connections_per_node = 2');
my $file = $coord->basedir . '/011_whole.sql';
PostgreSQL::Test::Utils::append_to_file($file,
	"SELECT count(*), coalesce(sum(b.w), 0) FROM a LEFT JOIN b ON a.k = b.k AND b.w > :client_id;\n"
	  . "SELECT count(*) FROM a JOIN b ON a.k = b.k WHERE a.k = :client_id;\n");

# A lock on one of n1's shards holds every client inside its first join
# (which reads every class), all connected to the nodes at the same time:
# the connections are counted then, for sure, and sampled again while the
# clients run free once the lock is gone.
my $locker = cj_lock_tables($node1, 'a_p0');
my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[
		'pgbench', '-n', '-c', '5', '-j', '5', '-t', '80',
		'-h', $coord->host, '-p', $coord->port, '-f', $file, 'postgres'
	],
	'>', \$out, '2>', \$err,
	IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
my $sampler = cj_connection_sampler($node1, $node2);
sub sample { return ($sampler->{sample}->())[0]; }
ok( $node1->poll_query_until(
		'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'colojoin:%' "
		  . "AND wait_event_type = 'Lock' AND query LIKE '%a\\_p0%'",
		'5'),
	'all 5 clients are inside a join at once, held by the lock on n1');
my $held = sample();
cmp_ok($held, '>=', 5, 'the clients used n1: one connection each at least');
cmp_ok($held, '<=', 10, 'n1, every client inside a join: never more than 5 clients x 2 connections');
$locker->query_safe('COMMIT');
$locker->quit;
while ($h->pumpable)
{
	sample();
	$h->pump_nb;
}
$h->finish;
$sampler->{quit}->();
my ($max1, $max2, $samples) = (@{ $sampler->{max} }, $sampler->{samples});
note("most colojoin connections seen: n1 $max1, n2 $max2, in $samples samples");
is($h->result(0), 0, 'pgbench of 5 clients succeeded') or diag($err);
like($out, qr{processed: 400/400}, 'every transaction ran');
cmp_ok($samples, '>', 0, 'connections were sampled while it ran');
cmp_ok($max1, '<=', 10, 'n1: never more than 5 clients x 2 connections');
cmp_ok($max2, '<=', 10, 'n2: never more than 5 clients x 2 connections');
$coord->safe_psql('postgres',
	'ALTER DATABASE postgres RESET colojoin.max_connections_per_node');

$coord->stop;
$node1->stop;
$node2->stop;
done_testing();
