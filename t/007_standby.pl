# 007_standby.pl: fpsketch tables on a streaming-replication hot standby,
# and after its promotion.
#
# An fpsketch table is a heap on disk, so its WAL replays like heap's; the
# protocol does not track reads in recovery (a hot standby's snapshots
# follow the primary's commit order, and nothing there can write).
#
#  (a) rows written on the primary (inserts, updates, deletes, a TOASTed
#      value) read the same on the standby, by sequential, index and
#      index-only scans, and the indexes pass amcheck there;
#  (b) reads on the standby while a TPC-C-like load runs on the primary:
#      no error, nothing pinned or counted on the standby (untracked), and
#      the replayed tables satisfy the TPC-C consistency conditions;
#  (c) writes on the standby fail as on any hot standby (25006), and
#      SERIALIZABLE is refused there as PostgreSQL refuses it (0A000);
#  (d) the standby is promoted: tracking starts, a lost update on an
#      fpsketch table fails with 40001 while the same interleaving on a heap
#      table at READ COMMITTED loses the update (positive control);
#      afterwards nothing is pinned and no lock bit leaked;
#  (f) a transaction prepared on the primary writing an fpsketch table: its
#      fpsketch state (pg_fpsketch/prepared) is not in WAL, so after the
#      promotion tracked access to that table waits for it, then fails with
#      40001 saying so, until COMMIT PREPARED; other tables are not held up;
#  (e) a standby started without fpsketch in shared_preload_libraries still
#      replays and reads fpsketch tables; after promotion, the first tracked
#      access fails with a clear error rather than running unprotected.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = fps_node(
	'fps_primary',
	conf => join("\n",
		"wal_level = replica",
		"max_wal_senders = 4",
		"wal_keep_size = 256MB",
		"max_prepared_transactions = 4"));

$primary->safe_psql(
	'postgres', q{
	CREATE TABLE acct (k int PRIMARY KEY, v int NOT NULL, note text) USING fpsketch;
	INSERT INTO acct SELECT g, g * 10, NULL FROM generate_series(1, 1000) g;
	UPDATE acct SET v = v + 1 WHERE k % 7 = 0;
	DELETE FROM acct WHERE k % 100 = 0;
	UPDATE acct SET note = repeat(md5(k::text), 200) WHERE k = 5;
	CREATE INDEX acct_v ON acct (v);
	CREATE TABLE heap_acct (k int PRIMARY KEY, v int NOT NULL);
	INSERT INTO heap_acct VALUES (1, 0);
	CREATE TABLE orphan (k int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	INSERT INTO orphan VALUES (1, 0), (2, 0);});
tpcc_setup($primary, am => 'fpsketch');

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('fps_standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

# a second standby without the preload (e)
my $bare = PostgreSQL::Test::Cluster->new('fps_bare_standby');
$bare->init_from_backup($primary, 'base', has_streaming => 1);
$bare->adjust_conf('postgresql.conf', 'shared_preload_libraries', "''");
$bare->start;

$primary->wait_for_catchup($standby, 'replay');
$primary->wait_for_catchup($bare, 'replay');

# ---------------------------------------------------------------------------
# (a) the same rows, by every kind of scan
# ---------------------------------------------------------------------------
my $summary = q{
	SELECT count(*), sum(v), sum(length(note)) FROM acct;
	SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT count(*), sum(v) FROM acct WHERE k BETWEEN 1 AND 500;
	SELECT v FROM acct WHERE k = 7;
	SELECT count(*) FROM acct WHERE v > 5000;};
my $expected = $primary->safe_psql('postgres', $summary);
like($expected, qr/^990\|/, '(a) the primary has 990 rows');
is($standby->safe_psql('postgres', $summary), $expected,
	'(a) the standby reads the same rows by sequential and index scans');
is($standby->safe_psql('postgres',
		q{SELECT count(*) FROM (SELECT bt_index_check(c.oid, true) FROM pg_class c
		  JOIN pg_am am ON am.oid = c.relam
		  WHERE am.amname = 'btree' AND c.relnamespace = 'public'::regnamespace) s}),
	$primary->safe_psql('postgres',
		q{SELECT count(*) FROM pg_class c JOIN pg_am am ON am.oid = c.relam
		  WHERE am.amname = 'btree' AND c.relnamespace = 'public'::regnamespace}),
	'(a) every btree index passes bt_index_check(heapallindexed) on the standby');

# ---------------------------------------------------------------------------
# (b) reads on the standby while the primary runs a load
# ---------------------------------------------------------------------------
my $standby_before = stats($standby);
my $load = tpcc_load($primary, clients => 4, duration => 5);
my $standby_errors = '';
my $standby_reads = 0;
while ($load->running)
{
	my ($ret, $out, $err) = $standby->psql('postgres', q{
		BEGIN ISOLATION LEVEL REPEATABLE READ;
		SELECT sum(d_next_o_id) FROM district;
		SELECT count(*) FROM orders;
		SELECT sum(s_quantity) FROM stock WHERE s_i_id < 100;
		COMMIT;});
	$standby_errors .= $err if $ret != 0 || $err ne '';
	$standby_reads++;
}
my $result = $load->finish;
ok($result->{committed} > 0,
	"(b) the primary committed $result->{committed} TPC-C transactions meanwhile");
is($standby_errors, '', "(b) $standby_reads read transactions on the standby, no error");
$primary->wait_for_catchup($standby, 'replay');
my $standby_after = stats($standby);
is( join('|', map { $standby_after->{$_} - $standby_before->{$_} } qw(increfs commits read_only_commits)),
	'0|0|0', '(b) reads on the standby are not tracked (no pins, no commits counted)');
is(tpcc_check($standby, '(b) standby'), 0,
	'(b) the replayed TPC-C tables pass every check on the standby');

# ---------------------------------------------------------------------------
# (c) a hot standby refuses what any hot standby refuses
# ---------------------------------------------------------------------------
my ($ret, $out, $err) = $standby->psql('postgres',
	q{\set VERBOSITY verbose
	UPDATE acct SET v = 0 WHERE k = 1;});
like($err, qr/25006/, '(c) an UPDATE on the standby fails with 25006 (read-only transaction)');
($ret, $out, $err) = $standby->psql('postgres',
	q{\set VERBOSITY verbose
	BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT v FROM acct WHERE k = 1;});
like($err, qr/0A000.*cannot use serializable mode in a hot standby/s,
	'(c) SERIALIZABLE on the standby is refused as PostgreSQL refuses it');

# ---------------------------------------------------------------------------
# (d) promotion: tracking starts
# ---------------------------------------------------------------------------
# (f) prepared on the primary, replayed on the standby
$primary->safe_psql('postgres',
	q{BEGIN; UPDATE orphan SET v = 1 WHERE k = 1; PREPARE TRANSACTION 'fps_standby_2pc';});
$primary->wait_for_catchup($standby, 'replay');
$primary->stop;
$standby->promote;
wait_ready($standby);

# ---------------------------------------------------------------------------
# (f) the prepared transaction whose fpsketch state stayed on the primary
# ---------------------------------------------------------------------------
is($standby->safe_psql('postgres', q{SELECT gid FROM pg_prepared_xacts}),
	'fps_standby_2pc', '(f) the promoted server has the prepared transaction');
($ret, $out, $err) = $standby->psql('postgres',
	q{SET fpsketch.lock_wait_timeout = 100; SELECT v FROM orphan WHERE k = 2;});
like($err, qr/could not serialize access.*prepared transaction \d+, whose fpsketch state is not on this server/s,
	'(f) a read of the table it wrote fails with 40001 saying why');
($ret, $out, $err) = $standby->psql('postgres',
	q{SET fpsketch.lock_wait_timeout = 100; UPDATE orphan SET v = 5 WHERE k = 2;});
like($err, qr/could not serialize access.*whose fpsketch state is not on this server/s,
	'(f) and so does a write of another row');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM acct}), '990',
	'(f) other fpsketch tables are not held up');
$standby->safe_psql('postgres', q{COMMIT PREPARED 'fps_standby_2pc'});
is($standby->safe_psql('postgres',
		q{UPDATE orphan SET v = v + 10 WHERE k = 2; SELECT string_agg(v::text, ',' ORDER BY k) FROM orphan;}),
	'1,10', '(f) after COMMIT PREPARED the table is read and written, with its update');


# T1 reads a row, T2 increments it and commits, T1 writes what it read + 10
sub lost_update
{
	my ($node, $table) = @_;
	my $s1 = FpsTest::Session->new($node);
	my $s2 = FpsTest::Session->new($node);
	my $before = $node->safe_psql('postgres', "SELECT v FROM $table WHERE k = 1");
	$s1->query('BEGIN');
	my $read = $s1->query("SELECT v FROM $table WHERE k = 1");
	$s2->query("UPDATE $table SET v = v + 1 WHERE k = 1");
	my (undef, $e1) = $s1->query("UPDATE $table SET v = $read + 10 WHERE k = 1");
	my (undef, $e2) = $s1->query('COMMIT');
	$s1->close;
	$s2->close;
	my $after = $node->safe_psql('postgres', "SELECT v FROM $table WHERE k = 1");
	return ($before, $after, $e1 . $e2);
}

my $promoted_before = stats($standby);
my ($before, $after, $errs) = lost_update($standby, 'heap_acct');
is($after, $before + 10,
	'(d) control: heap at READ COMMITTED loses the concurrent increment after promotion');
($before, $after, $errs) = lost_update($standby, 'acct');
like($errs, qr/40001/, '(d) fpsketch fails the lost update with 40001 after promotion');
is($after, $before + 1, '(d) and keeps the concurrent increment');
my $s = wait_idle($standby);
ok($s->{commits} > $promoted_before->{commits},
	'(d) the promoted server tracks and counts commits');
is("$s->{pinned}|$s->{lock_leaks}", '0|0', '(d) nothing pinned and no lock bit leaked');
is(tpcc_check($standby, '(d) promoted'), 0,
	'(d) the TPC-C tables pass every check on the promoted server');

# ---------------------------------------------------------------------------
# (e) a standby without the preload
# ---------------------------------------------------------------------------
my ($bare_count) = $bare->safe_psql('postgres', 'SELECT count(*) FROM acct');
is($bare_count, '990', '(e) a standby without fpsketch preloaded reads the replayed rows');
$bare->promote;
wait_ready($bare);
($ret, $out, $err) = $bare->psql('postgres',
	q{\set VERBOSITY verbose
	SELECT v FROM acct WHERE k = 1;});
like($err, qr/55000.*fpsketch must be loaded via shared_preload_libraries/s,
	'(e) after promotion the first tracked read fails with a clear error (55000)');
($ret, $out, $err) = $bare->psql('postgres', q{UPDATE acct SET v = 0 WHERE k = 1;});
isnt($ret, 0, '(e) and so does a write');
# the errors (c) and (e) provoke, the walreceivers' once the primary is
# stopped, and none other
my $walreceiver = qr/08006: could not (?:send end-of-streaming message to primary|connect to the primary server)/;
my @problems = log_problems($standby, 0, allowed => [qw(40001 25006 0A000)],
	ignore => $walreceiver);
is(join("\n", @problems), '', 'no unexpected error, PANIC or crash in the standby\'s log');
@problems = log_problems($bare, 0, allowed => [qw(55000 25006)],
	ignore => $walreceiver);
is(join("\n", @problems), '', 'none in the bare standby\'s log');
@problems = log_problems($primary, 0);
is(join("\n", @problems), '', 'none in the primary\'s log');

done_testing();
