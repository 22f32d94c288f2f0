# 010_shared_limits.pl: what one user (one transaction) can take from the
# shared exact table and from others' tables, and what it cannot.
#
#  (a) a count(*) over a partitioned table with 40 fpsketch partitions and
#      80,000 rows, more than the exact table holds, commits alone (it used
#      to fail with a 40001 that every retry repeated: reads past the 32nd
#      relation were never counted, so they never escalated);
#  (b) an unprivileged role pins all it may in one open transaction
#      (100,000 absent-key probes of its own 10-row table, each in an
#      EXCEPTION block), from two connections at once: it cannot raise
#      fpsketch.escalation_threshold or fpsketch.max_pins_per_transaction,
#      its pins stop at its share (the second connection borrows nothing:
#      the first holds the role's half of the pool), and meanwhile another
#      database's transactions all commit;
#  (c) INSERT privilege is not enough to take ACCESS EXCLUSIVE on someone
#      else's table: past its budget, the unprivileged writer fails (54000)
#      instead of escalating, and the owner's reads never wait;
#  (d) STO: an uncommitted INSERT no longer fails the readers of its table
#      (they read at once; the older inserter fails at its commit instead),
#      and DROP INDEX IF EXISTS of no index, which needs no privilege, does
#      not raise the floor that fails STO's older transactions.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = fps_node('fps_limits');
my $log_from = log_offset($node);

# ---------------------------------------------------------------------------
# (a) 40 partitions, more rows than the exact table holds
# ---------------------------------------------------------------------------
$node->safe_psql(
	'postgres', q{
	CREATE TABLE parted (id int, v int NOT NULL) PARTITION BY RANGE (id);
	DO $$ BEGIN
	  FOR p IN 0..39 LOOP
	    EXECUTE format('CREATE TABLE parted_%s PARTITION OF parted FOR VALUES FROM (%s) TO (%s) USING fpsketch',
	                   p, p * 2000, (p + 1) * 2000);
	    EXECUTE format('ALTER TABLE parted_%s ADD PRIMARY KEY (id)', p);
	  END LOOP;
	END $$;
	INSERT INTO parted SELECT g, g % 7 FROM generate_series(0, 79999) g;
	VACUUM ANALYZE parted;
	SELECT fpsketch_stats_reset();});
{
	my ($ret, $out, $err) = $node->psql('postgres',
		'SET max_parallel_workers_per_gather = 0; SELECT count(*), sum(v) FROM parted');
	is("$ret|$out|$err", '0|80000|239994|',
		'(a) count(*) over 40 fpsketch partitions and 80,000 rows commits');
	my $s = wait_idle($node);
	ok($s->{escalations} >= 40,
		"(a) ... every partition escalated ($s->{escalations} escalations)");
	is("$s->{aborts_table_full}|$s->{pinned}|$s->{lock_leaks}", '0|0|0',
		'(a) ... no table-full abort, nothing left pinned');
}

# ---------------------------------------------------------------------------
# (b) an unprivileged role pins all it may, twice; another database works on
# ---------------------------------------------------------------------------
$node->safe_psql(
	'postgres', q{
	CREATE ROLE mallory LOGIN;
	CREATE SCHEMA ms AUTHORIZATION mallory;
	SET ROLE mallory;
	CREATE TABLE ms.mine (id int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	INSERT INTO ms.mine SELECT g, 0 FROM generate_series(1, 10) g;
	RESET ROLE;
	CREATE DATABASE victimdb;});
$node->safe_psql(
	'victimdb', q{
	CREATE EXTENSION fpsketch;
	CREATE TABLE acct (id int PRIMARY KEY, balance int NOT NULL) USING fpsketch;
	INSERT INTO acct SELECT g, 100 FROM generate_series(1, 1000) g;});
$node->safe_psql('postgres', 'SELECT fpsketch_stats_reset()');

my $probe = q{
	DO $$ BEGIN
	  FOR i IN 1..100000 LOOP
	    BEGIN
	      PERFORM 1 FROM ms.mine WHERE id = i;
	    EXCEPTION WHEN OTHERS THEN NULL;
	    END;
	  END LOOP;
	END $$};
my @abusers;
for my $i (1 .. 2)
{
	my $m = FpsTest::Session->new($node, user => 'mallory', app => 'fps_mallory');
	my (undef, $err) = $m->query('SET fpsketch.escalation_threshold = 1000000');
	like($err, qr/42501: permission denied to set parameter "fpsketch\.escalation_threshold"/,
		"(b) abuser $i cannot raise fpsketch.escalation_threshold") if $i == 1;
	(undef, $err) = $m->query('SET fpsketch.max_pins_per_transaction = 1000000');
	like($err, qr/42501: permission denied to set parameter "fpsketch\.max_pins_per_transaction"/,
		"(b) ... nor fpsketch.max_pins_per_transaction") if $i == 1;
	$m->query('SET enable_seqscan = off; SET enable_bitmapscan = off; BEGIN');
	my $t0 = time;
	(undef, $err) = $m->query($probe);
	is($err, '', sprintf("(b) abuser %d's 100,000 probes in EXCEPTION blocks run (%.1f s)",
			$i, time - $t0));
	push @abusers, $m;
}
{
	my $s = stats($node);
	my $pool = int($s->{max_entries} / 2);
	note "(b) while the abusers idle: pinned $s->{pinned}, pool_pins $s->{pool_pins} of $pool, "
	  . "pins_refused $s->{pins_refused}";
	ok($s->{pinned} <= $pool + 2 * int($s->{max_entries} / 4),
		"(b) two abusers pin no more than the pool and their own shares ($s->{pinned} pinned)");
	is($s->{pool_pins}, int($pool / 2), '(b) ... they have taken half the shared pool, their role\'s share');
	ok($s->{pins_refused} > 0 && $s->{pins_refused_role} > 0,
		"(b) ... and were refused past their share ($s->{pins_refused_role} of $s->{pins_refused} refusals for the role's)");

	# another database's transactions, 20 reads and a write each, all commit
	my $v = FpsTest::Session->new($node, db => 'victimdb', app => 'fps_victim');
	$v->query('SET enable_seqscan = off; SET enable_bitmapscan = off');
	my ($ok, $failed) = (0, 0);
	for my $t (0 .. 99)
	{
		my $a = 1 + ($t * 7) % 980;
		my ($out, $err) = $v->query(
			"BEGIN;\n"
			  . join("\n", map { "SELECT balance FROM acct WHERE id = $_;" } $a .. $a + 19)
			  . "\nUPDATE acct SET balance = balance + 1 WHERE id = $a;\nCOMMIT;");
		if ($err eq '') { $ok++; }
		else { $failed++; diag $err if $failed <= 3; $v->query('ROLLBACK'); }
	}
	is("$ok|$failed", '100|0',
		'(b) meanwhile 100 transactions of another database commit, none fails');
	is($node->safe_psql('victimdb', 'SELECT sum(balance) FROM acct'), 100 * 1000 + 100,
		'(b) ... and their writes are there');
	$v->close;
}
$_->query('COMMIT') foreach @abusers;
$_->close foreach @abusers;
{
	my $s = wait_idle($node);
	is("$s->{pinned}|$s->{pool_pins}|$s->{lock_leaks}|$s->{aborts_table_full}", '0|0|0|0',
		'(b) the abusers end: nothing pinned or borrowed, no lock bit leaked, no table-full abort');
}

# ---------------------------------------------------------------------------
# (c) INSERT privilege does not give ACCESS EXCLUSIVE
# ---------------------------------------------------------------------------
$node->safe_psql(
	'postgres', q{
	CREATE ROLE victim LOGIN;
	CREATE TABLE public.vt (id int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	ALTER TABLE public.vt OWNER TO victim;
	GRANT INSERT ON public.vt TO mallory;});
{
	my $m = FpsTest::Session->new($node, user => 'mallory', app => 'fps_mallory');
	$m->query('SET enable_seqscan = off; SET enable_bitmapscan = off; BEGIN');
	my (undef, $err) = $m->query($probe);
	is($err, '', '(c) the INSERT-only user spends its pin budget on its own table');
	(undef, $err) = $m->query('INSERT INTO public.vt SELECT g, 0 FROM generate_series(1, 500) g');
	like($err, qr/ERROR:  54000: transaction writes more rows than fpsketch can track in "vt"/,
		'(c) its INSERT into the victim table past the budget fails with 54000');
	$m->query('ROLLBACK');

	# the same user, INSERT into the victim table while still in the
	# transaction that holds its budget: never ACCESS EXCLUSIVE
	$m->query('BEGIN');
	$m->query($probe);
	$m->send('INSERT INTO public.vt SELECT g, 0 FROM generate_series(1, 500) g');
	my $owner = FpsTest::Session->new($node, user => 'victim', app => 'fps_owner');
	my $t0 = time;
	my ($out, $oerr) = $owner->query('SELECT count(*) FROM public.vt');
	ok(time - $t0 < 5 && $oerr eq '', sprintf('(c) the owner reads its table without waiting (%.2f s)', time - $t0));
	(undef, $err) = $m->wait;
	like($err, qr/54000/, '(c) the unprivileged INSERT failed with 54000 again');
	is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
		WHERE l.relation = 'public.vt'::regclass AND l.mode = 'AccessExclusiveLock' AND a.usename = 'mallory'}),
		'0', '(c) mallory never held ACCESS EXCLUSIVE on the victim table');
	$m->query('ROLLBACK');
	$m->close;
	$owner->close;
	is($node->safe_psql('postgres', 'SELECT write_escalations FROM fpsketch_stats'), '0',
		'(c) no write escalation happened');
}

my @bad = log_problems($node, $log_from, allowed => [qw(40001 42501 54000 25P02)]);
is(join("\n", @bad), '', '(a-c) no unexpected error, no crash in the server log');

# ---------------------------------------------------------------------------
# (d) STO: an insert in flight and no-op DDL do not fail readers
# ---------------------------------------------------------------------------
SKIP:
{
	skip 'this build has no STO', 7 unless grep { $_ eq 'sto' } protocols($node);
	set_conf($node, 'fpsketch.protocol', 'sto');
	$node->restart;
	$log_from = log_offset($node);
	$node->safe_psql('postgres', q{
		CREATE TABLE q (id int PRIMARY KEY, v int NOT NULL) USING fpsketch;
		INSERT INTO q SELECT g, 0 FROM generate_series(1, 100) g;
		SELECT fpsketch_stats_reset();});

	my $ins = FpsTest::Session->new($node, app => 'fps_inserter');
	$ins->query('BEGIN');
	$ins->query('INSERT INTO q VALUES (1000, 1)');
	my $r = FpsTest::Session->new($node, app => 'fps_reader');
	my $t0 = time;
	my ($out, $err) = $r->query('SELECT count(*) FROM q');
	my $took = time - $t0;
	is("$out|$err", '100|', '(d) STO: a reader of a table with an uncommitted insert reads at once');
	ok($took < 0.5, sprintf('(d) ... without waiting (%.3f s; it used to wait deadlock_timeout, then fail)', $took));
	(undef, $err) = $ins->query('COMMIT');
	like($err, qr/40001/, '(d) ... and the older inserter, which that read would have to see, fails at its commit');
	$ins->close;
	$r->close;

	# no-op DROP INDEX from another database, as fast as it goes, while
	# read-only transactions run here
	$node->safe_psql('postgres', 'SELECT fpsketch_stats_reset()');
	my $dropper = FpsTest::Session->new($node, db => 'victimdb', app => 'fps_dropper');
	my $reader = FpsTest::Session->new($node, app => 'fps_reader');
	$reader->query('SET enable_seqscan = off; SET enable_bitmapscan = off');
	my ($ok, $failed) = (0, 0);
	for my $t (1 .. 100)
	{
		$dropper->query('DROP INDEX IF EXISTS no_such_index');
		my (undef, $e) = $reader->query(
			"BEGIN;\nSELECT v FROM q WHERE id = $t;\n"
			  . "SELECT pg_sleep(0.002);\n" . "SELECT v FROM q WHERE id = "
			  . (101 - $t) . ";\nCOMMIT;");
		if ($e eq '') { $ok++; } else { $failed++; $reader->query('ROLLBACK'); }
	}
	is("$ok|$failed", '100|0', '(d) STO: 100 read-only transactions commit beside 100 no-op DROP INDEX');
	is($node->safe_psql('postgres', 'SELECT floor_raises FROM fpsketch_stats'), '0',
		'(d) ... which never raised the floor');
	$dropper->query('CREATE TABLE dq (id int PRIMARY KEY, v int) USING fpsketch; CREATE INDEX dq_v ON dq (v)');
	$node->safe_psql('postgres', 'SELECT fpsketch_stats_reset()');
	$dropper->query('DROP INDEX dq_v');
	is($node->safe_psql('postgres', 'SELECT floor_raises FROM fpsketch_stats'), '1',
		"(d) dropping an index of an fpsketch table does (a replica identity's loss changes row keys)");
	$dropper->close;
	$reader->close;
	@bad = log_problems($node, $log_from);
	is(join("\n", @bad), '', '(d) no unexpected error, no crash in the server log');
}

done_testing();
