# test/t/001_loading.pl -- colojoin loads by every documented means
# (LOAD, session_preload_libraries, shared_preload_libraries), its extension
# installs with CREATE EXTENSION colojoin CASCADE, and in a database without
# the extension a loaded library changes nothing: the same plans, the same
# rows and no messages as without the library.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ColojoinTest;

my $node = cj_new_node('loading');
my ($host, $port) = ($node->host, $node->port);

# Database "plain": sharded-looking tables without the colojoin extension.
# a and b have postgres_fdw leaves (a loopback server standing in for a
# node), c and d plain local leaves; all hash-partitioned alike, so that
# PostgreSQL's partitionwise join applies and colojoin would be tempted.
$node->safe_psql('postgres', 'CREATE DATABASE plain');
my $setup = <<"SQL";
CREATE EXTENSION postgres_fdw;
CREATE SERVER loopback FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '$host', port '$port', dbname 'plain');
CREATE USER MAPPING FOR CURRENT_USER SERVER loopback;
CREATE TABLE a (k int, v text) PARTITION BY HASH (k);
CREATE TABLE b (k bigint, w text) PARTITION BY HASH (k);
CREATE TABLE c (k int, x int) PARTITION BY HASH (k);
CREATE TABLE d (k int, y int) PARTITION BY HASH (k);
SQL
for my $r (0 .. 3)
{
	for my $t ('a', 'b')
	{
		my $cols = $t eq 'a' ? 'k int, v text' : 'k bigint, w text';
		$setup .= <<"SQL";
CREATE TABLE ${t}_r$r ($cols);
CREATE FOREIGN TABLE ${t}_p$r PARTITION OF $t
	FOR VALUES WITH (MODULUS 4, REMAINDER $r)
	SERVER loopback OPTIONS (table_name '${t}_r$r');
SQL
	}
	for my $t ('c', 'd')
	{
		$setup .= "CREATE TABLE ${t}_p$r PARTITION OF $t "
		  . "FOR VALUES WITH (MODULUS 4, REMAINDER $r);\n";
	}
}
$setup .= <<'SQL';
INSERT INTO a SELECT g, 'a' || g FROM generate_series(1, 200) g;
INSERT INTO b SELECT g, 'b' || g FROM generate_series(1, 200, 3) g;
INSERT INTO c SELECT g, g % 7 FROM generate_series(1, 1000) g;
INSERT INTO d SELECT g, g % 5 FROM generate_series(1, 1000, 2) g;
ANALYZE a_r0, a_r1, a_r2, a_r3, b_r0, b_r1, b_r2, b_r3, c, d;
SQL
$node->safe_psql('plain', $setup);

my @queries = (
	'SELECT a.k, a.v, b.w FROM a JOIN b ON a.k = b.k WHERE a.k < 100 ORDER BY a.k',
	'SELECT a.k, b.w FROM a LEFT JOIN b ON a.k = b.k ORDER BY a.k',
	'SELECT count(*) FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k)',
	'SELECT c.x, count(*), sum(d.y) FROM c JOIN d ON c.k = d.k GROUP BY c.x ORDER BY c.x',
	'SELECT count(*) FROM a JOIN c ON a.k = c.k JOIN d ON c.k = d.k');
my $settings = 'SET enable_partitionwise_join = on; '
  . 'SET enable_partitionwise_aggregate = on;';

# Plans and rows of every query in one database, after $prefix; and the
# messages (stderr) the session printed, which must be none.
sub observe
{
	my ($db, $prefix) = @_;
	my %seen;
	for my $q (@queries)
	{
		my ($rc, $out, $err) = $node->psql($db,
			"$prefix $settings\nEXPLAIN (VERBOSE, COSTS OFF) $q;\n$q;");
		die "query failed in $db: $q\n$err" if $rc != 0;
		$seen{$q} = { out => $out, err => $err };
	}
	return \%seen;
}

sub same_as_baseline
{
	my ($baseline, $seen, $how) = @_;
	for my $q (@queries)
	{
		is($seen->{$q}{out}, $baseline->{$q}{out},
			"$how, no extension: same plan and rows for: $q");
		is($seen->{$q}{err}, '', "$how, no extension: no messages for: $q");
	}
}

# The extension's objects answer, in a database where it was just created.
sub check_extension
{
	my ($db, $how) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	my ($rc, $out, $err) = $node->psql($db, 'CREATE EXTENSION colojoin');
	isnt($rc, 0, "$how: CREATE EXTENSION without postgres_fdw fails");
	like(
		$err,
		qr/required extension "postgres_fdw" is not installed/,
		"$how: and says postgres_fdw is required");
	($rc, $out, $err) =
	  $node->psql($db, 'CREATE EXTENSION colojoin CASCADE');
	is($rc, 0, "$how: CREATE EXTENSION colojoin CASCADE succeeds")
	  or diag($err);
	is( $node->safe_psql(
			$db,
			"SELECT string_agg(extname || ' ' || extnamespace::regnamespace, ', ' "
			  . "ORDER BY extname) FROM pg_extension WHERE extname <> 'plpgsql'"),
		'colojoin colojoin, postgres_fdw public',
		"$how: colojoin in schema colojoin, postgres_fdw beside it");
	($rc, $out, $err) = $node->psql($db,
		'SELECT count(*) FROM colojoin.shards; SHOW colojoin.enable;');
	is($out, "0\non", "$how: colojoin.shards answers, library loaded")
	  or diag($err);
}

# --- without the library ---------------------------------------------------

my ($rc, $out, $err) = $node->psql('postgres', 'SHOW colojoin.enable');
isnt($rc, 0, 'not loaded: colojoin.enable is unknown');
like(
	$err,
	qr/unrecognized configuration parameter "colojoin.enable"/,
	'not loaded: the error names the parameter');
my $baseline = observe('plain', '');
like(
	$baseline->{ $queries[0] }{out},
	qr/Foreign Scan/,
	'baseline plans go through postgres_fdw');

# --- LOAD ------------------------------------------------------------------

is($node->safe_psql('postgres', "LOAD 'colojoin'; SHOW colojoin.enable;"),
	'on', 'LOAD: colojoin.enable is defined and on');
is( $node->safe_psql(
		'postgres',
		"SET colojoin.enable = off; LOAD 'colojoin'; SHOW colojoin.enable;"),
	'off',
	'LOAD: a value set before loading is kept');
is( $node->safe_psql(
		'postgres',
		"LOAD 'colojoin'; SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) "
		  . "FROM pg_settings WHERE name IN ('colojoin.enable', "
		  . "'colojoin.enable_colocated_join', 'colojoin.enable_redistribution', "
		  . "'colojoin.enable_broadcast', 'colojoin.broadcast_threshold', "
		  . "'colojoin.max_connections_per_node', 'colojoin.log_decisions', "
		  . "'colojoin.enable_aggregate_pushdown')"),
	'colojoin.broadcast_threshold=1000000 colojoin.enable=on '
	  . 'colojoin.enable_aggregate_pushdown=on '
	  . 'colojoin.enable_broadcast=on colojoin.enable_colocated_join=on '
	  . 'colojoin.enable_redistribution=on colojoin.log_decisions=off '
	  . 'colojoin.max_connections_per_node=4',
	'LOAD: every documented setting exists with its documented default');
($rc, $out, $err) =
  $node->psql('postgres', "LOAD 'colojoin'; SET colojoin.no_such_setting = 1;");
isnt($rc, 0, 'LOAD: the colojoin prefix is reserved');
same_as_baseline($baseline,
	observe('plain', "LOAD 'colojoin'; SET colojoin.log_decisions = on;"),
	'LOAD');
check_extension('ext_load', 'LOAD');

# --- session_preload_libraries --------------------------------------------

$node->append_conf('postgresql.conf', "session_preload_libraries = 'colojoin'");
$node->reload;
# A reload only signals the postmaster: wait until a new session gets the
# setting, as every session below does then.
ok($node->poll_query_until('postgres', 'SHOW session_preload_libraries', 'colojoin'),
	'session_preload_libraries: the reload took effect');
is($node->safe_psql('postgres', 'SHOW colojoin.enable'),
	'on', 'session_preload_libraries: colojoin.enable is defined');
same_as_baseline($baseline,
	observe('plain', 'SET colojoin.log_decisions = on;'),
	'session_preload_libraries');
check_extension('ext_session', 'session_preload_libraries');
my $colojoin_workers =
  "SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'colojoin%'";
is($node->safe_psql('postgres', $colojoin_workers),
	'0', 'LOAD and session_preload_libraries: no colojoin background worker runs');

# --- shared_preload_libraries ---------------------------------------------

$node->adjust_conf('postgresql.conf', 'session_preload_libraries', "''");
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'colojoin'");
$node->restart;
is($node->safe_psql('postgres', 'SHOW shared_preload_libraries'),
	'colojoin', 'shared_preload_libraries: set');
is($node->safe_psql('postgres', 'SHOW colojoin.enable'),
	'on', 'shared_preload_libraries: colojoin.enable is defined');
same_as_baseline($baseline,
	observe('plain', 'SET colojoin.log_decisions = on;'),
	'shared_preload_libraries');
check_extension('ext_shared', 'shared_preload_libraries');
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'colojoin recovery launcher'"
	),
	'shared_preload_libraries: the launcher of the recovery worker runs');

# The "is the extension installed here" answer is cached per backend: after
# CREATE and DROP EXTENSION in one session, colojoin must be inert again.
my $q = $queries[0];
($rc, $out, $err) = $node->psql(
	'plain', "$settings
EXPLAIN (VERBOSE, COSTS OFF) $q;
CREATE EXTENSION colojoin;
EXPLAIN (VERBOSE, COSTS OFF) $q;
$q;
DROP EXTENSION colojoin;
SET colojoin.log_decisions = on;
EXPLAIN (VERBOSE, COSTS OFF) $q;
$q;");
is($rc, 0, 'CREATE and DROP EXTENSION in one session') or diag($err);
like($out, qr/\Q$baseline->{$q}{out}\E\z/,
	'after DROP EXTENSION in the same session: the plan and rows of the baseline');
is($node->safe_psql('plain', "SELECT count(*) FROM pg_extension WHERE extname = 'colojoin'"),
	'0', 'the extension is gone again');

$node->stop;
done_testing();
