# FpsTest.pm: helpers shared by fpsketch's fault-injection TAP tests.
#
#   fps_node()          an initdb'd, started node with fpsketch preloaded
#   FpsTest::Session    a psql session driven line by line (send now, wait
#                       later), which survives its own errors and reports
#                       when its connection is gone
#   FpsTest::Load       pgbench in the background, and its parsed result
#   tpcc_*()            the TPC-C-like benchmark of bench/tpcc: load, run,
#                       consistency conditions, row counts
#   amcheck_all()       bt_index_check(heapallindexed => true) on every
#                       btree index of a database
#   wait_idle()         the stats view once nothing is pinned
#   log_problems()      server log lines no test should produce
#
# Everything here runs as the operating-system user that owns the node, so
# kill() on a backend pid works.

package FpsTest;

use strict;
use warnings;

use Exporter 'import';
use FindBin;
use IPC::Run;
use Time::HiRes qw(usleep time);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(
  fps_node wait_ready wait_idle stats protocols
  log_offset log_problems
  amcheck_all
  tpcc_dir tpcc_setup tpcc_load tpcc_check tpcc_counts tpcc_counts_not_lost
  pick_backend pick_busy_backend gdb_usable set_conf
);

# Connection-loss messages a client may print when its server process is
# killed, the server restarts, or the session is terminated on purpose.
our $CONNECTION_LOST = qr/
	terminating\ connection\ because\ of\ crash\ of\ another\ server\ process
  | server\ closed\ the\ connection\ unexpectedly
  | perhaps\ the\ backend\ died
  | terminating\ connection\ due\ to\ administrator\ command
  | terminating\ connection\ due\ to\ immediate\ shutdown\ command
  | terminating\ connection\ due\ to\ idle-in-transaction\ timeout
  | connection\ to\ server\ .*\ failed
  | the\ database\ system\ is\ (?:in\ recovery\ mode|starting\ up|shutting\ down|not\ yet\ accepting\ connections)
  | could\ not\ send\ data\ to\ server
  | no\ connection\ to\ the\ server
  | could\ not\ receive\ data\ from\ server
  | aborted\ while\ establishing\ connection
  | aborted\ while\ receiving\ the\ transaction\ status
  | SQL\ command\ send\ failed
  | could\ not\ create\ connection\ for\ client
  | FATAL:\s+57P0[123]
  /x;

# ---------------------------------------------------------------------------
# nodes
# ---------------------------------------------------------------------------

# A new node with fpsketch in shared_preload_libraries, started, with the
# extension (and amcheck) created in database postgres.  %p:
#   conf      extra postgresql.conf lines
#   preload   0: leave shared_preload_libraries alone (and create nothing)
sub fps_node
{
	my ($name, %p) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	my $conf = join("\n",
		# Cluster.pm sets restart_after_crash = off; crash tests need it on
		"restart_after_crash = on",
		"log_statement = none",
		# SQLSTATEs in the log, for log_problems()
		"log_error_verbosity = verbose",
		"max_connections = 40",
		"shared_buffers = 64MB",
		"lock_timeout = 0",
		"lc_messages = 'C'");
	$conf .= "\nshared_preload_libraries = 'fpsketch'"
	  unless defined $p{preload} && !$p{preload};
	$conf .= "\n$p{conf}" if defined $p{conf};
	$node->append_conf('postgresql.conf', $conf);
	$node->start;
	unless (defined $p{preload} && !$p{preload})
	{
		$node->safe_psql('postgres',
			'CREATE EXTENSION fpsketch; CREATE EXTENSION amcheck;');
	}
	return $node;
}

# Set a postgresql.conf parameter, replacing any earlier line for it.
sub set_conf
{
	my ($node, $name, $value) = @_;
	$node->adjust_conf('postgresql.conf', $name, undef);
	$node->append_conf('postgresql.conf', "$name = $value");
	return;
}

# Wait until the server accepts connections and is out of recovery (after
# a crash restart or a start).  Returns the seconds waited.
sub wait_ready
{
	my ($node, $timeout) = @_;
	$timeout //= $PostgreSQL::Test::Utils::timeout_default;
	my $t0 = time;
	while (time - $t0 < $timeout)
	{
		my ($ret, $out, $err);
		$ret = $node->psql('postgres', 'SELECT NOT pg_is_in_recovery()',
			stdout => \$out, stderr => \$err);
		return time - $t0 if $ret == 0 && defined $out && $out eq 't';
		usleep(100_000);
	}
	die "server did not become ready in $timeout s";
}

# The stats view as a hash.
sub stats
{
	my ($node, $db) = @_;
	$db //= 'postgres';
	my $out = $node->safe_psql($db,
		q{SELECT row_to_json(s) FROM fpsketch_stats s});
	my %h;
	while ($out =~ /"(\w+)":("[^"]*"|[-\d.]+|null)/g)
	{
		my ($k, $v) = ($1, $2);
		$v =~ s/^"|"$//g;
		$h{$k} = $v;
	}
	return \%h;
}

# Wait until nothing is pinned (every session idle) and return the stats
# view; {pinned} stays non-zero if the wait timed out.
sub wait_idle
{
	my ($node, $db, $timeout) = @_;
	$timeout //= 30;
	my $t0 = time;
	my $s;
	while (1)
	{
		$s = stats($node, $db);
		last if $s->{pinned} == 0 || time - $t0 > $timeout;
		usleep(50_000);
	}
	return $s;
}

# The protocols this build supports (tictoc, sto, ...), from pg_settings.
sub protocols
{
	my ($node) = @_;
	my $v = $node->safe_psql('postgres',
		q{SELECT array_to_string(enumvals, ',') FROM pg_settings WHERE name = 'fpsketch.protocol'});
	return grep { $_ ne 'off' } split /,/, $v;
}

# ---------------------------------------------------------------------------
# the server log
# ---------------------------------------------------------------------------

sub log_offset { my ($node) = @_; return -s $node->logfile; }

# Lines of the server log after $offset that show a problem:
#   - any PANIC, any "TRAP:" (assertion), any "stuck spinlock"
#   - a server process that died by a signal or exit code that the test did
#     not cause (%p{killed}: pid => 1 for the pids the test SIGKILLed)
#   - an ERROR or FATAL whose SQLSTATE is not in @{$p{allowed}} and whose
#     line does not match $p{ignore} (default:
#     serialization failure 40001, deadlock 40P01, query canceled 57014,
#     admin shutdown 57P01, crash shutdown 57P02, cannot connect now 57P03,
#     idle-in-transaction timeout 25P03)
sub log_problems
{
	my ($node, $offset, %p) = @_;
	my %allowed = map { $_ => 1 } @{ $p{allowed}
		  // [qw(40001 40P01 57014 57P01 57P02 57P03 25P03)] };
	my %killed = %{ $p{killed} // {} };
	my $ignore = $p{ignore};
	my $log = slurp_file($node->logfile, $offset);
	my @bad;
	foreach my $line (split /\n/, $log)
	{
		if ($line =~ /PANIC|TRAP:|stuck spinlock/)
		{
			push @bad, $line;
		}
		elsif ($line =~ /server process \(PID (\d+)\) (?:was terminated by|exited with)/)
		{
			push @bad, $line unless $killed{$1};
		}
		elsif ($line =~ /\b(?:ERROR|FATAL):\s+([0-9A-Z]{5}):/)
		{
			push @bad, $line unless $allowed{$1} || (defined $ignore && $line =~ $ignore);
		}
	}
	return @bad;
}

# ---------------------------------------------------------------------------
# amcheck
# ---------------------------------------------------------------------------

# bt_index_check(index, heapallindexed => true) on every btree index of $db
# (catalogs included); returns (number of indexes checked, list of errors).
sub amcheck_all
{
	my ($node, $db) = @_;
	$db //= 'postgres';
	my ($out, $err);
	$node->psql(
		$db, q{
		SET client_min_messages = warning;
		DO $$
		DECLARE r record; n int := 0;
		BEGIN
			FOR r IN SELECT c.oid, c.relname FROM pg_index i
					 JOIN pg_class c ON c.oid = i.indexrelid
					 JOIN pg_am a ON a.oid = c.relam
					WHERE a.amname = 'btree' AND i.indisvalid AND i.indisready
					  AND c.relpersistence <> 't'
					ORDER BY c.oid
			LOOP
				BEGIN
					PERFORM bt_index_check(r.oid, true);
				EXCEPTION WHEN OTHERS THEN
					RAISE WARNING 'amcheck: index %: %', r.relname, SQLERRM;
				END;
				n := n + 1;
			END LOOP;
			RAISE WARNING 'amcheck: % indexes checked', n;
		END $$;},
		stdout => \$out,
		stderr => \$err);
	my ($n) = $err =~ /amcheck: (\d+) indexes checked/;
	my @errors = grep { /amcheck: index/ || /ERROR/ } split /\n/, $err;
	return ($n // 0, @errors);
}

# ---------------------------------------------------------------------------
# choosing a victim
# ---------------------------------------------------------------------------

# A random backend of application $app (default pgbench) that is inside a
# transaction or running a statement, or undef.
sub pick_backend
{
	my ($node, %p) = @_;
	my $app = $p{app} // 'pgbench';
	my $states = $p{states} // q{'active', 'idle in transaction'};
	my ($ret, $out);
	$ret = $node->psql(
		'postgres', qq{
		SELECT pid, coalesce(left(query, 40), '') FROM pg_stat_activity
		 WHERE application_name = '$app' AND state IN ($states)
		   AND backend_type = 'client backend'
		 ORDER BY random() LIMIT 1},
		stdout => \$out);
	return undef if $ret != 0 || !defined $out || $out eq '';
	my ($pid, $query) = split /\|/, $out, 2;
	return wantarray ? ($pid, $query) : $pid;
}

# The same, waiting up to 2 s for a load to have one; dies if none.
sub pick_busy_backend
{
	my ($node, %p) = @_;
	my ($pid, $query);
	for (1 .. 100)
	{
		($pid, $query) = pick_backend($node, %p);
		last if $pid;
		usleep(20_000);
	}
	die "no busy pgbench backend" unless $pid;
	return ($pid, $query);
}

# ---------------------------------------------------------------------------
# gdb (optional: a breakpoint makes one crash test deterministic)
# ---------------------------------------------------------------------------

my $gdb_usable;

# Can gdb attach to our own processes here?  Cached.
sub gdb_usable
{
	return $gdb_usable if defined $gdb_usable;
	$gdb_usable = 0;
	return 0 if $ENV{FPS_NO_GDB};
	my $gdb = `command -v gdb 2>/dev/null`;
	chomp $gdb;
	return 0 unless $gdb;
	my $pid = fork();
	if ($pid == 0) { sleep 30; exit 0; }
	my $out = `gdb -p $pid -batch -ex 'info proc' 2>&1`;
	kill 'KILL', $pid;
	waitpid($pid, 0);
	$gdb_usable = ($out =~ /process $pid/) ? 1 : 0;
	return $gdb_usable;
}

# ---------------------------------------------------------------------------
# the TPC-C-like benchmark (bench/tpcc)
# ---------------------------------------------------------------------------

# bench/tpcc next to t/ (scripts/run_tap.sh copies both)
sub tpcc_dir
{
	my $d = "$FindBin::RealBin/../bench/tpcc";
	die "bench/tpcc not found at $d" unless -f "$d/new_order.sql";
	return $d;
}

# Run a psql script file against $db with psql variables; dies on error.
sub _psql_file
{
	my ($node, $db, $file, %vars) = @_;
	my @cmd = ('psql', '-XAq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db));
	push @cmd, '-v', "$_=$vars{$_}" foreach sort keys %vars;
	push @cmd, '-f', $file;
	my ($out, $err);
	IPC::Run::run(\@cmd, '>', \$out, '2>', \$err)
	  or die "psql -f $file failed: $err";
	return $out;
}

# Schema, load (one warehouse unless told) and indexes, tables USING $am.
sub tpcc_setup
{
	my ($node, %p) = @_;
	my $db = $p{db} // 'postgres';
	my $dir = tpcc_dir();
	_psql_file($node, $db, "$dir/schema.sql", am => $p{am} // 'fpsketch');
	_psql_file($node, $db, "$dir/load.sql", warehouses => $p{warehouses} // 1);
	_psql_file($node, $db, "$dir/indexes.sql");
	# written by the fault-injection tests, outside the TPC-C tables
	$node->safe_psql($db,
		"CREATE TABLE fault_probe (id int PRIMARY KEY, note text) USING $p{am}")
	  if $p{am} && $p{am} eq 'fpsketch';
	return;
}

# Start New-Order + Payment (50/50) in the background.  %p: clients,
# duration, db, warehouses, max_tries, options (PGOPTIONS).
sub tpcc_load
{
	my ($node, %p) = @_;
	my $dir = tpcc_dir();
	return FpsTest::Load->start(
		$node,
		db => $p{db},
		clients => $p{clients} // 4,
		duration => $p{duration} // 5,
		max_tries => $p{max_tries} // 10,
		options => $p{options},
		files => [ "$dir/new_order.sql\@50", "$dir/payment.sql\@50" ],
		defines => {
			warehouses => $p{warehouses} // 1,
			c_last_c => 223,
			c_id_c => 259,
			ol_i_id_c => 7911
		});
}

# Row counts of the tables that grow under New-Order + Payment.
sub tpcc_counts
{
	my ($node, $db) = @_;
	my %c;
	# one statement per table; a count that meets a concurrent insert may
	# fail with 40001 like any reader, and is retried
	foreach my $t (qw(orders new_order order_line history))
	{
		for my $try (1 .. 100)
		{
			my ($ret, $out, $err);
			$ret = $node->psql($db // 'postgres',
				"SET fpsketch.escalation_threshold = 100; SELECT count(*) FROM $t",
				stdout => \$out, stderr => \$err);
			if ($ret == 0) { $c{$t} = $out; last; }
			die "count(*) of $t failed: $err" unless $err =~ /could not serialize/;
		}
		die "count(*) of $t failed 100 times with 40001" unless defined $c{$t};
	}
	return \%c;
}

# Tests that no count in $before (committed before a fault) went missing;
# returns the number of tables that lost rows.
sub tpcc_counts_not_lost
{
	my ($node, $before, $label, $db) = @_;
	my $after = tpcc_counts($node, $db);
	my @lost = grep { $after->{$_} < $before->{$_} } sort keys %$before;
	ok(!@lost,
		"$label: no committed row lost (before/after: "
		  . join(', ', map { "$_ $before->{$_}/$after->{$_}" } sort keys %$before) . ")");
	return scalar @lost;
}

# The checks after a fault, as tests labelled $label:
#   - the twelve consistency conditions of bench/tpcc/check.sql (New-Order +
#     Payment only: all twelve hold) with zero violations each;
#   - row counts: the static tables are complete, HISTORY has one row per
#     payment counted in C_PAYMENT_CNT, and an index scan counts the same
#     rows as a sequential scan for every table that grows;
#   - bt_index_check(heapallindexed) on every index;
#   - once idle, nothing pinned and no lock bit leaked.
# Returns the number of violations found.
sub tpcc_check
{
	my ($node, $label, %p) = @_;
	my $db = $p{db} // 'postgres';
	my $dir = tpcc_dir();
	my $violations = 0;

	my $out = _psql_file($node, $db, "$dir/check.sql", full_mix => 0);
	my @rows = grep { /^\d+\|/ } split /\n/, $out;
	is(scalar(@rows), 12, "$label: check.sql reports the 12 conditions");
	my @bad = grep { (split /\|/)[2] != 0 } @rows;
	$violations += scalar @bad;
	is(join(';', @bad), '',
		"$label: TPC-C consistency conditions 1-12 hold (zero violations)");

	# counts
	my $counts = $node->safe_psql(
		$db, q{
		SET fpsketch.escalation_threshold = 100;
		SELECT (SELECT count(*) FROM warehouse) = 1
		   AND (SELECT count(*) FROM district) = 10
		   AND (SELECT count(*) FROM customer) = 30000
		   AND (SELECT count(*) FROM item) = 100000
		   AND (SELECT count(*) FROM stock) = 100000,
		   (SELECT count(*) FROM history) = (SELECT sum(c_payment_cnt) FROM customer);
		SET enable_seqscan = off; SET enable_bitmapscan = off;
		SELECT count(*) FROM orders WHERE o_w_id = 1;
		SELECT count(*) FROM new_order WHERE no_w_id = 1;
		SELECT count(*) FROM order_line WHERE ol_w_id = 1;
		SELECT count(*) FROM customer WHERE c_w_id = 1;
		SET enable_seqscan = on; SET enable_indexscan = off;
		SELECT count(*) FROM orders;
		SELECT count(*) FROM new_order;
		SELECT count(*) FROM order_line;
		SELECT count(*) FROM customer;});
	my @c = split /\n/, $counts;
	my $ok_static = $c[0] eq 't|t';
	my $ok_index = "@c[1..4]" eq "@c[5..8]";
	$violations += !$ok_static + !$ok_index;
	ok($ok_static,
		"$label: static tables complete, count(HISTORY) = sum(C_PAYMENT_CNT)");
	ok($ok_index,
		"$label: index scans and sequential scans count the same rows (@c[5..8])");

	my ($n, @errors) = amcheck_all($node, $db);
	$violations += scalar @errors;
	ok($n > 10 && !@errors,
		"$label: bt_index_check(heapallindexed) on all $n indexes: no error")
	  or diag join("\n", @errors);

	my $s = wait_idle($node, $db);
	$violations += ($s->{pinned} != 0) + ($s->{lock_leaks} != 0);
	is("$s->{pinned}|$s->{lock_leaks}", '0|0',
		"$label: when idle nothing is pinned and no lock bit leaked");
	return $violations;
}

# ===========================================================================
package FpsTest::Session;
# ===========================================================================
# One psql process (-XAtq -f -) fed line by line.  Errors do not end it;
# a lost connection does (psql exits), which alive() reports.

use strict;
use warnings;
use IPC::Run;
use Time::HiRes qw(usleep time);

sub new
{
	my ($class, $node, %p) = @_;
	my $self = bless {
		stdin => '',
		stdout => '',
		stderr => '',
		n => 0,
		node => $node,
	}, $class;
	local $ENV{PGAPPNAME} = $p{app} // 'fps_session';
	local $ENV{PGOPTIONS} = $p{options} if defined $p{options};
	$self->{timer} = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
	my $connstr = $node->connstr($p{db} // 'postgres');
	$connstr .= " user=$p{user}" if defined $p{user};
	$self->{h} = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $connstr, '-f', '-' ],
		'<', \$self->{stdin}, '>', \$self->{stdout}, '2>', \$self->{stderr},
		$self->{timer});
	$self->query("\\set VERBOSITY verbose");
	($self->{pid}) = $self->query('SELECT pg_backend_pid();');
	die "session did not connect: $self->{last_err}" unless $self->{pid};
	return $self;
}

sub pid { return $_[0]->{pid}; }

# Send $sql without waiting for it.
sub send
{
	my ($self, $sql) = @_;
	my $n = ++$self->{n};
	$self->{stdin} .= "$sql\n;\n\\echo __fps_done_$n\n\\warn __fps_done_$n\n";

	# until psql has it all: a caller that sends, then waits on another
	# session (a killer watching this one's COMMIT) pumps this one no more
	my $t0 = time;
	while ($self->{h}->pumpable && length($self->{stdin}) > 0 && time - $t0 < 10)
	{
		$self->{h}->pump_nb;
		usleep(1000) if length($self->{stdin}) > 0;
	}
	return $n;
}

# Wait for everything sent so far; returns (stdout, stderr) of it.  If the
# connection is gone ($self->alive false) returns what there was.
sub wait
{
	my ($self, $timeout) = @_;
	my $n = $self->{n};
	$self->{timer}->start($timeout // $PostgreSQL::Test::Utils::timeout_default);
	my $done = qr/__fps_done_$n\n/;
	while (!($self->{stdout} =~ $done && $self->{stderr} =~ $done))
	{
		last unless $self->{h}->pumpable;
		last if $self->{timer}->is_expired;
		eval { $self->{h}->pump; };
	}
	die "session query timed out: $self->{stdout} $self->{stderr}"
	  if $self->{timer}->is_expired && $self->{h}->pumpable;
	my ($out, $err) = ($self->{stdout}, $self->{stderr});
	$out =~ s/__fps_done_\d+\n//g;
	$err =~ s/__fps_done_\d+\n//g;
	chomp $out;
	$self->{stdout} = $self->{stderr} = '';
	$self->{last_err} = $err;
	return wantarray ? ($out, $err) : $out;
}

# Is the statement sent with send() finished?  (non-blocking)
sub done
{
	my ($self) = @_;
	my $n = $self->{n};
	$self->{h}->pump_nb if $self->{h}->pumpable;
	return 1 unless $self->{h}->pumpable;
	return $self->{stdout} =~ /__fps_done_$n\n/ && $self->{stderr} =~ /__fps_done_$n\n/;
}

sub query
{
	my ($self, $sql, $timeout) = @_;
	$self->send($sql);
	return $self->wait($timeout);
}

sub alive
{
	my ($self) = @_;
	$self->{h}->pump_nb if $self->{h}->pumpable;
	return $self->{h}->pumpable ? 1 : 0;
}

sub close
{
	my ($self) = @_;
	if ($self->{h}->pumpable)
	{
		$self->{stdin} .= "\\q\n";
	}
	eval { $self->{h}->finish; };
	return;
}

# ===========================================================================
package FpsTest::Load;
# ===========================================================================
# pgbench in the background.

use strict;
use warnings;
use IPC::Run;

sub start
{
	my ($class, $node, %p) = @_;
	my @cmd = (
		'pgbench', '-n', '-M', $p{mode} // 'prepared',
		'-c', $p{clients} // 4, '-j', $p{jobs} // ($p{clients} && $p{clients} < 2 ? 1 : 2),
		defined $p{transactions} ? ('-t', $p{transactions}) : ('-T', $p{duration} // 5),
		'--max-tries', $p{max_tries} // 10, '--failures-detailed');
	push @cmd, '-f', $_ foreach @{ $p{files} };
	push @cmd, '-D', "$_=$p{defines}{$_}" foreach sort keys %{ $p{defines} // {} };
	push @cmd, @{ $p{args} } if $p{args};
	push @cmd, $node->connstr($p{db} // 'postgres');    # dbname: last
	my $self = bless { out => '', err => '', t0 => Time::HiRes::time() }, $class;
	local $ENV{PGOPTIONS} = $p{options} if defined $p{options};
	local $ENV{PGAPPNAME} = $p{app} // 'pgbench';
	$self->{h} = IPC::Run::start(\@cmd, '<', \undef, '>', \$self->{out},
		'2>', \$self->{err});
	return $self;
}

sub running
{
	my ($self) = @_;
	$self->{h}->pump_nb if $self->{h}->pumpable;
	return $self->{h}->pumpable;
}

# Wait for pgbench to end; returns a hash:
#   rc, processed (= committed: pgbench 15 counts failures apart),
#   failed, serialization, deadlock, retried, tps,
#   aborted (client-abort messages), unexpected (those not matching
#   $p{expected}, default: none), out, err
sub finish
{
	my ($self, %p) = @_;
	eval { $self->{h}->finish; };
	my $r = { rc => $self->{h}->result(0) // -1, out => $self->{out}, err => $self->{err} };
	my $o = $self->{out};
	($r->{processed}) = $o =~ /number of transactions actually processed: (\d+)/;
	($r->{failed}) = $o =~ /number of failed transactions: (\d+)/;
	($r->{serialization}) = $o =~ /number of serialization failures: (\d+)/;
	($r->{deadlock}) = $o =~ /number of deadlock failures: (\d+)/;
	($r->{retried}) = $o =~ /number of transactions retried: (\d+)/;
	($r->{tps}) = $o =~ /tps = ([\d.]+)/;
	$r->{$_} //= 0 foreach qw(processed failed serialization deadlock retried tps);
	# pgbench 15 counts failed transactions apart from the processed ones:
	# processed = completed (committed, or a script's own ROLLBACK)
	$r->{committed} = $r->{processed};
	my @lines = split /\n/, $self->{err};
	$r->{aborted} = [ grep { /aborted|could not create connection/ } @lines ];
	my $expected = $p{expected};
	$r->{unexpected} = [
		grep {
			/error|fatal/i
			  && !/Run was aborted; the above results are incomplete/
			  && !(defined $expected && /$expected/)
		} @lines
	];
	return $r;
}

sub kill_it
{
	my ($self) = @_;
	eval { $self->{h}->signal('INT'); };
	return;
}

1;
