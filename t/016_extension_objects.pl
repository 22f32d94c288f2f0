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
#      group's column names current and forget a dropped table's groups;
#  (c) logical replication (a publication FOR ALL TABLES, in another
#      database of the same cluster, and a subscriber with fpsketch): the
#      user table's rows arrive, its group declaration and learned groups
#      do not (each database keeps and learns its own: the publisher's rows
#      name its tables by OID and attribute number, and an apply worker's
#      row change bypassed the lock, invalidation and floor raise a change
#      of groups needs, which let a subscriber commit a cycle), also after
#      ENABLE TRIGGER ALL (pg_restore --disable-triggers) made the skip ORIGIN.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = fps_node('fps_extobj',
	conf => "default_table_access_method = 'fpsketch'\nfpsketch.protocol = sto\nwal_level = logical\nmax_wal_senders = 4\nmax_replication_slots = 4");

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

# ---------------------------------------------------------------------------
# (c) logical replication does not carry groups
# ---------------------------------------------------------------------------
my $schema = 'CREATE TABLE c_t (id int PRIMARY KEY, a int NOT NULL, c int NOT NULL)';
$node->safe_psql('postgres', 'CREATE DATABASE pubdb');
$node->safe_psql('postgres', 'CREATE DATABASE subdb');
for my $db ('pubdb', 'subdb')
{
	$node->safe_psql($db, "CREATE EXTENSION fpsketch; $schema");
}
$node->safe_psql('pubdb', q{
	INSERT INTO c_t SELECT g, 0, 0 FROM generate_series(1, 10) g;
	SELECT fpsketch_set_column_group('c_t', 'gc', ARRAY['c']);
	CREATE PUBLICATION all_tables FOR ALL TABLES;
	SELECT pg_create_logical_replication_slot('fps_sub', 'pgoutput');
});
# pg_restore --disable-triggers: DISABLE, then ENABLE TRIGGER ALL, which
# would leave the skip ORIGIN (not fired by apply workers); the event
# trigger makes it ALWAYS again
$node->safe_psql('subdb', q{
	ALTER TABLE fpsketch_column_group DISABLE TRIGGER ALL;
	ALTER TABLE fpsketch_column_group ENABLE TRIGGER ALL;
});
is( $node->safe_psql('subdb',
		q{SELECT tgenabled FROM pg_trigger WHERE tgname = 'fpsketch_column_group_replicated'}),
	'A',
	'(c) after DISABLE and ENABLE TRIGGER ALL the skip is enabled ALWAYS again');
(my $pubconn = $node->connstr('pubdb')) =~ s/'/''/g;
$node->safe_psql('subdb',
	"CREATE SUBSCRIPTION fps_sub CONNECTION '$pubconn' PUBLICATION all_tables "
	  . "WITH (create_slot = false, slot_name = 'fps_sub')");
$node->poll_query_until('subdb', 'SELECT count(*) = 10 FROM c_t')
  or die 'initial sync timed out';
# changes after the sync: groups declared, dropped and learned, rows updated
$node->safe_psql('pubdb', q{
	SELECT fpsketch_set_column_group('c_t', 'ga', ARRAY['a']);
	SELECT fpsketch_set_column_group('c_t', 'gc', NULL);
	UPDATE c_t SET c = c + 1 WHERE id = 1;
	UPDATE c_t SET a = a + 1 WHERE id = 2;
	INSERT INTO c_t VALUES (11, 7, 7);
});
$node->poll_query_until('subdb', 'SELECT count(*) = 11 FROM c_t')
  or die 'replication of changes timed out';
is($node->safe_psql('subdb', 'SELECT sum(c) FROM c_t'), '8',
	'(c) the subscriber has the publisher\'s rows and updates');
is($node->safe_psql('subdb', 'SELECT count(*) FROM fpsketch_column_group'), '0',
	'(c) no group row of the publisher reached the subscriber');
isnt($node->safe_psql('pubdb', 'SELECT count(*) FROM fpsketch_column_group'), '0',
	'(c) the publisher has its groups');
$node->safe_psql('subdb', 'DROP SUBSCRIPTION fps_sub');

$node->stop;
done_testing();
