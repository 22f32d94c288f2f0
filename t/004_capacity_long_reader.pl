# 004_capacity_long_reader.pl: the exact table under pressure.
#
#  (a) exhausting the pin budget of a small exact table
#      (fpsketch.max_entries = 256: a pool of 128 pins, 64 for one login
#      role) with concurrent long transactions of one role: sessions that
#      each read 20 rows and write the last one read (20+ keys) and stay
#      open until a new one cannot pin its keys; that one gets a
#      clean 40001 whose DETAIL says that the role's other transactions hold
#      its share of the pool, the others still commit;
#  (b) the same under a 16-client pgbench load of long transactions (31
#      keys, 20 ms sleep inside): the pin budget runs out and reads
#      escalate; only 40001s, no client error, the server stays up, the
#      table never holds more than its capacity;
#  (c) a long-running reader (LeanStore paper): a REPEATABLE READ session
#      holds its snapshot (and its pins) idle while heap and fpsketch tables
#      take the same update load: fpsketch's goodput falls no more than
#      heap's (READ COMMITTED, no concurrency control beyond row locks), and
#      the exact table stays bounded by the concurrency, not by the rows
#      updated.
# After each: nothing pinned and no lock bit leaked when idle, no error in
# the server log other than 40001.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $t_start = time;
my %faults;
my $violations = 0;

my $node = fps_node('fps_capacity', conf => 'fpsketch.max_entries = 256');
my $log_from = log_offset($node);
$node->safe_psql(
	'postgres', q{
	BEGIN;
	CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	INSERT INTO t SELECT g, 0 FROM generate_series(1, 5000) g;
	COMMIT;
	VACUUM ANALYZE t;});
is(stats($node)->{max_entries}, '256', 'the exact table has 256 entries');
# a whole-table read escalates to the relation key before it fills the table
my $small_scan = 'SET fpsketch.escalation_threshold = 20;';

sub idle_ok
{
	my ($label) = @_;
	my $s = wait_idle($node);
	is("$s->{pinned}|$s->{lock_leaks}", '0|0', "$label: idle: nothing pinned, no lock bit leaked");
	$violations += ($s->{pinned} != 0) + ($s->{lock_leaks} != 0);
	return $s;
}

# ---------------------------------------------------------------------------
# (a) long transactions fill the table until one cannot pin
# ---------------------------------------------------------------------------
{
	my @open;
	my ($full_err, $opened) = ('', 0);
	for my $i (0 .. 29)
	{
		my $s = FpsTest::Session->new($node, app => 'fps_long');
		my $a = 1 + $i * 100;
		# point reads (a range scan would read the relation's phantom key,
		# which every non-HOT update writes: they would not all commit).
		# The row written is the last one read: a transaction past its
		# role's share reads through the escalation key, and its write then
		# needs a pin.  (Its first read may still pin the row from the
		# backend's own share: a lookup that finds its row pins nothing
		# else, am/point_lookup.c.)
		my ($out, $err) = $s->query(
			"BEGIN;\n"
			  . join("\n", map { "SELECT v FROM t WHERE id = $_;" } $a .. $a + 19)
			  . "\nUPDATE t SET v = v + 1 WHERE id = " . ($a + 19) . ";");
		if ($err)
		{
			$full_err = $err;
			$s->query('ROLLBACK;');
			$s->close;
			last;
		}
		push @open, $s;
		$opened++;
	}
	$faults{'long transactions of one role opened until its share of the pool (64 pins of a 256-entry table) was held'} = $opened + 1;
	my $st = stats($node);
	$full_err =~ s/\n(?:LOCATION|psql).*//gs;
	$full_err =~ s/^psql:<stdin>:\d+: //;
	note "(a) $opened transactions of 20 point reads and a write each fit; then: $full_err";
	like(
		$full_err,
		qr/ERROR:  40001: could not serialize access due to the role's other transactions holding its share of the fpsketch pin pool\nDETAIL:  A row of relation "t" could not be pinned: the transactions of role "\w+" hold 64 pins of the shared pool, the most one role may hold \(fpsketch\.max_pool_pins_per_role = 64\)\.\nHINT:  The transaction might succeed if retried once the role's other transactions have ended/,
		"(a) after $opened long transactions the next one gets a clean 40001 (its role's share of the pool is held)");
	ok($st->{entries} <= 256 && $st->{entries_hwm} <= 256,
		"(a) the table never held more than its 256 entries (high-water mark $st->{entries_hwm})");
	my $committed = 0;
	foreach my $s (@open)
	{
		my ($out, $err) = $s->query('COMMIT;');
		$committed++ if $err eq '';
		$s->close;
	}
	is($committed, $opened, "(a) all $opened open transactions commit");
	is($node->safe_psql('postgres', "$small_scan SELECT sum(v) FROM t"), $opened, '(a) and their writes are there');
	idle_ok('(a)');
}

# ---------------------------------------------------------------------------
# (b) a load of long transactions on a full table
# ---------------------------------------------------------------------------
{
	my $script = PostgreSQL::Test::Utils::tempdir() . '/long.sql';
	PostgreSQL::Test::Utils::append_to_file($script, q{
\set a random(1, 4970)
BEGIN;
SELECT count(*) FROM t WHERE id BETWEEN :a AND :a + 29;
\sleep 20 ms
UPDATE t SET v = v + 1 WHERE id = :a;
COMMIT;
});
	$node->safe_psql('postgres', 'SELECT fpsketch_stats_reset()');
	my $sum0 = $node->safe_psql('postgres', "$small_scan SELECT sum(v) FROM t");
	my $load = FpsTest::Load->start($node, clients => 16, duration => 4, max_tries => 1,
		files => [$script]);
	my ($max_entries_seen, $samples) = (0, 0);
	my $mon = FpsTest::Session->new($node, app => 'fps_monitor');
	while ($load->running)
	{
		my $e = $mon->query('SELECT entries FROM fpsketch_stats;');
		$max_entries_seen = $e if $e > $max_entries_seen;
		$samples++;
		usleep(50_000);
	}
	$mon->close;
	my $r = $load->finish;
	my $st = stats($node);
	$faults{'pins refused by the budget under a 16-client long-transaction load on a 256-entry table'} =
	  $st->{pins_refused};
	note "(b) $r->{committed} transactions committed, $r->{serialization} failed with 40001 "
	  . "($st->{aborts_table_full} table full, $st->{pins_refused} pins refused, "
	  . "$st->{escalations} escalations); entries at most $max_entries_seen in $samples samples";
	ok($r->{rc} == 0 && !@{ $r->{aborted} } && !@{ $r->{unexpected} },
		'(b) pgbench: no client error, only 40001 failures')
	  or diag $r->{err};
	ok($st->{pins_refused} > 0 && $st->{escalations} > 0,
		"(b) the pin budget ran out: $st->{pins_refused} pins refused, $st->{escalations} reads escalated");
	ok($r->{committed} > 0, "(b) and $r->{committed} transactions committed");
	is($r->{failed}, $r->{serialization}, '(b) every failure was a serialization failure');
	ok($max_entries_seen <= 256 && $st->{entries_hwm} <= 256,
		"(b) the table never held more than 256 entries (high-water mark $st->{entries_hwm})");
	is($node->safe_psql('postgres', "$small_scan SELECT sum(v) FROM t") - $sum0,
		$r->{committed}, '(b) exactly the committed transactions wrote');
	idle_ok('(b)');
	is($node->safe_psql('postgres', 'SELECT 1'), '1', '(b) the server is up');
}

# 25P02: the statements psql sent after (a)'s 40001 in the same transaction
my @bad = log_problems($node, $log_from, allowed => [ '40001', '25P02' ]);
is(join("\n", @bad), '', '(a, b) the server log has no error other than 40001, no crash');
$violations += scalar @bad;

# ---------------------------------------------------------------------------
# (c) a long-running reader
# ---------------------------------------------------------------------------
$node->stop;
$node->adjust_conf('postgresql.conf', 'fpsketch.max_entries', undef);
$node->start;
$log_from = log_offset($node);
my $rows = 2000;
my $dir = PostgreSQL::Test::Utils::tempdir();
foreach my $tab ('hr', 'fr')
{
	PostgreSQL::Test::Utils::append_to_file("$dir/$tab.sql", qq{
\\set a random(1, $rows)
\\set b random(1, $rows)
BEGIN;
SELECT bal FROM $tab WHERE id = :a;
UPDATE $tab SET bal = bal - 1 WHERE id = :a;
UPDATE $tab SET bal = bal + 1 WHERE id = :b;
COMMIT;
});
}

# goodput (committed transactions per second) of heap and fpsketch, 2
# clients each, side by side, twice 3 s: both see the same machine (2 cores,
# and whatever else runs on it; one after the other the runs differ by
# up to 2x).  Side by side, a table whose goodput falls leaves more CPU to
# the other: an fpsketch-specific slowdown shows even more clearly, a
# heap-side one makes fpsketch look better than it would alone.
sub goodput
{
	my ($gp, $when) = @_;
	my $s0 = stats($node);
	for my $round (1 .. 2)
	{
		my %l = map {
			$_ => FpsTest::Load->start($node, clients => 2, jobs => 1, duration => 3,
				max_tries => 10, files => ["$dir/$_.sql"])
		} qw(hr fr);
		foreach my $tab (qw(hr fr))
		{
			my $r = $l{$tab}->finish;
			if ($r->{rc} != 0 || @{ $r->{aborted} })
			{
				fail("(c) $tab $when the long reader: client errors");
				diag $r->{err};
				$violations++;
			}
			$gp->{$tab}{$when} += $r->{committed} / 6;
		}
	}
	my $s1 = stats($node);
	note "(c) fpsketch $when the reader: "
	  . join(', ', map { "$_ " . ($s1->{$_} - $s0->{$_}) }
		  qw(commits phantom_writes lock_waits aborts_validate_changed aborts_stale_read aborts_concurrent_update aborts_phantom));
	return;
}

# One attempt: fresh tables, goodput without and with the long reader.
# Returns (fpsketch ratio, heap ratio, stats during).
sub attempt
{
	my ($n) = @_;
	$node->safe_psql(
		'postgres', qq{
		DROP TABLE IF EXISTS hr, fr;
		CREATE TABLE hr (id int PRIMARY KEY, bal int NOT NULL, pad text);
		CREATE TABLE fr (id int PRIMARY KEY, bal int NOT NULL, pad text) USING fpsketch;
		INSERT INTO hr SELECT g, 0, repeat('x', 100) FROM generate_series(1, $rows) g;
		INSERT INTO fr SELECT * FROM hr;
		VACUUM ANALYZE hr, fr;});
	my %gp;
	goodput(\%gp, 'before');

	my $reader = FpsTest::Session->new($node, app => 'fps_long_reader');
	my ($out, $err) = $reader->query(
		q{BEGIN ISOLATION LEVEL REPEATABLE READ;
		SELECT sum(bal) FROM hr WHERE id <= 10;
		SELECT sum(bal) FROM fr WHERE id <= 10;});
	like($out, qr/^-?\d+\n-?\d+$/, "(c) attempt $n: the long reader holds a snapshot of both tables");
	$faults{'long-running REPEATABLE READ reader idle for the whole run'}++;
	is( $node->safe_psql('postgres',
			"SELECT backend_xmin IS NOT NULL FROM pg_stat_activity WHERE application_name = 'fps_long_reader'"),
		't', "(c) attempt $n: its snapshot holds back the xmin horizon");
	my $reader_pins = stats($node)->{pinned};

	$node->safe_psql('postgres', 'SELECT fpsketch_stats_reset()');
	goodput(\%gp, 'during');
	my $st = stats($node);
	my %ratio = map { $_ => $gp{$_}{during} / $gp{$_}{before} } keys %gp;
	my $dead = $node->safe_psql('postgres',
		"SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname IN ('hr', 'fr') ORDER BY relname");
	note sprintf("(c) attempt %d: goodput before/during the long reader: heap %.0f/%.0f tps (%.2f), "
		  . "fpsketch %.0f/%.0f tps (%.2f); dead tuples fr/hr %s",
		$n, $gp{hr}{before}, $gp{hr}{during}, $ratio{hr}, $gp{fr}{before}, $gp{fr}{during},
		$ratio{fr}, join('/', split /\n/, $dead));
	note "(c) attempt $n: exact table during the run with the reader: entries high-water mark "
	  . "$st->{entries_hwm}, pinned high-water mark $st->{pinned_hwm}, the reader's pins $reader_pins, "
	  . "$rows rows updated";
	ok(stats($node)->{pinned} == $reader_pins,
		"(c) attempt $n: after the load only the reader's pins remain");
	($out, $err) = $reader->query('COMMIT;');
	ok($err eq '' || $err =~ /40001/, "(c) attempt $n: the long reader ends (commit or 40001)");
	$reader->close;
	return ($ratio{fr}, $ratio{hr}, $st);
}

# Goodput on a 2-core machine is noisy (other work on it shifts both, and
# not by the same factor); an fpsketch-specific slowdown would show in
# every attempt, noise rarely three times: up to 3 attempts.
my ($fr, $hr, $st);
for my $n (1 .. 3)
{
	($fr, $hr, $st) = attempt($n);
	last if $fr >= $hr - 0.2 && $st->{pinned_hwm} <= 200;
}
ok($fr >= $hr - 0.2,
	sprintf('(c) fpsketch goodput falls no more than heap\'s with a long reader (%.2f vs %.2f, noise margin 0.2)',
		$fr, $hr));
# pins are what running transactions need; with fpsketch.eviction = clock
# the table also keeps unpinned keys, exact, up to its fixed capacity
ok($st->{pinned_hwm} <= 200,
	"(c) pins stay bounded: at most $st->{pinned_hwm} keys pinned for 4 clients and the reader, "
	  . "while $rows rows were updated");
ok($st->{entries_hwm} <= $st->{max_entries},
	"(c) the exact table stays within its capacity: $st->{entries_hwm} of $st->{max_entries} entries");
idle_ok('(c)');
# a then b in random order: two heap updaters can deadlock (40P01, retried)
@bad = log_problems($node, $log_from, allowed => [qw(40001 40P01)]);
is(join("\n", @bad), '', '(c) the server log has no error other than 40001/40P01, no crash');
$violations += scalar @bad;

$node->stop;
note "faults injected:";
note "  $faults{$_} x $_" foreach sort keys %faults;
note "violations found: $violations";
note sprintf("004_capacity_long_reader.pl ran %.0f s", time - $t_start);
is($violations, 0, 'zero violations over all checks');
done_testing();
