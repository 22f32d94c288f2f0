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
#  (d) one role's idle transactions (three, each reading 1000 rows of up to
#      18 tables) hold at most fpsketch.max_pool_pins_per_role, half the
#      pool, whatever SET ROLE says: another role's INSERT of 500 rows into
#      a table it may only insert into, which cannot escalate, commits (it
#      used to fail with 40001 at every retry, "exact table is full").  The
#      hog's own writer gets a 40001 naming its role's share; with two roles
#      at their shares the pool is full and the writer's 40001 says that the
#      pool is held, and by whom, and a retry commits once they end.  The
#      per-role accounting (fpsketch_pool_pins, pool_pins) returns to zero
#      after COMMIT, after ROLLBACK of a failed transaction and after
#      pg_terminate_backend();
#  (e) STO: an uncommitted INSERT no longer fails the readers of its table
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

# ---------------------------------------------------------------------------
# (d) one role cannot hold the pool that others' writers need
# ---------------------------------------------------------------------------
$node->safe_psql(
	'postgres', q{
	CREATE ROLE hog LOGIN;
	CREATE ROLE hog2 LOGIN;
	CREATE ROLE inserter LOGIN;
	GRANT hog2 TO hog;
	CREATE SCHEMA hs AUTHORIZATION hog;
	SET ROLE hog;
	DO $$ BEGIN
	  FOR t IN 1..18 LOOP
	    EXECUTE format('CREATE TABLE hs.t%s (id int PRIMARY KEY, v int NOT NULL) USING fpsketch', t);
	    EXECUTE format('INSERT INTO hs.t%s SELECT g, 0 FROM generate_series(1, 1000) g', t);
	  END LOOP;
	END $$;
	GRANT USAGE ON SCHEMA hs TO hog2;
	GRANT SELECT ON ALL TABLES IN SCHEMA hs TO hog2;
	RESET ROLE;
	VACUUM ANALYZE;
	CREATE TABLE public.ledger (id int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	ALTER TABLE public.ledger OWNER TO victim;
	GRANT INSERT ON public.ledger TO inserter, hog;
	SELECT fpsketch_stats_reset();});
my $max_entries = stats($node)->{max_entries};
my $pool = int($max_entries / 2);
my $role_share = int($pool / 2);

# 1000 row reads of each table given (the escalation threshold: no read
# escalates), in a transaction left open.  Equality-prefix keys, not gap
# keys (one more pin per row read, am/gap.c): the shares below count rows.
sub hog_reads
{
	my (@tables) = @_;
	return 'SET enable_seqscan = off; SET enable_bitmapscan = off; '
	  . 'SET fpsketch.gap_predicates = off; BEGIN;'
	  . join('', map { " SELECT count(*) FROM hs.t$_ WHERE id <= 1000;" } @tables);
}

# the roles that borrow, as "role:transactions:pins,..."
sub pool_roles
{
	my ($ret, $out, $err) = $node->psql('postgres',
		q{SELECT coalesce(string_agg(rolname || ':' || transactions || ':' || pins, ',' ORDER BY rolname), '')
		  FROM fpsketch_pool_pins});
	return $ret == 0 ? $out : $err;
}

my $ledger_id = 0;

# an INSERT of 500 new rows into public.ledger by $user, as its own
# transaction; its error, or ''
sub insert_500
{
	my ($user) = @_;
	my ($from, $to) = ($ledger_id + 1, $ledger_id + 500);
	my ($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nINSERT INTO public.ledger SELECT g, 0 FROM generate_series($from, $to) g",
		extra_params => [ '-U', $user ]);
	$err =~ s/\nLOCATION:.*//s;
	$ledger_id = $to if $err eq '';
	return $err;
}

{
	my @hogs;
	for my $tables ([ 1 .. 9 ], [ 10 .. 18 ], [ 1 .. 18 ])
	{
		my $h = FpsTest::Session->new($node, user => 'hog', app => 'fps_hog');
		my (undef, $err) = $h->query(hog_reads(@$tables));
		is($err, '', sprintf('(d) hog %d reads 1000 rows of each of %d tables and stays idle',
				scalar(@hogs) + 1, scalar(@$tables)));
		push @hogs, $h;
	}
	# another role's write that needs the pool: INSERT only, so it cannot
	# escalate to ACCESS EXCLUSIVE; every one commits
	my @errs = map { insert_500('inserter') } 1 .. 3;
	is(join('|', @errs), '||',
		'(d) meanwhile three INSERTs of 500 rows by a role with only INSERT privilege commit')
	  or diag $errs[0];
	is($node->safe_psql('postgres', 'SELECT count(*) FROM public.ledger'), '1500',
		'(d) ... and their rows are there');

	my $s = stats($node);
	note "(d) hogs idle: pinned $s->{pinned}, pool_pins $s->{pool_pins} of $pool, "
	  . "pins_refused $s->{pins_refused} ($s->{pins_refused_role} for the role's share)";
	is(pool_roles(), "hog:2:$role_share",
		"(d) the three hogs hold their role's share, half the pool ($role_share pins, two of them borrowed)");
	is($s->{pool_pins}, $role_share, '(d) ... and nobody else holds any of the pool');
	ok($s->{pins_refused_role} > 0, '(d) ... the third hog was refused for the role\'s share');

	# nor can a fourth session raise its share, and SET ROLE does not move
	# pins to another role's account
	my $h4 = FpsTest::Session->new($node, user => 'hog', app => 'fps_hog');
	my (undef, $err) = $h4->query('SET fpsketch.max_pool_pins_per_role = 1000000');
	like($err, qr/42501: permission denied to set parameter "fpsketch\.max_pool_pins_per_role"/,
		'(d) the hog cannot raise fpsketch.max_pool_pins_per_role');
	(undef, $err) = $h4->query('SET ROLE hog2; ' . hog_reads(1 .. 18));
	is($err, '', '(d) a fourth hog session, SET ROLE hog2, reads 18,000 rows');
	is(pool_roles(), "hog:2:$role_share", '(d) ... and still borrows nothing: it is hog who logged in');
	$h4->query('ROLLBACK');
	$h4->close;

	# the hog's own writer: its role's share is taken by its other
	# transactions, which a retry can outlast: 40001, and it says so
	$err = insert_500('hog');
	like($err,
		qr/ERROR:  40001: could not serialize access due to the role's other transactions holding its share of the fpsketch pin pool\nDETAIL:  A row of relation "ledger" could not be pinned: the transactions of role "hog" hold $role_share pins of the shared pool, the most one role may hold \(fpsketch\.max_pool_pins_per_role = $role_share\)\.\nHINT:  The transaction might succeed if retried once the role's other transactions have ended/,
		'(d) the hog\'s own INSERT of 500 rows fails with 40001 naming its role\'s share')
	  or diag $err;

	# a second role at its share: now the pool is full, and the writer's
	# 40001 says who holds it (not that the exact table is full)
	my $h2 = FpsTest::Session->new($node, user => 'hog2', app => 'fps_hog2');
	(undef, $err) = $h2->query(hog_reads(1 .. 18));
	is($err, '', '(d) hog2 (another role) reads 18,000 rows and stays idle');
	is(pool_roles(), "hog:2:$role_share,hog2:1:$role_share", '(d) ... holding its own role\'s share');
	$err = insert_500('inserter');
	like($err,
		qr/ERROR:  40001: could not serialize access due to other transactions holding the fpsketch pin pool\nDETAIL:  A row of relation "ledger" could not be pinned: the shared pool is held by other transactions \($pool of its $pool pins\); role "hog2?" holds the most, $role_share pins\.\nHINT:  The transaction might succeed if retried once they have ended; fpsketch_pool_pins shows what each role holds/,
		'(d) with two roles at their shares the pool is full: the INSERT gets 40001 saying who holds the pool')
	  or diag $err;
	unlike($err, qr/exact table is full/, '(d) ... and not that the exact table is full');
	is(stats($node)->{aborts_pool_held}, '2', '(d) ... counted in aborts_pool_held (with the hog\'s)');
	$h2->query('COMMIT');
	$h2->close;
	is(insert_500('inserter'), '', '(d) once hog2 has ended, the retry commits');

	# the hogs end: by COMMIT, by ROLLBACK of a failed transaction, and by
	# pg_terminate_backend() while idle in transaction
	$hogs[0]->query('COMMIT');
	$hogs[0]->close;
	my $left = pool_roles();
	like($left, qr/^hog:1:\d+$/, "(d) the first hog commits: one borrowing transaction left ($left)");
	(undef, $err) = $hogs[1]->query('SELECT 1 / 0');
	like($err, qr/22012/, '(d) the second hog fails');
	$hogs[1]->query('ROLLBACK');
	$hogs[1]->close;
	is(pool_roles(), '', '(d) ... and rolls back: its role borrows nothing any more');
	my $pid = $hogs[2]->pid;
	(undef, $err) = $hogs[2]->query(hog_reads(1 .. 18) =~ s/BEGIN;/COMMIT; BEGIN;/r);
	is($err, '', '(d) the third hog commits and reads 18,000 rows again');
	is(pool_roles(), "hog:1:$role_share", '(d) the third hog, alone now, borrows its role\'s share');
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
	$node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid")
	  or die "backend $pid did not exit";
	$hogs[2]->close;
	is(pool_roles(), '', '(d) ... and once terminated, it holds nothing');
	$s = wait_idle($node);
	is("$s->{pinned}|$s->{pool_pins}|$s->{lock_leaks}|$s->{aborts_table_full}", '0|0|0|0',
		'(d) all ended: nothing pinned or borrowed, no lock bit leaked, no table-full abort');
}

my @bad = log_problems($node, $log_from, allowed => [qw(40001 42501 54000 25P02 22012 57P01)]);
is(join("\n", @bad), '', '(a-d) no unexpected error, no crash in the server log');

# ---------------------------------------------------------------------------
# (e) STO: an insert in flight and no-op DDL do not fail readers
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
	is("$out|$err", '100|', '(e) STO: a reader of a table with an uncommitted insert reads at once');
	ok($took < 0.5, sprintf('(e) ... without waiting (%.3f s; it used to wait deadlock_timeout, then fail)', $took));
	(undef, $err) = $ins->query('COMMIT');
	like($err, qr/40001/, '(e) ... and the older inserter, which that read would have to see, fails at its commit');
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
	is("$ok|$failed", '100|0', '(e) STO: 100 read-only transactions commit beside 100 no-op DROP INDEX');
	is($node->safe_psql('postgres', 'SELECT floor_raises FROM fpsketch_stats'), '0',
		'(e) ... which never raised the floor');
	$dropper->query('CREATE TABLE dq (id int PRIMARY KEY, v int) USING fpsketch; CREATE INDEX dq_v ON dq (v)');
	$node->safe_psql('postgres', 'SELECT fpsketch_stats_reset()');
	$dropper->query('DROP INDEX dq_v');
	is($node->safe_psql('postgres', 'SELECT floor_raises FROM fpsketch_stats'), '1',
		"(e) dropping an index of an fpsketch table does (a replica identity's loss changes row keys)");
	$dropper->close;
	$reader->close;
	@bad = log_problems($node, $log_from);
	is(join("\n", @bad), '', '(e) no unexpected error, no crash in the server log');
}

done_testing();
