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

our @EXPORT = qw(cj_new_node cj_new_cluster cj_explain cj_query);

# Settings every test server gets: small, fast, and UTF8 whatever the locale.
my $common_conf = <<'CONF';
max_prepared_transactions = 10
log_min_messages = warning
log_statement = none
CONF

=pod

=head1 cj_new_node($name, %opts)

A started PostgreSQL::Test::Cluster server.  Options:
preload => 1 puts colojoin in shared_preload_libraries;
conf => 'text' is appended to postgresql.conf.

=cut

sub cj_new_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(extra => [ '--encoding=UTF8', '--locale=C.UTF-8' ]);
	$node->append_conf('postgresql.conf', $common_conf);
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'colojoin'")
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
the current user.  Returns a hash reference:
{ coordinator => $node, nodes => [ $node1, ... ], servers => [ 'n1', ... ] }.

=cut

sub cj_new_cluster
{
	my (%opts) = @_;
	my $nnodes = $opts{nodes} // 2;
	my $prefix = $opts{name} // 'cj';
	my $coord = cj_new_node("${prefix}_coordinator",
		preload => 1,
		conf => $opts{conf});
	my (@nodes, @servers);
	my $sql = "CREATE EXTENSION colojoin CASCADE;\n";
	for my $i (1 .. $nnodes)
	{
		my $node = cj_new_node("${prefix}_node$i");
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

1;
