# 011_timestamp_snapshots.pl: readers that never starve, and a map of
# commit timestamps that may run out.
#
#  (a) an autocommit SELECT count(*) of a table while 8 clients insert into
#      it commits every time, as under heap SERIALIZABLE (the review saw 7
#      failures in 11 runs before timestamp snapshots); with
#      fpsketch.timestamp_snapshots = off the same reader fails (control);
#  (b) a READ ONLY report over several statements beside a TPC-C load
#      commits every time and sees a consistent TPC-C state;
#  (c) a map of commit timestamps far too small (fpsketch.commit_ts_entries
#      = 1024) under one long reader and 3,000 writers: writers never fail,
#      the map drops entries the reader may need (commit_ts_lost), and the
#      reader then gets 40001 "snapshot too old" instead of a wrong answer;
#      a reader that starts afterwards reads normally;
#  (d) a reader cancelled while its timestamp read waits for a committer
#      (held between PRE_COMMIT and COMMIT by a synchronous-replication wait
#      for a standby that does not exist) leaves no pin behind, for a row
#      key and for a predicate key;
#  (e) the same wait ended by statement_timeout inside an EXCEPTION block
#      that catches it, after which the transaction COMMITs: no pin left
#      while the session stays open, nor after it ends; and the wait ends
#      with 40001 after fpsketch.lock_wait_timeout when nothing cancels it.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = fps_node('fps_tsnap');
my $log_from = log_offset($node);

# ---------------------------------------------------------------------------
# (a) count(*) beside an insert stream
# ---------------------------------------------------------------------------
$node->safe_psql('postgres', q{
	CREATE TABLE q (id bigserial PRIMARY KEY, payload text NOT NULL) USING fpsketch;
	INSERT INTO q (payload) SELECT 'seed' FROM generate_series(1, 5000);
	ANALYZE q;});
my $script = PostgreSQL::Test::Utils::tempdir() . '/ins.sql';
PostgreSQL::Test::Utils::append_to_file($script, "INSERT INTO q (payload) VALUES ('x');\n");

sub counts_beside_inserts
{
	my ($options, $seconds) = @_;
	my $load = FpsTest::Load->start($node, clients => 8, duration => $seconds + 1,
		max_tries => 10, files => [$script]);
	my $reader = FpsTest::Session->new($node, app => 'fps_counter', options => $options);
	my ($runs, $errors, $worst) = (0, 0, 0);
	my $t_end = time + $seconds;
	while (time < $t_end)
	{
		my $t0 = time;
		my ($out, $err) = $reader->query('SELECT count(*) FROM q');
		my $took = time - $t0;
		$worst = $took if $took > $worst;
		$runs++;
		$errors++ if $err ne '';
	}
	$reader->close;
	my $r = $load->finish;
	return ($runs, $errors, $worst, $r);
}

{
	my ($runs, $errors, $worst, $r) = counts_beside_inserts(undef, 6);
	note sprintf("(a) timestamp snapshots: %d counts, %d errors, worst %.0f ms; %d inserts",
		$runs, $errors, 1000 * $worst, $r->{committed});
	ok($runs >= 10 && $errors == 0,
		"(a) an autocommit count(*) beside 8 inserting clients commits every time ($runs runs)");
	ok($r->{committed} > 0 && !@{ $r->{unexpected} }, '(a) ... while the inserts go on');
	ok($worst < 2, sprintf('(a) ... none waits long (worst %.0f ms)', 1000 * $worst));

	($runs, $errors, $worst, $r) =
	  counts_beside_inserts('-c fpsketch.timestamp_snapshots=off -c fpsketch.escalation_threshold=100', 6);
	note sprintf("(a) control, timestamp snapshots off: %d counts, %d errors", $runs, $errors);
	ok($errors > 0, "(a) control: with timestamp_snapshots off the count fails ($errors of $runs)");
}

# ---------------------------------------------------------------------------
# (b) a READ ONLY report of several statements beside TPC-C
# ---------------------------------------------------------------------------
$node->safe_psql('postgres', 'CREATE DATABASE tpcc');
$node->safe_psql('tpcc', 'CREATE EXTENSION fpsketch; CREATE EXTENSION amcheck;');
tpcc_setup($node, am => 'fpsketch', db => 'tpcc');
{
	my $load = tpcc_load($node, db => 'tpcc', clients => 4, duration => 8);
	my $report = FpsTest::Session->new($node, db => 'tpcc', app => 'fps_report');
	my ($ok, $failed, $inconsistent) = (0, 0, 0);
	my $t_end = time + 6;
	while (time < $t_end)
	{
		# condition 1 of TPC-C (W_YTD = sum(D_YTD)) and 2 (D_NEXT_O_ID - 1 =
		# max(O_ID)), from separate statements of one transaction
		my ($out, $err) = $report->query(q{
			BEGIN READ ONLY;
			SELECT sum(w_ytd) FROM warehouse;
			SELECT sum(d_ytd) FROM district;
			SELECT sum(d_next_o_id - 1) FROM district;
			SELECT sum(m) FROM (SELECT max(o_id) AS m FROM orders GROUP BY o_w_id, o_d_id) x;
			COMMIT;});
		if ($err ne '') { $failed++; diag $err if $failed <= 3; $report->query('ROLLBACK'); next; }
		my @v = split /\n/, $out;
		$ok++;
		$inconsistent++ if @v != 4 || $v[0] != $v[1] || $v[2] != $v[3];
		diag "inconsistent report: @v" if $inconsistent == 1 && (@v != 4 || $v[0] != $v[1] || $v[2] != $v[3]);
	}
	$report->close;
	my $r = $load->finish;
	note "(b) reports: $ok committed, $failed failed, $inconsistent inconsistent; TPC-C $r->{committed} committed";
	ok($ok > 0 && $failed == 0, "(b) every READ ONLY report commits ($ok)");
	is($inconsistent, 0, '(b) each report sees one consistent state (sum(W_YTD) = sum(D_YTD), next order ids)');
	ok($r->{committed} > 0 && !@{ $r->{unexpected} }, "(b) the TPC-C load goes on ($r->{committed} committed)");
}

my @bad = log_problems($node, $log_from);
is(join("\n", @bad), '', '(a, b) no unexpected error, no crash in the server log');

# ---------------------------------------------------------------------------
# (c) the map runs out under one long reader
# ---------------------------------------------------------------------------
set_conf($node, 'fpsketch.commit_ts_entries', 1024);
$node->restart;
$log_from = log_offset($node);
$node->safe_psql('postgres', q{
	CREATE TABLE m (id int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	INSERT INTO m SELECT g, 0 FROM generate_series(1, 100) g;
	SELECT fpsketch_stats_reset();});
{
	my $st = stats($node);
	is($st->{commit_ts_capacity}, 1024, '(c) the map has 1024 entries');
	my $reader = FpsTest::Session->new($node, app => 'fps_long_reader');
	$reader->query('SET enable_seqscan = off; SET enable_bitmapscan = off; BEGIN READ ONLY');
	my ($first) = $reader->query('SELECT v FROM m WHERE id = 1');
	is($first, '0', '(c) the long reader starts');

	# 3,000 single-row writers, each its own transaction
	my $w = PostgreSQL::Test::Utils::tempdir() . '/upd.sql';
	PostgreSQL::Test::Utils::append_to_file($w,
		"\\set k random(1, 100)\nUPDATE m SET v = v + 1 WHERE id = :k;\n");
	my $load = FpsTest::Load->start($node, clients => 4, transactions => 750,
		max_tries => 10, files => [$w]);
	my $r = $load->finish;
	is($r->{committed}, 3000, '(c) all 3,000 writers commit (the map never fails a writer)')
	  or diag $r->{err};
	$st = stats($node);
	note "(c) map: entries $st->{commit_ts_entries}, high-water mark $st->{commit_ts_entries_hwm}, "
	  . "drops $st->{commit_ts_drops}, lost $st->{commit_ts_lost}";
	ok($st->{commit_ts_entries_hwm} <= 1024, '(c) the map never holds more than its capacity');
	ok($st->{commit_ts_lost} > 0, "(c) it dropped entries the reader may need ($st->{commit_ts_lost})");

	# every row was rewritten after the reader's timestamp: reading them needs
	# the lost entries
	my ($out, $err) = $reader->query('SELECT sum(v) FROM m WHERE id BETWEEN 1 AND 100');
	like($err, qr/40001: .*\nDETAIL:  .*snapshot too old/s,
		'(c) the long reader then gets 40001 snapshot too old, not a wrong sum');
	$reader->query('ROLLBACK');
	$st = stats($node);
	ok($st->{aborts_snapshot_too_old} >= 1, '(c) ... counted in aborts_snapshot_too_old');
	($out, $err) = $reader->query('BEGIN READ ONLY; SELECT sum(v) FROM m; COMMIT');
	is("$out$err", '3000', '(c) a reader that starts afterwards reads normally');
	$reader->close;
}
@bad = log_problems($node, $log_from);
is(join("\n", @bad), '', '(c) no unexpected error, no crash in the server log');

# ---------------------------------------------------------------------------
# (d) a cancel during a timestamp read's wait
# ---------------------------------------------------------------------------
# commits wait for synchronous standbys only where WAL can be streamed
set_conf($node, 'wal_level', 'replica');
set_conf($node, 'max_wal_senders', 2);
$node->restart;
$log_from = log_offset($node);
$node->safe_psql('postgres', q{
	CREATE TABLE pa (k int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	CREATE TABLE pb (k int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	INSERT INTO pa VALUES (1, 0); INSERT INTO pb VALUES (1, 0);});

sub wait_for_activity
{
	my ($app, $cond) = @_;
	for (1 .. 200)
	{
		return 1 if $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = '$app' AND $cond") > 0;
		usleep(50_000);
	}
	return 0;
}

# A READ ONLY reader with its ts fixed, and a writer held in its COMMIT
# (after PRE_COMMIT: its keys are locked and its commit_ts published) by a
# synchronous-replication wait for a standby that does not exist.
sub reader_and_held_committer
{
	my ($label, $writer_sql) = @_;
	my $reader = FpsTest::Session->new($node, app => 'fps_pin_reader');
	$reader->query('SET enable_seqscan = off; SET enable_bitmapscan = off; BEGIN READ ONLY');
	$reader->query('SELECT v FROM pa WHERE k = 1');		# fixes its ts
	$node->safe_psql('postgres', "ALTER SYSTEM SET synchronous_standby_names = 'nobody'");
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	my $writer = FpsTest::Session->new($node, app => 'fps_pin_writer');
	$writer->send("SET enable_seqscan = off; SET enable_bitmapscan = off; BEGIN; $writer_sql; COMMIT");
	ok(wait_for_activity('fps_pin_writer', "wait_event = 'SyncRep'"),
		"($label) the writer waits in its COMMIT, after PRE_COMMIT");
	return ($reader, $writer);
}

sub release_held_committer
{
	my ($writer) = @_;
	$node->safe_psql('postgres', 'ALTER SYSTEM RESET synchronous_standby_names');
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	$writer->wait;
}

sub cancel_during_ts_wait
{
	my ($label, $writer_sql, $reader_sql) = @_;
	my ($reader, $writer) = reader_and_held_committer($label, $writer_sql);
	$reader->send($reader_sql);
	usleep(500_000);
	ok(!$reader->done, "($label) the reader waits for the committer");
	$node->safe_psql('postgres',
		"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'fps_pin_reader'");
	my ($out, $err) = $reader->wait;
	like($err, qr/canceling statement due to user request/, "($label) the reader is cancelled");
	release_held_committer($writer);
	$reader->query('ROLLBACK');
	$reader->close;
	$writer->close;
	my $st = wait_idle($node);
	is("$st->{pinned}|$st->{lock_leaks}", '0|0', "($label) no pin or lock bit left behind");
}

cancel_during_ts_wait('d, row key', 'UPDATE pa SET v = v + 1 WHERE k = 1; UPDATE pb SET v = v + 1 WHERE k = 1',
	'SELECT v FROM pb WHERE k = 1');
cancel_during_ts_wait('d, predicate key', 'UPDATE pa SET v = v + 1 WHERE k = 1; INSERT INTO pb VALUES (2, 0)',
	'SELECT count(*) FROM pb WHERE k > 0');
@bad = log_problems($node, $log_from);
is(join("\n", @bad), '',
	'(d) no unexpected error, no crash in the server log');

# ---------------------------------------------------------------------------
# (e) the wait's ERROR caught by a subtransaction, which then commits
# ---------------------------------------------------------------------------
$log_from = log_offset($node);

sub caught_during_ts_wait
{
	my ($label, $writer_sql, $reader_set, $reader_read, $catch, $expect) = @_;
	my ($reader, $writer) = reader_and_held_committer($label, $writer_sql);
	my $t = time;
	my ($out, $err) = $reader->query(qq{$reader_set; DO \$\$ BEGIN
		$reader_read;
		RAISE NOTICE 'read without waiting';
	EXCEPTION WHEN $catch THEN RAISE NOTICE 'caught %', SQLSTATE;
	END \$\$; RESET statement_timeout; RESET fpsketch.lock_wait_timeout;});
	like($err, $expect, "($label) the reader's wait ends and the block catches it");
	ok(time - $t < 8, "($label) ... within the timeout");
	release_held_committer($writer);
	# the reader's transaction goes on (the committer pinned the same keys
	# until now, so a leaked reference would not show before)
	my $st = stats($node);
	is("$st->{pinned}|$st->{lock_leaks}", '0|0', "($label) the committer done, the reader's transaction still open: nothing pinned");
	$reader->query('COMMIT');
	$st = stats($node);
	is("$st->{pinned}|$st->{lock_leaks}", '0|0', "($label) after the reader's COMMIT, its session still open: nothing pinned");
	$reader->close;
	$writer->close;
	$st = wait_idle($node);
	is("$st->{pinned}|$st->{lock_leaks}", '0|0', "($label) no pin or lock bit left behind");
}

caught_during_ts_wait('e, statement_timeout', 'UPDATE pa SET v = v + 1 WHERE k = 1; INSERT INTO pb VALUES (4, 0)',
	"SET statement_timeout = '500ms'", 'PERFORM count(*) FROM pb WHERE k > 0',
	'query_canceled', qr/NOTICE:  00000: caught 57014/);
caught_during_ts_wait('e, lock_wait_timeout', 'UPDATE pa SET v = v + 1 WHERE k = 1; INSERT INTO pb VALUES (3, 0)',
	"SET fpsketch.lock_wait_timeout = '500ms'", 'PERFORM count(*) FROM pb WHERE k > 0',
	'serialization_failure', qr/NOTICE:  00000: caught 40001/);
caught_during_ts_wait('e, lock_wait_timeout, committed version', 'UPDATE pa SET v = v + 1 WHERE k = 1; UPDATE pb SET v = v + 1 WHERE k = 1',
	"SET fpsketch.lock_wait_timeout = '500ms'", 'PERFORM v FROM pb WHERE k = 1',
	'serialization_failure', qr/NOTICE:  00000: caught 40001/);
@bad = log_problems($node, $log_from);
is(join("\n", @bad), '',
	'(e) no unexpected error, no crash in the server log');

done_testing();
