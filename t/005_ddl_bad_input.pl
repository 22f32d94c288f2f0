# 005_ddl_bad_input.pl: DDL in a busy system, and bad input not covered by
# t/001_bad_input.pl and sql/06_errors_gucs.sql (which already cover a
# missing preload at CREATE EXTENSION, a too small exact table, bad
# variant / sketch_size / max_entries at startup, SET of postmaster
# parameters, lock_wait_timeout ranges, misspelled fpsketch.* names and
# PREPARE TRANSACTION (now supported: sql/13_prepared.sql); sql/07_planner.sql
# covers parallel query).
#
#  (a) more malformed and out-of-range settings in postgresql.conf (bad
#      protocol, sketch_rows 0 and 17, sketch_size too large / negative /
#      with a bad unit, max_entries not a number, lock_wait_timeout 0): the
#      server refuses to start and its log names the parameter; ALTER
#      SYSTEM refuses the same values;
#  (b) fpsketch tables that exist when the server starts without the
#      library preloaded: every access fails with a clear error and hint,
#      the server stays up, the data is intact once it is preloaded again;
#  (c) TRUNCATE (with a refill, in one transaction), VACUUM FULL, CLUSTER,
#      VACUUM, ANALYZE, CREATE INDEX CONCURRENTLY, REINDEX CONCURRENTLY
#      while transfers and readers run: readers that read the table in two
#      statements at READ COMMITTED (serializable only through fpsketch)
#      always see the constant total;
#  (d) ALTER TABLE ... SET ACCESS METHOD heap / fpsketch back and forth
#      while transfers and readers run;
#  (e) DDL on a 300,000-row fpsketch table (CREATE INDEX [CONCURRENTLY],
#      REINDEX, VACUUM FULL, CLUSTER, rewriting ALTER TABLE, ADD PRIMARY
#      KEY, SET ACCESS METHOD) cancelled half-way by statement_timeout: the
#      same session's reads are tracked again, the data is intact.
# After (c) and (d): total and row count unchanged, amcheck clean, nothing
# pinned and no lock bit leaked, no client or server error but 40001/40P01.

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

my $node = fps_node('fps_ddl');

# ---------------------------------------------------------------------------
# (a) bad settings
# ---------------------------------------------------------------------------
$node->stop;
my @bad = (
	[ 'fpsketch.protocol',          "'2pl'" ],
	[ 'fpsketch.sketch_rows',       '0' ],
	[ 'fpsketch.sketch_rows',       '17' ],
	[ 'fpsketch.sketch_size',       "'2TB'" ],
	[ 'fpsketch.sketch_size',       "'-1'" ],
	[ 'fpsketch.sketch_size',       "'12 parsecs'" ],
	[ 'fpsketch.max_entries',       "'many'" ],
	[ 'fpsketch.lock_wait_timeout', '0' ],);
foreach my $case (@bad)
{
	my ($name, $value) = @$case;
	my $log_offset = log_offset($node);
	set_conf($node, $name, $value);
	my $started = $node->start(fail_ok => 1);
	$faults{'bad setting in postgresql.conf at startup'}++;
	ok(!$started, "(a) $name = $value: the server refuses to start");
	ok($node->log_contains(qr/\Q$name\E/, $log_offset),
		"(a) $name = $value: the log names the parameter");
	$node->stop if $started;
	$node->adjust_conf('postgresql.conf', $name, undef);
}
$node->start;
foreach my $case (@bad, [ 'fpsketch.variant', "'bogus'" ], [ 'fpsketch.no_such_thing', '1' ])
{
	my ($name, $value) = @$case;
	my ($ret, $out, $err) = $node->psql('postgres', "ALTER SYSTEM SET $name = $value");
	$faults{'bad value in ALTER SYSTEM'}++;
	like($err, qr/ERROR:.*\Q$name\E/, "(a) ALTER SYSTEM SET $name = $value is refused, naming the parameter");
}
$node->safe_psql('postgres', "ALTER SYSTEM SET fpsketch.sketch_size = '64kB'");
$node->restart;
is($node->safe_psql('postgres', 'SELECT sketch_bytes FROM fpsketch_stats'), '65536',
	'(a) a good value set by ALTER SYSTEM takes effect at restart');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET fpsketch.sketch_size');

# ---------------------------------------------------------------------------
# (b) fpsketch tables, library not preloaded
# ---------------------------------------------------------------------------
$node->safe_psql(
	'postgres', q{
	BEGIN;
	CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL, pad text) USING fpsketch;
	INSERT INTO acct SELECT g, 100, repeat('p', 50) FROM generate_series(1, 1000) g;
	COMMIT;
	CREATE INDEX acct_bal ON acct (bal);
	VACUUM ANALYZE acct;});
$node->stop;
$node->adjust_conf('postgresql.conf', 'shared_preload_libraries', undef);
$node->start;
{
	my $log_offset = log_offset($node);
	foreach my $sql (
		'SELECT count(*) FROM acct',
		'INSERT INTO acct VALUES (1001, 0)',
		'UPDATE acct SET bal = bal WHERE id = 1',
		'DELETE FROM acct WHERE id = 1',
		'SELECT * FROM fpsketch_stats',
		'TRUNCATE acct',
		'VACUUM FULL acct',
		'CREATE TABLE acct2 (id int) USING fpsketch')
	{
		my ($ret, $out, $err) = $node->psql('postgres', $sql);
		$faults{'access to fpsketch without shared_preload_libraries'}++;
		like($err,
			qr/ERROR:  fpsketch must be loaded via shared_preload_libraries\n(?:.*\n)*HINT:  Add fpsketch to shared_preload_libraries/,
			"(b) without preload, '$sql' fails with a clear error and hint");
	}
	is($node->safe_psql('postgres', 'SELECT 1'), '1', '(b) the server stays up');
	ok(!$node->log_contains(qr/PANIC|server process .* was terminated/, $log_offset), '(b) nothing crashed');
}
$node->stop;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'fpsketch'");
$node->start;
is($node->safe_psql('postgres', "SELECT sum(bal) || '/' || count(*) FROM acct"), '100000/1000',
	'(b) preloaded again: the data is intact');

# ---------------------------------------------------------------------------
# (c) and (d): DDL while transfers and readers run
# ---------------------------------------------------------------------------
my $log_from = log_offset($node);
my $dir = PostgreSQL::Test::Utils::tempdir();
# the scripts, for table acct and (positive control) the heap table acct_heap
foreach my $tab ('acct', 'acct_heap')
{
	PostgreSQL::Test::Utils::append_to_file("$dir/transfer_$tab.sql", qq{
\\set a random(1, 1000)
\\set b random(1, 1000)
\\set x random(1, 10)
BEGIN;
SELECT bal FROM $tab WHERE id = :a;
UPDATE $tab SET bal = bal - :x WHERE id = :a;
UPDATE $tab SET bal = bal + :x WHERE id = :b;
COMMIT;
});
	# two statements, two snapshots: only fpsketch makes the pair
	# consistent; the check runs after COMMIT (a 40001 at COMMIT retries
	# the whole script) and fails with division by zero (volatile: a generic
	# plan would fold a constant 1 / 0)
	PostgreSQL::Test::Utils::append_to_file("$dir/reader_rc_$tab.sql", qq{
BEGIN;
SELECT sum(bal) AS s1, count(*) AS n1 FROM $tab WHERE id <= 500 \\gset
SELECT sum(bal) AS s2, count(*) AS n2 FROM $tab WHERE id > 500 \\gset
COMMIT;
SELECT CASE WHEN :s1::bigint + :s2::bigint = 100000 AND :n1::bigint + :n2::bigint = 1000 THEN 1 ELSE 1 / (random() * 0)::int END;
});
}
# one statement (one snapshot, taken after the table lock): consistent on
# heap too.  Not REPEATABLE READ: its snapshot is taken before the table
# lock is granted, and a table rewrite is not MVCC-safe in PostgreSQL (the
# rewritten table looks empty to such a snapshot, heap or fpsketch alike)
PostgreSQL::Test::Utils::append_to_file("$dir/reader_one_acct.sql", q{
SELECT sum(bal) AS s, count(*) AS n FROM acct \gset
SELECT CASE WHEN :s::bigint = 100000 AND :n::bigint = 1000 THEN 1 ELSE 1 / (random() * 0)::int END;
});

sub checks
{
	my ($label) = @_;
	is($node->safe_psql('postgres', "SELECT sum(bal) || '/' || count(*) FROM acct"), '100000/1000',
		"$label: total balance and row count unchanged");
	my ($n, @errors) = amcheck_all($node);
	ok(!@errors, "$label: bt_index_check(heapallindexed) on all $n indexes") or diag join("\n", @errors);
	my $s = wait_idle($node);
	is("$s->{pinned}|$s->{lock_leaks}", '0|0', "$label: idle: nothing pinned, no lock bit leaked");
	$violations += scalar(@errors) + ($s->{pinned} != 0) + ($s->{lock_leaks} != 0);
	return;
}

# Run transfers and readers for $secs while $ddl->() is called in a loop;
# returns the DDL statements run.
sub busy
{
	my ($label, $reader, $secs, @ddl) = @_;
	my $load = FpsTest::Load->start($node, clients => 4, duration => $secs, max_tries => 50,
		files => [ "$dir/transfer_acct.sql\@3", "$dir/$reader\@1" ]);
	my $s = FpsTest::Session->new($node, app => 'fps_ddl');
	$s->query("SET lock_timeout = '10s';");
	my %ran;
	my $i = 0;
	usleep(300_000);
	# whole rounds of @ddl (the last may end after the load)
	while ($load->running || $i % @ddl != 0)
	{
		my ($name, $sql) = @{ $ddl[ $i++ % @ddl ] };
		my ($out, $err) = $s->query($sql);
		if ($err =~ /ERROR/)
		{
			fail("$label: $name failed: $err");
			$violations++;
		}
		$ran{$name}++;
		$faults{"$name while transfers and readers run"}++;
		usleep(100_000);
	}
	$s->close;
	my $r = $load->finish;
	ok($r->{rc} == 0 && !@{ $r->{aborted} } && !@{ $r->{unexpected} },
		"$label: transfers and readers: no client error ($r->{committed} committed, "
		  . "$r->{serialization} 40001 and $r->{deadlock} 40P01 after retries)")
	  or diag $r->{err};
	$violations++ if @{ $r->{aborted} } || @{ $r->{unexpected} };
	ok($r->{committed} > 0, "$label: the load made progress");
	note "$label: DDL run: " . join(', ', map { "$ran{$_} x $_" } sort keys %ran);
	return \%ran;
}

my $ran = busy(
	'(c) DDL',
	'reader_rc_acct.sql',
	8,
	[
		'TRUNCATE and refill',
		q{BEGIN;
		LOCK TABLE acct IN ACCESS EXCLUSIVE MODE;
		CREATE TEMP TABLE snap ON COMMIT DROP AS SELECT * FROM acct;
		TRUNCATE acct;
		INSERT INTO acct SELECT * FROM snap;
		COMMIT;}
	],
	[ 'VACUUM FULL', 'VACUUM FULL acct;' ],
	[ 'CLUSTER', 'CLUSTER acct USING acct_pkey;' ],
	[ 'VACUUM, ANALYZE', 'VACUUM acct; ANALYZE acct;' ],
	[
		'CREATE/DROP INDEX CONCURRENTLY',
		'CREATE INDEX CONCURRENTLY acct_pad ON acct (pad, id); DROP INDEX CONCURRENTLY acct_pad;'
	],
	[ 'REINDEX TABLE CONCURRENTLY', 'REINDEX TABLE CONCURRENTLY acct;' ]);
ok(scalar(keys %$ran) == 6, '(c) every kind of DDL ran at least once');
checks('(c)');

# positive control: on a heap table at READ COMMITTED the same readers do
# catch inconsistent totals (so the check in (c) has teeth)
my @problems = log_problems($node, $log_from, allowed => [ '40001', '40P01' ]);
{
	$node->safe_psql('postgres',
		'CREATE TABLE acct_heap AS SELECT * FROM acct; ALTER TABLE acct_heap ADD PRIMARY KEY (id);');
	my $r = FpsTest::Load->start($node, clients => 4, duration => 2, max_tries => 50,
		files => [ "$dir/transfer_acct_heap.sql\@3", "$dir/reader_rc_acct_heap.sql\@1" ])->finish;
	my $caught = grep { /division by zero/ } @{ $r->{aborted} };
	ok($caught > 0, "(c) positive control: on heap at READ COMMITTED $caught of 4 readers saw an inconsistent total");
	$node->safe_psql('postgres', 'DROP TABLE acct_heap');
	$log_from = log_offset($node);    # its division-by-zero errors are expected
}


$ran = busy(
	'(d) ALTER TABLE SET ACCESS METHOD',
	'reader_one_acct.sql',
	6,
	[
		'ALTER TABLE SET ACCESS METHOD heap',
		q{ALTER TABLE acct SET ACCESS METHOD heap;
		SELECT amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE relname = 'acct';}
	],
	[
		'ALTER TABLE SET ACCESS METHOD fpsketch',
		q{ALTER TABLE acct SET ACCESS METHOD fpsketch;
		SELECT amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE relname = 'acct';}
	]);
ok(($ran->{'ALTER TABLE SET ACCESS METHOD heap'} // 0) >= 2,
	'(d) the table changed access method at least 4 times');
is($node->safe_psql('postgres',
		"SELECT amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE relname = 'acct'"),
	'fpsketch', '(d) the table ends as fpsketch');
checks('(d)');

# tracking works again on the rewritten table
{
	my $c0 = stats($node)->{commits};
	my $r = FpsTest::Load->start($node, clients => 2, duration => 1, files => ["$dir/transfer_acct.sql"])->finish;
	ok($r->{rc} == 0 && stats($node)->{commits} > $c0,
		'(d) transfers on the table are tracked by fpsketch again');
}

# ---------------------------------------------------------------------------
# (e) DDL on a large fpsketch table cancelled half-way
# ---------------------------------------------------------------------------
# Index builds run with heap's routine swapped into the relcache entry, and
# ALTER TABLE runs with reads untracked (fps_ddl_depth): both are undone in
# PG_FINALLY blocks.  After each cancelled DDL, the same session's reads
# must be tracked again (they pin keys) and the table must be intact.
{
	$node->safe_psql(
		'postgres', q{
		BEGIN;
		CREATE TABLE big (id int PRIMARY KEY, v int NOT NULL, pad text) USING fpsketch;
		INSERT INTO big SELECT g, g % 1000, repeat('b', 40) FROM generate_series(1, 300000) g;
		COMMIT;
		VACUUM ANALYZE big;});
	my $ddl = FpsTest::Session->new($node, app => 'fps_ddl');
	my @cases = (
		[ 'CREATE INDEX',                   'CREATE INDEX big_v ON big (v, pad);' ],
		[ 'CREATE INDEX CONCURRENTLY',      'CREATE INDEX CONCURRENTLY big_vc ON big (v, pad);' ],
		[ 'REINDEX',                        'REINDEX TABLE big;' ],
		[ 'VACUUM FULL',                    'VACUUM FULL big;' ],
		[ 'CLUSTER',                        'CLUSTER big USING big_pkey;' ],
		[ 'ALTER TABLE ... TYPE (rewrite)', 'ALTER TABLE big ALTER COLUMN v TYPE bigint;' ],
		[ 'ALTER TABLE ADD PRIMARY KEY',    'ALTER TABLE big DROP CONSTRAINT big_pkey, ADD PRIMARY KEY (id);' ],
		[ 'ALTER TABLE SET ACCESS METHOD',  'ALTER TABLE big SET ACCESS METHOD heap;' ],);
	my ($cancelled, $completed) = (0, 0);
	my %cancelled_kind;
	foreach my $timeout (10, 100, 400)
	{
		foreach my $case (@cases)
		{
			my ($name, $sql) = @$case;
			my ($out, $err) = $ddl->query("SET statement_timeout = '${timeout}ms'; $sql RESET statement_timeout;");
			$faults{"statement_timeout during DDL on a 300,000-row fpsketch table"}++;
			if ($err =~ /57014: canceling statement due to statement timeout/)
			{
				$cancelled++;
				$cancelled_kind{$name}++;
			}
			elsif ($err eq '') { $completed++; }
			else
			{
				fail("(e) $name with statement_timeout = ${timeout}ms: unexpected error: $err");
				$violations++;
			}
			# put things back for the next case
			$ddl->query(q{DROP INDEX IF EXISTS big_v; DROP INDEX IF EXISTS big_vc;
				ALTER TABLE big SET ACCESS METHOD fpsketch;});
			# the same session's reads are tracked again
			($out, $err) = $ddl->query(
				q{BEGIN; SELECT v FROM big WHERE id = 7; SELECT pinned > 0 FROM fpsketch_stats; COMMIT;});
			is($out, "7
t", "(e) after $name with statement_timeout = ${timeout}ms: the session's reads pin keys again");
			$violations++ unless $out eq "7
t";
		}
	}
	note "(e) DDL cancelled half-way: $cancelled, completed within the timeout: $completed";
	is(scalar(keys %cancelled_kind), scalar(@cases),
		"(e) every kind of DDL was cancelled half-way at least once ($cancelled of 24 statements)");
	$ddl->close;
	is($node->safe_psql('postgres', q{SET fpsketch.escalation_threshold = 100;
		SELECT count(*) || '/' || sum(v) FROM big}), '300000/' . (300 * 499500),
		'(e) the table is intact');
	my ($n, @errors) = amcheck_all($node);
	ok(!@errors, "(e) bt_index_check(heapallindexed) on all $n indexes") or diag join("\n", @errors);
	$violations += scalar @errors;
	my $s = wait_idle($node);
	is("$s->{pinned}|$s->{lock_leaks}", '0|0', '(e) idle: nothing pinned, no lock bit leaked');
	$violations += ($s->{pinned} != 0) + ($s->{lock_leaks} != 0);
}

# 57P01: the parallel workers of a cancelled CREATE INDEX are terminated;
# one that starts after its leader gave up cannot map the leader's DSM, or
# finds the sort's shared file set already destroyed (55000)
push @problems, log_problems($node, $log_from, allowed => [ '40001', '40P01', '57014', '57P01' ],
	ignore => qr/could not map dynamic shared memory segment|could not attach to a SharedFileSet that is already destroyed/);
is(join("\n", @problems), '', '(c, d, e) the server log has no error other than 40001/40P01/57014/57P01, no crash');
$violations += scalar @problems;

$node->stop;
note "faults injected:";
note "  $faults{$_} x $_" foreach sort keys %faults;
note "violations found: $violations";
note sprintf("005_ddl_bad_input.pl ran %.0f s", time - $t_start);
is($violations, 0, 'zero violations over all checks');
done_testing();
