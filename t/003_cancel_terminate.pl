# 003_cancel_terminate.pl: cancel and terminate sessions that wait on a
# locked key, sessions in commit validation, and random sessions of a
# high-contention load.  No pin or lock bit may survive, others proceed.
#
#  (a) deterministic: a committer is held between PRE_COMMIT and COMMIT,
#      with its lock bits set, by a synchronous-replication wait for a
#      standby that never comes (synchronous_commit = on in that session
#      only).  Readers of its rows spin-wait on the lock bits; they are
#      ended by pg_cancel_backend, statement_timeout, fpsketch.
#      lock_wait_timeout and pg_terminate_backend; a writer blocked on the
#      row lock is cancelled; an idle transaction is ended by
#      idle_in_transaction_session_timeout; other sessions commit meanwhile.
#      Then the held committer itself is released by pg_cancel_backend and
#      pg_terminate_backend (statement_timeout cannot reach a commit:
#      PostgreSQL disables it before committing; the test shows that too).
#  (b) sessions in validation: a transaction that read 100,000 rows (its
#      validation takes milliseconds) gets pg_cancel_backend or
#      pg_terminate_backend from a server-side function that watches for its
#      COMMIT to start; the function also notes whether its pins were still
#      all held right after the signal (so the signal came before the
#      release in XACT_EVENT_COMMIT).  What the client saw must agree with
#      what committed.  statement_timeout = 1ms does not interrupt such a
#      COMMIT; idle_in_transaction_session_timeout ends such a transaction
#      before its COMMIT.
#  (c) 100 random pg_cancel_backend / pg_terminate_backend on the sessions
#      of a high-contention transfer load on 20 rows (whose readers
#      spin-wait on committers' lock bits), some of which also run with
#      statement_timeout = 15ms or idle_in_transaction_session_timeout =
#      30ms;
#  (d) an ERROR after fpsketch's PRE_COMMIT succeeded (SSI cancels a
#      SERIALIZABLE pivot in its commit attempt, after the transaction
#      callbacks): the abort releases the lock bits taken in validation.
#  (c) and (d) run again under STO when the build has it.
#
# Afterwards: nothing pinned and no lock bit leaked once idle, the total
# balance is unchanged, amcheck is clean, the log has no unexpected error,
# and a fresh load commits.

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

my $node = fps_node(
	'fps_cancel',
	conf => join("\n",
		"wal_level = replica",
		"max_wal_senders = 2",
		"synchronous_standby_names = 'fps_nobody'",
		"synchronous_commit = local",
		"fpsketch.max_entries = 262144"));
my $log_from = log_offset($node);

$node->safe_psql(
	'postgres', q{
	CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL) USING fpsketch;
	INSERT INTO acct SELECT g, 100 FROM generate_series(1, 1000) g;
	CREATE TABLE big (id int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	INSERT INTO big SELECT g, g FROM generate_series(1, 100000) g;
	CREATE TABLE marks (round int PRIMARY KEY) USING fpsketch;
	VACUUM ANALYZE;
	-- (b): once backend target has started its COMMIT, signal it at once;
	-- report whether it was still in COMMIT and still held all its pins
	CREATE FUNCTION fps_signal_at_commit(target int, how text, npins bigint)
	RETURNS text LANGUAGE plpgsql AS $$
	DECLARE st text; q text; p bigint; t0 timestamptz := clock_timestamp();
	BEGIN
		LOOP
			PERFORM pg_stat_clear_snapshot();
			SELECT state, query INTO st, q FROM pg_stat_activity WHERE pid = target;
			IF NOT FOUND THEN RETURN 'gone'; END IF;
			EXIT WHEN st = 'active' AND q ~* '^\s*commit';
			-- a COMMIT that ended between two polls: the target was idle in
			-- its transaction until then, and its query may already be
			-- psql's empty statement after the COMMIT
			IF st = 'idle' THEN RETURN 'ended before the signal'; END IF;
			IF clock_timestamp() - t0 > interval '60 s' THEN RETURN 'timeout'; END IF;
		END LOOP;
		IF how = 'cancel' THEN PERFORM pg_cancel_backend(target);
		ELSE PERFORM pg_terminate_backend(target); END IF;
		SELECT pinned INTO p FROM fpsketch_stats;
		PERFORM pg_stat_clear_snapshot();
		SELECT state, query INTO st, q FROM pg_stat_activity WHERE pid = target;
		RETURN CASE WHEN st = 'active' AND q ~* '^\s*commit' AND p >= npins
					THEN 'in commit, pins held' ELSE 'later' END;
	END $$;});

sub total
{
	return $node->safe_psql('postgres', 'SELECT sum(bal) || \'/\' || count(*) FROM acct');
}

# Wait until the stats view shows $n pins; returns the pins seen.
sub pins_back_to
{
	my ($n) = @_;
	my $t = time;
	my $p;
	while (1)
	{
		$p = stats($node)->{pinned};
		last if $p == $n || time - $t > 20;
		usleep(20_000);
	}
	return $p;
}

# ---------------------------------------------------------------------------
# (a) waiting on a locked key
# ---------------------------------------------------------------------------

# A session whose COMMIT of "move 1 from $from to $to" is held after
# PRE_COMMIT (lock bits set) by a synchronous-replication wait.
sub held_committer
{
	my ($from, $to, %p) = @_;
	my $h = FpsTest::Session->new($node, app => 'fps_holder');
	$h->query($p{setup}) if $p{setup};
	my ($out, $err) = $h->query(
		qq{BEGIN;
		SET LOCAL synchronous_commit = on;
		UPDATE acct SET bal = bal - 1 WHERE id = $from;
		UPDATE acct SET bal = bal + 1 WHERE id = $to;});
	die "holder: $err" if $err;
	$h->send('COMMIT;');
	return $h if $p{nowait};
	$node->poll_query_until('postgres',
		'SELECT wait_event FROM pg_stat_activity WHERE pid = ' . $h->pid, 'SyncRep')
	  or die "holder did not reach the SyncRep wait";
	return $h;
}

# Send $sql on $s and check that it is still waiting 300 ms later.
sub waits
{
	my ($s, $sql, $label) = @_;
	$s->send($sql);
	usleep(300_000);
	ok(!$s->done, "$label: waits for the held committer");
	return;
}

{
	my $h = held_committer(1, 2);
	my $held = stats($node)->{pinned};
	ok($held >= 2, "(a) the held committer pins its keys ($held pinned)");

	# pg_cancel_backend of a reader spinning on the lock bit
	my $w = FpsTest::Session->new($node, app => 'fps_waiter');
	waits($w, 'SELECT bal FROM acct WHERE id = 1;', '(a) reader');
	$node->safe_psql('postgres', 'SELECT pg_cancel_backend(' . $w->pid . ')');
	$faults{'pg_cancel_backend of a reader waiting on a locked key'}++;
	my ($out, $err) = $w->wait;
	like($err, qr/ERROR:  57014: canceling statement due to user request/,
		'(a) pg_cancel_backend ends the wait with 57014');
	is($w->query('SELECT bal FROM acct WHERE id = 3;'), '100',
		'(a) ... and the session goes on');
	is(pins_back_to($held), $held, '(a) ... and its pin is gone');

	# statement_timeout
	my $t = time;
	($out, $err) = $w->query(
		"SET statement_timeout = '300ms'; SELECT bal FROM acct WHERE id = 2; RESET statement_timeout;");
	$faults{'statement_timeout of a reader waiting on a locked key'}++;
	like($err, qr/ERROR:  57014: canceling statement due to statement timeout/,
		'(a) statement_timeout ends the wait with 57014');
	ok(time - $t < 5, '(a) ... after the statement timeout, not the lock wait timeout');
	is(pins_back_to($held), $held, '(a) ... and its pin is gone');

	# fpsketch.lock_wait_timeout
	($out, $err) = $w->query(
		"SET fpsketch.lock_wait_timeout = '200ms'; SELECT bal FROM acct WHERE id = 1; RESET fpsketch.lock_wait_timeout;");
	$faults{'fpsketch.lock_wait_timeout of a reader waiting on a locked key'}++;
	like($err, qr/ERROR:  40001: .*\nDETAIL:  Waited longer than fpsketch\.lock_wait_timeout/,
		'(a) fpsketch.lock_wait_timeout ends the wait with 40001');
	is(pins_back_to($held), $held, '(a) ... and its pin is gone');

	# pg_terminate_backend of a reader that has pinned other rows first
	my $w2 = FpsTest::Session->new($node, app => 'fps_waiter');
	$w2->query('BEGIN; SELECT bal FROM acct WHERE id = 10; SELECT bal FROM acct WHERE id = 11; SELECT bal FROM acct WHERE id = 12;');
	ok(stats($node)->{pinned} > $held, '(a) a transaction pinned three more keys');
	waits($w2, 'SELECT bal FROM acct WHERE id = 2;', '(a) its read of a locked row');
	$node->safe_psql('postgres', 'SELECT pg_terminate_backend(' . $w2->pid . ')');
	$faults{'pg_terminate_backend of a reader waiting on a locked key'}++;
	($out, $err) = $w2->wait;
	like($err, qr/FATAL:  57P01: terminating connection due to administrator command/,
		'(a) pg_terminate_backend ends the waiting session');
	ok(!$w2->alive, '(a) ... its connection is closed');
	is(pins_back_to($held), $held, '(a) ... and all four of its pins are gone');

	# a writer blocked on the heap row lock
	waits($w, 'UPDATE acct SET bal = bal WHERE id = 1;', '(a) writer');
	$node->safe_psql('postgres', 'SELECT pg_cancel_backend(' . $w->pid . ')');
	$faults{'pg_cancel_backend of a writer waiting for the row lock of a held committer'}++;
	($out, $err) = $w->wait;
	like($err, qr/57014/, '(a) pg_cancel_backend ends the writer\'s wait');
	is(pins_back_to($held), $held, '(a) ... and its pins are gone');

	# idle_in_transaction_session_timeout of a transaction holding pins
	my $w3 = FpsTest::Session->new($node, app => 'fps_idler');
	$w3->query("SET idle_in_transaction_session_timeout = '300ms'; BEGIN; SELECT bal FROM acct WHERE id = 20;");
	ok(stats($node)->{pinned} > $held, '(a) an idle transaction holds a pin');
	usleep(1_000_000);
	$faults{'idle_in_transaction_session_timeout of a transaction holding pins'}++;
	# psql learns of it at its next command
	($out, $err) = $w3->query('SELECT 1;');
	like($err, qr/FATAL:  25P03: terminating connection due to idle-in-transaction timeout/,
		'(a) idle_in_transaction_session_timeout ends the idle transaction');
	ok(!$w3->alive, '(a) ... and its session');
	is(pins_back_to($held), $held, '(a) ... and its pin is gone');

	# others proceed: transfers among the other rows commit meanwhile
	my $script = PostgreSQL::Test::Utils::tempdir() . '/transfer_other.sql';
	PostgreSQL::Test::Utils::append_to_file($script, q{
\set a random(100, 1000)
\set b random(100, 1000)
BEGIN;
SELECT bal FROM acct WHERE id = :a;
UPDATE acct SET bal = bal - 1 WHERE id = :a;
UPDATE acct SET bal = bal + 1 WHERE id = :b;
COMMIT;
});
	my $r = FpsTest::Load->start($node, clients => 3, duration => 2, files => [$script])->finish;
	ok($r->{rc} == 0 && $r->{committed} > 0,
		"(a) meanwhile other sessions commit ($r->{committed} transfers)")
	  or diag $r->{err};

	# a reader waiting when the held committer is released by pg_cancel_backend
	waits($w, 'SELECT bal FROM acct WHERE id = 1;', '(a) another reader');
	$node->safe_psql('postgres', 'SELECT pg_cancel_backend(' . $h->pid . ')');
	$faults{'pg_cancel_backend of a committer holding lock bits (SyncRep wait)'}++;
	($out, $err) = $h->wait;
	like($err, qr/WARNING:  01000: canceling wait for synchronous replication due to user request/,
		'(a) pg_cancel_backend ends the held commit\'s wait ...');
	ok($h->alive && $err !~ /ERROR/, '(a) ... the COMMIT completes');
	($out, $err) = $w->wait;
	ok(($out eq '' && $err =~ /40001/) || $out eq '99' || $out eq '100',
		"(a) the waiting reader then gets an answer or a 40001 (got '$out' $err)");
	is($node->safe_psql('postgres', 'SELECT bal FROM acct WHERE id = 1'), '99',
		'(a) the held transaction committed');
	my $s = wait_idle($node);
	is("$s->{pinned}|$s->{lock_leaks}", '0|0', '(a) idle: nothing pinned, no lock bit leaked');
	$h->close;

	# pg_terminate_backend of a held committer
	$h = held_committer(3, 4);
	waits($w, 'SELECT bal FROM acct WHERE id = 4;', '(a) a reader of a second held committer');
	$node->safe_psql('postgres', 'SELECT pg_terminate_backend(' . $h->pid . ')');
	$faults{'pg_terminate_backend of a committer holding lock bits (SyncRep wait)'}++;
	($out, $err) = $h->wait;
	ok(!$h->alive, '(a) pg_terminate_backend ends the held committer\'s session');
	($out, $err) = $w->wait;
	ok($err eq '' || $err =~ /40001/, "(a) the waiting reader goes on ($out $err)");
	is($node->safe_psql('postgres', 'SELECT bal FROM acct WHERE id = 4'), '101',
		'(a) the terminated transaction had committed locally: its write is there');
	$s = wait_idle($node);
	is("$s->{pinned}|$s->{lock_leaks}", '0|0', '(a) idle: nothing pinned, no lock bit leaked');

	# statement_timeout does not reach a commit: PostgreSQL disables it in
	# finish_xact_command() before CommitTransactionCommand(), so neither
	# validation nor the wait after it can time out; the committer stays
	# held until pg_cancel_backend
	$h = held_committer(5, 6, setup => "SET statement_timeout = '200ms';");
	usleep(700_000);
	ok(!$h->done, '(a) statement_timeout does not end a held COMMIT (PostgreSQL disables it before committing)');
	$node->safe_psql('postgres', 'SELECT pg_cancel_backend(' . $h->pid . ')');
	$faults{'pg_cancel_backend of a committer holding lock bits (SyncRep wait)'}++;
	($out, $err) = $h->wait;
	is($node->safe_psql('postgres', 'SELECT bal FROM acct WHERE id = 6'), '101',
		'(a) ... pg_cancel_backend then ends the wait, and it committed');
	$s = wait_idle($node);
	is("$s->{pinned}|$s->{lock_leaks}", '0|0', '(a) idle: nothing pinned, no lock bit leaked');
	$h->close;
	$w->close;
	is(total(), '100000/1000', '(a) the total balance is unchanged');
}

# ---------------------------------------------------------------------------
# (b) sessions in validation
# ---------------------------------------------------------------------------
my %b_outcome;
my $in_commit = 0;
for my $round (1 .. 10)
{
	my $how = $round % 2 ? 'cancel' : 'terminate';
	my $v = FpsTest::Session->new($node, app => 'fps_validator');
	my ($out, $err) = $v->query(
		qq{BEGIN;
		SET LOCAL fpsketch.escalation_threshold = 1000000;
		SET LOCAL fpsketch.max_pins_per_transaction = 200000;
		SET LOCAL fpsketch.max_pool_pins_per_role = 200000;
		SET LOCAL enable_seqscan = off;
		SET LOCAL enable_bitmapscan = off;
		SELECT count(*) FROM big WHERE id BETWEEN 1 AND 100000;
		UPDATE acct SET bal = bal - 1 WHERE id = 7;
		UPDATE acct SET bal = bal + 1 WHERE id = 8;
		INSERT INTO marks VALUES ($round);});
	die "validator: $err" unless $out eq '100000';
	my $k = FpsTest::Session->new($node, app => 'fps_signaller');
	$k->send("SELECT fps_signal_at_commit(" . $v->pid . ", '$how', 100000);");
	$node->poll_query_until('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'fps_signaller' AND state = 'active'}, '1');
	$v->send('COMMIT;');
	my $where = $k->wait;
	($out, $err) = $v->wait;
	my $alive = $v->alive;
	$faults{"pg_${how}_backend at the start of COMMIT (validation of 100,000 reads)"}++;
	$in_commit++ if $where eq 'in commit, pins held';
	my $committed = $node->safe_psql('postgres', "SELECT count(*) FROM marks WHERE round = $round");
	my $client = $err =~ /ERROR/ ? 'error' : !$alive ? 'connection lost' : 'ok';
	$b_outcome{"$how: client $client, " . ($committed ? 'committed' : 'rolled back')}++;
	# what the client was told must agree with what happened
	my $agree = $client eq 'ok' ? $committed : $client eq 'error' ? !$committed : 1;
	ok($agree, "(b) $how #$round ($where): client $client, transaction "
		  . ($committed ? 'committed' : 'rolled back'))
	  or diag $err;
	$violations++ unless $agree;
	my $s = wait_idle($node);
	is("$s->{pinned}|$s->{lock_leaks}", '0|0', "(b) $how #$round: idle: nothing pinned, no lock bit leaked");
	$violations += ($s->{pinned} != 0) + ($s->{lock_leaks} != 0);
	$v->close;
	$k->close;
}
# statement_timeout cannot fire in validation (it is disabled before the
# commit), and idle_in_transaction_session_timeout fires before it
foreach my $case ('statement_timeout', 'idle_in_transaction_session_timeout')
{
	my $round = $case eq 'statement_timeout' ? 11 : 12;
	my $v = FpsTest::Session->new($node, app => 'fps_validator');
	my ($out, $err) = $v->query(
		qq{BEGIN;
		SET LOCAL fpsketch.escalation_threshold = 1000000;
		SET LOCAL fpsketch.max_pins_per_transaction = 200000;
		SET LOCAL fpsketch.max_pool_pins_per_role = 200000;
		SET LOCAL enable_seqscan = off;
		SET LOCAL enable_bitmapscan = off;
		SELECT count(*) FROM big WHERE id BETWEEN 1 AND 100000;
		UPDATE acct SET bal = bal - 1 WHERE id = 7;
		UPDATE acct SET bal = bal + 1 WHERE id = 8;
		INSERT INTO marks VALUES ($round);});
	die "validator: $err" unless $out eq '100000';
	ok(stats($node)->{pinned} >= 100000, "(b) $case: a transaction holds 100,000 pins");
	if ($case eq 'statement_timeout')
	{
		($out, $err) = $v->query("SET LOCAL statement_timeout = '1ms'; COMMIT;");
		$faults{'statement_timeout (1 ms) of a COMMIT validating 100,000 reads'}++;
		is($err, '', "(b) $case = 1ms does not interrupt a COMMIT validating 100,000 reads");
		is($node->safe_psql('postgres', "SELECT count(*) FROM marks WHERE round = $round"), '1',
			"(b) $case: ... which commits");
	}
	else
	{
		$v->query("SET LOCAL idle_in_transaction_session_timeout = '300ms';");
		usleep(1_000_000);
		($out, $err) = $v->query('COMMIT;');
		$faults{'idle_in_transaction_session_timeout of a transaction holding 100,000 pins'}++;
		like($err, qr/FATAL:  25P03/, "(b) $case ends a transaction holding 100,000 pins");
		is($node->safe_psql('postgres', "SELECT count(*) FROM marks WHERE round = $round"), '0',
			"(b) $case: ... which rolled back");
	}
	my $s = wait_idle($node);
	is("$s->{pinned}|$s->{lock_leaks}", '0|0', "(b) $case: idle: nothing pinned, no lock bit leaked");
	$violations += ($s->{pinned} != 0) + ($s->{lock_leaks} != 0);
	$v->close;
}

note "(b) outcomes: " . join('; ', map { "$b_outcome{$_} x $_" } sort keys %b_outcome);
note "(b) signals that arrived while COMMIT ran with all 100,000 pins still held: $in_commit of 10";
ok($in_commit >= 1, "(b) at least one signal arrived during validation ($in_commit of 10)");
is(total(), '100000/1000', '(b) the total balance is unchanged');

# ---------------------------------------------------------------------------
# (c) random faults under a high-contention load
# ---------------------------------------------------------------------------
my $dir = PostgreSQL::Test::Utils::tempdir();
PostgreSQL::Test::Utils::append_to_file("$dir/hot.sql", q{
\set a random(1, 20)
\set b random(1, 20)
BEGIN;
SELECT bal FROM acct WHERE id = :a;
SELECT bal FROM acct WHERE id = :b;
UPDATE acct SET bal = bal - 1 WHERE id = :a;
UPDATE acct SET bal = bal + 1 WHERE id = :b;
COMMIT;
});
PostgreSQL::Test::Utils::append_to_file("$dir/idle.sql", q{
\set a random(1, 20)
\set b random(1, 20)
\set nap random(0, 40)
BEGIN;
SELECT sum(bal) FROM acct WHERE id IN (:a, :b);
\sleep :nap ms
UPDATE acct SET bal = bal - 1 WHERE id = :a;
UPDATE acct SET bal = bal + 1 WHERE id = :b;
COMMIT;
});
# with statement_timeout = 15 ms: a third of these wait too long
PostgreSQL::Test::Utils::append_to_file("$dir/slow.sql", q{
\set a random(1, 20)
\set b random(1, 20)
\set nap random(0, 2)
BEGIN;
SELECT bal FROM acct WHERE id = :a;
SELECT pg_sleep(:nap * 0.01);
UPDATE acct SET bal = bal - 1 WHERE id = :a;
UPDATE acct SET bal = bal + 1 WHERE id = :b;
COMMIT;
});
my @kinds = (
	{ file => "$dir/hot.sql" },
	{ file => "$dir/hot.sql" },
	{ file => "$dir/hot.sql" },
	{ file => "$dir/slow.sql", options => '-c statement_timeout=15ms' },
	{ file => "$dir/idle.sql", options => '-c idle_in_transaction_session_timeout=30ms' });
my $expected = qr/canceling statement due to (?:user request|statement timeout)|terminating connection due to (?:administrator command|idle-in-transaction timeout)|perhaps the backend died|server closed the connection unexpectedly|SQL command send failed|aborted while receiving the transaction status/;

sub start_kind
{
	my ($k) = @_;
	# -M simple: a cancel that hits pgbench's own PREPARE would otherwise
	# leave it executing a statement it never prepared (a pgbench artifact)
	return FpsTest::Load->start($node, clients => 1, duration => 4, max_tries => 20,
		mode => 'simple', files => [ $k->{file} ], options => $k->{options});
}

# 100 signals to random sessions of the load; then the checks.
sub random_faults
{
	my ($protocol) = @_;
	my $label = "(c, $protocol)";
	my %seen;    # client-side messages by kind
	my @unexpected;
	my $st0 = stats($node);
	my $log0 = log_offset($node);
	my ($signals, $signals_in_commit) = (0, 0);
	my $reap = sub {
		my ($l) = @_;
		my $r = $l->finish(expected => $expected);
		push @unexpected, @{ $r->{unexpected} };
		foreach (@{ $r->{aborted} })
		{
			$seen{'canceled: user request'}++ if /due to user request/;
			$seen{'canceled: statement timeout'}++ if /statement timeout/;
			$seen{'terminated: administrator command'}++ if /administrator command/;
			$seen{'terminated: idle-in-transaction timeout'}++ if /idle-in-transaction timeout/;
		}
	};

	my @pool = map { start_kind($_) } @kinds;
	my $t_c = time;
	# one session sends the signals: a random pgbench backend inside a
	# transaction, preferring (half the time) one that is running COMMIT
	my $injector = FpsTest::Session->new($node, app => 'fps_injector');
	while ($signals < 100 && time - $t_c < 60)
	{
		usleep(int(20_000 + rand(30_000)));
		my $how = $signals % 2 ? 'terminate' : 'cancel';
		my $hit = $injector->query(
			qq{SELECT pid, query ~* '^commit', pg_${how}_backend(pid) FROM (
				SELECT pid, query FROM pg_stat_activity
				 WHERE application_name = 'pgbench' AND backend_type = 'client backend'
				   AND state IN ('active', 'idle in transaction')
				 ORDER BY (state = 'active' AND query ~* '^commit' AND random() < 0.5) DESC, random()
				 LIMIT 1) b;});
		if ($hit =~ /^\d+\|([tf])\|t$/)
		{
			$signals++;
			$signals_in_commit++ if $1 eq 't';
			$faults{"pg_${how}_backend of a random session of a high-contention load ($protocol)"}++;
		}
		for my $i (0 .. $#pool)
		{
			next if $pool[$i]->running;
			$reap->($pool[$i]);
			$pool[$i] = start_kind($kinds[$i]);
		}
	}
	$reap->($_) foreach @pool;
	$injector->close;
	my $st1 = stats($node);
	my $lock_waits = $st1->{lock_waits} - $st0->{lock_waits};
	my $writer_waits = ($st1->{sto_writer_waits} // 0) - ($st0->{sto_writer_waits} // 0);
	$faults{"statement_timeout (15 ms) in a high-contention load ($protocol, client-side count)"} =
	  $seen{'canceled: statement timeout'} // 0;
	# Counted from the server log: a client that is sleeping when the
	# server ends its session may only see "server closed the connection
	# unexpectedly" on its next send, never the FATAL text.
	my $idle_timeouts = () = slurp_file($node->logfile, $log0) =~
	  /terminating connection due to idle-in-transaction timeout/g;
	$faults{"idle_in_transaction_session_timeout (30 ms) in a high-contention load ($protocol, server log count)"} =
	  $idle_timeouts;
	note "$label $signals signals ($signals_in_commit to sessions running COMMIT), $lock_waits lock waits, "
	  . "$writer_waits STO waits for an older writer";
	note "$label clients saw: " . join('; ', map { "$seen{$_} x $_" } sort keys %seen);
	is($signals, 100, "$label 100 cancel/terminate signals sent");
	ok($lock_waits > 0, "$label sessions waited on other transactions' keys ($lock_waits waits)")
	  if $protocol eq 'tictoc';
	is(join("\n", @unexpected), '', "$label the clients saw no error but 40001 and the injected ones");
	$violations += scalar @unexpected;
	ok(($seen{'canceled: statement timeout'} // 0) > 0, "$label statement_timeout fired");
	ok($idle_timeouts > 0, "$label idle_in_transaction_session_timeout fired ($idle_timeouts times)");

	my $s = wait_idle($node);
	is("$s->{pinned}|$s->{lock_leaks}", '0|0', "$label idle: nothing pinned, no lock bit leaked");
	$violations += ($s->{pinned} != 0) + ($s->{lock_leaks} != 0);
	is(total(), '100000/1000', "$label the total balance is unchanged");
	$violations++ unless total() eq '100000/1000';
	my ($n, @errors) = amcheck_all($node);
	ok(!@errors, "$label bt_index_check(heapallindexed) on all $n indexes") or diag join("\n", @errors);
	$violations += scalar @errors;
	my $r = FpsTest::Load->start($node, clients => 4, duration => 2, files => ["$dir/hot.sql"])->finish;
	ok($r->{rc} == 0 && $r->{committed} > 0 && !@{ $r->{aborted} },
		"$label a fresh load commits ($r->{committed} transfers)")
	  or diag $r->{err};
	$s = wait_idle($node);
	is("$s->{pinned}|$s->{lock_leaks}", '0|0', "$label after it: nothing pinned, no lock bit leaked");
	return;
}

# ---------------------------------------------------------------------------
# (d) an ERROR after fpsketch's PRE_COMMIT succeeded: SERIALIZABLE sessions
#     where PostgreSQL's SSI cancels a pivot during its commit attempt
#     (PreCommit_CheckForSerializationFailure runs after the transaction
#     callbacks, so fpsketch has validated and taken its lock bits)
# ---------------------------------------------------------------------------
sub error_after_pre_commit
{
	my ($protocol) = @_;
	my $label = "(d, $protocol)";
	$node->safe_psql('postgres', q{
		CREATE TABLE IF NOT EXISTS ssi_h (id int PRIMARY KEY, v int);
		INSERT INTO ssi_h VALUES (1, 0), (2, 0) ON CONFLICT (id) DO UPDATE SET v = 0;});
	my $bal = $node->safe_psql('postgres', 'SELECT bal FROM acct WHERE id = 9');
	my $t1 = FpsTest::Session->new($node, app => 'fps_ssi');
	my $t2 = FpsTest::Session->new($node, app => 'fps_ssi');
	$t1->query(q{BEGIN ISOLATION LEVEL SERIALIZABLE;
		SELECT v FROM ssi_h WHERE id = 1;
		UPDATE acct SET bal = bal + 1000 WHERE id = 9;});
	$t2->query(q{BEGIN ISOLATION LEVEL SERIALIZABLE;
		SELECT v FROM ssi_h WHERE id = 2;
		UPDATE ssi_h SET v = 1 WHERE id = 1;});
	$t1->query('UPDATE ssi_h SET v = 1 WHERE id = 2;');
	my ($out, $err) = $t2->query('COMMIT;');
	is($err, '', "$label the first SERIALIZABLE transaction commits");
	ok(stats($node)->{pinned} > 0, "$label the second holds fpsketch pins");
	($out, $err) = $t1->query('COMMIT;');
	$faults{"ERROR after fpsketch's PRE_COMMIT (SSI pivot at commit, $protocol)"}++;
	like($err, qr/ERROR:  40001: could not serialize access due to read\/write dependencies among transactions\nDETAIL:  Reason code: Canceled on identification as a pivot, during commit attempt/,
		"$label its COMMIT fails in SSI's check, after fpsketch's PRE_COMMIT");
	my $s = wait_idle($node);
	is("$s->{pinned}|$s->{lock_leaks}", '0|0', "$label nothing pinned, no lock bit leaked");
	$violations += ($s->{pinned} != 0) + ($s->{lock_leaks} != 0);
	my $t = time;
	is($node->safe_psql('postgres', 'SELECT bal FROM acct WHERE id = 9'), $bal,
		"$label the aborted write is not there");
	ok(time - $t < 2, "$label and its row is read without waiting for a lock bit");
	($out, $err) = $t1->query('UPDATE acct SET bal = bal + 0 WHERE id = 9;');
	is($err, '', "$label the row can be written again");
	$t1->close;
	$t2->close;
	return;
}

random_faults('tictoc');
error_after_pre_commit('tictoc');

if (grep { $_ eq 'sto' } protocols($node))
{
	$node->stop;
	$node->append_conf('postgresql.conf', "fpsketch.protocol = 'sto'");
	$node->start;
	is(stats($node)->{protocol}, 'sto', 'restarted with fpsketch.protocol = sto');
	random_faults('sto');
	error_after_pre_commit('sto');
}
else
{
	note 'this build has no STO protocol: (c) and (d) ran with TicToc only';
}

my @bad = log_problems($node, $log_from);
is(join("\n", @bad), '', 'no PANIC, crash or unexpected error in the server log');
$violations += scalar @bad;

$node->stop;
note "faults injected:";
note "  $faults{$_} x $_" foreach sort keys %faults;
note "violations found: $violations";
note sprintf("003_cancel_terminate.pl ran %.0f s", time - $t_start);
is($violations, 0, 'zero violations over all checks');
done_testing();
