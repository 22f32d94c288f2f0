# 016_extension_objects.pl: the extension's own table under settings that
# reach every table of a database (both found by running PostgreSQL's own
# regression suite with fpsketch as the default access method).
#
#  (a) default_table_access_method = fpsketch in postgresql.conf, then
#      CREATE EXTENSION: fpsketch_column_group is still a heap table (as
#      an fpsketch table, DDL elsewhere failed with 40001 under STO, in the
#      event triggers that change it), and a user's new table is fpsketch;
#  (b) a publication FOR ALL TABLES: DROP TABLE and ALTER TABLE, of heap
#      and fpsketch tables, still work (they failed with 55000 "cannot
#      delete from table fpsketch_column_group because it does not have a
#      replica identity"), and the event triggers still keep a declared
#      group's column names current and forget a dropped table's groups.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = fps_node('fps_extobj',
	conf => "default_table_access_method = 'fpsketch'\nfpsketch.protocol = sto\nwal_level = logical");

# ---------------------------------------------------------------------------
# (a) the extension's table is heap whatever the default says
# ---------------------------------------------------------------------------
is( $node->safe_psql('postgres',
		q{SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
		   WHERE c.oid = 'fpsketch_column_group'::regclass}),
	'heap',
	'(a) fpsketch_column_group is heap under default_table_access_method = fpsketch');
$node->safe_psql('postgres', 'CREATE TABLE a_t (id int PRIMARY KEY, v int, w int)');
is( $node->safe_psql('postgres',
		q{SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
		   WHERE c.oid = 'a_t'::regclass}),
	'fpsketch',
	'(a) a new table takes the default, fpsketch');

# the shape that failed under STO: an open reader, another session declares
# a group (a write of fpsketch_column_group), then the reader's DDL runs the
# event trigger that updates fpsketch_column_group
$node->safe_psql('postgres', 'CREATE TABLE a_u (id int PRIMARY KEY, v int)');
my $reader = FpsTest::Session->new($node);
$reader->query('BEGIN');
$reader->query('SELECT count(*) FROM a_u');
$node->safe_psql('postgres',
	q{SELECT fpsketch_set_column_group('a_t', 'g', ARRAY['w'])});
my (undef, $alter_err) = $reader->query('ALTER TABLE a_u ADD COLUMN c int');
my (undef, $commit_err) = $reader->query('COMMIT');
is("$alter_err$commit_err", '', '(a) DDL after a concurrent group declaration: no error');
$reader->close;

# ---------------------------------------------------------------------------
# (b) a publication FOR ALL TABLES does not stop DDL
# ---------------------------------------------------------------------------
$node->safe_psql('postgres', 'CREATE PUBLICATION every_table FOR ALL TABLES');
$node->safe_psql('postgres', q{
	CREATE TABLE b_f (id int PRIMARY KEY, v int, w int);
	CREATE TABLE b_h (id int PRIMARY KEY, v int) USING heap;
	SELECT fpsketch_set_column_group('b_f', 'gw', ARRAY['w']);
});
my ($rc, $out, $err) = $node->psql('postgres', q{
	ALTER TABLE b_f RENAME COLUMN w TO w2;
	ALTER TABLE b_h ADD COLUMN x int;
	DROP TABLE b_h;
});
is($rc, 0, '(b) ALTER TABLE and DROP TABLE under a FOR ALL TABLES publication');
is($err, '', '(b) no error') or diag($err);
is( $node->safe_psql('postgres',
		q{SELECT columns FROM fpsketch_column_group WHERE rel = 'b_f'::regclass}),
	'{w2}',
	'(b) the event trigger renamed the group column');
($rc, $out, $err) = $node->psql('postgres', 'DROP TABLE b_f');
is($rc, 0, '(b) DROP TABLE of a table with a declared group') or diag($err);
is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM fpsketch_column_group g
		   WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = g.rel)}),
	'0',
	'(b) the dropped table\'s groups are forgotten');

$node->stop;
done_testing();
