# test/t/041_busy_nodes.pl -- a node that answers but lets no connection
# in is not down (issue "Nothing leaks, nothing diverges from PostgreSQL"):
# - with every connection of node 1 held by another client ("sorry, too many
#   clients already"), a routed INSERT and a colocated join wait for a free
#   slot, and go on once the client lets one go; a second join goes on once
#   another session of the coordinator ends a transaction and so closes its
#   idle connection there; nothing is marked stale and both placements of
#   every leaf hold the same rows;
# - a session that already has a connection to the full node carries on
#   with it;
# - with colojoin.connection_wait_timeout short, the wait ends in an error
#   naming the node, and still nothing is stale or half-written;
# - a role whose user mapping has a wrong password gets its own error, for
#   writes and reads alike (no failover): its failed login marks nothing
#   stale, and the node serves everyone else.
# Every answer is compared with the same statements on local twins.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ColojoinTest;

my $c = cj_new_cluster(
	name => 'busy',
	nodes => 2,
	conf => "colojoin.connection_wait_timeout = '120s'\n",
	node_conf => "max_connections = 12\n");
my $coord = $c->{coordinator};
my ($node1, $node2) = @{ $c->{nodes} };

# Role cj_pw logs in to the nodes with a password (read at the restart,
# before colojoin ever connected)
for my $node ($node1, $node2)
{
	my $hba = $node->data_dir . '/pg_hba.conf';
	my $rules = slurp_file($hba);
	open my $fh, '>', $hba or die "$hba: $!";
	print $fh "local all cj_pw scram-sha-256\n$rules";
	close $fh;
	$node->safe_psql('postgres',
		"SET password_encryption = 'scram-sha-256'; CREATE ROLE cj_pw LOGIN PASSWORD 'right'");
	$node->restart;
}

# a and b: 4 classes, colocated; every leaf on node 1 and on node 2 (its
# primary on one, a replica on the other); la and lb: the same rows, local
$coord->safe_psql(
	'postgres', q{
CREATE TABLE a (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('a', ARRAY['n1', 'n2'], 4);
CREATE TABLE b (k int, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('b', ARRAY['n1', 'n2'], colocate_with => 'a');
CREATE TABLE la (k int, v int);
CREATE TABLE lb (k int, w int);
INSERT INTO a SELECT g, g FROM generate_series(1, 400) g;
INSERT INTO la SELECT g, g FROM generate_series(1, 400) g;
INSERT INTO b SELECT g % 300, g FROM generate_series(1, 600) g;
INSERT INTO lb SELECT g % 300, g FROM generate_series(1, 600) g;
SELECT colojoin.add_replica(s.leaf, CASE WHEN s.node = 'n1' THEN 'n2' ELSE 'n1' END)
FROM colojoin.shards s WHERE s.table_name IN ('a'::regclass, 'b'::regclass);
ANALYZE a, b, la, lb;
});
is( $coord->safe_psql(
		'postgres',
		"SELECT count(*) FROM (SELECT leaf FROM colojoin.shards WHERE table_name IN ('a'::regclass, 'b'::regclass) "
		  . "GROUP BY leaf HAVING count(DISTINCT node) = 2) x"),
	'8',
	'every leaf has a placement on node 1 and one on node 2');

my $join = 'SELECT count(*), sum(a.v + b.w) FROM a JOIN b ON a.k = b.k';
my $join_local = 'SELECT count(*), sum(la.v + lb.w) FROM la JOIN lb ON la.k = lb.k';
like(
	$coord->safe_psql('postgres', "EXPLAIN (COSTS OFF) $join"),
	qr/ColocatedJoin.*Tasks: n1 2, n2 2/s,
	'the join is colocated, with tasks on node 1');

sub same_as_twin
{
	return $coord->safe_psql('postgres',
		'SELECT (SELECT count(*) FROM (SELECT * FROM a EXCEPT ALL SELECT * FROM la) x) + '
		  . '(SELECT count(*) FROM (SELECT * FROM la EXCEPT ALL SELECT * FROM a) y)');
}

sub stale_count
{
	return $coord->safe_psql('postgres',
		'SELECT count(*) FROM colojoin.stale_placements');
}

# the leaves of a whose copies on node 1 and node 2 differ
sub placements_differ
{
	my @differ;
	for my $r (0 .. 3)
	{
		my $digest =
		    "SELECT count(*) || ':' || coalesce(md5(string_agg(x::text, ',' ORDER BY x::text)), '') "
		  . "FROM public.a_p$r x";
		push @differ, "a_p$r"
		  if $node1->safe_psql('postgres', $digest) ne
		  $node2->safe_psql('postgres', $digest);
	}
	return join(' ', @differ);
}

# the session with that pid waits in the coordinator (for a free slot on a
# node: the node's log shows it refused the session's attempts)
sub waits
{
	my ($pid, $log_offset, $what) = @_;
	ok( $coord->poll_query_until(
			'postgres',
			"SELECT state = 'active' AND wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $pid"
		),
		"$what waits");
	ok( defined $node1->wait_for_log(
			qr/FATAL:  sorry, too many clients already/, $log_offset),
		"node 1 refused $what as full");
	is(stale_count(), '0', "while $what waits, no placement is stale");
	return;
}

# a statement sent to a session, not waited for
sub start_statement
{
	my ($session, $sql) = @_;
	$session->{stderr} = '';
	$session->query_until(qr/statement started\n/,
		"\\echo statement started\n$sql;\n\\echo statement finished\n");
	return;
}

# its output once it finished
sub statement_result
{
	my ($session, $what) = @_;
	ok( pump_until(
			$session->{run}, $session->{timeout},
			\$session->{stdout}, qr/statement finished\n/),
		"$what finished");
	(my $got = $session->{stdout}) =~ s/\n?statement finished\n//;
	$session->{stdout} = '';
	return $got;
}

is(same_as_twin(), '0', 'the table matches its twin');
my $expected_join = $coord->safe_psql('postgres', $join_local);

# --- node 1 full: a routed INSERT waits -----------------------------------

cj_wait_colojoin_connections($node1, 0, 'before node 1 fills up');
my $holders = cj_fill_connections($node1);
my ($rc, $out, $err) = $node1->psql('postgres', 'SELECT 1');
like($err, qr/sorry, too many clients already/,
	'another client holds every connection of node 1');

my $s = cj_session($coord);
my $s_pid = $s->query_safe('SELECT pg_backend_pid()');
my $offset = -s $node1->logfile;
start_statement($s,
	'INSERT INTO a SELECT g, -g FROM generate_series(1001, 1100) g');
waits($s_pid, $offset, 'the INSERT');

# the other client lets a connection go
(pop @$holders)->quit;
is(statement_result($s, 'the INSERT'), '', 'the INSERT went on');
is($s->{stderr}, '', 'without a warning (nothing missed the write) or an error');
$coord->safe_psql('postgres',
	'INSERT INTO la SELECT g, -g FROM generate_series(1001, 1100) g');
is(stale_count(), '0', 'no placement is stale after the INSERT');

# --- node 1 full again (s keeps its connection): a colocated join waits ---

sub clients_on_node1
{
	return $holders->[0]->query_safe(
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'");
}

is(clients_on_node1(), '12',
	'node 1 is full again: the client and the INSERT\'s idle connection');
my $r = cj_session($coord);
my $r_pid = $r->query_safe('SELECT pg_backend_pid()');
$offset = -s $node1->logfile;
start_statement($r, $join);
waits($r_pid, $offset, 'the colocated join');
(pop @$holders)->quit;
is(statement_result($r, 'the colocated join'),
	$expected_join, 'the join is right once the client let a connection go');
is($r->{stderr}, '', 'and had no error');

# --- node 1 full again: another session's idle connection comes free ------

is(clients_on_node1(), '12',
	'node 1 is full again: the client, the INSERT\'s and the join\'s connections');
my $u = cj_session($coord);
my $u_pid = $u->query_safe('SELECT pg_backend_pid()');
$offset = -s $node1->logfile;
start_statement($u, $join);
waits($u_pid, $offset, 'a second colocated join');

# s ends a transaction: it closes its idle connection to a node another
# session waits for, and the waiting join gets it
$s->query_safe('SELECT 1');
is(statement_result($u, 'the second colocated join'),
	$expected_join, 'the join is right once s closed its idle connection');
is($u->{stderr}, '', 'and had no error');

# --- node 1 full; r keeps a connection there -----------------------------

is(clients_on_node1(), '12',
	'node 1 is full again: the client and the joins\' connections');
is($r->query_safe($join), $expected_join,
	'a session with a connection to the full node runs the join on it');
is($r->query_safe('INSERT INTO a VALUES (2001, 1), (2002, 2), (2003, 3), (2004, 4)'),
	'', 'and writes through it');
$coord->safe_psql('postgres',
	'INSERT INTO la VALUES (2001, 1), (2002, 2), (2003, 3), (2004, 4)');

# a session without one waits for colojoin.connection_wait_timeout, then fails
my $t = cj_session($coord);
$t->query_safe("SET colojoin.connection_wait_timeout = '200ms'");
my ($res, $stderr) = cj_query($t,
	'INSERT INTO a SELECT g, g FROM generate_series(5001, 5100) g');
like($stderr,
	qr/ERROR:  node "n1" had no free connection slot for \d+ ms/,
	'with a short wait, the INSERT fails naming the full node');
like($stderr, qr/DETAIL:  .*sorry, too many clients already/,
	'the error says what the node answered');
like($stderr, qr/HINT:  Raise the node's max_connections/,
	'and what to change');
unlike($stderr, qr/stale/, 'nothing missed the write');
($res, $stderr) = cj_query($t, $join);
like($stderr,
	qr/ERROR:  node "n1" had no free connection slot for \d+ ms/,
	'the join fails alike, instead of failing over to node 2');
is(stale_count(), '0', 'no placement is stale');

$_->quit for @$holders;
$_->quit for ($r, $s, $t, $u);
cj_wait_colojoin_connections($node1, 0, 'the sessions are gone');
is(same_as_twin(), '0', 'the table matches its twin');
is(placements_differ(), '', 'both placements of every leaf hold the same rows');
is( $node2->safe_psql(
		'postgres',
		'SELECT count(*) FROM (SELECT k FROM public.a_p0 UNION ALL SELECT k FROM public.a_p1 '
		  . 'UNION ALL SELECT k FROM public.a_p2 UNION ALL SELECT k FROM public.a_p3) x WHERE k > 5000'),
	'0',
	'the INSERT that timed out left nothing on node 2');

# --- a login the node refuses -------------------------------------------------

$coord->safe_psql(
	'postgres', q{
CREATE ROLE cj_pw LOGIN;
GRANT ALL ON a, b TO cj_pw;
CREATE USER MAPPING FOR cj_pw SERVER n1 OPTIONS (user 'cj_pw', password 'wrong');
CREATE USER MAPPING FOR cj_pw SERVER n2 OPTIONS (user 'cj_pw', password 'right');
});
$_->safe_psql('postgres', 'GRANT ALL ON ALL TABLES IN SCHEMA public TO cj_pw')
  for ($node1, $node2);

($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nSET ROLE cj_pw;\nINSERT INTO a SELECT g, g FROM generate_series(3001, 3100) g");
isnt($rc, 0, 'a write of the role whose login node 1 refuses fails');
like($err, qr/ERROR:  28P01: node "n1" refused the connection of role "cj_pw"/,
	'with the node\'s SQLSTATE, naming the node and the role');
like($err, qr/password authentication failed for user "cj_pw"/,
	'saying what the node answered');
unlike($err, qr/stale/, 'marking nothing stale');
($rc, $out, $err) = $coord->psql('postgres', "SET ROLE cj_pw;\n$join");
like($err, qr/ERROR:  node "n1" refused the connection of role "cj_pw"/,
	'a read of that role fails alike, instead of failing over to node 2');
is(stale_count(), '0', 'no placement is stale');
like( $coord->safe_psql('postgres', "EXPLAIN (COSTS OFF) $join"),
	qr/Tasks: n1 2, n2 2/,
	'node 1 still serves its classes');
$coord->safe_psql('postgres',
	'INSERT INTO a SELECT g, g FROM generate_series(3001, 3100) g; '
	  . 'INSERT INTO la SELECT g, g FROM generate_series(3001, 3100) g');
is($coord->safe_psql('postgres', $join), $coord->safe_psql('postgres', $join_local),
	'other roles read and write node 1 as before');
is(same_as_twin(), '0', 'and the table matches its twin');
is(placements_differ(), '', 'both placements of every leaf hold the same rows');

$coord->stop;
$node1->stop;
$node2->stop;
done_testing();
