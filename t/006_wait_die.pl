# 006_wait_die.pl: fpsketch.wait_policy = wait_die, with timings the
# isolation tester cannot show (a younger transaction's wait polls, which
# pg_isolation_test_session_is_blocked does not see).
#
#  (a) a younger transaction behind an older holder that is running (not
#      waiting) waits for as long as that takes, far beyond
#      fpsketch.wait_die_timeout, and then re-evaluates its UPDATE: no
#      abort, both increments kept;
#  (f) the same behind an older holder that itself waits for a younger,
#      running transaction: no cycle, so nobody dies;
#  (b) a deadlock, younger-for-older wait first: T1 (older) holds row 1,
#      T2 (younger) holds row 2 and waits for row 1; once T1 waits for row 2
#      T2 dies with 40001 (reason wait_die) within wait_die_timeout plus a
#      poll, well before deadlock_timeout (10 s here); T1 commits;
#  (c) the same deadlock, older-for-younger wait first;
#  (d) a three-transaction cycle T1 -> T2 -> T3 -> T1 ends the same way;
#  (e) under block, the same deadlock waits for the detector (40P01).
# No case may produce a 40P01 under wait_die, and nothing stays pinned.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = fps_node('fps_wait_die', conf => "deadlock_timeout = 10s");
$node->safe_psql('postgres',
	q{CREATE TABLE wd (k int PRIMARY KEY, v int NOT NULL) USING fpsketch;});

my $opts = '-c fpsketch.wait_policy=wait_die -c fpsketch.wait_die_timeout=10ms';

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
# (a) younger behind a running older holder: waits, does not die
# ---------------------------------------------------------------------------
reset_rows();
{
	my $s1 = FpsTest::Session->new($node, options => $opts);
	my $s2 = FpsTest::Session->new($node, options => $opts);
	begin_in_order($s1, $s2);
	$s1->query('UPDATE wd SET v = v + 1 WHERE k = 1');
	$s2->send('UPDATE wd SET v = v + 10 WHERE k = 1');
	usleep(500_000);    # 50 times wait_die_timeout
	ok(!$s2->done, '(a) the younger transaction still waits for the running older holder after 50x wait_die_timeout');
	$s1->query('COMMIT');
	my ($err) = finish_within($s2, 30);
	is($err, '', '(a) the younger UPDATE completes without error after the holder commits');
	$s2->query('COMMIT');
	is($s2->{last_err}, '', '(a) and commits');
	is(rows(), '1=11 2=0 3=0', '(a) both increments kept (re-evaluated on the new version)');
	$s1->close;
	$s2->close;
}

# ---------------------------------------------------------------------------
# (f) T2 waits for T1 (older), which waits for T3 (younger, running): a
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
		'(f) T1 waits for the younger T3, T2 for T1, after 50x wait_die_timeout');
	$s[2]->query('COMMIT');
	my ($e1) = finish_within($s[0], 30);
	is($e1, '', '(f) T1 gets T3\'s row once T3 commits');
	$s[0]->query('COMMIT');
	my ($e2) = finish_within($s[1], 30);
	is($e2, '', '(f) T2 gets T1\'s row once T1 commits: nobody died');
	$s[1]->query('COMMIT');
	is(rows(), '1=11 2=0 3=101', '(f) all three committed, every increment kept');
	$_->close for @s;
}

# ---------------------------------------------------------------------------
# (b), (c) the two-transaction deadlock, in both orders of the closing waits
# ---------------------------------------------------------------------------
for my $young_first (1, 0)
{
	my $label = $young_first ? '(b)' : '(c)';
	reset_rows();
	my $s1 = FpsTest::Session->new($node, options => $opts);
	my $s2 = FpsTest::Session->new($node, options => $opts);
	begin_in_order($s1, $s2);
	$s1->query('UPDATE wd SET v = v + 1 WHERE k = 1');
	$s2->query('UPDATE wd SET v = v + 100 WHERE k = 2');
	my $t0 = time;
	if ($young_first)
	{
		$s2->send('UPDATE wd SET v = v + 1000 WHERE k = 1');
		usleep(200_000);
		ok(!$s2->done, "$label the younger waits while the older holder runs");
		$t0 = time;
		$s1->send('UPDATE wd SET v = v + 10 WHERE k = 2');
	}
	else
	{
		$s1->send('UPDATE wd SET v = v + 10 WHERE k = 2');
		usleep(200_000);
		ok(!$s1->done, "$label the older waits for the younger holder");
		$t0 = time;
		$s2->send('UPDATE wd SET v = v + 1000 WHERE k = 1');
	}
	my ($err2) = finish_within($s2, 30);
	my $elapsed = time - $t0;
	like($err2, qr/40001.*\n.*older transaction/s,
		"$label the younger dies with 40001 and the wait_die detail");
	cmp_ok($elapsed, '<', 3,
		"$label ... within seconds (took ${\ sprintf '%.3f', $elapsed} s; deadlock_timeout is 10 s)");
	my ($err1) = finish_within($s1, 30);
	is($err1, '', "$label the older transaction's UPDATE completes");
	$s1->query('COMMIT');
	$s2->query('ROLLBACK');
	is(rows(), '1=1 2=10 3=0', "$label only the older transaction's writes are kept");
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
	# T1 (oldest) waits for T2, T2 waits for T3: both older-for-younger
	$s[0]->send('UPDATE wd SET v = v + 10 WHERE k = 2');
	$s[1]->send('UPDATE wd SET v = v + 10 WHERE k = 3');
	usleep(200_000);
	ok(!$s[0]->done && !$s[1]->done, '(d) T1 waits for T2, T2 for T3');
	my $t0 = time;
	# T3 (youngest) closes the cycle by waiting for T1, which waits for T2
	$s[2]->send('UPDATE wd SET v = v + 10 WHERE k = 1');
	my ($err3) = finish_within($s[2], 30);
	my $elapsed = time - $t0;
	like($err3, qr/40001/, '(d) the youngest, whose wait closes the cycle, dies with 40001');
	cmp_ok($elapsed, '<', 3, "(d) ... within seconds (${\ sprintf '%.3f', $elapsed} s)");
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

is(deadlocks(), $deadlocks0, 'no deadlock reached the deadlock detector under wait_die');

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

my $s = wait_idle($node);
is("$s->{pinned}|$s->{lock_leaks}", '0|0', 'nothing pinned, no lock bit leaked');
cmp_ok($s->{aborts_wait_die}, '>=', 3, 'aborts_wait_die counts the deaths');

$node->stop;
done_testing();
