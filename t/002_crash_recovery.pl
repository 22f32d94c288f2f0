# 002_crash_recovery.pl: crashes in the middle of a TPC-C-like load.
#
#  (a) SIGKILL of a random backend of a running New-Order + Payment load:
#      the postmaster reinitialises (fresh FPSketch), the load continues;
#  (b) SIGKILL of a backend inside commit validation: a transaction that
#      read every row of FAULT_READS (300,000 rows no one writes, about
#      400,000 pinned row and gap keys, so that validating their read
#      timestamps takes tens of milliseconds) and wrote two rows is killed
#      the moment its COMMIT starts; a FAULT_PROBE row it inserted tells after
#      recovery whether the kill came before its commit record (that is,
#      during PRE_COMMIT validation) or after; with gdb, one more is killed
#      at a breakpoint on tictoc_validate;
#  (c) SIGKILL of a backend that holds its lock bits between PRE_COMMIT and
#      COMMIT (held there by a synchronous-replication wait for a standby
#      that does not exist), while a reader spin-waits on its key;
#  (d) immediate shutdown under load, restart with WAL replay (twice);
#  (e) immediate shutdown under load, restart with a different variant,
#      sketch size and protocol (STO, and MVTO with each of the three
#      variants, the load then running under MVTO).
#
# After each part: the twelve TPC-C consistency conditions, row counts
# (static tables complete, HISTORY = sum(C_PAYMENT_CNT), index scans count
# what sequential scans count, nothing committed before a fault lost),
# bt_index_check(heapallindexed) on every index, nothing pinned and no lock
# bit leaked once idle, no unexpected error in the server log or in the
# clients, and a fresh load commits.

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
my %faults;        # fault => times injected
my %killed;        # pids this test SIGKILLed
my $violations = 0;

my $node = fps_node(
	'fps_crash',
	conf => join("\n",
		# (c) needs a synchronous standby that never comes; every session
		# but the one that wants to wait commits with synchronous_commit =
		# local (still a local WAL flush)
		"wal_level = replica",
		"max_wal_senders = 2",
		"synchronous_standby_names = 'fps_nobody'",
		"synchronous_commit = local",
		# (b) pins about 400,000 keys in one transaction; the pool of
		# max_entries / 2 leaves the load's clients plenty
		"fpsketch.max_entries = 1048576",
		"fpsketch.max_pins_per_transaction = 450000",
		"fpsketch.max_pool_pins_per_role = 450000"));
my @protocols = protocols($node);

my $t0 = time;
tpcc_setup($node, am => 'fpsketch');
$node->safe_psql(
	'postgres', q{
	INSERT INTO fault_probe VALUES (0, 'written by every probe transaction');
	CREATE TABLE fault_reads (id int PRIMARY KEY) USING fpsketch;
	INSERT INTO fault_reads SELECT g FROM generate_series(1, 300000) g;
	-- returns once backend $1 has started a COMMIT (or is gone)
	CREATE FUNCTION fps_wait_for_commit(target int) RETURNS text
	LANGUAGE plpgsql AS $$
	DECLARE st text; q text; t0 timestamptz := clock_timestamp();
	BEGIN
		LOOP
			PERFORM pg_stat_clear_snapshot();
			SELECT state, query INTO st, q FROM pg_stat_activity WHERE pid = target;
			IF NOT FOUND THEN RETURN 'gone'; END IF;
			IF st = 'active' AND q ~* '^\s*commit' THEN RETURN 'commit'; END IF;
			-- a COMMIT that ended between two polls: the target was idle in
			-- its transaction until then, and its query may already be
			-- psql's empty statement after the COMMIT
			IF st = 'idle' THEN RETURN 'commit done'; END IF;
			IF clock_timestamp() - t0 > interval '60 s' THEN RETURN 'timeout'; END IF;
		END LOOP;
	END $$;
	CHECKPOINT;});
note sprintf("TPC-C load (1 warehouse): %.1f s", time - $t0);

# the checks after every part
sub check_all
{
	my ($label, $log_from) = @_;
	# a fresh load commits, with no client error at all
	my $r = tpcc_load($node, clients => 4, duration => 2)->finish;
	ok($r->{rc} == 0 && $r->{committed} > 0 && !@{ $r->{aborted} } && !@{ $r->{unexpected} },
		"$label: a fresh load commits ($r->{committed} transactions, $r->{failed} failed with 40001 after retries)")
	  or do { diag $r->{err}; $violations++; };
	$violations += tpcc_check($node, $label);
	my @bad = log_problems($node, $log_from, killed => \%killed);
	$violations += scalar @bad;
	is(join("\n", @bad), '', "$label: no PANIC, unexpected crash or unexpected error in the server log");
	return;
}

# Start a load, wait a moment, note what is committed, run $fault->(), let
# the load end.  Returns the counts noted before the fault.
sub under_load
{
	my ($label, $fault, %p) = @_;
	my $load = tpcc_load($node, clients => $p{clients} // 4, duration => 30);
	usleep(int((1.0 + rand(1.0)) * 1e6));
	my $before = tpcc_counts($node);
	$fault->();
	my $r = $load->finish(expected => $FpsTest::CONNECTION_LOST);
	ok(!@{ $r->{unexpected} }, "$label: the load's clients saw only 40001 retries and the lost connection")
	  or do { diag $r->{err}; $violations++; };
	return ($before, $r);
}

# ---------------------------------------------------------------------------
# (a) SIGKILL of a random backend under load
# ---------------------------------------------------------------------------
my $log_from = log_offset($node);
for my $round (1 .. 3)
{
	my $label = "(a) SIGKILL under load #$round";
	my $round_from = log_offset($node);
	my $victim;
	my ($before) = under_load(
		$label,
		sub {
			my ($pid, $query) = pick_busy_backend($node);
			$victim = "$pid ($query)";
			$killed{$pid} = 1;
			kill 'KILL', $pid;
			$faults{'SIGKILL of a backend under TPC-C load'}++;
		});
	my $waited = wait_ready($node);
	note sprintf("%s: killed %s, server ready again after %.1f s", $label, $victim, $waited);
	ok($node->log_contains(qr/all server processes terminated; reinitializing/, $round_from),
		"$label: the postmaster reinitialised");
	$violations += tpcc_counts_not_lost($node, $before, $label);
}
check_all('(a) after 3 SIGKILLs under load', $log_from);

# ---------------------------------------------------------------------------
# (b) SIGKILL inside commit validation
# ---------------------------------------------------------------------------
$log_from = log_offset($node);
my ($before_record, $after_record) = (0, 0);
my $round = 0;
while ($round < 6 && ($round < 3 || $before_record < 2))
{
	$round++;
	my $label = "(b) SIGKILL in validation #$round";
	my ($before, $r) = under_load(
		$label,
		sub {
			my $v = FpsTest::Session->new($node, app => 'fps_victim');
			my ($out, $err) = $v->query(
				qq{BEGIN;
				SET LOCAL fpsketch.escalation_threshold = 1000000;
				SET LOCAL enable_seqscan = off;
				SET LOCAL enable_bitmapscan = off;
				SELECT count(*) FROM fault_reads WHERE id BETWEEN 1 AND 300000;
				UPDATE fault_probe SET note = note WHERE id = 0;
				INSERT INTO fault_probe VALUES ($round, 'validation kill');});
			die "probe transaction failed: $err" unless $out eq '300000';
			my $k = FpsTest::Session->new($node, app => 'fps_killer');
			$k->send("SELECT fps_wait_for_commit(" . $v->pid . ");");
			$node->poll_query_until('postgres',
				q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'fps_killer' AND state = 'active'}, '1');
			$v->send('COMMIT;');
			my $seen = $k->wait;
			kill 'KILL', $v->pid;
			$killed{ $v->pid } = 1;
			$faults{'SIGKILL of a backend the moment its COMMIT started (validation of 300,000 reads)'}++;
			# the kill lands in validation, or just after the commit (counted
			# below: the loop goes on until two kills landed before the
			# commit record)
			like($seen, qr/^commit/, "$label: the backend was killed while running or just after its COMMIT ($seen)");
			$v->close;
			$k->close;
		},
		clients => 3);
	wait_ready($node);
	my $present = $node->safe_psql('postgres', "SELECT count(*) FROM fault_probe WHERE id = $round");
	$present ? $after_record++ : $before_record++;
	$violations += tpcc_counts_not_lost($node, $before, $label);
}
note "(b) kills before the commit record (in PRE_COMMIT validation): $before_record, after it: $after_record";
ok($before_record >= 1, "(b) at least one kill landed before the commit record, i.e. in validation ($before_record of $round)");

# deterministic, when gdb can attach: a breakpoint on tictoc_validate
SKIP:
{
	skip 'gdb cannot attach to backends here', 2 unless gdb_usable();
	# gdb reads symbols from the file on disk: if fpsketch.so was installed
	# anew after the server loaded it, its breakpoint would never hit
	my $maps = slurp_file("/proc/$node->{_pid}/maps");
	skip 'fpsketch.so was replaced on disk after the server started', 2
	  if $maps =~ /fpsketch\.so \(deleted\)/;
	my $label = '(b) SIGKILL at a breakpoint in tictoc_validate';
	my $flag = PostgreSQL::Test::Utils::tempdir() . '/gdb_ready';
	my $gdb_out = '';
	my ($before) = under_load(
		$label,
		sub {
			my $v = FpsTest::Session->new($node, app => 'fps_victim');
			my ($out, $err) = $v->query(
				q{BEGIN;
				SELECT count(*) FROM item WHERE i_id BETWEEN 1 AND 500;
				UPDATE fault_probe SET note = note WHERE id = 0;
				INSERT INTO fault_probe VALUES (1000, 'gdb kill');});
			my $pid = $v->pid;
			my $gdb = IPC::Run::start(
				[
					'gdb', '-p', $pid, '-batch',
					'-ex', 'break tictoc_validate',
					'-ex', "shell touch $flag",
					'-ex', 'continue',
					'-ex', 'bt 5',
					'-ex', "shell kill -9 $pid"
				],
				'<', \undef, '>&', \$gdb_out, IPC::Run::timeout(30));
			my $t = time;
			usleep(50_000) until -e $flag || time - $t > 60;
			$killed{$pid} = 1;
			$v->send('COMMIT;');
			# never hang on gdb (a breakpoint that does not hit, say)
			eval { $gdb->finish; };
			if ($@) { diag "gdb: $@"; eval { $gdb->kill_kill; }; }
			$faults{'SIGKILL at a gdb breakpoint on tictoc_validate'}++;
			$v->close;
		},
		clients => 3);
	like($gdb_out, qr/#0\s+(?:0x\w+ in )?tictoc_validate/, "$label: the backend stopped in tictoc_validate")
	  or diag $gdb_out;
	wait_ready($node);
	is($node->safe_psql('postgres', 'SELECT count(*) FROM fault_probe WHERE id = 1000'),
		'0', "$label: its transaction did not commit");
}

# ---------------------------------------------------------------------------
# (c) SIGKILL of a committer holding lock bits, with a reader waiting
# ---------------------------------------------------------------------------
for my $round (1 .. 2)
{
	my $label = "(c) SIGKILL of a committer holding lock bits #$round";
	my $id = 2000 + $round;
	my ($before) = under_load(
		$label,
		sub {
			my $v = FpsTest::Session->new($node, app => 'fps_victim');
			my ($out, $err) = $v->query(
				qq{BEGIN;
				SET LOCAL synchronous_commit = on;
				UPDATE fault_probe SET note = 'locked' WHERE id = 0;
				INSERT INTO fault_probe VALUES ($id, 'syncrep kill');});
			my $waits = stats($node)->{lock_waits};
			$v->send('COMMIT;');
			$node->poll_query_until('postgres',
				"SELECT wait_event FROM pg_stat_activity WHERE pid = " . $v->pid, 'SyncRep');
			my $reader = FpsTest::Session->new($node, app => 'fps_reader');
			$reader->send('SELECT note FROM fault_probe WHERE id = 0;');
			$node->poll_query_until('postgres',
				"SELECT lock_waits > $waits FROM fpsketch_stats");
			ok(!$reader->done, "$label: a reader of the locked row waits");
			$killed{ $v->pid } = 1;
			kill 'KILL', $v->pid;
			$faults{'SIGKILL of a committer holding lock bits (after its commit record), reader waiting'}++;
			$reader->wait;
			ok(!$reader->alive, "$label: the waiting reader's connection ended with the crash");
			$v->close;
			$reader->close;
		});
	wait_ready($node);
	is($node->safe_psql('postgres', "SELECT count(*) FROM fault_probe WHERE id = $id"),
		'1', "$label: its commit record was flushed before the kill, so it committed");
	$violations += tpcc_counts_not_lost($node, $before, $label);
}
check_all('(b, c) after the kills in commit', $log_from);

# ---------------------------------------------------------------------------
# (d) immediate shutdown under load, restart
# ---------------------------------------------------------------------------
$log_from = log_offset($node);
for my $round (1 .. 2)
{
	my $label = "(d) immediate shutdown under load #$round";
	my $recovery_from = log_offset($node);
	my ($before) = under_load(
		$label,
		sub {
			$node->stop('immediate');
			$faults{'immediate shutdown under TPC-C load'}++;
		});
	$node->start;
	wait_ready($node);
	ok($node->log_contains(qr/database system was not properly shut down; automatic recovery in progress/, $recovery_from)
		  && $node->log_contains(qr/redo done at/, $recovery_from),
		"$label: the restart replayed WAL");
	$violations += tpcc_counts_not_lost($node, $before, $label);
}
# (the checks follow the first restart of (e))

# ---------------------------------------------------------------------------
# (e) immediate shutdown, restart with another variant / size / protocol
# ---------------------------------------------------------------------------
my @configs = (
	{ variant => 'focus_counter', sketch_size => '1kB', sketch_rows => 1 },
	{ variant => 'exact', sketch_size => '256kB', sketch_rows => 2 });
push @configs, { protocol => 'sto', variant => 'focus_sketch', sketch_size => '8kB', sketch_rows => 4 }
  if grep { $_ eq 'sto' } @protocols;
# MVTO over every variant: its timestamp reads and the map of commit
# timestamps start empty after the restart
push @configs,
  { protocol => 'mvto', variant => 'focus_counter', sketch_size => '1kB', sketch_rows => 1 },
  { protocol => 'mvto', variant => 'exact', sketch_size => '256kB', sketch_rows => 2 },
  { protocol => 'mvto', variant => 'focus_sketch', sketch_size => '32kB', sketch_rows => 4 }
  if grep { $_ eq 'mvto' } @protocols;
foreach my $c (@configs)
{
	my $desc = join(', ', map { "$_ = $c->{$_}" } sort keys %$c);
	my $label = "(e) restart with $desc";
	my $check_label = $c == $configs[0] ? "(d, e) after 2 immediate shutdowns and $label" : $label;
	my $check_from = $c == $configs[0] ? $log_from : log_offset($node);
	my ($before) = under_load(
		$label,
		sub {
			$node->stop('immediate');
			$faults{'immediate shutdown under load, restart with another variant/size/protocol'}++;
		});
	foreach my $k (keys %$c)
	{
		set_conf($node, "fpsketch.$k", "'$c->{$k}'");
	}
	$node->start;
	wait_ready($node);
	my $s = stats($node);
	is( "$s->{protocol}|$s->{variant}|$s->{sketch_rows}",
		($c->{protocol} // 'tictoc') . "|$c->{variant}|$c->{sketch_rows}",
		"$label: the stats view shows the new configuration (sketch $s->{sketch_bytes} bytes)");
	$violations += tpcc_counts_not_lost($node, $before, $label);
	check_all($check_label, $check_from);
}
note "the build has no STO protocol: (e) ran TicToc only" unless grep { $_ eq 'sto' } @protocols;

$node->stop;

note "faults injected:";
note "  $faults{$_} x $_" foreach sort keys %faults;
note "violations found: $violations";
note sprintf("002_crash_recovery.pl ran %.0f s", time - $t_start);
is($violations, 0, 'zero violations over all checks');

done_testing();
