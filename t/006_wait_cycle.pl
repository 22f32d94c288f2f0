# 006_wait_cycle.pl: fpsketch.wait_policy = cycle_check (the default), with
# chains longer than an isolation spec shows and with timings.
# deadlock_timeout is 10 s here: a cycle left to PostgreSQL's detector would
# take that long and count in pg_stat_database.deadlocks.
#
#  (a) a transaction behind a running holder waits for as long as that
#      takes, then re-evaluates its UPDATE: no abort, both increments kept;
#  (f) T2 waits for T1, which waits for T3, which runs: a chain, not a
#      cycle, so nobody fails;
#  (b) the two-row deadlock: T2 waits for T1, then T1's wait for T2 would
#      close the cycle: T1 fails at once with 40001 (reason wait_cycle),
#      T2 commits;
#  (c) the same, the other wait first: T2 fails;
#  (d) a cycle of three, T1 -> T2 -> T3 -> T1: T3, which closes it, fails;
#  (g) 12 pgbench clients updating 4 of 10 rows each in random order for
#      4 s: many cycles, every one refused at once (40001), none reaches
#      the deadlock detector, and the row totals add up;
#  (e) control: under block the same deadlock waits for the detector
#      (40P01);
#  (h) STO: 12 clients update a hot row, read another and update a third;
#      a reader waiting for an older writer's outcome is a published wait,
#      so the cycles it closes with row-lock waits fail at once too: no
#      40P01.
# Afterwards nothing is pinned and no lock bit leaked.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = fps_node('fps_wait_cycle', conf => "deadlock_timeout = 10s");
$node->safe_psql('postgres',
	q{CREATE TABLE wd (k int PRIMARY KEY, v int NOT NULL) USING fpsketch;});

my $opts = '-c fpsketch.wait_policy=cycle_check';

sub reset_rows
{
	$node->safe_psql('postgres',
		q{TRUNCATE wd; INSERT INTO wd VALUES (1, 0), (2, 0), (3, 0);});
}

sub rows
{
	return $node->safe_psql('postgres',
		q{SELECT string_agg(k || '=' || v, ' ' ORDER BY k) FROM wd});
}

sub deadlocks
{
	return $node->safe_psql('postgres',
		q{SELECT deadlocks FROM pg_stat_database WHERE datname = 'postgres'});
}

# Begin a transaction in each session, in order, so that their transaction
# IDs (assigned by a first write) are in that order: the first is oldest.
sub begin_in_order
{
	my @s = @_;
	for my $i (0 .. $#s)
	{
		$s[$i]->query('BEGIN');
		$s[$i]->query('SELECT txid_current()');
	}
}

# Wait until $s's statement is done; returns (stderr, seconds waited).
sub finish_within
{
	my ($s, $timeout) = @_;
	my $t0 = time;
	my (undef, $err) = $s->wait($timeout);
	return ($err, time - $t0);
}

my $deadlocks0 = deadlocks();

# ---------------------------------------------------------------------------
# (a) behind a running holder: waits, does not fail
# ---------------------------------------------------------------------------
reset_rows();
{
	my $s1 = FpsTest::Session->new($node, options => $opts);
	my $s2 = FpsTest::Session->new($node, options => $opts);
	begin_in_order($s1, $s2);
	$s1->query('UPDATE wd SET v = v + 1 WHERE k = 1');
	$s2->send('UPDATE wd SET v = v + 10 WHERE k = 1');
	usleep(500_000);
	ok(!$s2->done, '(a) the second transaction still waits for the running holder after 0.5 s');
	$s1->query('COMMIT');
	my ($err) = finish_within($s2, 30);
	is($err, '', '(a) the waiting UPDATE completes without error after the holder commits');
	$s2->query('COMMIT');
	is($s2->{last_err}, '', '(a) and commits');
	is(rows(), '1=11 2=0 3=0', '(a) both increments kept (re-evaluated on the new version)');
	$s1->close;
	$s2->close;
}

# ---------------------------------------------------------------------------
# (f) T2 waits for T1, which waits for T3, which runs: a
# chain, not a cycle
# ---------------------------------------------------------------------------
reset_rows();
{
	my @s = map { FpsTest::Session->new($node, options => $opts) } 1 .. 3;
	begin_in_order(@s);
	$s[0]->query('UPDATE wd SET v = v + 1 WHERE k = 1');
	$s[2]->query('UPDATE wd SET v = v + 100 WHERE k = 3');
	$s[0]->send('UPDATE wd SET v = v + 1 WHERE k = 3');
	usleep(100_000);
	$s[1]->send('UPDATE wd SET v = v + 10 WHERE k = 1');
	usleep(500_000);
	ok(!$s[0]->done && !$s[1]->done,
		'(f) T1 waits for T3, T2 for T1, after 0.5 s');
	$s[2]->query('COMMIT');
	my ($e1) = finish_within($s[0], 30);
	is($e1, '', '(f) T1 gets T3\'s row once T3 commits');
	$s[0]->query('COMMIT');
	my ($e2) = finish_within($s[1], 30);
	is($e2, '', '(f) T2 gets T1\'s row once T1 commits: nobody failed');
	$s[1]->query('COMMIT');
	is(rows(), '1=11 2=0 3=101', '(f) all three committed, every increment kept');
	$_->close for @s;
}

# ---------------------------------------------------------------------------
# (b), (c) the two-transaction deadlock: whichever wait closes it fails
# ---------------------------------------------------------------------------
for my $t2_waits_first (1, 0)
{
	my $label = $t2_waits_first ? '(b)' : '(c)';
	reset_rows();
	my $s1 = FpsTest::Session->new($node, options => $opts);
	my $s2 = FpsTest::Session->new($node, options => $opts);
	begin_in_order($s1, $s2);
	$s1->query('UPDATE wd SET v = v + 1 WHERE k = 1');
	$s2->query('UPDATE wd SET v = v + 100 WHERE k = 2');
	my ($first, $closer) = $t2_waits_first ? ($s2, $s1) : ($s1, $s2);
	$first->send($t2_waits_first
		? 'UPDATE wd SET v = v + 1000 WHERE k = 1'
		: 'UPDATE wd SET v = v + 10 WHERE k = 2');
	usleep(200_000);
	ok(!$first->done, "$label the first wait is an ordinary wait");
	my $t0 = time;
	$closer->send($t2_waits_first
		? 'UPDATE wd SET v = v + 10 WHERE k = 2'
		: 'UPDATE wd SET v = v + 1000 WHERE k = 1');
	my ($err) = finish_within($closer, 30);
	my $elapsed = time - $t0;
	like($err, qr/40001.*\n.*would close a cycle of waits/s,
		"$label the wait that would close the cycle fails with 40001 and the wait_cycle detail");
	cmp_ok($elapsed, '<', 2,
		"$label ... at once (took ${\ sprintf '%.3f', $elapsed} s; deadlock_timeout is 10 s)");
	$closer->query('ROLLBACK');
	my ($err1) = finish_within($first, 30);
	is($err1, '', "$label the first waiter's UPDATE completes once the other rolls back");
	$first->query('COMMIT');
	is(rows(), $t2_waits_first ? '1=1000 2=100 3=0' : '1=1 2=10 3=0',
		"$label only the surviving transaction's writes are kept");
	$s1->close;
	$s2->close;
}

# ---------------------------------------------------------------------------
# (d) a cycle of three: T1 -> T2 -> T3 -> T1 (each waits for the next's row)
# ---------------------------------------------------------------------------
reset_rows();
{
	my @s = map { FpsTest::Session->new($node, options => $opts) } 1 .. 3;
	begin_in_order(@s);
	$s[$_]->query("UPDATE wd SET v = v + 1 WHERE k = " . ($_ + 1)) for 0 .. 2;
	# T1 waits for T2, T2 waits for T3
	$s[0]->send('UPDATE wd SET v = v + 10 WHERE k = 2');
	$s[1]->send('UPDATE wd SET v = v + 10 WHERE k = 3');
	usleep(200_000);
	ok(!$s[0]->done && !$s[1]->done, '(d) T1 waits for T2, T2 for T3');
	my $t0 = time;
	# T3 closes the cycle by waiting for T1, which waits for T2
	$s[2]->send('UPDATE wd SET v = v + 10 WHERE k = 1');
	my ($err3) = finish_within($s[2], 30);
	my $elapsed = time - $t0;
	like($err3, qr/40001/, '(d) T3, whose wait closes the cycle, fails with 40001');
	cmp_ok($elapsed, '<', 2, "(d) ... at once (${\ sprintf '%.3f', $elapsed} s)");
	$s[2]->query('ROLLBACK');
	my ($e2) = finish_within($s[1], 30);
	is($e2, '', '(d) T2 gets T3\'s row');
	$s[1]->query('COMMIT');
	my ($e1) = finish_within($s[0], 30);
	is($e1, '', '(d) T1 gets T2\'s row');
	$s[0]->query('COMMIT');
	is(rows(), '1=1 2=11 3=10', '(d) T1 and T2 committed, T3 rolled back');
	$_->close for @s;
}

# ---------------------------------------------------------------------------
# (g) random-order updates of hot rows by 12 clients
# ---------------------------------------------------------------------------
$node->safe_psql('postgres', q{
	CREATE TABLE hot (k int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	INSERT INTO hot SELECT g, 0 FROM generate_series(1, 10) g;
	SELECT fpsketch_stats_reset();});
my $script = $node->basedir . '/random_order.sql';
PostgreSQL::Test::Utils::append_to_file($script, q{
\set a random(1, 10)
\set b random(1, 10)
\set c random(1, 10)
\set d random(1, 10)
BEGIN;
UPDATE hot SET v = v + 1 WHERE k = :a;
UPDATE hot SET v = v + 1 WHERE k = :b;
UPDATE hot SET v = v + 1 WHERE k = :c;
UPDATE hot SET v = v + 1 WHERE k = :d;
COMMIT;
});
{
	my $r = FpsTest::Load->start($node, clients => 12, duration => 4, max_tries => 100,
		files => [$script], options => $opts)->finish;
	my $st = stats($node);
	note("(g) committed $r->{processed}, retried $r->{retried}, failed $r->{failed}, "
		  . "aborts_wait_cycle $st->{aborts_wait_cycle}, row_lock_waits $st->{row_lock_waits}");
	is($r->{rc}, 0, '(g) pgbench ran to the end');
	is(scalar @{ $r->{aborted} }, 0, '(g) no client aborted');
	cmp_ok($r->{processed}, '>', 100, "(g) transactions committed ($r->{processed})");
	cmp_ok($st->{aborts_wait_cycle}, '>', 0,
		"(g) cycles occurred and were refused ($st->{aborts_wait_cycle})");
	is($r->{deadlock}, 0, '(g) no client saw a 40P01');
	is($node->safe_psql('postgres', 'SELECT sum(v) FROM hot'), 4 * $r->{processed},
		'(g) the row totals add up to 4 per committed transaction');
}

is(deadlocks(), $deadlocks0, 'no deadlock reached the deadlock detector under cycle_check');

# ---------------------------------------------------------------------------
# (e) control: under block the same deadlock waits for the detector
# ---------------------------------------------------------------------------
reset_rows();
{
	my $block = '-c fpsketch.wait_policy=block -c deadlock_timeout=200ms';
	my $s1 = FpsTest::Session->new($node, options => $block);
	my $s2 = FpsTest::Session->new($node, options => $block);
	begin_in_order($s1, $s2);
	$s1->query('UPDATE wd SET v = v + 1 WHERE k = 1');
	$s2->query('UPDATE wd SET v = v + 100 WHERE k = 2');
	$s2->send('UPDATE wd SET v = v + 1000 WHERE k = 1');
	usleep(100_000);
	$s1->send('UPDATE wd SET v = v + 10 WHERE k = 2');
	my ($e2) = finish_within($s2, 30);
	my ($e1) = finish_within($s1, 30);
	like($e1 . $e2, qr/40P01/, '(e) block: the deadlock detector ends it with 40P01');
	$s1->query('ROLLBACK');
	$s2->query('ROLLBACK');
	$s1->close;
	$s2->close;
	# a backend reports its statistics at exit at the latest
	my $t0 = time;
	usleep(100_000) while deadlocks() == $deadlocks0 && time - $t0 < 10;
	cmp_ok(deadlocks(), '>', $deadlocks0, '(e) and pg_stat_database counts it');
}

# ---------------------------------------------------------------------------
# (h) STO: readers waiting for older writers, writers for row locks
# ---------------------------------------------------------------------------
SKIP:
{
	skip 'this build has no STO', 5 unless grep { $_ eq 'sto' } protocols($node);
	my $sto = fps_node('fps_wait_cycle_sto',
		conf => "fpsketch.protocol = sto\ndeadlock_timeout = 10s");
	$sto->safe_psql('postgres', q{
		CREATE TABLE hot (k int PRIMARY KEY, v int NOT NULL) USING fpsketch;
		INSERT INTO hot SELECT g, 0 FROM generate_series(1, 4) g;});
	my $script = $sto->basedir . '/read_between_writes.sql';
	PostgreSQL::Test::Utils::append_to_file($script, q{
\set a random(1, 4)
\set b random(1, 4)
\set c random(1, 4)
BEGIN;
UPDATE hot SET v = v + 1 WHERE k = :a;
SELECT v FROM hot WHERE k = :b;
UPDATE hot SET v = v + 1 WHERE k = :c;
COMMIT;
});
	my $r = FpsTest::Load->start($sto, clients => 12, duration => 4, max_tries => 100,
		files => [$script], options => $opts)->finish;
	my $st = stats($sto);
	note("(h) committed $r->{processed}, retried $r->{retried}, failed $r->{failed}, "
		  . "deadlock failures $r->{deadlock}, aborts_wait_cycle $st->{aborts_wait_cycle}, "
		  . "sto_writer_waits $st->{sto_writer_waits}");
	is(scalar @{ $r->{aborted} }, 0, '(h) no client aborted');
	cmp_ok($r->{processed}, '>', 100, "(h) transactions committed ($r->{processed})");
	is($r->{deadlock}, 0, '(h) no client saw a 40P01');
	is($sto->safe_psql('postgres',
			q{SELECT deadlocks FROM pg_stat_database WHERE datname = 'postgres'}),
		0, '(h) no deadlock reached the detector');
	is($sto->safe_psql('postgres', 'SELECT sum(v) FROM hot'), 2 * $r->{processed},
		'(h) the row totals add up to 2 per committed transaction');
	$sto->stop;
}

my $s = wait_idle($node);
is("$s->{pinned}|$s->{lock_leaks}", '0|0', 'nothing pinned, no lock bit leaked');
cmp_ok($s->{aborts_wait_cycle}, '>', 0, 'aborts_wait_cycle counts the refused waits');

$node->stop;
done_testing();
