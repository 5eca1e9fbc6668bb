# test/t/061_recovery_worker.pl -- with colojoin in shared_preload_libraries,
# a background worker resolves the transactions a crash left prepared on
# the nodes between the two phases of a commit, with no session using the
# nodes or calling colojoin.recover_prepared_transactions():
# - the launcher runs; at colojoin.recovery_interval = 0 it resolves
#   nothing, and a reload that sets an interval starts its rounds;
# - a transaction a live session prepared on both nodes, whose commit
#   record is not committed yet, is left alone, while transactions in doubt
#   beside it on the same nodes are resolved;
# - the coordinator killed between PREPARE and its local commit: once it is
#   back, the worker rolls both nodes' prepared transactions back;
# - the coordinator committed but a node was down for COMMIT PREPARED, then
#   the coordinator was killed: the worker commits that node's prepared
#   transaction and removes the commit record;
# - a database without the extension, or with a version older than the
#   commit records, is left alone, and can be dropped while the worker makes
#   its rounds;
# - the launcher stops cleanly at shutdown.
# Every wait is on an event: the writer is held between the phases by an
# advisory lock the test holds (colojoin.debug_pause_after_prepare, as in
# 060_two_phase.pl), and the test polls pg_locks, the nodes'
# pg_prepared_xacts and the coordinator's log.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ColojoinTest;

# cj_new_cluster turns the worker off (colojoin.recovery_interval = 0)
my $c = cj_new_cluster(name => 'recovery', nodes => 2);
my $coord = $c->{coordinator};
my ($node1, $node2) = @{ $c->{nodes} };

$coord->safe_psql(
	'postgres', q{
CREATE TABLE a (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('a', ARRAY['n1', 'n2'], 4);
INSERT INTO a SELECT g, g FROM generate_series(1, 100) g;
});

my $sysid = $coord->safe_psql('postgres',
	'SELECT system_identifier FROM pg_control_system()');
my $me = $coord->safe_psql('postgres',
	'SELECT oid FROM pg_roles WHERE rolname = current_user');

sub db_oid
{
	my ($db) = @_;
	return $coord->safe_psql('postgres',
		"SELECT oid FROM pg_database WHERE datname = '$db'");
}

# the start of the names of the transactions colojoin prepares for
# coordinator database $db
sub gid_prefix
{
	my ($db) = @_;
	return "colojoin_${sysid}_" . db_oid($db) . '_';
}
my $prefix = gid_prefix('postgres');

# how many transactions colojoin prepared on $node for database postgres
sub prepared
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_prepared_xacts WHERE starts_with(gid, '$prefix')");
}

sub wait_none_prepared
{
	my ($node) = @_;
	return $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_prepared_xacts WHERE starts_with(gid, '$prefix')");
}

# A transaction prepared on $node under the name colojoin gives the
# transaction of coordinator database $db with full xid $fxid, written
# through server $server with the test user's mapping: one in doubt, since
# xid $fxid is long over and has no commit record.  Returns its gid.
sub prepare_in_doubt
{
	my ($node, $db, $server, $fxid) = @_;
	my $srvid = $coord->safe_psql($db,
		"SELECT oid FROM pg_foreign_server WHERE srvname = '$server'");
	my $gid = gid_prefix($db) . "${fxid}_${srvid}_${me}_0";
	$node->safe_psql('postgres', "BEGIN; PREPARE TRANSACTION '$gid'");
	return $gid;
}

sub is_prepared
{
	my ($node, $gid) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_prepared_xacts WHERE gid = '$gid'");
}

sub wait_resolved
{
	my ($node, $gid) = @_;
	return $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid = '$gid'");
}

# count(*) of the rows of a's leaves on $node that satisfy $cond
sub node_rows
{
	my ($node, $cond) = @_;
	my $union = $node->safe_psql('postgres',
		"SELECT string_agg(format('SELECT * FROM public.%I', tablename), ' UNION ALL ') "
		  . "FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'a\\_p%'");
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM ($union) x WHERE $cond");
}

sub log_offset
{
	return -s $coord->logfile;
}

sub logged
{
	my ($regexp, $offset) = @_;
	return eval { $coord->wait_for_log($regexp, $offset); 1 };
}

# The writer: a session held between PREPARE and its local commit by the
# advisory lock 4242, which $holder takes first (cj_paused_write).
my ($holder, $writer);

sub start_write
{
	my $w = cj_paused_write($coord, $_[0]);
	($holder, $writer) = ($w->{holder}, $w->{writer});
}

# --- the launcher, and the setting ------------------------------------------------

ok( $coord->poll_query_until(
		'postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'colojoin recovery launcher'"
	),
	'the launcher runs');
is( $coord->safe_psql(
		'postgres',
		"SELECT setting || ' ' || unit || ' ' || context || ' ' || boot_val "
		  . "FROM pg_settings WHERE name = 'colojoin.recovery_interval'"),
	'0 ms sighup 60000',
	'colojoin.recovery_interval: off here, milliseconds, reloaded with the configuration, 60s by default');

my $first = prepare_in_doubt($node1, 'postgres', 'n1', 3);
$coord->safe_psql('postgres', "ALTER SYSTEM SET colojoin.recovery_interval = '100ms'");
$coord->reload;
ok(wait_resolved($node1, $first),
	'after a reload that sets an interval, the worker resolves a transaction in doubt');
ok(logged(qr/LOG:  colojoin rolled back prepared transaction \Q$first\E on node "n1"/),
	'and logs it, naming the node');
ok( $coord->poll_query_until('postgres', 'SELECT count(*) = 0 FROM colojoin.prepared_xacts'),
	'the worker also removed the commit records of the first write, finished long ago');

# --- a live session's transaction is left alone -------------------------------------

start_write('UPDATE a SET v = v + 1000000 WHERE k <= 50');
is(prepared($node1), '1', 'node 1 prepared');
is(prepared($node2), '1', 'node 2 prepared');
# beside it, on each node, one in doubt
my $doubt1 = prepare_in_doubt($node1, 'postgres', 'n1', 4);
my $doubt2 = prepare_in_doubt($node2, 'postgres', 'n2', 5);
ok(wait_resolved($node1, $doubt1) && wait_resolved($node2, $doubt2),
	'the worker resolves the transactions in doubt on both nodes');
# they were listed with the writer's, so the worker has looked at those
is(prepared($node1) + prepared($node2), 2,
	'but not the writer\'s: its local transaction is still running, its commit record not committed');

# --- the coordinator killed before its local commit ------------------------------------

$coord->stop('immediate');
eval { $holder->quit };
eval { $writer->quit };
my $offset = log_offset();
$coord->start;
# no session touches the nodes from here on
ok(wait_none_prepared($node1) && wait_none_prepared($node2),
	'after the restart, the worker resolves the prepared transactions of both nodes');
ok( logged(qr/colojoin rolled back prepared transaction \Q$prefix\E\S+ on node "n1"/, $offset)
	  && logged(qr/colojoin rolled back prepared transaction \Q$prefix\E\S+ on node "n2"/, $offset),
	'rolled back: the coordinator transaction never committed');
is(node_rows($node1, 'v >= 1000000') + node_rows($node2, 'v >= 1000000'),
	0, 'no node kept the update');
is(node_rows($node1, 'true') + node_rows($node2, 'true'), 100, 'and every row is there');

# --- the coordinator committed, a node missed COMMIT PREPARED, the coordinator killed ----

start_write('INSERT INTO a SELECT g, g FROM generate_series(1001, 1100) g');
is(prepared($node1) + prepared($node2), 2, 'both nodes prepared');
$node2->stop('immediate');
cj_query($holder, 'SELECT pg_advisory_unlock(4242)');
ok(pump_until($writer->{run}, $writer->{timeout}, \$writer->{stdout}, qr/statement finished\n/),
	'the writer finished');
like($writer->{stderr}, qr/could not commit prepared transaction colojoin_\S+ on node "n2"/,
	'node 2 could not be told to commit');
is(prepared($node1), 0, 'node 1 committed');
my $n1_rows = node_rows($node1, 'k > 1000');
ok($n1_rows < 100, 'node 1 has its rows of the insert, not all of them');
is( $coord->safe_psql(
		'postgres',
		"SELECT count(*) FROM colojoin.prepared_xacts "
		  . "WHERE server = (SELECT oid FROM pg_foreign_server WHERE srvname = 'n2')"),
	'1',
	'the commit record of node 2 is kept');
$coord->stop('immediate');
eval { $holder->quit };
eval { $writer->quit };
$node2->start;
is(prepared($node2), 1, 'node 2 holds its prepared transaction after its restart');
$offset = log_offset();
$coord->start;
ok(wait_none_prepared($node2), 'after the restart, the worker resolves it');
ok(logged(qr/colojoin committed prepared transaction \Q$prefix\E\S+ on node "n2"/, $offset),
	'committed: the coordinator transaction committed');
is(node_rows($node1, 'k > 1000') + node_rows($node2, 'k > 1000'),
	100, 'every row of the insert is on the nodes');
is(node_rows($node2, 'k > 1000'), 100 - $n1_rows, 'node 2 has the others');
ok( $coord->poll_query_until('postgres', 'SELECT count(*) = 0 FROM colojoin.prepared_xacts'),
	'and the commit record is removed');

# --- databases without the extension, or with an older version --------------------

my ($h1, $p1) = ($node1->host, $node1->port);
my $server_n1 = "CREATE SERVER n1 FOREIGN DATA WRAPPER postgres_fdw "
  . "OPTIONS (host '$h1', port '$p1', dbname 'postgres'); "
  . 'CREATE USER MAPPING FOR CURRENT_USER SERVER n1;';
$coord->safe_psql('postgres', 'CREATE DATABASE noext');
$coord->safe_psql('noext', "CREATE EXTENSION postgres_fdw; $server_n1");
$coord->safe_psql('postgres', 'CREATE DATABASE old');
$coord->safe_psql('old', "CREATE EXTENSION colojoin VERSION '1.1' CASCADE; $server_n1");
$coord->safe_psql('postgres', 'ALTER SYSTEM SET log_min_messages = debug1');
$coord->reload;
ok($coord->poll_query_until('postgres', 'SHOW log_min_messages', 'debug1'),
	'the coordinator logs DEBUG1 messages now');
my $noext = prepare_in_doubt($node1, 'noext', 'n1', 6);
my $old = prepare_in_doubt($node1, 'old', 'n1', 7);
$offset = log_offset();
# were colojoin 1.2 installed there, they would be rolled back
ok( logged(qr/colojoin recovery leaves database "noext" alone: the extension is not installed there/,
		$offset)
	  && logged(qr/colojoin recovery leaves database "old" alone: its version of the extension has no commit records/,
		$offset),
	'the workers of databases noext and old have looked since');
is(is_prepared($node1, $noext) + is_prepared($node1, $old),
	2, 'and left their transactions as they are');
$coord->safe_psql('postgres', 'ALTER SYSTEM RESET log_min_messages');
$coord->reload;
$node1->safe_psql('postgres', "ROLLBACK PREPARED '$noext'; ROLLBACK PREPARED '$old'");

# DROP DATABASE waits until every process, the launcher too, has absorbed
# its barrier; FORCE ends a worker visiting the database
$coord->safe_psql('postgres', 'DROP DATABASE noext WITH (FORCE)');
$coord->safe_psql('postgres', 'DROP DATABASE old WITH (FORCE)');
is($coord->safe_psql('postgres', "SELECT count(*) FROM pg_database WHERE datname IN ('noext', 'old')"),
	'0', 'DROP DATABASE finishes while the worker makes its rounds');

# --- a clean shutdown ---------------------------------------------------------------

$offset = log_offset();
$coord->stop('fast');
my $shutdown_log = slurp_file($coord->logfile, $offset);
like($shutdown_log, qr/database system is shut down/, 'the coordinator shut down');
unlike(
	$shutdown_log,
	qr/colojoin recovery launcher.*(exited with exit code [1-9]|terminated by signal)|terminating background worker "colojoin recovery launcher"/,
	'the launcher left at shutdown on its own, with exit code 0');

done_testing();
