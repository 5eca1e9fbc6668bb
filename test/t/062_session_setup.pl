# test/t/062_session_setup.pl -- what a new connection need not ask a node
# again (src/remote/setup_cache.c):
# - the first connection to a node asks who it is and whether it holds
#   transactions this database prepared; a connection of a later session
#   asks neither, and its answers are the same;
# - a write on both nodes (two-phase commit) makes the next connection ask
#   again whether anything is prepared there, not who the node is;
# - an ALTER SERVER that changes the connection options, and
#   colojoin.node_identity_lifetime = 0, make it ask who the node is;
# - a transaction a node kept prepared because it was down at COMMIT
#   PREPARED is committed at the next session's first connection, although
#   sessions before the write had found the node clean;
# - without shared_preload_libraries every connection asks;
# - a session that ends closes its connections without leaving a read-only
#   COMMIT's answer unread (which the node logs as a reset connection);
# - a task's cursor is planned for all its rows (cursor_tuple_fraction 1,
#   which auto_explain shows among the settings its plan was made with).
# Each check reads the node's log (log_statement = all) from an offset
# taken before the session, once the session's connections to the node
# have ended (the last two checks: src/remote/connection.c close_at_exit,
# connection_internal.h CJ_SESSION_SETUP).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ColojoinTest;

my $c = cj_new_cluster(
	name      => 'setup',
	nodes     => 2,
	node_conf => "log_statement = all\n"
	  . "session_preload_libraries = 'auto_explain'\n"
	  . "auto_explain.log_min_duration = 0\n"
	  . "auto_explain.log_settings = on\n");
my $coord = $c->{coordinator};
my ($node1, $node2) = @{ $c->{nodes} };

$coord->safe_psql(
	'postgres', q{
CREATE TABLE a (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('a', ARRAY['n1', 'n2'], 4);
CREATE TABLE la (k int, v int);
INSERT INTO la SELECT g, g FROM generate_series(1, 200) g;
});

my $identity_re = qr/pg_control_system\(\)/;
my $pending_re  = qr/pg_prepared_xact\(\)/;
my $setup_re    = qr/SET search_path = pg_catalog; SET timezone/;

# what $node logged while $sql ran in a new session of $node_c (coordinator),
# read once the session's connections to $node have ended: a node backend
# logs everything it has to say (its last COMMIT, how its client left)
# before it leaves pg_stat_activity
sub logged_by_session
{
	my ($node, $sql, $node_c) = @_;
	my $offset = -s $node->logfile;
	my ($pid, $out) = split /\n/,
	  ($node_c // $coord)->safe_psql('postgres', "SELECT pg_backend_pid(); $sql"), 2;
	$node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name LIKE 'colojoin:%:$pid'")
	  or die "the connections of coordinator backend $pid to " . $node->name . " did not end";
	return (slurp_file($node->logfile, $offset), $out);
}

my $count = 'SELECT count(*), sum(v) FROM a';
my $twin = $coord->safe_psql('postgres',
	'INSERT INTO a SELECT * FROM la; SELECT count(*), sum(v) FROM la');

my ($log, $out) = logged_by_session($node1, $count);
like($log, $setup_re, 'a new session connects to node 1');
like($log, $pending_re,
	'the first connection since the write asks whether transactions are prepared there');
($log, $out) = logged_by_session($node1, $count);
unlike($log, $identity_re, 'a later session does not ask who the node is');
unlike($log, $pending_re, 'nor whether anything is prepared there');
like($log, $setup_re, 'though it opens a connection of its own');
is($out, $twin, 'and its answer is the same');
unlike($log, qr/could not receive data from client/,
	'a session that ends closes its connections cleanly, its last COMMIT\'s answer read');

# --- how a task's cursor is planned ----------------------------------------------------
($log, $out) = logged_by_session($node1, $count);
like($log, qr/Query Text: DECLARE colojoin_cursor [^\n]*\n(?:[^\n]*\n)*?\s*Settings: [^\n]*cursor_tuple_fraction = '1'/,
	'a task\'s cursor is planned for all its rows');

# --- a write on both nodes ---------------------------------------------------------
$coord->safe_psql('postgres',
	'UPDATE a SET v = v + 1 WHERE k <= 20; UPDATE la SET v = v + 1 WHERE k <= 20');
$twin = $coord->safe_psql('postgres', 'SELECT count(*), sum(v) FROM la');
($log, $out) = logged_by_session($node2, $count);
like($log, $pending_re,
	'after a write on both nodes, the next connection asks whether anything is prepared');
unlike($log, $identity_re, 'but not who the node is');
is($out, $twin, 'and sees the write');
($log, $out) = logged_by_session($node2, $count);
unlike($log, $pending_re, 'the one after asks neither');

# --- what changes who the node might be ----------------------------------------------
$coord->safe_psql('postgres', "ALTER SERVER n1 OPTIONS (ADD connect_timeout '30')");
($log, $out) = logged_by_session($node1, $count);
like($log, $identity_re, 'after ALTER SERVER changes its options, a connection asks who the node is');
is($out, $twin, 'and answers the same');
($log, $out) = logged_by_session($node1, "SET colojoin.node_identity_lifetime = 0; $count");
like($log, $identity_re, 'with colojoin.node_identity_lifetime = 0 every connection asks');
is($coord->safe_psql('postgres', "SELECT setting || ' ' || unit || ' ' || context FROM pg_settings "
	  . "WHERE name = 'colojoin.node_identity_lifetime'"),
	'300000 ms superuser', 'colojoin.node_identity_lifetime: 5 minutes by default, set by superusers');

# --- node 2 down at COMMIT PREPARED, after sessions found it clean ----------------------
($log, $out) = logged_by_session($node2, $count);
unlike($log, $pending_re, 'node 2 is known to hold nothing prepared');

my $w = cj_paused_write($coord, 'UPDATE a SET v = v + 1000');
my ($holder, $writer) = ($w->{holder}, $w->{writer});
$node2->stop('fast');
cj_query($holder, 'SELECT pg_advisory_unlock(4242)');
ok(pump_until($writer->{run}, $writer->{timeout}, \$writer->{stdout}, qr/statement finished\n/),
	'the writer finished');
like($writer->{stderr}, qr/could not commit prepared transaction .* on node "n2"/,
	'node 2 down: its COMMIT PREPARED fails with a warning');
$writer->quit;
$holder->quit;
$coord->safe_psql('postgres', 'UPDATE la SET v = v + 1000');
$twin = $coord->safe_psql('postgres', 'SELECT count(*), sum(v) FROM la');
$node2->start;
($log, $out) = logged_by_session($node2, $count);
like($log, $pending_re, 'back up, the next session asks node 2 what is prepared');
is($out, $twin, 'and sees the whole write');
is($node2->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'),
	'0', 'the prepared transaction was committed at that first connection');

# --- without shared_preload_libraries ----------------------------------------------------
my $c2 = cj_new_cluster(name => 'setup_nopreload', nodes => 1, preload => 0,
	node_conf => "log_statement = all\n");
my $coord2 = $c2->{coordinator};
my $n = $c2->{nodes}[0];
$coord2->safe_psql(
	'postgres', q{
CREATE TABLE b (k int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('b', ARRAY['n1'], 2);
INSERT INTO b SELECT generate_series(1, 10);
});
$coord2->safe_psql('postgres', 'SELECT count(*) FROM b');
($log, $out) = logged_by_session($n, 'SELECT count(*) FROM b', $coord2);
like($log, $identity_re, 'without the library preloaded, every new session asks who the node is');
is($out, '10', 'and answers');

$coord->stop;
$coord2->stop;
$_->stop for (@{ $c->{nodes} }, @{ $c2->{nodes} });
done_testing();
