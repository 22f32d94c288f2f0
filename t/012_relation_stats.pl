# 012_relation_stats.pl: fpsketch_relation_stats past
# fpsketch.max_tracked_relations, and across databases.
#
#  (a) with room for 3 relations, 6 tables read by 6 transactions: the
#      first 3 keep rows of their own, the other 3 are counted together in
#      one row whose datid and relid are NULL and whose relations column
#      estimates how many they are (3); nothing is lost (the row reads add
#      up to what was read); fpsketch_stats_reset() empties it;
#  (b) the same relation OID in another database is another row; relname
#      is resolved in the current database only.
#  (c) a value out of range in postgresql.conf stops the server at start,
#      naming the parameter.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = fps_node('fps_relstats', conf => 'fpsketch.max_tracked_relations = 3');

# ---------------------------------------------------------------------------
# (a) more relations than the table holds
# ---------------------------------------------------------------------------
$node->safe_psql('postgres', q{
	DO $$ BEGIN
	  FOR t IN 1..6 LOOP
	    EXECUTE format('CREATE TABLE rs_%s (id int PRIMARY KEY, v int NOT NULL) USING fpsketch', t);
	  END LOOP;
	END $$;
});
for my $t (1 .. 6)
{
	$node->safe_psql('postgres',
		"INSERT INTO rs_$t SELECT g, 0 FROM generate_series(1, 10) g");
}
$node->safe_psql('postgres', 'SELECT fpsketch_stats_reset()');

# table t: a transaction of t primary-key reads and t lookups of absent keys
# (validated, not at a timestamp): t row reads, and t predicate reads, as
# only a lookup that finds nothing reads its key (am/point_lookup.c)
for my $t (1 .. 6)
{
	$node->safe_psql('postgres',
		"SET enable_seqscan = off; SET enable_bitmapscan = off; BEGIN; "
		  . join('', map { "SELECT v FROM rs_$t WHERE id = $_; " } 1 .. $t)
		  . join('', map { "SELECT v FROM rs_$t WHERE id = 100 + $_; " } 1 .. $t)
		  . "COMMIT;");
}

is( $node->safe_psql(
		'postgres', q{
	SELECT coalesce(relname::text, '(other)'), relations, row_reads, commits
	  FROM fpsketch_relation_stats ORDER BY relid NULLS LAST}),
	"rs_1|1|1|1\nrs_2|1|2|1\nrs_3|1|3|1\n(other)|3|15|3",
	'(a) 3 relations tracked, the other 3 in one row, none lost');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FILTER (WHERE relid IS NULL AND datid IS NULL),
	       sum(row_reads), sum(predicate_reads)
	  FROM fpsketch_relation_stats}),
	'1|21|21', '(a) sums over all rows: every read counted once');

# the same transaction again on an untracked table stays in the other row
$node->safe_psql('postgres',
	'SET enable_seqscan = off; BEGIN; SELECT v FROM rs_5 WHERE id = 1; COMMIT;');
is( $node->safe_psql(
		'postgres',
		'SELECT relations, row_reads, commits FROM fpsketch_relation_stats WHERE relid IS NULL'),
	'3|16|4', '(a) a relation seen again is not counted twice among the other relations');

$node->safe_psql('postgres', 'SELECT fpsketch_stats_reset()');
is($node->safe_psql('postgres', 'SELECT count(*) FROM fpsketch_relation_stats'),
	'0', '(a) the reset forgets every row, the other one included');
$node->safe_psql('postgres',
	'SET enable_seqscan = off; BEGIN; SELECT v FROM rs_6 WHERE id = 1; COMMIT;');
is( $node->safe_psql(
		'postgres',
		'SELECT relname, relations, row_reads FROM fpsketch_relation_stats'),
	'rs_6|1|1', '(a) after the reset there is room again');

# ---------------------------------------------------------------------------
# (b) another database
# ---------------------------------------------------------------------------
$node->safe_psql('postgres', 'SELECT fpsketch_stats_reset()');
$node->safe_psql('postgres', 'CREATE DATABASE other TEMPLATE postgres');
$node->safe_psql('other',
	'SET enable_seqscan = off; BEGIN; SELECT v FROM rs_1 WHERE id = 1; SELECT v FROM rs_1 WHERE id = 2; COMMIT;');
$node->safe_psql('postgres',
	'SET enable_seqscan = off; BEGIN; SELECT v FROM rs_1 WHERE id = 1; COMMIT;');
my $q = q{
	SELECT d.datname, coalesce(s.relname::text, '-'), s.row_reads
	  FROM fpsketch_relation_stats s JOIN pg_database d ON d.oid = s.datid
	 ORDER BY d.datname};
is($node->safe_psql('postgres', $q), "other|-|2\npostgres|rs_1|1",
	'(b) one row per database; names of the current database only (postgres)');
is($node->safe_psql('other', $q), "other|rs_1|2\npostgres|-|1",
	'(b) one row per database; names of the current database only (other)');

# ---------------------------------------------------------------------------
# (c) out of range
# ---------------------------------------------------------------------------
$node->stop;
set_conf($node, 'fpsketch.max_tracked_relations', '-1');
my $log_from = log_offset($node);
ok(!$node->start(fail_ok => 1), '(c) the server refuses to start');
like(slurp_file($node->logfile, $log_from),
	qr/fpsketch\.max_tracked_relations/, '(c) the log names the parameter');
set_conf($node, 'fpsketch.max_tracked_relations', '0');
$node->start;
$node->safe_psql('postgres',
	'SET enable_seqscan = off; BEGIN; SELECT v FROM rs_2 WHERE id = 1; COMMIT;');
is( $node->safe_psql(
		'postgres',
		'SELECT datid IS NULL, relid IS NULL, relations, row_reads FROM fpsketch_relation_stats'),
	't|t|1|1', '(c) with 0, every relation is counted in the other row');

$node->stop;
done_testing();
