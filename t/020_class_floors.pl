# 020_class_floors.pl: DDL on one table raises the floor of that table's
# keys only (key classes, cc/keys.c and sketch/fpsketch.c), not of every
# key on the server.
#
# Found by helper-27: under STO, a TRUNCATE or CREATE TABLE ... AS of an
# unrelated fpsketch table, even in another database, raised the floor of
# every key.  A running STO transaction's next new key was then seeded
# above its timestamp and failed with 40001 "written by a younger
# transaction", which nobody was; with DDL every 0.25 s, a 0.4 s
# transaction failed on all 20 retries.
#
# T reads acct row 1; another session runs DDL on another table; T reads
# acct row 2 and updates row 3.  (a) TRUNCATE of staging, (b) CREATE
# TABLE ... AS and DROP in another database, (c) a column group of
# staging declared and dropped.  T must commit under every protocol.
#
# (d) The floor still covers the table the DDL wrote: T reads acct, then
# a table is truncated and refilled, then T reads it.  Under STO T's
# timestamp is older than that write: 40001.  Under MVTO the read at T's
# timestamp finds new storage: 40001 (snapshot too old).  Under TicToc T
# commits after the DDL and reads its row.
#
# (e) A partition's DROP or DETACH still raises the floor of every key: a
# reader of the parent sees the partition go, and reads no key of it.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = fps_node('fps_class_floors');
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION fpsketch');

$node->safe_psql(
	'postgres', q{
	CREATE TABLE acct (id int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	INSERT INTO acct SELECT g, 0 FROM generate_series(1, 100) g;
	CREATE TABLE staging (id int PRIMARY KEY, w int) USING fpsketch;
	INSERT INTO staging SELECT g, 0 FROM generate_series(1, 10) g;
	CREATE TABLE p (id int, g int, PRIMARY KEY (g, id)) PARTITION BY LIST (g);
	CREATE TABLE p1 PARTITION OF p FOR VALUES IN (1) USING fpsketch;
	CREATE TABLE p2 PARTITION OF p FOR VALUES IN (2) USING fpsketch;});

my %ddl = (
	a => [ 'postgres', 'TRUNCATE staging; INSERT INTO staging SELECT g, 0 FROM generate_series(1, 10) g;' ],
	b => [ 'other', 'CREATE TABLE scratch USING fpsketch AS SELECT g AS id FROM generate_series(1, 100) g; DROP TABLE scratch;' ],
	c => [ 'postgres', q{SELECT fpsketch_set_column_group('staging', 'w_group', ARRAY['w']); SELECT fpsketch_set_column_group('staging', 'w_group', NULL);} ],
);

my $row = 0;
foreach my $proto (protocols($node))
{
	set_conf($node, 'fpsketch.protocol', $proto);
	$node->restart;
	is(stats($node)->{protocol}, $proto, "protocol $proto");

	# (d) first, on the new server's empty sketch: nothing but the floor
	# can make the refilled table's keys look written after T
	{
		$node->safe_psql('postgres',
			'DROP TABLE IF EXISTS fresh;
			 CREATE TABLE fresh (id int PRIMARY KEY, w int) USING fpsketch;
			 INSERT INTO fresh SELECT g, 0 FROM generate_series(1, 10) g;');
		my $t = FpsTest::Session->new($node, app => 'fps_t');
		my $r1 = $row++ % 100 + 1;
		$t->query("BEGIN; SELECT v FROM acct WHERE id = $r1;");
		$node->safe_psql('postgres',
			'TRUNCATE fresh; INSERT INTO fresh SELECT g, 1 FROM generate_series(1, 10) g;');
		my (undef, $err) = $t->query('SELECT w FROM fresh WHERE id = 1; COMMIT;');
		note "(d) $proto: $err" if $err ne '';
		my $got = $err =~ /ERROR:\s+(\w+)/ ? $1 : 'committed';
		is($got, $proto eq 'tictoc' ? 'committed' : '40001',
			"$proto (d): T " . ($proto eq 'tictoc' ? 'commits after' : 'fails on')
			  . ' the truncated table\'s floor');
		$t->close;
	}

	foreach my $case (qw(a b c))
	{
		my ($db, $sql) = @{ $ddl{$case} };
		my $t = FpsTest::Session->new($node, app => 'fps_t');
		# new keys each round: seeded from the sketch and the floors
		my ($r1, $r2, $r3) = map { $row++ % 100 + 1 } 1 .. 3;
		my (undef, $err) = $t->query("BEGIN; SELECT v FROM acct WHERE id = $r1;");
		$node->safe_psql($db, $sql);
		my (undef, $err2) = $t->query(
			"SELECT v FROM acct WHERE id = $r2; UPDATE acct SET v = v + 1 WHERE id = $r3; COMMIT;");
		$err .= $err2;
		is($err =~ /ERROR:\s+(\w+)/ ? $1 : 'committed', 'committed',
			"$proto ($case): DDL on another table did not fail T");
		diag $err if $err =~ /ERROR/;
		$t->close;
	}

	# (e): T finds no acct row 1000; W inserts it and drops p2; T counts
	# p, and updates acct.  Seeing p2 gone but not W's row is no serial
	# order: T must fail.  Nothing T reads records p2's absence (the plan
	# has no p2): only the floor under every key T pins after W's commit
	# orders T after W.
	foreach my $step ('DROP TABLE p2', 'ALTER TABLE p DETACH PARTITION p2')
	{
		$node->safe_psql('postgres',
			'DROP TABLE IF EXISTS p2;
			 CREATE TABLE p2 PARTITION OF p FOR VALUES IN (2) USING fpsketch;
			 INSERT INTO p VALUES (1, 1), (1, 2) ON CONFLICT DO NOTHING;
			 DELETE FROM acct WHERE id > 100;');
		my $t = FpsTest::Session->new($node, app => 'fps_t');
		my ($absent) = $t->query('BEGIN; SELECT count(*) FROM acct WHERE id = 1000;');
		$node->safe_psql('postgres', "BEGIN; INSERT INTO acct VALUES (1000, 0); $step; COMMIT;");
		my ($out, $err) = $t->query(
			'SELECT count(*) FROM p; UPDATE acct SET v = v + 1 WHERE id = 50; COMMIT;');
		my $got = $err =~ /ERROR:\s+(\w+)/ ? $1 : "$absent|$out";
		is($got, '40001', "$proto (e) $step: T, which saw the change but not W's row, failed");
		$t->close;
	}
}

done_testing();
