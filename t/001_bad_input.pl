# 001_bad_input.pl: fpsketch under configurations a user can get wrong.
#
#  (a) the library is not in shared_preload_libraries: CREATE EXTENSION
#      explains what is missing, the server stays up;
#  (b) an exact table too small for a transaction: while another
#      transaction uses the table, a clean, retryable 40001 (never "out of
#      shared memory"), nothing left pinned afterwards; with nobody else on
#      it, the writer takes the table (ACCESS EXCLUSIVE) and needs no more
#      pins: it commits, readers wait for it, a rolled-back savepoint gives
#      the lock back;
#  (c) invalid fpsketch.* values in postgresql.conf: the server refuses to
#      start and its log names the parameter;
#  (d) the other variants (focus_counter, exact) start and work.
#
# One node is reconfigured and restarted between the steps (one initdb).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('fps_bad_input');
$node->init;
$node->append_conf('postgresql.conf', "max_connections = 20");
$node->start;

# Run $sql in one psql session that stops at the first error; returns
# (exit code: 3 after an error, stdout, stderr).
sub run_sql
{
	my ($sql) = @_;
	my ($stdout, $stderr);
	my $ret = $node->psql(
		'postgres', "\\set VERBOSITY verbose\n$sql",
		stdout => \$stdout,
		stderr => \$stderr,
		on_error_stop => 1);
	return ($ret, $stdout, $stderr);
}

# ---------------------------------------------------------------------------
# (a) not preloaded
# ---------------------------------------------------------------------------
{
	my ($ret, $stdout, $stderr) = run_sql("CREATE EXTENSION fpsketch;");
	like(
		$stderr,
		qr/ERROR:  55000: fpsketch must be loaded via shared_preload_libraries/,
		'(a) CREATE EXTENSION without preload fails with a clear message');
	like(
		$stderr,
		qr/HINT:  Add fpsketch to shared_preload_libraries in postgresql\.conf and restart the server\./,
		'(a) ... and a hint saying what to do');
	unlike($stderr, qr/FATAL|connection to server was lost/,
		'(a) ... as an ERROR: the session survives');
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM pg_extension WHERE extname = 'fpsketch'"),
		'0', '(a) the extension was not created');
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM pg_am WHERE amname = 'fpsketch'"),
		'0', '(a) no access method was left behind');
	is($node->safe_psql('postgres', 'SELECT 1'),
		'1', '(a) the server is still up');
}

# ---------------------------------------------------------------------------
# (b) preloaded, with an exact table of only 64 entries
# ---------------------------------------------------------------------------
$node->stop;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'fpsketch'\nfpsketch.max_entries = 64");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION fpsketch');
is($node->safe_psql('postgres', 'SELECT max_entries FROM fpsketch_stats'),
	'64', '(b) the exact table has 64 entries');

# Rows written into storage created in the same transaction are covered by
# the floor raise at commit, not by one pin per row: populating works.
$node->safe_psql(
	'postgres', q{
	BEGIN;
	CREATE TABLE big (id int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	INSERT INTO big SELECT g, 0 FROM generate_series(1, 200) g;
	COMMIT;
});
$node->safe_psql('postgres', 'SELECT fpsketch_stats_reset()');

# another transaction uses "big" (it read a row and stays open): past its
# pin budget (16 of the 64 entries here) the writer cannot have the table to
# itself, so it fails, with 54000: without the table lock it can never pin
# enough, and its HINT says how to get the lock.  Readers escalate instead.
# (the holder is another login role: the writer's role share of the pool,
# fpsketch.max_pool_pins_per_role, is then all its own)
$node->safe_psql('postgres', 'CREATE ROLE fps_holder LOGIN; GRANT SELECT ON big TO fps_holder');
my $holder = FpsTest::Session->new($node, user => 'fps_holder');
$holder->query('BEGIN');
$holder->query('SELECT v FROM big WHERE id = 200');
{
	my $log_offset = -s $node->logfile;
	my ($ret, $stdout, $stderr) =
	  run_sql("UPDATE big SET v = v + 1;");
	is($ret, 3, '(b) an UPDATE of 200 rows fails');
	like(
		$stderr,
		qr/ERROR:  54000: transaction writes more rows than fpsketch can track in "big"/,
		'(b) ... with SQLSTATE 54000 (a retry alone would not help)');
	like(
		$stderr,
		qr/DETAIL:  A transaction may pin fpsketch\.max_pins_per_transaction keys of the shared exact table/,
		'(b) ... a DETAIL naming the budget');
	like(
		$stderr,
		qr/HINT:  Run LOCK TABLE "big" IN ACCESS EXCLUSIVE MODE first, write fewer rows per transaction, or raise fpsketch\.max_pins_per_transaction or fpsketch\.max_entries\./,
		'(b) ... and a HINT saying what to do');
	unlike($stderr, qr/out of shared memory/i,
		'(b) ... never "out of shared memory"');

	# a read-only scan of the whole table escalates to the relation's key
	($ret, $stdout, $stderr) = run_sql("SELECT count(*) FROM big;");
	is("$ret|$stdout|$stderr", "0|200|", '(b) a full scan of 200 rows escalates and succeeds');

	# a multi-row INSERT into an existing table, in a transaction block whose
	# earlier work is then rolled back, fails like the UPDATE
	($ret, $stdout, $stderr) = run_sql(
		q{BEGIN;
		UPDATE big SET v = 7 WHERE id = 1;
		INSERT INTO big SELECT g, 0 FROM generate_series(201, 400) g;
		COMMIT;});
	like($stderr, qr/ERROR:  54000: transaction writes more rows than fpsketch can track in "big"/,
		'(b) an INSERT of 200 rows fails the same way');

	# following the HINT works: LOCK TABLE waits for the holder
	my $locker = FpsTest::Session->new($node);
	$locker->query('BEGIN');
	$locker->send('LOCK TABLE big IN ACCESS EXCLUSIVE MODE');
	usleep(200_000);
	ok(!$locker->done, '(b) LOCK TABLE waits for the holder');
	$holder->query('COMMIT');
	my (undef, $lerr) = $locker->wait;
	is($lerr, '', '(b) ... and gets the lock once the holder commits');
	my (undef, $uerr) = $locker->query('UPDATE big SET v = v + 1000');
	is($uerr, '', '(b) ... then an UPDATE of 200 rows succeeds');
	$locker->query('ROLLBACK');
	$locker->close;

	ok(!$node->log_contains(qr/out of shared memory|PANIC|server process .* was terminated/i,
			$log_offset),
		'(b) the server log has no out-of-memory error and no crash');
}
$holder->close;

is( $node->safe_psql(
		'postgres',
		'SELECT pinned, entries <= max_entries, lock_leaks, pins_refused > 0, pool_pins, escalations > 0, table_full FROM fpsketch_stats'
	),
	'0|t|0|t|0|t|0',
	'(b) afterwards nothing is pinned or borrowed, refusals and escalations are counted, no INCREF failed');

# small transactions still work (3 keys always fit, whatever partition they
# hash to), through index scans that read only the rows asked for
is( $node->safe_psql(
		'postgres', q{
	SET enable_seqscan = off;
	SET enable_bitmapscan = off;
	BEGIN;
	SELECT v FROM big WHERE id = 1;
	UPDATE big SET v = v + 10 WHERE id = 2;
	UPDATE big SET v = v + 20 WHERE id = 3;
	COMMIT;
	SELECT string_agg(v::text, ',' ORDER BY id) FROM big WHERE id IN (1, 2, 3, 150, 200);
}),
	"0\n0,10,20,0,0",
	'(b) a small transaction commits; the failed ones changed nothing');
is( $node->safe_psql(
		'postgres', 'SELECT pinned, commits >= 1, write_escalations FROM fpsketch_stats'),
	'0|t|1', '(b) the small transaction was counted as a commit; only the writer under LOCK TABLE escalated');

# nobody else uses "big": once its pin budget is spent the writer takes
# the table in ACCESS EXCLUSIVE mode, and its reads and writes of it need
# no pins (the floor raise at commit orders it after everything)
{
	my $writer = FpsTest::Session->new($node);
	my $reader = FpsTest::Session->new($node);
	$writer->query('BEGIN');
	my (undef, $err) = $writer->query('UPDATE big SET v = v + 1');
	is($err, '', '(b) alone on the table, an UPDATE of 200 rows succeeds');
	is($writer->query(q{SELECT mode FROM pg_locks WHERE relation = 'big'::regclass
		AND pid = pg_backend_pid() AND granted AND mode = 'AccessExclusiveLock'}),
		'AccessExclusiveLock', '(b) ... holding the table in ACCESS EXCLUSIVE mode');
	(undef, $err) = $writer->query('INSERT INTO big SELECT g, 5 FROM generate_series(201, 400) g');
	is($err, '', '(b) ... and so does an INSERT of 200 more rows in the same transaction');
	# a whole-table read escalates to the relation key after 10 rows
	$reader->query('SET fpsketch.escalation_threshold = 10');
	$reader->send('SELECT count(*), sum(v) FROM big');
	usleep(300_000);
	ok(!$reader->done, '(b) a reader of the table waits for the writer');
	(undef, $err) = $writer->query('COMMIT');
	is($err, '', '(b) the writer commits');
	my ($out, $rerr) = $reader->wait;
	is("$out$rerr", '400|1230', '(b) the reader then sees all of its writes');
	$writer->close;
	$reader->close;
}
is( $node->safe_psql(
		'postgres', 'SELECT write_escalations, pinned, lock_leaks, floor_raises > 0 FROM fpsketch_stats'),
	'2|0|0|t', '(b) one more escalation counted, nothing left pinned, the floor raised');

# the lock taken in a savepoint stays with the transaction when the
# savepoint rolls back: what the transaction read under it (untracked) may
# have steered it, so nobody may write the table before it ends
{
	my $s = FpsTest::Session->new($node);
	my $other = FpsTest::Session->new($node);
	$s->query('BEGIN');
	$s->query('SAVEPOINT bulk');
	$s->query('UPDATE big SET v = v + 1');
	$s->query('ROLLBACK TO SAVEPOINT bulk');
	is($s->query(q{SELECT count(*) FROM pg_locks WHERE relation = 'big'::regclass
		AND pid = pg_backend_pid() AND mode = 'AccessExclusiveLock'}),
		'1', '(b) rolling back the savepoint keeps the ACCESS EXCLUSIVE lock');
	$other->send('SELECT count(*) FROM big WHERE id = 1');
	usleep(200_000);
	ok(!$other->done, '(b) ... and others wait for the transaction');
	my (undef, $err) = $s->query('UPDATE big SET v = 100 WHERE id = 1');
	is($err, '', '(b) a small write afterwards works');
	$s->query('COMMIT');
	my ($out, $oerr) = $other->wait;
	is("$out$oerr", '1', '(b) ... which end with it');
	$s->close;
	$other->close;
	is($node->safe_psql('postgres', 'SET fpsketch.escalation_threshold = 10;
		SELECT sum(v), pinned, lock_leaks FROM big, fpsketch_stats GROUP BY 2, 3'),
		'1329|0|0', '(b) only the write after the savepoint is kept; nothing pinned');
}

# STO orders by the timestamp taken at BEGIN, which an unchecked read could
# postdate: its writes never escalate, and fail past the budget
SKIP:
{
	skip 'this build has no STO', 2 unless grep { $_ eq 'sto' } protocols($node);
	$node->append_conf('postgresql.conf', "fpsketch.protocol = sto");
	$node->restart;
	my ($ret, $stdout, $stderr) = run_sql('UPDATE big SET v = v + 1;');
	like($stderr, qr/ERROR:  54000: transaction writes more rows than fpsketch can track in "big"\nDETAIL:  .*which STO cannot use\.\nHINT:  Write fewer rows per transaction/,
		'(b) STO: alone on the table, an UPDATE of 400 rows fails with 54000, and the hint does not suggest LOCK TABLE (which STO cannot use)');
	is($node->safe_psql('postgres', 'SELECT protocol, write_escalations, pinned FROM fpsketch_stats'),
		'sto|0|0', '(b) STO: nothing escalated, nothing left pinned');
	$node->adjust_conf('postgresql.conf', 'fpsketch.protocol', undef);
}

# ---------------------------------------------------------------------------
# (c) invalid values at server start
# ---------------------------------------------------------------------------
$node->stop;
$node->adjust_conf('postgresql.conf', 'fpsketch.max_entries', undef);

my @bad = (
	[ 'fpsketch.variant',     "'bogus'", qr/fpsketch\.variant/ ],
	[ 'fpsketch.eviction',    "'lru'",   qr/fpsketch\.eviction/ ],
	[ 'fpsketch.sketch_size', "'0'",     qr/fpsketch\.sketch_size/ ],
	[ 'fpsketch.max_entries', '10',      qr/fpsketch\.max_entries/ ],);

foreach my $case (@bad)
{
	my ($name, $value, $pattern) = @$case;
	my $log_offset = -s $node->logfile;

	$node->append_conf('postgresql.conf', "$name = $value");
	my $started = $node->start(fail_ok => 1);
	ok(!$started, "(c) $name = $value: the server refuses to start");
	ok($node->log_contains($pattern, $log_offset),
		"(c) $name = $value: the log names the parameter");
	$node->stop if $started;
	$node->adjust_conf('postgresql.conf', $name, undef);
}

# the configuration is valid again
$node->start;
is($node->safe_psql('postgres', 'SELECT variant, eviction, max_entries FROM fpsketch_stats'),
	'focus_sketch|clock|65536', '(c) with the bad values gone the server starts');

# ---------------------------------------------------------------------------
# (d) the other variants, and focus_sketch with eviction at unpin
# ---------------------------------------------------------------------------
my %max_entries = (focus_counter => 262144, exact => 1048576, focus_sketch => 65536);
# focus_counter always evicts by CLOCK, exact never: fpsketch.eviction is for focus_sketch
my %reported_eviction = (focus_counter => 'clock', exact => 'never', focus_sketch => 'unpin');
foreach my $config ([ 'focus_counter', 'clock' ], [ 'exact', 'clock' ],
	[ 'focus_sketch', 'unpin' ])
{
	my ($variant, $eviction) = @$config;

	$node->stop;
	$node->adjust_conf('postgresql.conf', 'fpsketch.variant', undef);
	$node->adjust_conf('postgresql.conf', 'fpsketch.eviction', undef);
	$node->append_conf('postgresql.conf', "fpsketch.variant = '$variant'");
	$node->append_conf('postgresql.conf', "fpsketch.eviction = '$eviction'");
	$node->start;

	is( $node->safe_psql(
			'postgres',
			'SELECT variant, eviction, max_entries, pinned, entries FROM fpsketch_stats'),
		"$variant|$reported_eviction{$variant}|$max_entries{$variant}|0|0",
		"($variant) the stats view reports the variant, empty");
	is($node->safe_psql('postgres', 'SHOW fpsketch.variant'),
		$variant, "($variant) SHOW fpsketch.variant");
	if ($variant eq 'focus_counter')
	{
		is( $node->safe_psql('postgres',
				'SELECT sketch_rows, sketch_cols, sketch_readers_cols, sketch_bytes FROM fpsketch_stats'),
			'1|1|1|24', "($variant) the sketch is a single cell and one readers cell");
	}

	is( $node->safe_psql(
			'postgres', qq{
		DROP TABLE IF EXISTS small;
		CREATE TABLE small (id int PRIMARY KEY, v text) USING fpsketch;
		INSERT INTO small SELECT g, 'v' || g FROM generate_series(1, 10) g;
		BEGIN;
		SELECT count(*) FROM small;
		UPDATE small SET v = 'updated' WHERE id IN (2, 3);
		DELETE FROM small WHERE id = 10;
		COMMIT;
		INSERT INTO small VALUES (1, 'dup') ON CONFLICT (id) DO UPDATE SET v = 'upserted';
		SELECT string_agg(id || '=' || v, ',' ORDER BY id) FROM small WHERE id <= 3;
		SELECT count(*) FROM small;
	}),
		"10\n1=upserted,2=updated,3=updated\n9",
		"($variant) a small workload works");

	if ($eviction eq 'unpin')
	{
		# the paper's Focus-Sketch: the last unpin merges into the sketch
		is( $node->safe_psql(
				'postgres',
				'SELECT pinned, entries, merges >= 10, sketch_cells_used > 0, commits >= 3, lock_leaks FROM fpsketch_stats'
			),
			'0|0|t|t|t|0',
			"($variant, eviction = $eviction) idle: the table is empty, its keys merged into the sketch"
		);
	}
	else
	{
		# focus_counter and exact keep unpinned entries in the exact table
		is( $node->safe_psql(
				'postgres',
				'SELECT pinned, entries >= 10, merges, commits >= 3, lock_leaks FROM fpsketch_stats'),
			'0|t|0|t|0',
			"($variant) nothing pinned when idle; entries are kept after commit");
	}
}

$node->stop;
done_testing();
