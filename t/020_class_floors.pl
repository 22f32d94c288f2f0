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
# TABLE ... AS in another database, (c) a column group of
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
#
# (f) So does a DROP that changes a table that stays (helper-28): DROP
# TABLE x CASCADE drops c's foreign key to x, or c's primary-key column of
# x's row type; DROP TYPE e CASCADE drops c's primary-key column of type e
# (which raised no floor at all before).  T reads acct row 5; W updates it
# and drops; T then inserts an orphan c row (must fail), or reads c after
# W0 wrote it and acct row 5 (must fail, or read neither write).
# (A DROP of a table raises every key's floor, as before key classes.)

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
	b => [ 'other', 'CREATE TABLE scratch_%s USING fpsketch AS SELECT g AS id FROM generate_series(1, 100) g;' ],
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
		$sql = sprintf($sql, $proto) if $case eq 'b';
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

	# (f)
	foreach my $variant ('fk', 'table', 'type')
	{
		$node->safe_psql('postgres',
			'DROP TABLE IF EXISTS c, x CASCADE; DROP TYPE IF EXISTS e CASCADE;
			 SET default_table_access_method = fpsketch;
			 CREATE TYPE e AS ENUM (\'a\', \'b\');'
			  . ($variant eq 'fk'
				? 'CREATE TABLE x (id int PRIMARY KEY);
				   CREATE TABLE c (id int PRIMARY KEY, xid int REFERENCES x);'
				: $variant eq 'table'
				? 'CREATE TABLE x (a int);
				   CREATE TABLE c (id int, r x, v int NOT NULL, PRIMARY KEY (id, r));
				   INSERT INTO c VALUES (1, row(1)::x, 0);'
				: 'CREATE TABLE c (id int, r e, v int NOT NULL, PRIMARY KEY (id, r));
				   INSERT INTO c VALUES (1, \'a\', 0);')
			  . 'UPDATE acct SET v = 0 WHERE id = 5;');
		# timestamps well past c's keys
		$node->safe_psql('postgres', 'UPDATE acct SET v = v + 1 WHERE id = 99;') for 1 .. 20;
		my $t = FpsTest::Session->new($node, app => 'fps_t');
		$t->query('BEGIN; SELECT v FROM acct WHERE id = 5;');
		if ($variant ne 'fk')
		{
			# W0: writes acct 5 and c, before the DROP; T must not see one without the other
			$node->safe_psql('postgres',
				'BEGIN; SELECT v FROM acct WHERE id = 99; UPDATE acct SET v = 1 WHERE id = 5;
				 UPDATE c SET v = 1 WHERE id = 1; COMMIT;');
		}
		$node->safe_psql('postgres',
			'BEGIN;' . ($variant eq 'fk' ? ' UPDATE acct SET v = 1 WHERE id = 5;' : '')
			  . ($variant eq 'type' ? ' DROP TYPE e CASCADE;' : ' DROP TABLE x CASCADE;')
			  . ' COMMIT;');
		my ($out, $err) = $t->query(
			($variant eq 'fk' ? 'INSERT INTO c VALUES (1, 42);' : 'SELECT v FROM c WHERE id = 1;')
			  . ' COMMIT;');
		my $got = $err =~ /ERROR:\s+(\w+)/ ? $1 : "committed $out";
		# reading c: 0 is W0's row before W0, which MVTO reads at T's timestamp
		ok($got eq '40001' || ($variant ne 'fk' && $got eq 'committed 0'),
			"$proto (f) $variant: T, ordered before W by acct, did not see W0's c without its acct: $got");
		$t->close;
	}
}

done_testing();
