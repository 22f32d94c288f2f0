# 023_rule_changes.pl: DDL that changes what reads or writes of an fpsketch
# table do, without writing it, commits at the floor (fpsketch.c,
# changes_rules): CREATE TRIGGER, CREATE RULE, ALTER POLICY, ALTER DOMAIN,
# ALTER TYPE ... CASCADE of a typed table's type.
#
# Found by helper-29, older than this test: T reads acct row 5 (0); W sets
# it to 1 and runs the DDL; T then writes or reads y under the new rules
# and committed, ordered before W by acct but after it by y.  Now T fails
# with 40001, under TicToc and STO.  (MVTO reads at T's timestamp: its
# reads of acct and y agree, but its writes run under the new rules too.)
# The floor orders T after W only through a key T touches after W: an
# INSERT that the rule turns into nothing touches none, so the CREATE RULE
# case reads y after it (README, limits).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = fps_node('fps_rule_changes');

my @cases = (
	[ 'CREATE TRIGGER',
	  q{CREATE TABLE y (id int PRIMARY KEY, v int);
	    CREATE FUNCTION setv() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN NEW.v := 99; RETURN NEW; END';},
	  'CREATE TRIGGER t BEFORE INSERT ON y FOR EACH ROW EXECUTE FUNCTION setv();',
	  'INSERT INTO y VALUES (1, 1) RETURNING v;' ],
	[ 'CREATE RULE',
	  'CREATE TABLE y (id int PRIMARY KEY, v int);',
	  'CREATE RULE r AS ON INSERT TO y DO INSTEAD NOTHING;',
	  'INSERT INTO y VALUES (1, 1); SELECT count(*) FROM y;' ],
	[ 'ALTER POLICY',
	  q{CREATE TABLE y (id int PRIMARY KEY, v int); INSERT INTO y VALUES (1, 1), (2, 2);
	    ALTER TABLE y ENABLE ROW LEVEL SECURITY; CREATE POLICY p0 ON y USING (true);
	    DROP ROLE IF EXISTS r1; CREATE ROLE r1; GRANT SELECT ON y, acct TO r1;},
	  'ALTER POLICY p0 ON y USING (id = 1);',
	  'SET LOCAL ROLE r1; SELECT count(*) FROM y;' ],
	[ 'ALTER DOMAIN',
	  q{CREATE DOMAIN dd AS int CHECK (VALUE < 10); CREATE TABLE y (id int PRIMARY KEY, v dd);},
	  'ALTER DOMAIN dd DROP CONSTRAINT dd_check;',
	  'INSERT INTO y VALUES (1, 50);' ],
	[ 'ALTER TYPE',
	  q{CREATE TYPE ct AS (id int, s varchar(3)); CREATE TABLE y OF ct (PRIMARY KEY (id));
	    INSERT INTO y VALUES (1, 'a');},
	  'ALTER TYPE ct ALTER ATTRIBUTE s TYPE varchar(20) CASCADE;',
	  q{INSERT INTO y VALUES (2, 'abcdefgh');} ]);

foreach my $proto (grep { $_ ne 'mvto' } protocols($node))
{
	set_conf($node, 'fpsketch.protocol', $proto);
	$node->restart;
	foreach my $c (@cases)
	{
		my ($name, $setup, $ddl, $t_sql) = @$c;
		$node->safe_psql('postgres', q{
			DROP TABLE IF EXISTS y, acct CASCADE; DROP TYPE IF EXISTS ct CASCADE;
			DROP DOMAIN IF EXISTS dd CASCADE; DROP FUNCTION IF EXISTS setv();
			SET default_table_access_method = fpsketch;
			CREATE TABLE acct (id int PRIMARY KEY, v int NOT NULL);
			INSERT INTO acct SELECT g, 0 FROM generate_series(1, 100) g;} . $setup);
		my $t = FpsTest::Session->new($node, app => 'fps_t');
		$t->query('BEGIN; SELECT v FROM acct WHERE id = 5;');
		$node->safe_psql('postgres', "BEGIN; UPDATE acct SET v = 1 WHERE id = 5; $ddl COMMIT;");
		my ($out, $err) = $t->query("$t_sql COMMIT;");
		my $got = $err =~ /ERROR:\s+(\w+)/ ? $1 : "committed $out";
		is($got, '40001', "$proto $name: T, ordered before W by acct, fails under W's new rules");
		$t->close;
	}
}

done_testing();
