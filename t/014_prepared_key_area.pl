# 014_prepared_key_area.pl: the shared key area of prepared transactions
# (fpsketch.max_prepared_keys) refuses a PREPARE only when the keys it
# needs are not free, not when the free keys are split into holes that
# ended prepared transactions left between those still held.
#
# With 10 keys: A (3 keys), B (2), C (3), D (2) fill the area; ROLLBACK
# PREPARED of B and D frees 4 keys, in two holes of 2.  A PREPARE that
# needs 3 used to fail with 53400 ("6 are held now" of 10); it commits now,
# and A's and C's keys, moved to make room, still lock their rows (a
# reader times out naming the right gid), and install on COMMIT PREPARED.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = fps_node('fps_key_area',
	conf => "max_prepared_transactions = 10\nfpsketch.max_prepared_keys = 10");

$node->safe_psql(
	'postgres', q{
	CREATE TABLE frag (k int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	INSERT INTO frag SELECT g, 0 FROM generate_series(1, 20) g;
});

sub prepare
{
	my ($gid, $rows) = @_;
	my ($ret, $out, $err) = $node->psql('postgres',
		"BEGIN; UPDATE frag SET v = v + 1 WHERE k IN ($rows); PREPARE TRANSACTION '$gid';"
	);
	return ($ret, $err);
}

sub keys_of
{
	return $node->safe_psql('postgres',
		q{SELECT string_agg(gid || '=' || keys, ' ' ORDER BY gid) FROM fpsketch_prepared_xacts});
}

# every row key plus the relation's key that every writer of frag writes
is((prepare('A', '1, 2'))[0], 0, 'A prepared');
is((prepare('B', '3'))[0],    0, 'B prepared');
is((prepare('C', '4, 5'))[0], 0, 'C prepared');
is((prepare('D', '6'))[0],    0, 'D prepared');
is(keys_of(), 'A=3 B=2 C=3 D=2', 'A, B, C, D fill the 10 keys');

$node->safe_psql('postgres', "ROLLBACK PREPARED 'B'");
$node->safe_psql('postgres', "ROLLBACK PREPARED 'D'");
is($node->safe_psql('postgres', 'SELECT prepared_keys FROM fpsketch_stats'),
	'6', '4 keys free, in two holes of 2');

my ($ret, $err) = prepare('E', '7, 8');
is($ret, 0, 'a PREPARE needing 3 of the 4 free keys succeeds')
  or diag($err);
is(keys_of(), 'A=3 C=3 E=3', 'A, C and E hold their keys');

# the moved keys still lock their rows, for the right prepared transaction
for my $case (['A', 1], ['C', 5], ['E', 8])
{
	my ($gid, $k) = @$case;
	my ($r, $o, $e) = $node->psql('postgres',
		"SET fpsketch.lock_wait_timeout = 100; BEGIN; SELECT v FROM frag WHERE k = $k; COMMIT;"
	);
	like($e, qr/locked by prepared transaction "$gid"/,
		"row $k is still locked by $gid");
}

$node->safe_psql('postgres', "COMMIT PREPARED '$_'") for qw(A C E);
is( $node->safe_psql(
		'postgres', q{SELECT string_agg(k || ':' || v, ' ' ORDER BY k) FROM frag WHERE v > 0}),
	'1:1 2:1 4:1 5:1 7:1 8:1',
	'A, C and E committed, B and D rolled back');

# the commits installed on the moved keys: a reader of each row commits
is( $node->safe_psql(
		'postgres',
		'SET fpsketch.lock_wait_timeout = 100; BEGIN; SELECT sum(v) FROM frag WHERE k IN (1, 5, 8); COMMIT;'
	),
	'3',
	'the rows are unlocked once committed');

my $s = wait_idle($node);
is($s->{pinned},         0, 'nothing pinned');
is($s->{lock_leaks},     0, 'no lock leaks');
is($s->{prepared_xacts}, 0, 'no prepared transaction left');
my @files = glob($node->data_dir . '/pg_fpsketch/prepared/*');
is(scalar(@files), 0, 'no prepared transaction files left');

$node->stop;
done_testing();
