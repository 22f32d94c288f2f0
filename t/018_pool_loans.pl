# 018_pool_loans.pl: many writers of one role, each a little past its own
# share of the exact table, all get their pins (cc/txn.c, pool loans).
#
# A loan from the shared pool is held whether it is pinned or not.  With
# fixed loans of 64, a role's share (max_pool_pins_per_role, 1024 here)
# let only 16 transactions past their own share at once, however few pins
# each needed: the 17th writer failed with 40001 ("the transactions of
# role ... hold 1024 pins"), and so did its retries for as long as the
# others stayed open, with the exact table nearly empty (found by
# helper-22).  Loans now start at 4 and double: 24 writers that each
# update 10 rows (two keys a row, a few past their own share of about 19)
# hold at most 16 pins of the pool each.
#
# Also: the DETAIL of a refusal gives the counts the refusal saw.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = fps_node('fps_pool_loans', conf => 'fpsketch.max_entries = 4096');

$node->safe_psql(
	'postgres', q{
	CREATE TABLE big (id int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	INSERT INTO big SELECT g, 0 FROM generate_series(1, 10000) g;
	VACUUM ANALYZE big;
	SELECT fpsketch_stats_reset();});

my $s0 = stats($node);
my $own = int(4096 / 4 / $node->safe_psql('postgres',
		q{SELECT current_setting('max_connections')::int
		  + current_setting('autovacuum_max_workers')::int + 1
		  + current_setting('max_worker_processes')::int
		  + current_setting('max_wal_senders')::int}));
note "own share per backend: $own pins";
cmp_ok($own, '<', 20, 'each writer needs more than its own share');

my $nwriters = 24;
my @writers;
my ($ok, $failed) = (0, 0);
for my $i (0 .. $nwriters - 1)
{
	my $w = FpsTest::Session->new($node, app => "fps_writer_$i");
	my $a = 1 + $i * 100;
	my (undef, $err) = $w->query(
		"SET enable_seqscan = off; SET enable_bitmapscan = off; BEGIN;\n"
		  . "UPDATE big SET v = v + 1 WHERE id BETWEEN $a AND $a + 9;");
	if ($err eq '') { $ok++; }
	else { $failed++; diag $err if $failed <= 2; }
	push @writers, $w;
}
is("$ok|$failed", "$nwriters|0",
	"$nwriters open writers of one role, 10 rows each, all get their pins");
{
	my $s = stats($node);
	my $held = $node->safe_psql('postgres',
		'SELECT coalesce(sum(pins), 0) FROM fpsketch_pool_pins');
	note "pool_pins $s->{pool_pins}, pinned $s->{pinned}, pins_refused $s->{pins_refused}";
	is($held, $s->{pool_pins}, 'fpsketch_pool_pins adds up to pool_pins');
	cmp_ok($s->{pool_pins}, '<=', $nwriters * 16,
		"... which is at most 16 a writer ($s->{pool_pins})");
	is($s->{aborts_pool_held}, 0, '... and nobody was refused');
}
$_->query('COMMIT') foreach @writers;
$_->close foreach @writers;
is($node->safe_psql('postgres', 'SELECT sum(v) FROM big'), $nwriters * 10,
	'every writer committed its 10 rows');
{
	my $s = wait_idle($node);
	is("$s->{pinned}|$s->{pool_pins}|$s->{lock_leaks}", '0|0|0',
		'they end: nothing pinned or borrowed, no lock bit leaked');
}

# A refusal's DETAIL: the role's share of 16, held by one open writer
# (two keys a row and three more: its own share and 16 past it, so that it
# needs no escalation, whose ACCESS EXCLUSIVE lock would hold the next
# writer up instead).
$node->safe_psql('postgres', 'ALTER SYSTEM SET fpsketch.max_pool_pins_per_role = 16');
$node->reload;
{
	my $hog_rows = int(($own + 16 - 3) / 2);
	my $hog = FpsTest::Session->new($node, app => 'fps_hog');
	my (undef, $err) = $hog->query(
		"SET enable_seqscan = off; SET enable_bitmapscan = off; BEGIN;\n"
		  . "UPDATE big SET v = v + 1 WHERE id BETWEEN 5001 AND 5000 + $hog_rows;");
	is($err, '', 'a writer takes the role\'s whole share of 16');
	is(stats($node)->{pool_pins}, 16, '... and no more');
	my $w = FpsTest::Session->new($node, app => 'fps_refused');
	(undef, $err) = $w->query(
		"SET enable_seqscan = off; SET enable_bitmapscan = off; BEGIN;\n"
		  . "UPDATE big SET v = v + 1 WHERE id BETWEEN 6001 AND 6040;");
	like($err,
		qr/40001: .*\nDETAIL:  A row of relation "big" could not be pinned: the transactions of role "\w+" hold 16 pins of the shared pool, the most one role may hold \(fpsketch\.max_pool_pins_per_role = 16\)\./,
		'another writer of the role is refused, and the DETAIL gives the 16 pins held');
	$w->query('ROLLBACK');
	$hog->query('COMMIT');
	$w->close;
	$hog->close;
}

done_testing();
