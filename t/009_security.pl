# 009_security.pl: what an unprivileged role can do with fpsketch's
# functions and its configuration table (the findings of issue 17).  Each
# part runs as roles the test creates ("mallory", who owns some tables,
# and "alice", who owns others), never as a superuser unless it says so.
#
#  (1) NULL arguments: fpsketch_set_column_group with a NULL relation or
#      group name fails with 22004 instead of crashing the server; rows
#      inserted into fpsketch_column_group with NULLs, NULL elements, or
#      the restore trigger attached to a table of other column types fail
#      cleanly; the server never restarts and the same backend answers;
#  (2) no lock before the permission check: while another session holds a
#      lock on a table, a non-owner's fpsketch_set_column_group on it (or on
#      pg_authid, by OID) fails with 42501 at once, without queueing for
#      ACCESS EXCLUSIVE, so a third session's SELECT (or a new login) does
#      not wait; a table given by OID still needs USAGE on its schema, and
#      that is checked again once the lock is granted;
#  (5) search_path: trojan operators and functions created beforehand in a
#      schema on the installer's search_path (public, writable by everyone
#      as before PostgreSQL 15) are never called by CREATE EXTENSION, the
#      views fpsketch_column_groups, fpsketch_relation_stats and
#      fpsketch_conflict_columns or the event triggers;
#  (7) dump and restore: the non-superuser owner of a database can pg_dump
#      it; dropping a group's last column drops the group, dropping one of
#      its columns drops the column from it; a restore (plain format in one
#      transaction, custom format with pg_restore, and by the database
#      owner) skips rows whose columns no longer resolve, with a WARNING,
#      and keeps every other group; an owner can restore (INSERT) their own
#      groups, a non-owner cannot insert, change or delete another's;
#  (8) the configuration table has an index on rel, and the relcache build
#      of an fpsketch table uses it (with 3000 other tables' groups).
#
# FPS_SEC_PARTS=1,2 runs only the parts listed.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my %part = map { $_ => 1 } split /,/, ($ENV{FPS_SEC_PARTS} // '1,2,5,7,8');

my $node = fps_node('fps_security');
$node->safe_psql(
	'postgres', q{
	CREATE ROLE mallory LOGIN;
	CREATE ROLE alice LOGIN;
	CREATE SCHEMA ms AUTHORIZATION mallory;
	SET ROLE mallory;
	CREATE TABLE ms.mine (id int PRIMARY KEY, a int, b int) USING fpsketch;
	INSERT INTO ms.mine VALUES (1, 1, 1);
	RESET ROLE;
	CREATE TABLE public.victim (id int PRIMARY KEY, a int, b int) USING fpsketch;
	INSERT INTO public.victim VALUES (1, 1, 1);
	GRANT SELECT ON public.victim TO PUBLIC;});

# the first SQLSTATE of an ERROR in psql's (verbose) stderr, or ''
sub sqlstate
{
	my ($err) = @_;
	return $err =~ /ERROR:  ([0-9A-Z]{5}):/ ? $1 : '';
}

# a session as $role (FpsTest::Session connects as $PGUSER)
sub session_as
{
	my ($role, %p) = @_;
	local $ENV{PGUSER} = $role;
	return FpsTest::Session->new($node, %p);
}

# lock requests of backend $pid not granted (it is queueing for a lock),
# asked in a session connected beforehand: a new connection would itself
# wait behind a request for pg_authid
my $monitor;
sub waiting_locks
{
	my ($pid) = @_;
	$monitor //= FpsTest::Session->new($node);
	return scalar $monitor->query(
		"SELECT count(*) FROM pg_locks WHERE pid = $pid AND NOT granted");
}

sub crashed
{
	my ($offset) = @_;
	my $log = slurp_file($node->logfile, $offset);
	return join("\n",
		grep { /terminated by signal|was terminated by|all server processes terminated|PANIC/ }
		  split /\n/, $log);
}

# ---------------------------------------------------------------------------
# (1) NULL arguments and rows the C code must not trust
# ---------------------------------------------------------------------------
if ($part{1})
{
	my $offset = log_offset($node);
	my $m = session_as('mallory');
	my ($out, $err);

	($out, $err) = $m->query("SELECT fpsketch_set_column_group('ms.mine', 'gb', ARRAY['b'])");
	is($err, '', '(1) mallory declares a group on her own table');
	($out, $err) = $m->query("SELECT fpsketch_set_column_group('ms.mine', NULL, ARRAY['a'])");
	is(sqlstate($err), '22004', '(1) NULL group name: 22004, no crash') or diag $err;
	($out, $err) = $m->query("SELECT fpsketch_set_column_group(NULL, 'ga', ARRAY['a'])");
	is(sqlstate($err), '22004', '(1) NULL relation: 22004') or diag $err;
	($out, $err) = $m->query("SELECT fpsketch_set_column_group(NULL, NULL, NULL)");
	is(sqlstate($err), '22004', '(1) all arguments NULL: 22004') or diag $err;
	($out, $err) = $m->query("SELECT fpsketch_set_column_group('ms.mine', 'ga', ARRAY[NULL]::name[])");
	is(sqlstate($err), '22004', '(1) a NULL column name: 22004') or diag $err;
	($out, $err) = $m->query("SELECT fpsketch_set_column_group('ms.mine', 'ga', '{{a},{b}}'::name[])");
	is(sqlstate($err), '22023', '(1) a two-dimensional column list: 22023') or diag $err;
	($out, $err) = $m->query("SELECT fpsketch_set_column_group('ms.mine', 'nosuch', NULL)");
	is($err, '', '(1) NULL columns still drop a group (none here: nothing to do)');
	is($m->alive && $m->query('SELECT pg_backend_pid()'), $m->pid,
		'(1) the same backend answers after the calls');

	# rows inserted into the configuration table fire the restore trigger,
	# which sees the row before the NOT NULL constraints are checked
	my $s = FpsTest::Session->new($node);
	($out, $err) = $s->query(
		"INSERT INTO fpsketch_column_group VALUES ('ms.mine', NULL, 3, NULL, '{a}')");
	is(sqlstate($err), '23502', '(1) a row without a group name: 23502, no crash') or diag $err;
	($out, $err) = $s->query(
		"INSERT INTO fpsketch_column_group VALUES (NULL, 'x', 3, NULL, '{a}')");
	is(sqlstate($err), '23502', '(1) a row without a relation: 23502') or diag $err;
	($out, $err) = $s->query(
		"INSERT INTO fpsketch_column_group VALUES ('ms.mine', 'x', 3, NULL, ARRAY[NULL]::name[])");
	is(sqlstate($err), '22004', '(1) a row with a NULL column name: 22004, no crash') or diag $err;
	($out, $err) = $s->query(
		"INSERT INTO fpsketch_column_group VALUES ('ms.mine', 'x', 3, NULL, '{{a},{b}}')");
	is(sqlstate($err), '22023', '(1) a row with a two-dimensional column list: 22023') or diag $err;
	# the trigger function attached (by a superuser) to a table of other types
	($out, $err) = $s->query(
		q{CREATE TABLE not_groups (rel int, group_name int, groupno int, attnums int, columns int);
		  CREATE TRIGGER not_groups BEFORE INSERT ON not_groups
			FOR EACH ROW EXECUTE FUNCTION fpsketch_column_group_restore();
		  INSERT INTO not_groups VALUES ('ms.mine'::regclass::oid::int, 2, 3, 4, 5)});
	is(sqlstate($err), '39P01',
		'(1) the restore trigger on a table of other column types: 39P01, no crash') or diag $err;
	($out, $err) = $s->query('SELECT fpsketch_column_group_restore()');
	is(sqlstate($err), '39P01', '(1) the trigger function called directly: 39P01')
	  or diag $err;
	is($s->alive && $s->query('SELECT pg_backend_pid()'), $s->pid,
		'(1) the same superuser backend answers afterwards');
	is($s->query(q{SELECT string_agg(group_name || ':' || columns::text, ',')
		FROM fpsketch_column_group WHERE rel = 'ms.mine'::regclass}),
		'gb:{b}', '(1) mallory\'s table has exactly the group she declared');
	$s->query('DROP TABLE not_groups');
	is(crashed($offset), '', '(1) no server process crashed, no restart');
	$m->close;
	$s->close;
}

# ---------------------------------------------------------------------------
# (2) the permission check comes before the lock
# ---------------------------------------------------------------------------
if ($part{2})
{
	my $offset = log_offset($node);
	my $holder = FpsTest::Session->new($node);
	my $m = session_as('mallory');
	waiting_locks($m->pid);    # connect the monitor now
	my ($out, $err, $t0, $waits);

	$holder->query('BEGIN; SELECT count(*) FROM public.victim');
	$m->query("SET statement_timeout = '10s'");
	$t0 = time;
	$m->send("SELECT fpsketch_set_column_group('public.victim', 'g', ARRAY['a'])");
	usleep(500_000);
	$waits = waiting_locks($m->pid);
	# a reader that arrives now must not queue behind mallory's request
	my ($ret, $rout, $rerr);
	$ret = $node->psql('postgres',
		"SET lock_timeout = '2s'; SELECT count(*) FROM public.victim",
		stdout => \$rout, stderr => \$rerr, extra_params => [ '-U', 'alice' ]);
	($out, $err) = $m->wait;
	my $elapsed = time - $t0;
	is(sqlstate($err), '42501', '(2) non-owner on a locked table: 42501') or diag $err;
	# (the 0.5 s sleep and the third session are in it)
	ok($elapsed < 4, sprintf('(2) ... at once (%.2f s), not after statement_timeout', $elapsed));
	is($waits, '0', '(2) ... without queueing for a lock');
	is("$ret|$rout", '0|1', '(2) a third session\'s SELECT on the table does not wait')
	  or diag $rerr;
	$holder->query('COMMIT');

	# pg_authid, by OID: nobody may queue ACCESS EXCLUSIVE on it
	$holder->query('BEGIN; LOCK TABLE pg_authid IN ACCESS SHARE MODE');
	waiting_locks($m->pid);    # connect the monitor now
	$t0 = time;
	$m->send("SELECT fpsketch_set_column_group(1260::oid, 'g', ARRAY['rolname'])");
	usleep(500_000);
	$waits = waiting_locks($m->pid);
	my $timed_out = 0;
	$ret = $node->psql('postgres', 'SELECT 1',
		stdout => \$rout, stderr => \$rerr, extra_params => [ '-U', 'alice' ],
		timeout => 3, timed_out => \$timed_out);
	($out, $err) = $m->wait;
	$elapsed = time - $t0;
	is(sqlstate($err), '42501', '(2) pg_authid by OID: 42501') or diag $err;
	ok($elapsed < 4, sprintf('(2) ... at once (%.2f s)', $elapsed));
	is($waits, '0', '(2) ... without queueing for a lock on pg_authid');
	ok(!$timed_out && $ret == 0, '(2) a new login meanwhile does not wait') or diag $rerr;
	$holder->query('COMMIT');

	# by OID, a table of mallory's in a schema she has no USAGE on
	$node->safe_psql(
		'postgres', q{
		CREATE SCHEMA hidden;
		CREATE TABLE hidden.t (id int PRIMARY KEY, a int) USING fpsketch;
		ALTER TABLE hidden.t OWNER TO mallory;
		CREATE SCHEMA shared;
		GRANT USAGE ON SCHEMA shared TO mallory;
		CREATE TABLE shared.t (id int PRIMARY KEY, a int) USING fpsketch;
		ALTER TABLE shared.t OWNER TO mallory;
		GRANT SELECT ON shared.t TO PUBLIC;});
	my $hidden = $node->safe_psql('postgres', q{SELECT 'hidden.t'::regclass::oid});
	($out, $err) = $m->query("SELECT fpsketch_set_column_group($hidden, 'g', ARRAY['a'])");
	is(sqlstate($err), '42501', '(2) by OID in a schema without USAGE: 42501') or diag $err;

	# USAGE is checked again once the lock is granted: it was revoked while
	# mallory (the owner, allowed to wait) queued for the lock
	$holder->query('BEGIN; SELECT count(*) FROM shared.t');
	$m->send("SELECT fpsketch_set_column_group('shared.t', 'g', ARRAY['a'])");
	usleep(500_000);
	is(waiting_locks($m->pid), '1', '(2) the owner queues for the lock');
	$node->safe_psql('postgres', 'REVOKE USAGE ON SCHEMA shared FROM mallory');
	$holder->query('COMMIT');
	($out, $err) = $m->wait;
	is(sqlstate($err), '42501', '(2) USAGE revoked while waiting: 42501 after the lock')
	  or diag $err;
	is($node->safe_psql('postgres',
			q{SELECT count(*) FROM fpsketch_column_group
			   WHERE rel IN ('hidden.t'::regclass, 'shared.t'::regclass, 'victim'::regclass)}),
		'0', '(2) no group was declared on those tables');
	is(crashed($offset), '', '(2) no server process crashed');
	$m->close;
	$holder->close;
}

# ---------------------------------------------------------------------------
# (5) trojans on the installer's search_path
# ---------------------------------------------------------------------------
if ($part{5})
{
	$node->safe_psql('postgres', 'CREATE DATABASE trojan');
	$node->safe_psql('trojan', 'GRANT CREATE ON SCHEMA public TO PUBLIC');
	# each trojan records its call (as whoever calls it: the superuser)
	# and then does what the real one does
	$node->safe_psql(
		'trojan', q{
		SET ROLE mallory;
		CREATE TABLE public.trojan_calls (caller name, what text);
		GRANT INSERT ON public.trojan_calls TO PUBLIC;
		CREATE FUNCTION public.trojan_eq(oid, regclass) RETURNS bool LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.trojan_calls VALUES (current_user, '=(oid, regclass)');
			RETURN $1 OPERATOR(pg_catalog.=) $2::pg_catalog.oid;
		END $$;
		CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regclass, FUNCTION = public.trojan_eq);
		CREATE FUNCTION public.trojan_eq(regclass, oid) RETURNS bool LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.trojan_calls VALUES (current_user, '=(regclass, oid)');
			RETURN $1::pg_catalog.oid OPERATOR(pg_catalog.=) $2;
		END $$;
		CREATE OPERATOR public.= (LEFTARG = regclass, RIGHTARG = oid, FUNCTION = public.trojan_eq);
		CREATE FUNCTION public.unnest(int2[]) RETURNS SETOF int2 LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.trojan_calls VALUES (current_user, 'unnest(int2[])');
			RETURN QUERY SELECT pg_catalog.unnest($1);
		END $$;
		CREATE FUNCTION public.unnest(name[]) RETURNS SETOF name LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.trojan_calls VALUES (current_user, 'unnest(name[])');
			RETURN QUERY SELECT pg_catalog.unnest($1);
		END $$;
		CREATE FUNCTION public.cardinality(int2[]) RETURNS int LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.trojan_calls VALUES (current_user, 'cardinality(int2[])');
			RETURN pg_catalog.cardinality($1);
		END $$;
		CREATE FUNCTION public.array_length(int2[], int) RETURNS int LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.trojan_calls VALUES (current_user, 'array_length(int2[], int)');
			RETURN pg_catalog.array_length($1, $2);
		END $$;
		CREATE FUNCTION public.trojan_ge(int2, int) RETURNS bool LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.trojan_calls VALUES (current_user, '>=(int2, int)');
			RETURN $1 OPERATOR(pg_catalog.>=) $2;
		END $$;
		CREATE OPERATOR public.>= (LEFTARG = int2, RIGHTARG = int, FUNCTION = public.trojan_ge);});

	# the superuser installs the extension and uses it, with public first
	# on the search path
	my ($ret, $out, $err);
	$ret = $node->psql(
		'trojan', q{
		SET search_path = public, pg_catalog;
		CREATE EXTENSION fpsketch;
		CREATE TABLE t (id int PRIMARY KEY, a int, b int, c int, d int) USING fpsketch;
		INSERT INTO t VALUES (1, 1, 1, 1, 1);
		SELECT fpsketch_set_column_group('t', 'ab', ARRAY['a', 'b']);
		SELECT fpsketch_set_column_group('t', 'c', ARRAY['c']);
		SELECT relation, group_name, columns FROM fpsketch_column_groups;
		ALTER TABLE t RENAME COLUMN a TO a2;
		ALTER TABLE t DROP COLUMN c;
		SELECT relation, group_name, columns FROM fpsketch_column_groups;
		INSERT INTO fpsketch_column_group VALUES ('t', 'restored', 9, NULL, '{d}');
		CREATE TABLE u (id int PRIMARY KEY, x int) USING fpsketch;
		SELECT fpsketch_set_column_group('u', 'x', ARRAY['x']);
		DROP TABLE u;
		SELECT count(*) FROM fpsketch_stats;
		SELECT count(*) FROM fpsketch_relation_stats;
		SELECT count(*) FROM fpsketch_conflict_columns;},
		stdout => \$out, stderr => \$err, on_error_stop => 1);
	is($ret, 0, '(5) the superuser\'s session with public first on its search_path runs')
	  or diag $err;
	like($out, qr/t\|ab\|\{a2,b\}/, '(5) the view shows the renamed column');
	is($node->safe_psql('trojan',
			q{SELECT coalesce(string_agg(DISTINCT what || ' as ' || caller, ', '), 'none')
			  FROM public.trojan_calls}),
		'none', '(5) no trojan operator or function was called');
	is($node->safe_psql('trojan', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}),
		'f', '(5) mallory is not a superuser');
}

# ---------------------------------------------------------------------------
# (7) dump and restore by ordinary users
# ---------------------------------------------------------------------------
if ($part{7})
{
	my $dumpdir = PostgreSQL::Test::Utils::tempdir();
	my ($ret, $out, $err);
	$node->safe_psql('postgres', 'CREATE DATABASE shop OWNER mallory');
	$node->safe_psql('shop', 'CREATE EXTENSION fpsketch');
	$node->psql(
		'shop', q{
		GRANT CREATE ON SCHEMA public TO alice;
		CREATE TABLE t1 (id int PRIMARY KEY, a int, b int, c int, d int) USING fpsketch;
		INSERT INTO t1 VALUES (1, 1, 1, 1, 1);
		SELECT fpsketch_set_column_group('t1', 'ga', ARRAY['a']);
		SELECT fpsketch_set_column_group('t1', 'gb', ARRAY['b']);
		SELECT fpsketch_set_column_group('t1', 'gcd', ARRAY['c', 'd']);
		CREATE TABLE was_fps (id int PRIMARY KEY, a int) USING fpsketch;
		SELECT fpsketch_set_column_group('was_fps', 'ga', ARRAY['a']);
		ALTER TABLE was_fps SET ACCESS METHOD heap;},
		extra_params => [ '-U', 'mallory' ], on_error_stop => 1, stderr => \$err);
	is($err, '', '(7) mallory creates her tables and groups') or diag $err;
	$node->safe_psql(
		'shop', q{
		CREATE TABLE t2 (id int PRIMARY KEY, x int, y int) USING fpsketch;
		INSERT INTO t2 VALUES (1, 1, 1);
		SELECT fpsketch_set_column_group('t2', 'gx', ARRAY['x']);
		-- the database owner dumps the tables she may read
		GRANT SELECT ON t2 TO mallory;},
		extra_params => [ '-U', 'alice' ]);

	# dropping columns: gb loses its only column, gcd one of two
	$node->safe_psql('shop', 'ALTER TABLE t1 DROP COLUMN b; ALTER TABLE t1 DROP COLUMN c',
		extra_params => [ '-U', 'mallory' ]);
	is($node->safe_psql('shop',
			q{SELECT string_agg(rel::text || ':' || group_name || ':' || attnums::text || ':' || columns::text,
				',' ORDER BY rel::text, groupno) FROM fpsketch_column_group}),
		't1:ga:{2}:{a},t1:gcd:{5}:{d},t2:gx:{2}:{x},was_fps:ga:{2}:{a}',
		'(7) a dropped column leaves its groups, a group without columns is gone');

	# a non-owner cannot insert, change or delete another's groups
	my %denied = (
		insert => q{INSERT INTO fpsketch_column_group VALUES ('t1', 'evil', 9, NULL, '{d}')},
		update => q{UPDATE fpsketch_column_group SET columns = '{}'},
		delete => q{DELETE FROM fpsketch_column_group},
		truncate => q{TRUNCATE fpsketch_column_group},
		set_column_group => q{SELECT fpsketch_set_column_group('t1', 'ga', NULL)},
		copy => "COPY fpsketch_column_group FROM STDIN;\npublic.t1\tevil\t9\t{}\t{d}\tdeclared\n\\.");
	foreach my $what (sort keys %denied)
	{
		$node->psql('shop', "\\set VERBOSITY verbose\n$denied{$what}",
			stderr => \$err, extra_params => [ '-U', 'alice' ]);
		is(sqlstate($err), '42501', "(7) alice cannot $what mallory's groups: 42501")
		  or diag $err;
	}
	# ... nor can mallory, alice's
	$node->psql('shop',
		"\\set VERBOSITY verbose\nINSERT INTO fpsketch_column_group VALUES ('t2', 'evil', 9, NULL, '{y}')",
		stderr => \$err, extra_params => [ '-U', 'mallory' ]);
	is(sqlstate($err), '42501', "(7) mallory cannot insert a group of alice's table") or diag $err;

	# an owner can insert (restore) a group of her own table; bad rows from
	# her fail cleanly
	$node->psql(
		'shop', q{
		\set VERBOSITY verbose
		CREATE TABLE t3 (id int PRIMARY KEY, p int, q int) USING fpsketch;
		INSERT INTO fpsketch_column_group VALUES ('t3', 'gp', 3, '{7}', '{p}');
		INSERT INTO fpsketch_column_group VALUES ('t3', NULL, 4, NULL, '{q}');
		INSERT INTO fpsketch_column_group VALUES ('t3', 'gq', 4, NULL, ARRAY[NULL]::name[]);},
		stderr => \$err, extra_params => [ '-U', 'mallory' ], on_error_stop => 0);
	like($err, qr/ERROR:  23502/, '(7) mallory\'s row without a name: 23502');
	like($err, qr/ERROR:  22004/, '(7) mallory\'s row with a NULL column name: 22004');
	is($node->safe_psql('shop',
			q{SELECT group_name || ':' || attnums::text FROM fpsketch_column_group WHERE rel = 't3'::regclass}),
		'gp:{2}', '(7) mallory restores a group of her own table by INSERT (attnums from the names)');

	# what an older build left behind: a group without columns, one with a
	# column that no longer exists (inserted below the triggers)
	$node->safe_psql(
		'shop', q{
		SET session_replication_role = replica;
		INSERT INTO fpsketch_column_group VALUES ('t1', 'empty', 6, '{}', '{}');
		INSERT INTO fpsketch_column_group VALUES ('t2', 'stale', 5, '{9}', '{vanished}');});

	# (a) the database owner dumps it
	my @dump = ('pg_dump', '-U', 'mallory', '-d', $node->connstr('shop'));
	my $dumped_by = 'mallory';
	my $ok = $node->command_ok([ @dump, '-Fp', '-f', "$dumpdir/shop.sql" ],
		'(7a) pg_dump -Fp as the non-superuser owner of the database');
	$ok &= $node->command_ok([ @dump, '-Fc', '-f', "$dumpdir/shop.dump" ],
		'(7a) pg_dump -Fc as the non-superuser owner of the database');
	unless ($ok)
	{
		# go on with a superuser's dump, to test the restores anyway
		$dumped_by = 'the superuser';
		$node->command_ok([ 'pg_dump', '-Fp', '-f', "$dumpdir/shop.sql", '-d', $node->connstr('shop') ],
			'(7a) (pg_dump -Fp as the superuser)');
		$node->command_ok([ 'pg_dump', '-Fc', '-f', "$dumpdir/shop.dump", '-d', $node->connstr('shop') ],
			'(7a) (pg_dump -Fc as the superuser)');
	}
	my $groups_q = q{SELECT string_agg(rel::text || ':' || group_name || ':' || attnums::text || ':' || columns::text,
		',' ORDER BY rel::text, groupno) FROM fpsketch_column_group};
	# the groups of $db, or the error (the restore may have failed)
	my $groups = sub {
		my ($db) = @_;
		my ($o, $e);
		$node->psql($db, $groups_q, stdout => \$o, stderr => \$e);
		return $e ? $e : $o;
	};
	my $want = 't1:ga:{2}:{a},t1:gcd:{3}:{d},t2:gx:{2}:{x},t3:gp:{2}:{p}';

	# (b) plain format, one transaction
	$node->safe_psql('postgres', 'CREATE DATABASE shop_plain');
	$ret = $node->psql('shop_plain', '',
		extra_params => [ '-1', '-f', "$dumpdir/shop.sql" ],
		on_error_stop => 1, stdout => \$out, stderr => \$err);
	is($ret, 0, "(7b) psql -1 restores the plain dump (by $dumped_by)") or diag $err;
	like($err, qr/WARNING:  column group "empty" of "t1" is not restored/,
		'(7b) ... with a WARNING for the group without columns');
	like($err, qr/WARNING:  column group "stale" of "t2" is not restored.*\nDETAIL:  Column "vanished" of relation "t2" does not exist/,
		'(7b) ... and one for the group whose column is gone');
	like($err, qr/WARNING:  column group "ga" of "was_fps" is not restored.*\nDETAIL:  "was_fps" is not an fpsketch table/,
		'(7b) ... and one for the table that is no longer fpsketch');
	is($groups->('shop_plain'), $want, '(7b) every other group is restored');

	# custom format, pg_restore (as a superuser)
	$node->safe_psql('postgres', 'CREATE DATABASE shop_custom');
	$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('shop_custom'),
			"$dumpdir/shop.dump" ], '(7b) pg_restore of the custom dump');
	is($groups->('shop_custom'), $want, '(7b) pg_restore: every other group');

	# pg_restore by the owner of the new database (the extension is there)
	$node->safe_psql('postgres', 'CREATE DATABASE shop_owner OWNER mallory');
	$node->safe_psql('shop_owner', 'CREATE EXTENSION fpsketch');
	my ($rout, $rerr);
	IPC::Run::run([ 'pg_restore', '-U', 'mallory', '--no-owner', '--no-acl', '-d',
			$node->connstr('shop_owner'), "$dumpdir/shop.dump" ],
		'>', \$rout, '2>', \$rerr);
	my @errors = grep { /error:/ && !/must be owner of extension fpsketch/ } split /\n/, $rerr;
	is(join("\n", @errors), '',
		'(7b) pg_restore --no-owner by the database owner: no error but the extension\'s comment');
	is($groups->('shop_owner'), $want,
		'(7b) the database owner restores every group');
}

# ---------------------------------------------------------------------------
# (8) the configuration table's index
# ---------------------------------------------------------------------------
if ($part{8})
{
	$node->safe_psql('postgres', 'CREATE DATABASE many OWNER mallory');
	$node->safe_psql('many', 'CREATE EXTENSION fpsketch');
	my $t0 = time;
	$node->safe_psql(
		'many', q{
		CREATE TABLE probe (id int PRIMARY KEY, a int, b int) USING fpsketch;
		INSERT INTO probe VALUES (1, 1, 1);
		GRANT SELECT ON probe TO PUBLIC;
		SELECT fpsketch_set_column_group('probe', 'ga', ARRAY['a']);
		DO $$
		BEGIN
			FOR i IN 1 .. 3000 LOOP
				EXECUTE format('CREATE TABLE t%s (id int PRIMARY KEY, a int, b int) USING fpsketch', i);
				PERFORM fpsketch_set_column_group(format('t%s', i), 'ga', ARRAY['a']);
				PERFORM fpsketch_set_column_group(format('t%s', i), 'gb', ARRAY['b']);
				IF i % 100 = 0 THEN
					COMMIT;
				END IF;
			END LOOP;
		END $$;},
		extra_params => [ '-U', 'mallory' ]);
	note(sprintf('(8) 3000 tables with 2 groups each created in %.1f s', time - $t0));

	my $idx = q{SELECT coalesce((SELECT idx_scan FROM pg_stat_user_indexes
		WHERE relname = 'fpsketch_column_group' AND indexrelname = 'fpsketch_column_group_rel_idx'), -1)};
	my $before = $node->safe_psql('many', $idx);
	isnt($before, '-1', '(8) fpsketch_column_group has the index on rel');

	# a new connection's first query on probe builds its relcache entry
	my @ms;
	for my $i (1 .. 5)
	{
		my $o = $node->safe_psql('many',
			"\\timing on\nSELECT a FROM probe WHERE id = 1;",
			extra_params => [ '-U', 'alice' ]);
		push @ms, $1 if $o =~ /Time: ([\d.]+) ms/;
	}
	@ms = sort { $a <=> $b } @ms;
	note("(8) first query on an fpsketch table in a new connection, 6001 groups: median $ms[2] ms (@ms)");
	my $after = $before;
	for (my $i = 0; $i < 100 && $after <= $before; $i++)
	{
		usleep(100_000);
		$after = $node->safe_psql('many', $idx);
	}
	cmp_ok($after, '>=', $before + 5, "(8) ... and each scanned the index ($before -> $after)");

	# set_column_group's rows have their index entries
	$node->safe_psql('many', 'CREATE EXTENSION amcheck');
	is($node->safe_psql('many',
			q{SELECT bt_index_check('fpsketch_column_group_rel_idx', true)}),
		'', '(8) the index has an entry for every row (bt_index_check heapallindexed)');

	# the groups still work: a read of a pins group 0 and ga (and no prefix
	# key: the lookup by primary key finds its row, am/point_lookup.c)
	is($node->safe_psql('many', q{
		SET enable_seqscan = off; SET enable_bitmapscan = off;
		BEGIN; SELECT a FROM probe WHERE id = 1; SELECT pinned FROM fpsketch_stats; COMMIT;}),
		"1\n2", '(8) the groups found through the index are in effect');
}

my @problems = log_problems($node, 0,
	allowed => [qw(22004 22023 23502 39P01 0A000 42501 42P01 55P03 57014 42809)]);
is(join("\n", @problems), '', 'no unexpected error, PANIC or crash in the server log');

done_testing();
