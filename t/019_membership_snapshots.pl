# 019_membership_snapshots.pl: a READ ONLY transaction that reads at a
# timestamp on a snapshot older than its statements (an imported one, SET
# TRANSACTION SNAPSHOT) sees the members of a partitioned table that its
# timestamp sees (am/membership.c).
#
# W inserts into o and attaches the filled p3 to p, and commits.  R, READ
# ONLY at REPEATABLE READ, imports a snapshot exported before W began, and
# counts p (partitions 2 and 3) and o.  Serial orders give (1, 1) and
# (2, 2); (2, 1) means R saw W's ATTACH and missed its insert.
#   (a) R's first statement comes after W's commit.  Its timestamp is drawn
#       at its first read, after the locks of that statement, so it is
#       after W: R reads (2, 2) although its snapshot is older than W.
#   (b) R reads o first (its timestamp, before W), then W commits, then R
#       counts p: the members changed since R's snapshot, so that count
#       fails with 40001 (or, had it waited, counted 1).
#   (c) W's invalidation reached R's backend in an earlier transaction: as
#       in (a).
# The same on heap tables is the control: heap reads on the imported
# snapshot with the members of now, and shows (2, 1) in (a) and (b).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = fps_node('fps_membership_snapshots');

sub setup
{
	my ($am) = @_;
	$node->safe_psql(
		'postgres', qq{
		DROP TABLE IF EXISTS p, p3, o CASCADE;
		SET default_table_access_method = $am;
		CREATE TABLE p (k int, g int, PRIMARY KEY (g, k)) PARTITION BY LIST (g);
		CREATE TABLE p1 PARTITION OF p FOR VALUES IN (1);
		CREATE TABLE p2 PARTITION OF p FOR VALUES IN (2);
		INSERT INTO p VALUES (1, 1), (2, 2);
		CREATE TABLE p3 (k int, g int, PRIMARY KEY (g, k));
		INSERT INTO p3 VALUES (3, 3);
		CREATE TABLE o (k int PRIMARY KEY);
		INSERT INTO o VALUES (1);});
	return;
}

my $w_sql = "BEGIN; INSERT INTO o VALUES (2);\n"
  . "ALTER TABLE p ATTACH PARTITION p3 FOR VALUES IN (3); COMMIT;";
my $count_p = 'SELECT count(*) FROM p WHERE g >= 2;';
my $count_o = 'SELECT count(*) FROM o;';

# One case on tables of access method $am; returns "p|o" as R read them,
# or "40001" if R failed so.
sub run_case
{
	my ($am, $case) = @_;
	setup($am);
	my $exporter = FpsTest::Session->new($node, app => 'fps_exporter');
	my ($snap) = $exporter->query(
		'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT pg_export_snapshot();');
	my $r = FpsTest::Session->new($node, app => 'fps_reader');
	my ($p, $o, $err) = ('', '', '');
	$r->query($count_p) if $case eq 'c';    # an earlier transaction of R
	$node->safe_psql('postgres', $w_sql) unless $case eq 'b' || $case eq 'c';
	$r->query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;\n"
		  . "SET TRANSACTION SNAPSHOT '$snap';");
	if ($case eq 'b')
	{
		($o, $err) = $r->query($count_o);
		$node->safe_psql('postgres', $w_sql);
		($p, $err) = $r->query($count_p) if $err eq '';
	}
	else
	{
		$node->safe_psql('postgres', $w_sql) if $case eq 'c';
		($p, $err) = $r->query($count_p);
		($o, $err) = $r->query($count_o) if $err eq '';
	}
	my (undef, $cerr) = $r->query('COMMIT;');
	$err ||= $cerr;
	$r->close;
	$exporter->query('ROLLBACK;');
	$exporter->close;
	return '40001' if $err =~ /40001/;
	die "case $case on $am: $err" if $err =~ /ERROR/;
	return "$p|$o";
}

foreach my $proto (protocols($node))
{
	set_conf($node, 'fpsketch.protocol', $proto);
	$node->restart;
	is(stats($node)->{protocol}, $proto, "protocol $proto");
	my %want = (a => '2|2', b => '40001', c => '2|2');
	foreach my $case (qw(a b c))
	{
		my $got = run_case('fpsketch', $case);
		is($got, $want{$case}, "$proto ($case): R reads $want{$case}");
		isnt($got, '2|1', "$proto ($case): R did not see the ATTACH without the insert");
	}
}

# the control: heap shows the anomaly this test looks for
is(run_case('heap', 'a'), '2|1', 'heap (a): R saw the ATTACH and missed the insert');
is(run_case('heap', 'b'), '2|1', 'heap (b): the same');

done_testing();
