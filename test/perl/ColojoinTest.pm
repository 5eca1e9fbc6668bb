# test/perl/ColojoinTest.pm -- helpers the TAP tests of test/t share: a
# colojoin cluster (coordinator + nodes) made of PostgreSQL::Test::Cluster
# servers, and a few comparison helpers.
#
# It owns only setup and small utilities; every assertion stays in the
# test files, so a reader sees what each test checks.

package ColojoinTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More ();

our @EXPORT =
  qw(cj_new_node cj_new_cluster cj_explain cj_query cj_session cj_lock_tables
  cj_pair_tables cj_pair_pgbench_script cj_colojoin_connections
  cj_wait_colojoin_connections cj_connection_sampler cj_fill_connections
  cj_order_tables cj_order_writes cj_twins_equal_sql cj_move_remains_sql
  cj_paused_write);

# Settings every test server gets: small, fast, and UTF8 whatever the locale.
my $common_conf = <<'CONF';
max_prepared_transactions = 10
log_min_messages = warning
log_statement = none
CONF

=pod

=head1 cj_new_node($name, %opts)

A started PostgreSQL::Test::Cluster server.  Options:
preload => 1 puts colojoin in shared_preload_libraries, with its recovery
worker off (colojoin.recovery_interval = 0: prepared transactions are
resolved only where a test says, as autovacuum is off in the suites'
cluster); conf => 'text' is appended to postgresql.conf, after that, so
it may turn the worker on.

=cut

sub cj_new_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(extra => [ '--encoding=UTF8', '--locale=C.UTF-8' ]);
	$node->append_conf('postgresql.conf', $common_conf);
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'colojoin'\ncolojoin.recovery_interval = 0")
	  if $opts{preload};
	$node->append_conf('postgresql.conf', $opts{conf}) if $opts{conf};
	$node->start;
	return $node;
}

=pod

=head1 cj_new_cluster(%opts)

A coordinator with colojoin preloaded and CREATE EXTENSION colojoin CASCADE
done in database "postgres", plus nodes => N (default 2) servers; on the
coordinator, foreign servers n1 .. nN point at them, with a user mapping for
the current user.  conf => 'text' goes into the coordinator's
postgresql.conf, node_conf => 'text' into every node's (max_connections =
40, say).  preload => 0 loads colojoin on the coordinator through
session_preload_libraries instead of shared_preload_libraries (no shared
memory, hence no shared connection budget).  Returns a hash reference:
{ coordinator => $node, nodes => [ $node1, ... ], servers => [ 'n1', ... ] }.

=cut

sub cj_new_cluster
{
	my (%opts) = @_;
	my $nnodes = $opts{nodes} // 2;
	my $prefix = $opts{name} // 'cj';
	my $preload = $opts{preload} // 1;
	my $coord = cj_new_node("${prefix}_coordinator",
		preload => $preload,
		conf => ($preload ? '' : "session_preload_libraries = 'colojoin'\n")
		  . ($opts{conf} // ''));
	my (@nodes, @servers);
	my $sql = "CREATE EXTENSION colojoin CASCADE;\n";
	for my $i (1 .. $nnodes)
	{
		my $node = cj_new_node("${prefix}_node$i", conf => $opts{node_conf});
		my ($host, $port) = ($node->host, $node->port);
		$sql .=
		    "CREATE SERVER n$i FOREIGN DATA WRAPPER postgres_fdw "
		  . "OPTIONS (host '$host', port '$port', dbname 'postgres');\n"
		  . "CREATE USER MAPPING FOR CURRENT_USER SERVER n$i;\n";
		push @nodes,   $node;
		push @servers, "n$i";
	}
	$coord->safe_psql('postgres', $sql);
	return { coordinator => $coord, nodes => \@nodes, servers => \@servers };
}

=pod

=head1 cj_explain($node, $db, $query, $setup)

The text of EXPLAIN (VERBOSE, COSTS OFF) $query, run in one session after
the statements in $setup (e.g. "LOAD 'colojoin'; SET ...;").

=cut

sub cj_explain
{
	my ($node, $db, $query, $setup) = @_;
	$setup //= '';
	return $node->safe_psql($db,
		"$setup\nEXPLAIN (VERBOSE, COSTS OFF) $query");
}

=head1 cj_query($session, $sql)

Run $sql in a background psql session (PostgreSQL::Test::BackgroundPsql)
without stopping at an error: in list context its output and what it
printed on stderr (which is then cleared), in scalar context the output.

=cut

sub cj_query
{
	my ($session, $sql) = @_;
	my $out = $session->query($sql);
	my $err = $session->{stderr};
	$session->{stderr} = '';
	return wantarray ? ($out, $err) : $out;
}

=pod

=head1 cj_session($node, $db)

A background psql session (PostgreSQL::Test::BackgroundPsql) on $db
(default "postgres") that does not stop at an error.  Its timeout,
$PostgreSQL::Test::Utils::timeout_default, applies to each query rather
than to the session's whole life, so that a session kept through a long
test on a slow machine does not run out of time between events.

=cut

sub cj_session
{
	my ($node, $db) = @_;
	my $session = $node->background_psql($db // 'postgres', on_error_stop => 0);
	$session->set_query_timer_restart;
	return $session;
}

=pod

=head1 cj_paused_write($coord, $sql)

Runs $sql in a new session of $coord held between its PREPARE TRANSACTIONs
and its local commit (colojoin.debug_pause_after_prepare on advisory lock
4242, which a second new session takes first), and returns once the writer
is seen waiting for that lock in pg_locks (an ok() test).  Returns
{ holder => session, writer => session }: SELECT pg_advisory_unlock(4242)
on the holder lets the writer go on; its output ends with "statement
finished".

=cut

sub cj_paused_write
{
	my ($coord, $sql) = @_;
	my $holder = cj_session($coord);
	my $writer = cj_session($coord);
	my $pid = cj_query($writer, 'SELECT pg_backend_pid()');
	cj_query($holder, 'SELECT pg_advisory_lock(4242)');
	cj_query($writer, 'SET colojoin.debug_pause_after_prepare = 4242');
	$writer->query_until(qr/statement started\n/,
		"\\echo statement started\n$sql;\n\\echo statement finished\n");
	Test::More::ok(
		$coord->poll_query_until(
			'postgres',
			"SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 "
			  . "AND NOT granted AND pid = $pid"),
		'the writer waits between PREPARE and the local commit');
	return { holder => $holder, writer => $writer };
}

=pod

=head1 cj_lock_tables($node, @tables)

A session on $node, database "postgres", inside a transaction that holds
ACCESS EXCLUSIVE locks on @tables: a query of another session that needs one
of them waits for it (wait_event_type 'Lock' in pg_stat_activity) until the
session commits ($locker->query_safe('COMMIT')) or goes.  Tests use it to
hold a query at a known point, instead of hoping to catch it there in time.

=cut

sub cj_lock_tables
{
	my ($node, @tables) = @_;
	my $locker = cj_session($node);
	$locker->query_safe('BEGIN; LOCK TABLE '
		  . join(', ', @tables)
		  . ' IN ACCESS EXCLUSIVE MODE');
	return $locker;
}

=pod

=head1 cj_pair_tables($coord)

On a cluster of nodes n1 and n2: a and b, 8 hash classes, 4 on each node,
b colocated with a (int against bigint keys), and la and lb, plain local
tables holding the same rows (NULL keys included) as the reference.

=cut

sub cj_pair_tables
{
	my ($coord) = @_;
	$coord->safe_psql(
		'postgres', q{
CREATE TABLE a (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('a', ARRAY['n1', 'n2'], 8);
CREATE TABLE b (k bigint, w int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('b', ARRAY['n1', 'n2'], colocate_with => 'a');
CREATE TABLE la (k int, v int);
CREATE TABLE lb (k bigint, w int);
INSERT INTO la SELECT CASE WHEN g % 97 = 0 THEN NULL ELSE g % 500 END, g FROM generate_series(1, 1500) g;
INSERT INTO lb SELECT CASE WHEN g % 89 = 0 THEN NULL ELSE (g * 7) % 600 END, g FROM generate_series(1, 2000) g;
INSERT INTO a SELECT * FROM la;
INSERT INTO b SELECT * FROM lb;
ANALYZE a, b, la, lb;
});
	return;
}

=pod

=head1 cj_pair_pgbench_script($coord, $name)

A pgbench script (written into $coord's base directory as $name.sql, its
path returned) for the tables of cj_pair_tables: each transaction runs a
fan-out join of a and b (every class, on every node) and a point lookup,
each compared with the same query over la and lb; a difference divides by
zero, failing the client.

=cut

sub cj_pair_pgbench_script
{
	my ($coord, $name) = @_;
	my $script = <<'SCRIPT';
\set k random(0, 520)
SELECT count(*) AS c1, coalesce(sum(b.w), 0) AS s1 FROM a LEFT JOIN b ON a.k = b.k AND b.w > :k \gset
SELECT count(*) AS c2, coalesce(sum(lb.w), 0) AS s2 FROM la LEFT JOIN lb ON la.k = lb.k AND lb.w > :k \gset
\if :c1 != :c2 or :s1 != :s2
SELECT 1 / 0 AS fan_out_join_differs;
\endif
SELECT count(*) AS c3, coalesce(sum(b.w), 0) AS s3 FROM a JOIN b ON a.k = b.k WHERE a.k = :k \gset
SELECT count(*) AS c4, coalesce(sum(lb.w), 0) AS s4 FROM la JOIN lb ON la.k = lb.k WHERE la.k = :k \gset
\if :c3 != :c4 or :s3 != :s4
SELECT 1 / 0 AS point_lookup_differs;
\endif
SCRIPT
	my $file = $coord->basedir . "/$name.sql";
	PostgreSQL::Test::Utils::append_to_file($file, $script);
	return $file;
}

=pod

=head1 cj_fill_connections($node)

Sessions on $node (database "postgres", as the test's superuser) that hold
every one of its max_connections: any new connection, a superuser's too, is
refused with "sorry, too many clients already" until one of them quits
($_->quit).  Returns a reference to the list of sessions.  Nothing else may
hold a connection to $node meanwhile (wait for colojoin's to close first,
cj_wait_colojoin_connections); other clients' connections on their way out
are waited for.

=cut

sub cj_fill_connections
{
	my ($node) = @_;
	my @holders = (cj_session($node));
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		# the node's client backends, and how many slots are left
		my ($clients, $free) = split /\|/,
		  $holders[0]->query_safe(
			"SELECT count(*), current_setting('max_connections')::int - count(*) "
			  . "FROM pg_stat_activity WHERE backend_type = 'client backend'");
		return \@holders if $free <= 0 && $clients == @holders;
		# a backend of another client still on its way out: look again
		next if $clients > @holders;
		my $session = eval { cj_session($node) };
		if ($session)
		{
			push @holders, $session;
		}
		else
		{
			# refused: a backend that left pg_stat_activity still held its
			# slot for a moment
			die $@ unless $@ =~ /process ended prematurely/;
		}
	}
	die 'could not take every connection of ' . $node->name;
}

=pod

=head1 cj_colojoin_connections($node)

How many connections colojoin's sessions hold to $node now.

=head1 cj_wait_colojoin_connections($node, $expected, $what)

A test that waits until colojoin holds $expected connections to $node
(a closed connection's backend leaves a moment after the close).

=cut

my $colojoin_connections_sql =
  "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'colojoin:%'";

sub cj_colojoin_connections
{
	my ($node) = @_;
	return $node->safe_psql('postgres', $colojoin_connections_sql);
}

sub cj_wait_colojoin_connections
{
	my ($node, $expected, $what) = @_;
	return Test::More::ok(
		$node->poll_query_until('postgres', $colojoin_connections_sql, $expected),
		"$what: $expected colojoin connection(s) on " . $node->name)
	  || Test::More::diag('found ' . cj_colojoin_connections($node));
}

=pod

=head1 cj_connection_sampler(@nodes)

Watches colojoin's connections to @nodes through one open session per node,
so that a sample is one round trip per node and its answers pace a
sampling loop.  $sampler->{sample}->() takes a sample and returns the
counts, in the order of @nodes; $sampler->{max} holds the most seen per
node, $sampler->{samples} how many samples were taken;
$sampler->{quit}->() closes the sessions.

=cut

sub cj_connection_sampler
{
	my (@nodes) = @_;
	my @sessions = map { cj_session($_) } @nodes;
	my $sampler = { max => [ map { 0 } @nodes ], samples => 0 };
	$sampler->{sample} = sub {
		my @counts = map { $_->query_safe($colojoin_connections_sql) } @sessions;
		for my $i (0 .. $#counts)
		{
			$sampler->{max}[$i] = $counts[$i] if $counts[$i] > $sampler->{max}[$i];
		}
		$sampler->{samples}++;
		return @counts;
	};
	$sampler->{quit} = sub { $_->quit for @sessions; };
	return $sampler;
}

=pod

=head1 cj_order_tables($coord, $servers, $modulus, $orders)

For the tests of moves and splits: orders (o_id, o_cust, o_total) and items
(i_order, i_qty), hash $modulus over $servers (an SQL array, "ARRAY['n1',
'n2']"), items colocated with orders; and lorders and litems, plain local
tables holding the same rows ($orders orders, about 4 items each).

=cut

sub cj_order_tables
{
	my ($coord, $servers, $modulus, $orders) = @_;
	my $items = 4 * $orders;
	$coord->safe_psql(
		'postgres', qq{
CREATE TABLE orders (o_id int NOT NULL, o_cust int, o_total numeric) PARTITION BY HASH (o_id);
SELECT colojoin.create_shards('orders', $servers, $modulus);
CREATE TABLE items (i_order int, i_qty int) PARTITION BY HASH (i_order);
SELECT colojoin.create_shards('items', NULL, colocate_with => 'orders');
CREATE TABLE lorders (o_id int NOT NULL, o_cust int, o_total numeric);
CREATE TABLE litems (i_order int, i_qty int);
INSERT INTO lorders SELECT g, g % 40, 0 FROM generate_series(1, $orders) g;
INSERT INTO litems SELECT g / 4, g % 7 FROM generate_series(1, $items) g;
INSERT INTO orders SELECT * FROM lorders;
INSERT INTO items SELECT * FROM litems;
});
	return;
}

=pod

=head1 cj_twins_equal_sql()

A query answering 't' when orders and items hold what lorders and litems
hold, and their join aggregates alike.

=cut

sub cj_twins_equal_sql
{
	return q{SELECT
	(SELECT array_agg(o ORDER BY o) FROM (SELECT o::text FROM orders o) s) =
	(SELECT array_agg(o ORDER BY o) FROM (SELECT o::text FROM lorders o) s)
	AND (SELECT array_agg(i ORDER BY i) FROM (SELECT i::text FROM items i) s) =
	(SELECT array_agg(i ORDER BY i) FROM (SELECT i::text FROM litems i) s)
	AND (SELECT array_agg(x ORDER BY x) FROM (SELECT (o_cust, count(*), sum(i_qty))::text AS x
		FROM orders JOIN items ON i_order = o_id GROUP BY o_cust) s) =
	(SELECT array_agg(x ORDER BY x) FROM (SELECT (o_cust, count(*), sum(i_qty))::text AS x
		FROM lorders JOIN litems ON i_order = o_id GROUP BY o_cust) s)};
}

=pod

=head1 cj_move_remains_sql()

A query, for a node, counting what a move or split could leave there:
subscriptions, publications, replication slots and tables carrying a
move's marker comment.

=cut

sub cj_move_remains_sql
{
	return q{SELECT (SELECT count(*) FROM pg_subscription) + (SELECT count(*) FROM pg_publication)
	+ (SELECT count(*) FROM pg_replication_slots)
	+ (SELECT count(*) FROM pg_description WHERE description LIKE 'colojoin: target of move %')};
}

=pod

=head1 cj_order_writes($coord, $clients, $transactions)

pgbench started in the background on the tables of cj_order_tables: each
transaction updates an order, adds an item and deletes some, on the
sharded tables and on their twins alike, then reads the order's join
through colojoin and from the twins and divides by zero (failing the
client) when they differ. Each client writes its own orders (o_id modulo
8 is its client id), so what it reads is what it wrote, whatever the
others and any move or split are doing. Returns { run => IPC::Run
handle, out => \stdout, err => \stderr }; $w->{run}->finish waits for it.

=cut

sub cj_order_writes
{
	my ($coord, $clients, $transactions) = @_;
	my $file = $coord->basedir . '/order_writes.sql';
	PostgreSQL::Test::Utils::append_to_file($file, <<'SCRIPT') unless -e $file;
\set id 1 + :client_id + 8 * random(0, 240)
\set q random(1, 6)
BEGIN;
UPDATE orders SET o_total = o_total + :q WHERE o_id = :id;
UPDATE lorders SET o_total = o_total + :q WHERE o_id = :id;
INSERT INTO items VALUES (:id, :q);
INSERT INTO litems VALUES (:id, :q);
DELETE FROM items WHERE i_order = :id AND i_qty = :q - 1;
DELETE FROM litems WHERE i_order = :id AND i_qty = :q - 1;
SELECT count(*) AS c1, coalesce(sum(i_qty), 0) AS s1 FROM orders JOIN items ON i_order = o_id WHERE o_id = :id \gset
SELECT count(*) AS c2, coalesce(sum(i_qty), 0) AS s2 FROM lorders JOIN litems ON i_order = o_id WHERE o_id = :id \gset
\if :c1 != :c2 or :s1 != :s2
SELECT 1 / 0 AS read_differs;
\endif
END;
SCRIPT
	my ($out, $err) = ('', '');
	my $run = IPC::Run::start(
		[
			'pgbench', '-n', '-c', $clients, '-j', $clients, '-t', $transactions,
			'-h', $coord->host, '-p', $coord->port, '-f', $file, 'postgres'
		],
		'>', \$out, '2>', \$err);
	return { run => $run, out => \$out, err => \$err };
}

1;
