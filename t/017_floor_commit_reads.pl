# 017_floor_commit_reads.pl: what a floor commit's 40001 says about reads
# at a timestamp (MVTO; cc/sto.c, validate_ts_reads_at_floor).
#
# A transaction W that read at its ts and then runs DDL commits at the
# floor, so its reads are pinned again and checked there.  A key pinned
# again shows any floor raised since ts: DDL in another session then fails
# W although nobody wrote what W read (a false abort, retryable).
#
#  (a) DDL on another table while W runs (CREATE TABLE) raises the floor
#      of that table's keys only (key classes, t/020_class_floors.pl): W
#      commits (until 390a2e9 it failed);
#  (a2) ALTER TABLE of another fpsketch table raises the floor of every
#      key: W fails with 40001, and the DETAIL says that another
#      transaction's DDL raised the floor, not that a row was overwritten;
#      the same W again, alone, commits;
#  (b) a real overwrite of the row W read, no other DDL: W fails with the
#      DETAIL of an overwritten row (control: the floor DETAIL is not given
#      for every failure).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = fps_node('fps_floor_reads', conf => 'fpsketch.protocol = mvto');
$node->safe_psql('postgres', q{
	CREATE TABLE t (k int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	INSERT INTO t VALUES (1, 0);
	CREATE TABLE vv (k int PRIMARY KEY, x int NOT NULL) USING fpsketch;
	INSERT INTO vv VALUES (1, 0);});

my $w = FpsTest::Session->new($node, app => 'fps_floor_w');
my $other = FpsTest::Session->new($node, app => 'fps_floor_other');

# W up to its DDL: it has read t at its ts and written vv
sub w_reads_and_writes
{
	my ($n) = @_;
	$w->query('BEGIN');
	is($w->query('SELECT v FROM t WHERE k = 1'), $n, "W reads t = $n");
	$w->query('UPDATE vv SET x = x + 1 WHERE k = 1');
}

sub w_ddl_commit
{
	my ($table) = @_;
	$w->query('SET LOCAL default_table_access_method = fpsketch');
	$w->query("CREATE TABLE $table (k int PRIMARY KEY)");
	my ($out, $err) = $w->query('COMMIT');
	return $err;
}

# (a) another session's DDL raises the floor of its table's keys while W runs
w_reads_and_writes(0);
$other->query('CREATE TABLE z (k int) USING fpsketch');
my $err = w_ddl_commit('u0');
is($err, '', '(a) W commits: the floor of z\'s keys is not that of t\'s');
is($node->safe_psql('postgres', 'SELECT x FROM vv'), '1', '(a) its write is there');

# (a2) another session's ALTER TABLE raises the floor of every key
w_reads_and_writes(0);
$other->query('ALTER TABLE z ADD COLUMN c int');
$err = w_ddl_commit('u1');
like($err, qr/40001/, '(a2) W fails with 40001');
like($err, qr/another transaction raised the floor meanwhile/,
	'(a2) the DETAIL names the floor raised by DDL elsewhere');
unlike($err, qr/was overwritten/, '(a2) the DETAIL names no overwrite');
w_reads_and_writes(0);
$err = w_ddl_commit('u1');
is($err, '', '(a2) the same W alone commits');
is($node->safe_psql('postgres', 'SELECT x FROM vv'), '2', '(a2) its write is there');

# (b) a row W read is overwritten, no other DDL
w_reads_and_writes(0);
$other->query('UPDATE t SET v = 1 WHERE k = 1');
$err = w_ddl_commit('u2');
like($err, qr/40001/, '(b) W fails with 40001');
like($err, qr/A row of relation "t" read by this transaction was overwritten/,
	'(b) the DETAIL names the overwritten row of t');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname = 'u2'"), '0',
	'(b) nothing of W stays');

$w->close;
$other->close;
$node->stop;
done_testing();
