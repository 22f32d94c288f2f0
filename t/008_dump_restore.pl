# 008_dump_restore.pl: pg_dump and restore of a database with fpsketch
# tables and column groups.
#
# The source database has the TPC-C-like tables USING fpsketch, with the
# column groups bench/tpcc/indexes.sql declares, and a table "g" whose
# grouped columns come after a dropped column (so their attribute numbers
# change in a restored table) and one of which was renamed after its group
# was declared.
#
#  (a) pg_dump -Fc, pg_restore into a new database: the same tables with the
#      same access methods and rows, the same column groups by name, and
#      attribute numbers that are the restored table's own;
#  (b) the same with a plain-format dump replayed by psql in one transaction;
#  (c) the restored groups are in effect: a transaction that read a column and
#      then updates it commits although another updated a column of another
#      group of the row meanwhile; on a restored table without groups the same
#      interleaving fails with 40001 (the control);
#  (d) the restored TPC-C tables pass the consistency checks and amcheck, and a
#      short New-Order + Payment load on them runs without client errors;
#  (e) pg_dump of the source while a New-Order + Payment load runs on it (4
#      clients): pg_dump (REPEATABLE READ READ ONLY) and pg_dump
#      --serializable-deferrable complete, their transactions read the
#      fpsketch tables at a timestamp, and each restore is one consistent TPC-C
#      state: the twelve consistency conditions hold on it.  (Before timestamp
#      snapshots every COPY of a table being written failed with 40001.)

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);

my $node = fps_node('fps_dump');
$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', 'CREATE EXTENSION fpsketch; CREATE EXTENSION amcheck;');
tpcc_setup($node, am => 'fpsketch', db => 'src');
$node->safe_psql(
	'src', q{
	CREATE TABLE g (id int PRIMARY KEY, gone int, a int NOT NULL, b int NOT NULL, note text)
		USING fpsketch;
	ALTER TABLE g DROP COLUMN gone;
	INSERT INTO g SELECT i, i, 2 * i, 'row ' || i FROM generate_series(1, 100) i;
	SELECT fpsketch_set_column_group('g', 'ga', ARRAY['a']);
	SELECT fpsketch_set_column_group('g', 'gb', ARRAY['b']);
	ALTER TABLE g RENAME COLUMN b TO b2;
	CREATE TABLE nog (id int PRIMARY KEY, a int NOT NULL, b2 int NOT NULL) USING fpsketch;
	INSERT INTO nog SELECT i, i, 2 * i FROM generate_series(1, 100) i;});

my %q = (
	groups => q{SELECT relation::text, group_name, group_number, columns::text
		FROM fpsketch_column_groups ORDER BY 1, 2},
	# a group's stored names are those of its attribute numbers
	consistent => q{SELECT count(*), count(*) FILTER (WHERE g.columns = ARRAY(
			SELECT a.attname FROM unnest(g.attnums) WITH ORDINALITY AS u(attnum, ord)
			JOIN pg_attribute a ON a.attrelid = g.rel AND a.attnum = u.attnum
			 AND NOT a.attisdropped ORDER BY u.ord))
		FROM fpsketch_column_group g},
	methods => q{SELECT c.relname, am.amname FROM pg_class c JOIN pg_am am ON am.oid = c.relam
		WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace ORDER BY 1},
	rows => q{SET fpsketch.escalation_threshold = 100;
		SELECT 'g', md5(string_agg(t::text, ',' ORDER BY t.id)) FROM g t;
		SELECT 'nog', md5(string_agg(t::text, ',' ORDER BY t.id)) FROM nog t;
		SELECT 'customer', md5(string_agg(t::text, ',' ORDER BY c_w_id, c_d_id, c_id)) FROM customer t;
		SELECT 'stock', md5(string_agg(t::text, ',' ORDER BY s_w_id, s_i_id)) FROM stock t;
		SELECT 'order_line', count(*), sum(ol_amount) FROM order_line;});

my %src = map { $_ => $node->safe_psql('src', $q{$_}) } keys %q;
like($src{groups}, qr/^customer\|payment\|.*\ng\|ga\|1\|\{a\}\ng\|gb\|2\|\{b2\}\n/s,
	'source: the TPC-C groups, and g\'s groups with the renamed column');
is($src{consistent}, '7|7', 'source: every group\'s names match its attribute numbers');
is($node->safe_psql('src',
		q{SELECT attnums::text FROM fpsketch_column_group WHERE rel = 'g'::regclass ORDER BY groupno}),
	"{3}\n{4}", 'source: g\'s grouped columns are attributes 3 and 4 (after the dropped one)');

sub compare_restored
{
	my ($db, $label) = @_;
	foreach my $what (qw(methods rows groups consistent))
	{
		is($node->safe_psql($db, $q{$what}), $src{$what}, "$label: the same $what as the source");
	}
	is($node->safe_psql($db,
			q{SELECT attnums::text FROM fpsketch_column_group WHERE rel = 'g'::regclass ORDER BY groupno}),
		"{2}\n{3}", "$label: g's groups use the restored table's attribute numbers (2 and 3)");
}

# ---------------------------------------------------------------------------
# (a) custom format, pg_restore
# ---------------------------------------------------------------------------
my $dumpdir = PostgreSQL::Test::Utils::tempdir();
$node->command_ok([ 'pg_dump', '-Fc', '-f', "$dumpdir/src.dump", '-d', $node->connstr('src') ],
	'(a) pg_dump -Fc');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->command_ok(
	[ 'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), "$dumpdir/src.dump" ],
	'(a) pg_restore into a new database');
compare_restored('dst', '(a) pg_restore');

# ---------------------------------------------------------------------------
# (b) plain format, one transaction
# ---------------------------------------------------------------------------
$node->command_ok([ 'pg_dump', '-Fp', '-f', "$dumpdir/src.sql", '-d', $node->connstr('src') ],
	'(b) pg_dump -Fp');
$node->safe_psql('postgres', 'CREATE DATABASE dst_plain');
$node->command_ok(
	[ 'psql', '-X', '-q', '-1', '-v', 'ON_ERROR_STOP=1', '-f', "$dumpdir/src.sql",
	  '-d', $node->connstr('dst_plain') ],
	'(b) psql --single-transaction -f dump.sql');
compare_restored('dst_plain', '(b) plain dump');

# ---------------------------------------------------------------------------
# (c) the restored groups are in effect
# ---------------------------------------------------------------------------
# T1 reads a, T2 updates b2 and commits, T1 updates a: with groups T2 wrote
# only gb, which T1 did not read
sub read_then_update_other_group
{
	my ($table) = @_;
	my $s1 = FpsTest::Session->new($node, db => 'dst');
	my $s2 = FpsTest::Session->new($node, db => 'dst');
	$s1->query('BEGIN');
	my $a = $s1->query("SELECT a FROM $table WHERE id = 7");
	my (undef, $e2) = $s2->query("UPDATE $table SET b2 = b2 + 1 WHERE id = 7");
	my (undef, $e1) = $s1->query("UPDATE $table SET a = $a + 1 WHERE id = 7");
	my (undef, $ec) = $s1->query('COMMIT');
	$s1->close;
	$s2->close;
	return ($e2, $e1 . $ec,
		$node->safe_psql('dst', "SELECT a || ' ' || b2 FROM $table WHERE id = 7"));
}

my ($e2, $e1, $row) = read_then_update_other_group('g');
is("$e2|$e1", '|', '(c) restored groups: both transactions commit');
is($row, '8 15', '(c) and both updates are kept');
($e2, $e1, $row) = read_then_update_other_group('nog');
like($e1, qr/40001/, '(c) control: without groups the reader\'s update fails with 40001');
is($row, '7 15', '(c) control: only the other update is kept');

# ---------------------------------------------------------------------------
# (d) the restored TPC-C tables
# ---------------------------------------------------------------------------
is(tpcc_check($node, '(d) restored', db => 'dst'), 0,
	'(d) the restored TPC-C tables pass every check');
my $load = tpcc_load($node, db => 'dst', clients => 4, duration => 3);
my $r = $load->finish;
ok($r->{committed} > 0 && !@{ $r->{unexpected} } && !@{ $r->{aborted} },
	"(d) a load on the restored tables: $r->{committed} committed, no client errors")
  or diag $r->{err};
is(tpcc_check($node, '(d) after the load', db => 'dst'), 0,
	'(d) and the tables still pass every check after it');

# ---------------------------------------------------------------------------
# (e) dumps of a database under load
# ---------------------------------------------------------------------------
{
	$node->safe_psql('src', 'SELECT fpsketch_stats_reset()');
	my $srcload = tpcc_load($node, db => 'src', clients => 4, duration => 12);
	sleep 2;
	foreach my $how ([ 'rr', [] ], [ 'deferrable', ['--serializable-deferrable'] ])
	{
		my ($name, $opts) = @$how;
		my ($ret, $out, $err);
		my $t0 = time;
		$ret = IPC::Run::run([ 'pg_dump', @$opts, '-Fc', '-f', "$dumpdir/load-$name.dump",
							   '-d', $node->connstr('src') ], '>', \$out, '2>', \$err);
		ok($ret, sprintf("(e) pg_dump %s under a TPC-C load completes (%d s)",
				join(' ', @$opts) || '(REPEATABLE READ)', time - $t0))
		  or diag $err;
		$node->safe_psql('postgres', "CREATE DATABASE dst_$name");
		$node->command_ok(
			[ 'pg_restore', '--exit-on-error', '-d', $node->connstr("dst_$name"),
			  "$dumpdir/load-$name.dump" ],
			"(e) $name: pg_restore");
	}
	my $r = $srcload->finish;
	ok($r->{committed} > 0 && !@{ $r->{unexpected} } && !@{ $r->{aborted} },
		"(e) the load ran on: $r->{committed} committed, no client errors")
	  or diag $r->{err};
	my $st = stats($node, 'src');
	ok($st->{ts_snapshots} >= 2,
		"(e) the dumps read at a timestamp ($st->{ts_snapshots} timestamp snapshots, "
		  . "$st->{aborts_snapshot_too_old} too old)");
	foreach my $name (qw(rr deferrable))
	{
		is(tpcc_check($node, "(e) $name restored", db => "dst_$name"), 0,
			"(e) the restore of the dump taken under load ($name) is a consistent TPC-C state");
	}
}

my @problems = log_problems($node, 0);
is(join("\n", @problems), '', 'no unexpected error, PANIC or crash in the server log');

done_testing();
