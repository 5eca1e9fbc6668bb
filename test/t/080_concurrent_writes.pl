# test/t/080_concurrent_writes.pl -- writers that meet.
#
# Hot rows: a local transaction at READ COMMITTED writes through remote
# transactions at READ COMMITTED, so a statement that waited for another
# transaction's change of its row goes on with the new version, as on a
# plain table (no serialization error); at REPEATABLE READ it fails as a
# plain table's would.  pgbench clients updating the same rows, without
# retries, all commit.
#
# Deadlocks across nodes.  Two coordinator
# sessions that change rows on two nodes in opposite orders wait for each
# other on different nodes, a cycle no node can see: colojoin finds it and
# the transaction that started last gives up with PostgreSQL's deadlock
# error (SQLSTATE 40P01), so the other commits and nothing hangs.
# - two sessions, one transfer each, in opposite orders: the younger one
#   fails, the older one commits, and the table holds exactly its change;
# - pgbench clients running random transfers between rows of both nodes,
#   retrying deadlock and serialization failures (--max-tries): every
#   transaction commits in the end and the balances add up.
# Waits are on events: the first statement of the cycle is seen waiting for
# its lock on the node before the second is sent; then each statement is
# read to its end (a missed cycle would hang the test, not pass it).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ColojoinTest;

my $c = cj_new_cluster(name => 'deadlock', nodes => 2);
my $coord = $c->{coordinator};
my ($node1, $node2) = @{ $c->{nodes} };

# classes 0 and 2 on n1, 1 and 3 on n2
$coord->safe_psql(
	'postgres', q{
CREATE TABLE acct (k int NOT NULL, bal int NOT NULL) PARTITION BY HASH (k);
SELECT colojoin.create_shards('acct', ARRAY['n1', 'n2'], 4);
INSERT INTO acct SELECT g, 1000 FROM generate_series(1, 40) g;
-- sessions look for cycles after this long of waiting (as PostgreSQL's
-- detector does): the many deadlocks of the pgbench run end sooner
ALTER DATABASE postgres SET deadlock_timeout = '50ms';
});
my $k1 = $coord->safe_psql('postgres',
	"SELECT min(k) FROM generate_series(1, 40) k "
	  . "WHERE satisfies_hash_partition('acct'::regclass, 4, 0, k)");
my $k2 = $coord->safe_psql('postgres',
	"SELECT min(k) FROM generate_series(1, 40) k "
	  . "WHERE satisfies_hash_partition('acct'::regclass, 4, 1, k)");
is($node1->safe_psql('postgres', "SELECT count(*) FROM acct_p0 WHERE k = $k1"),
	'1', "row $k1 is on n1");
is($node2->safe_psql('postgres', "SELECT count(*) FROM acct_p1 WHERE k = $k2"),
	'1', "row $k2 is on n2");

# start a statement in a session without waiting for it; read it to its end
sub start_statement
{
	my ($session, $sql) = @_;
	$session->query_until(qr/statement started\n/,
		"\\echo statement started\n$sql;\n\\echo statement finished\n");
}

sub finish_statement
{
	my ($session) = @_;
	my $ok = pump_until($session->{run}, $session->{timeout},
		\$session->{stdout}, qr/statement finished\n/);
	my $out = $session->{stdout};
	$out =~ s/statement finished\n//;
	$session->{stdout} = '';
	my $err = $session->{stderr};
	$session->{stderr} = '';
	return ($ok ? $out : undef, $err);
}

# colojoin backends on the node waiting for a row lock
my $lock_waits =
    "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'colojoin:%' "
  . "AND wait_event_type = 'Lock'";

# --- two sessions, opposite orders ------------------------------------------

my $older = cj_session($coord);
my $younger = cj_session($coord);
cj_query($older, 'BEGIN');
cj_query($older, "UPDATE acct SET bal = bal - 10 WHERE k = $k1");
cj_query($younger, 'BEGIN');
cj_query($younger, "UPDATE acct SET bal = bal - 20 WHERE k = $k2");

start_statement($older, "UPDATE acct SET bal = bal + 10 WHERE k = $k2");
ok($node2->poll_query_until('postgres', "SELECT ($lock_waits) = 1"),
	'the older transaction waits on n2 for the younger one');
start_statement($younger, "UPDATE acct SET bal = bal + 20 WHERE k = $k1");

my ($yout, $yerr) = finish_statement($younger);
ok(defined $yout, 'the younger transaction\'s statement ended');
like($yerr, qr/ERROR:  deadlock detected across nodes/,
	'with a deadlock error');
like($yerr, qr/DETAIL:  Process \d+ waits on a node for a transaction of a coordinator session \(process \d+\)/,
	'which names the processes of the cycle');
my ($oout, $oerr) = finish_statement($older);
ok(defined $oout, 'the older transaction\'s statement ended');
is($oerr, '', 'without an error: the younger one gave way');
cj_query($younger, 'ROLLBACK');
my ($cout, $cerr) = cj_query($older, 'COMMIT');
is($cerr, '', 'the older transaction commits');

is( $coord->safe_psql('postgres',
		"SELECT string_agg(k || ':' || bal, ',' ORDER BY k) FROM acct WHERE k IN ($k1, $k2)"),
	join(',', map { "$_->[0]:$_->[1]" }
		  sort { $a->[0] <=> $b->[0] } ([$k1, 990], [$k2, 1010])),
	'the table holds the older transfer only');
is($coord->safe_psql('postgres', 'SELECT sum(bal) FROM acct'),
	'40000', 'the balances add up');
for my $node ($node1, $node2)
{
	is($node->safe_psql('postgres', "SELECT ($lock_waits)"), '0',
		'no lock wait is left on ' . $node->name);
	is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'),
		'0', 'no prepared transaction is left on ' . $node->name);
}

# the sessions work on
is(cj_query($younger, 'SELECT bal FROM acct WHERE k = ' . $k1), '990',
	'the younger session is usable and sees the commit');
$older->quit;
$younger->quit;

# --- hot rows ----------------------------------------------------------------

$coord->safe_psql(
	'postgres', q{
CREATE TABLE hot (k int NOT NULL, v int NOT NULL) PARTITION BY HASH (k);
SELECT colojoin.create_shards('hot', ARRAY['n1', 'n2'], 4);
CREATE TABLE lhot (k int NOT NULL, v int NOT NULL);
});
# four rows, all on n1 (classes 0 and 2), so that a writer waiting for them
# waits there
my @hot = split /,/, $coord->safe_psql('postgres',
	"SELECT string_agg(k::text, ',' ORDER BY k) FROM (SELECT k FROM generate_series(1, 100) k "
	  . "WHERE satisfies_hash_partition('hot'::regclass, 4, 0, k) "
	  . "OR satisfies_hash_partition('hot'::regclass, 4, 2, k) ORDER BY k LIMIT 4) s");
my $hot_keys = join(', ', @hot);
$coord->safe_psql('postgres',
	"INSERT INTO hot SELECT k, 0 FROM unnest(ARRAY[$hot_keys]) k; INSERT INTO lhot SELECT * FROM hot;");
is($node1->safe_psql('postgres', 'SELECT (SELECT count(*) FROM hot_p0) + (SELECT count(*) FROM hot_p2)'),
	'4', 'the four hot rows are on n1');

# The same two transactions on the sharded table and on its local twin: the
# first changes every row and holds them; the second's statement waits for
# it, then the first commits.  Returns what the second printed.
sub meet
{
	my ($table, $level) = @_;
	my $first = cj_session($coord);
	my $second = cj_session($coord);
	cj_query($first, "BEGIN; UPDATE $table SET v = v + 1");
	cj_query($second, "BEGIN ISOLATION LEVEL $level; SELECT 1");
	start_statement($second, "UPDATE $table SET v = v * 10 WHERE k IN ($hot_keys)");
	my $waits = "SELECT count(*) > 0 FROM pg_locks WHERE NOT granted";
	ok(($table eq 'hot' ? $node1 : $coord)->poll_query_until('postgres', $waits),
		"$level: the second writer waits " . ($table eq 'hot' ? 'on n1' : 'locally'));
	cj_query($first, 'COMMIT');
	my ($out, $err) = finish_statement($second);
	my ($cout, $cerr) = cj_query($second, $err eq '' ? 'COMMIT' : 'ROLLBACK');
	$first->quit;
	$second->quit;
	$err =~ s/^psql:<stdin>:\d+: //mg;
	$err =~ s/\n(CONTEXT|DETAIL|HINT):.*//sg;
	$err =~ s/\s+$//;
	return $err;
}

for my $level ('READ COMMITTED', 'REPEATABLE READ')
{
	my $remote = meet('hot', $level);
	my $local = meet('lhot', $level);
	is($remote, $local, "$level: the waiting writer ends as on a plain table")
	  or diag("sharded: $remote\nlocal: $local");
	is( $coord->safe_psql('postgres', 'SELECT string_agg(k || \':\' || v, \',\' ORDER BY k) FROM hot'),
		$coord->safe_psql('postgres', 'SELECT string_agg(k || \':\' || v, \',\' ORDER BY k) FROM lhot'),
		"$level: and the rows are the plain table's");
}
like(meet('hot', 'REPEATABLE READ'), qr/could not serialize access due to concurrent update/,
	'REPEATABLE READ: the second writer fails with a serialization error');

# clients updating the same rows, in the same order, no retries
my $hot = <<'SCRIPT';
BEGIN;
UPDATE hot SET v = v + 1 WHERE k = :h1;
UPDATE hot SET v = v + 1 WHERE k = :h2;
UPDATE hot SET v = v + 1 WHERE k = :h3;
END;
SCRIPT
my $before = $coord->safe_psql('postgres', "SELECT sum(v) FROM hot WHERE k IN ($hot[0], $hot[1], $hot[2])");
$coord->pgbench(
	"-n -c 6 -j 6 -t 20 -D h1=$hot[0] -D h2=$hot[1] -D h3=$hot[2]",
	0,
	[qr{processed: 120/120}, qr{number of failed transactions: 0}],
	[qr{^$}],
	'pgbench on hot rows at READ COMMITTED: no client fails',
	{ '080_hot' => $hot });
is($coord->safe_psql('postgres', "SELECT sum(v) FROM hot WHERE k IN ($hot[0], $hot[1], $hot[2])"),
	$before + 360, 'every increment is there');

# --- many clients, random transfers ---------------------------------------

# Each transfer moves an amount between a row of n1 and a row of n2, in a
# random order: transactions meet in opposite orders all the time (each
# such meeting ends in a deadlock or, as the remote transactions are
# REPEATABLE READ, a serialization failure, both retried).
my $script = <<'SCRIPT';
\set amount random(1, 50)
\set flip random(0, 1)
BEGIN;
\if :flip
UPDATE acct SET bal = bal - :amount WHERE k = :k1;
UPDATE acct SET bal = bal + :amount WHERE k = :k2;
\else
UPDATE acct SET bal = bal - :amount WHERE k = :k2;
UPDATE acct SET bal = bal + :amount WHERE k = :k1;
\endif
END;
SCRIPT
my $logstart = -s $coord->logfile;
$coord->pgbench(
	"-n -c 6 -j 6 -t 15 --max-tries=1000 -D k1=$k1 -D k2=$k2",
	0,
	[qr{processed: 90/90}, qr{number of failed transactions: 0}],
	[qr{^$}],
	'pgbench transfers: every transaction commits in the end',
	{ '080_transfer' => $script });
is($coord->safe_psql('postgres', 'SELECT sum(bal) FROM acct'),
	'40000', 'after the transfers the balances add up');
my $found = () = slurp_file($coord->logfile, $logstart) =~ /deadlock detected across nodes/g;
note("deadlocks across nodes found during the transfers: $found");
is($coord->safe_psql('postgres', 'SELECT count(*) FROM acct'),
	'40', 'and every row is there once');
for my $node ($node1, $node2)
{
	is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'),
		'0', 'no prepared transaction is left on ' . $node->name);
}

done_testing();
