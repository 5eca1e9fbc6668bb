# test/t/060_two_phase.pl -- a transaction that wrote on several nodes
# through colojoin commits atomically (two-phase commit with a commit record
# on the coordinator):
# - a deferred constraint that fails at PREPARE on one node rolls the
#   transaction back on every node;
# - a node stopped between PREPARE and COMMIT PREPARED keeps its prepared
#   transaction, which recovery commits once it is back;
# - the coordinator killed after PREPARE leaves prepared transactions that
#   are rolled back at the next use of the nodes;
# - a node without max_prepared_transactions is refused before anything is
#   written, unless the transaction writes on it alone;
# - replicas hold the same rows as their primaries after every kind of
#   write.
# Every wait is on an event: the coordinator session is held between the
# phases by an advisory lock (colojoin.debug_pause_after_prepare) that the
# test holds, and the test sees it wait in pg_locks.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ColojoinTest;

my $c = cj_new_cluster(name => 'twophase', nodes => 2);
my $coord = $c->{coordinator};
my ($node1, $node2) = @{ $c->{nodes} };
my $node3 = cj_new_node('twophase_node3', conf => 'max_prepared_transactions = 0');
my ($h3, $p3) = ($node3->host, $node3->port);

$coord->safe_psql(
	'postgres', qq{
CREATE SERVER n3 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '$h3', port '$p3', dbname 'postgres');
CREATE USER MAPPING FOR CURRENT_USER SERVER n3;
CREATE TABLE a (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('a', ARRAY['n1', 'n2'], 4);
CREATE TABLE la (k int, v int);
CREATE TABLE z (k int, v int) PARTITION BY HASH (k);
SELECT colojoin.create_shards('z', ARRAY['n1', 'n3'], 2);
});

# the nodes' prepared transactions (of any coordinator)
sub prepared
{
	my ($node) = @_;
	return $node->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts');
}

# the same rows in a as in la
sub same_as_twin
{
	return $coord->safe_psql('postgres',
		'SELECT (SELECT count(*) FROM (SELECT * FROM a EXCEPT ALL SELECT * FROM la) x) + '
		  . '(SELECT count(*) FROM (SELECT * FROM la EXCEPT ALL SELECT * FROM a) y)');
}

$coord->safe_psql('postgres',
	'INSERT INTO a SELECT g, g FROM generate_series(1, 100) g; '
	  . 'INSERT INTO la SELECT g, g FROM generate_series(1, 100) g');
is(same_as_twin(), '0', 'a write on both nodes commits');
is(prepared($node1) + prepared($node2), 0, 'and leaves nothing prepared');

# --- a deferred constraint fails at PREPARE on node 2 ---------------------------

# the leaves on node 2 refuse negative values, checked at commit
for my $t (1, 3)
{
	$node2->safe_psql(
		'postgres', qq{
CREATE OR REPLACE FUNCTION public.no_negative() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN IF NEW.v < 0 THEN RAISE EXCEPTION 'negative v on node 2'; END IF; RETURN NEW; END \$\$;
CREATE CONSTRAINT TRIGGER no_negative AFTER INSERT OR UPDATE ON public.a_p$t
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.no_negative();
});
}
my ($rc, $out, $err) = $coord->psql('postgres',
	'BEGIN; INSERT INTO a SELECT g, -1 FROM generate_series(1001, 1100) g; COMMIT');
like($err, qr/could not prepare the remote transaction on node "n2".*negative v on node 2/s,
	'the deferred constraint fails the commit, naming the node');
is($coord->safe_psql('postgres', 'SELECT count(*) FROM a WHERE v < 0'),
	'0', 'no row of it is left on node 1 either');
is(same_as_twin(), '0', 'the table is as before');
is(prepared($node1) + prepared($node2), 0, 'nothing is left prepared');
# an UPDATE across both nodes that trips it, the same
($rc, $out, $err) = $coord->psql('postgres', 'UPDATE a SET v = -v WHERE k % 10 = 0');
like($err, qr/negative v on node 2/, 'an UPDATE that trips it fails');
is(same_as_twin(), '0', 'and changes nothing anywhere');

# --- node 2 stopped between PREPARE and COMMIT PREPARED ---------------------------

my $holder = cj_session($coord);
my $writer = cj_session($coord);
my $writer_pid = cj_query($writer, 'SELECT pg_backend_pid()');
cj_query($holder, 'SELECT pg_advisory_lock(4242)');
cj_query($writer, 'SET colojoin.debug_pause_after_prepare = 4242');

sub start_write
{
	my ($sql) = @_;
	$writer->{stderr} = '';
	$writer->query_until(qr/statement started\n/,
		"\\echo statement started\n$sql;\n\\echo statement finished\n");
	ok( $coord->poll_query_until(
			'postgres',
			"SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 "
			  . "AND NOT granted AND pid = $writer_pid"),
		'the writer waits between PREPARE and the local commit');
}

start_write('INSERT INTO a SELECT g, g FROM generate_series(2001, 2100) g');
is(prepared($node1), 1, 'node 1 prepared');
is(prepared($node2), 1, 'node 2 prepared');
$node2->stop('immediate');
cj_query($holder, 'SELECT pg_advisory_unlock(4242)');
ok(pump_until($writer->{run}, $writer->{timeout}, \$writer->{stdout}, qr/statement finished\n/),
	'the writer finished');
$writer->{stdout} = '';
like($writer->{stderr}, qr/could not commit prepared transaction colojoin_\S+ on node "n2"/,
	'it warns that node 2 could not be told to commit');
is(prepared($node1), 0, 'node 1 committed');
$node2->start;
is(prepared($node2), 1, 'node 2 still holds its prepared transaction after its restart');
$coord->safe_psql('postgres', 'INSERT INTO la SELECT g, g FROM generate_series(2001, 2100) g');
my $recovered = $coord->safe_psql('postgres',
	'SELECT node, action FROM colojoin.recover_prepared_transactions()');
is($recovered, "n2|committed", 'recovery commits it: the local transaction committed');
is(prepared($node2), 0, 'nothing is left prepared on node 2');
is(same_as_twin(), '0', 'every node agrees: all the rows are there');
is($coord->safe_psql('postgres', 'SELECT count(*) FROM colojoin.prepared_xacts'),
	'0', 'recovery removed the commit records nobody needs');

# --- the coordinator killed after PREPARE -------------------------------------------

cj_query($holder, 'SELECT pg_advisory_lock(4242)');
start_write('UPDATE a SET v = v + 1000000 WHERE k <= 50');
is(prepared($node1) + prepared($node2), 2, 'both nodes prepared');
# the test's own lock keeps the writer waiting until the coordinator dies
$coord->stop('immediate');
eval { $holder->quit };
eval { $writer->quit };
$coord->start;
is(prepared($node1) + prepared($node2), 2, 'the prepared transactions outlive the coordinator');
# the next use of the nodes resolves them: the local transaction never committed
is($coord->safe_psql('postgres', 'SELECT count(*) FROM a WHERE v >= 1000000'),
	'0', 'a new session does not see the update');
ok( $node1->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_prepared_xacts')
	  && $node2->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_prepared_xacts'),
	'and the first connection to each node rolled its prepared transaction back');
is($coord->safe_psql('postgres', 'SELECT count(*) FROM colojoin.recover_prepared_transactions()'),
	'0', 'recovery finds nothing left');
is(same_as_twin(), '0', 'every node agrees with the twin');

# --- a node that cannot prepare ------------------------------------------------------

($rc, $out, $err) = $coord->psql('postgres', 'INSERT INTO z SELECT g, g FROM generate_series(1, 20) g');
like($err, qr/node "n3" cannot take part in a transaction that writes on several nodes/,
	'a write on n1 and n3 is refused: n3 has max_prepared_transactions = 0');
is($coord->safe_psql('postgres', 'SELECT count(*) FROM z'), '0', 'before anything was written');
my $on_n3 = $coord->safe_psql('postgres',
	"SELECT min(g) FROM generate_series(1, 20) g WHERE satisfies_hash_partition('z'::regclass, 2, 1, g)");
$coord->safe_psql('postgres', "INSERT INTO z VALUES ($on_n3, 1)");
is($coord->safe_psql('postgres', 'SELECT count(*) FROM z'), '1',
	'a write on n3 alone commits (one node: a plain COMMIT)');

# --- replicas equal their primaries after every kind of write ------------------------

$coord->safe_psql('postgres',
	"SELECT colojoin.add_replica(format('a_p%s', r)::regclass, CASE WHEN r % 2 = 0 THEN 'n2' ELSE 'n1' END) "
	  . 'FROM generate_series(0, 3) r');
my @writes = (
	'INSERT INTO %s SELECT g, g %% 7 FROM generate_series(3001, 3300) g',
	'UPDATE %s SET v = v + 1 WHERE v = 3',
	'DELETE FROM %s WHERE k %% 11 = 0',
	'INSERT INTO %s VALUES (5000, 1), (5001, 2), (5002, 3)');
for my $w (@writes)
{
	$coord->safe_psql('postgres', sprintf($w, 'a') . '; ' . sprintf($w, 'la'));
}
$coord->safe_psql('postgres', "COPY a FROM STDIN;\n6000\t1\n6001\t2\n\\.\n");
$coord->safe_psql('postgres', 'INSERT INTO la VALUES (6000, 1), (6001, 2)');
is(same_as_twin(), '0', 'the table matches its twin after INSERT, UPDATE, DELETE and COPY');
for my $r (0 .. 3)
{
	my ($primary, $replica) = $r % 2 == 0 ? ($node1, $node2) : ($node2, $node1);
	my $digest = "SELECT count(*) || ':' || md5(string_agg(x::text, ',' ORDER BY x::text)) FROM public.a_p$r x";
	is($replica->safe_psql('postgres', $digest), $primary->safe_psql('postgres', $digest),
		"the replica of a_p$r equals its primary");
}

done_testing();
