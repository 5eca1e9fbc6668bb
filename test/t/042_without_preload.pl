# test/t/042_without_preload.pl -- colojoin loaded without
# shared_preload_libraries (here session_preload_libraries) has no shared
# connection budget (issue "Nothing leaks, nothing diverges from
# PostgreSQL"):
# - a session's first connection to a node warns once that the budget is
#   off, and only then;
# - 64 pgbench clients running fan-out joins (4 connections per node each,
#   256 wanted of nodes that allow 100) and point lookups all succeed, every
#   answer equal to the same query over local tables: sessions wait for a
#   free slot on a full node instead of failing, do without extra
#   connections there, and keep only their first connection to a node
#   between transactions;
# - afterwards the nodes hold no connection of colojoin's.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use ColojoinTest;

my $clients = 64;
my $c = cj_new_cluster(
	name => 'unshared',
	nodes => 2,
	preload => 0,
	conf => "max_connections = 80\n");
my $coord = $c->{coordinator};
my @nodes = @{ $c->{nodes} };

is($coord->safe_psql('postgres', 'SHOW shared_preload_libraries'),
	'', 'colojoin is not in shared_preload_libraries');
is($nodes[0]->safe_psql('postgres', 'SHOW max_connections'),
	'100', 'the nodes allow 100 connections');

# a and b: 8 classes, 4 on each node; la and lb: the same rows, local
cj_pair_tables($coord);
my $fanout = 'SELECT count(*), coalesce(sum(b.w), 0) FROM a LEFT JOIN b ON a.k = b.k AND b.w > 100';
like($coord->safe_psql('postgres', "EXPLAIN (COSTS OFF) $fanout"),
	qr/ColocatedJoin.*Tasks: n1 4, n2 4/s,
	'the fan-out join is colocated, 4 tasks per node');

# --- the warning ---------------------------------------------------------------

my $s = cj_session($coord);
my ($res, $stderr) = cj_query($s, $fanout);
is($res, $coord->safe_psql('postgres',
		'SELECT count(*), coalesce(sum(lb.w), 0) FROM la LEFT JOIN lb ON la.k = lb.k AND lb.w > 100'),
	'the fan-out join is right');
like($stderr,
	qr/WARNING:  the shared connection budget is off because colojoin is not in shared_preload_libraries/,
	'the first connection to a node warns that the budget is off');
like($stderr, qr/HINT:  Add colojoin to shared_preload_libraries/,
	'saying what to do');
is(() = $stderr =~ /WARNING/g, 1, 'once');
($res, $stderr) = cj_query($s, $fanout);
is($stderr, '', 'and not again in the same session');
# between transactions the session keeps its first connection to each node
for my $node (@nodes)
{
	cj_wait_colojoin_connections($node, 1,
		'a session after a fan-out join, without the shared budget');
}
$s->quit;
for my $node (@nodes)
{
	cj_wait_colojoin_connections($node, 0, 'the session is gone');
}

# --- 64 clients -------------------------------------------------------------

my $file = cj_pair_pgbench_script($coord, '042_unshared');
my @offsets = map { -s $_->logfile } @nodes;
my ($out, $err) = ('', '');
my $h = IPC::Run::run(
	[
		'pgbench', '-n', '-c', $clients, '-j', '4', '-t', '2',
		'-h', $coord->host, '-p', $coord->port, '-f', $file, 'postgres'
	],
	'>', \$out, '2>', \$err,
	IPC::Run::timeout(4 * $PostgreSQL::Test::Utils::timeout_default));
is($?, 0, "pgbench of $clients clients succeeded") or diag($err);
like($out, qr{processed: 128/128}, 'every transaction ran');
like($out, qr{number of failed transactions: 0 }, 'no transaction failed');
unlike($err, qr/aborted|could not connect|no free connection slot|ERROR/,
	'no client was refused a connection or aborted');
is(() = $err =~ /WARNING:  the shared connection budget is off/g,
	$clients, 'each client was warned once');
my $refused = 0;
for my $i (0, 1)
{
	my $log = slurp_file($nodes[$i]->logfile, $offsets[$i]);
	$refused += () = $log =~ /sorry, too many clients already/g;
}
note("connections the nodes refused as full: $refused");

for my $node (@nodes)
{
	cj_wait_colojoin_connections($node, 0, 'the clients are gone');
}

$coord->stop;
$_->stop for @nodes;
done_testing();
