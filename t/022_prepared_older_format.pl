# 022_prepared_older_format.pl: a prepared transaction's file written by an
# older fpsketch (cc/prepared.c, version 2: keys before key classes).
#
# Its keys are not the keys this version computes, so loading them would
# lock nothing a reader looks at.  At startup the file is set aside (a
# WARNING names it) and the transaction is handled as one prepared without
# fpsketch state: tracked access to the relations it wrote fails with 40001
# naming it until COMMIT PREPARED, as after a failover (t/007_standby.pl).
# The older file is made here from a new one by setting its version to 2,
# which is all the startup looks at before setting a file aside.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = fps_node('fps_prepared_older',
	conf => "max_prepared_transactions = 4\nfpsketch.lock_wait_timeout = 1000");
$node->safe_psql('postgres', q{
	CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	INSERT INTO t SELECT g, 0 FROM generate_series(1, 10) g;});
$node->safe_psql('postgres',
	"BEGIN; UPDATE t SET v = 1 WHERE id = 1; PREPARE TRANSACTION 'older';");
my $dir = $node->data_dir . '/pg_fpsketch/prepared';
opendir(my $dh, $dir) or die "no $dir";
my @files = grep { /^[0-9A-F]{8}$/ } readdir($dh);
closedir($dh);
is(scalar(@files), 1, 'one prepared transaction file');
$node->stop;

# the header: uint32 magic, uint32 version
my $path = "$dir/$files[0]";
open(my $fh, '+<', $path) or die "open $path: $!";
binmode($fh);
seek($fh, 4, 0);
print $fh pack('L', 2);
close($fh);

my $from = log_offset($node);
$node->start;
ok($node->log_contains(qr/is of an older version of fpsketch, set aside as/, $from),
	'startup sets the older file aside, with a WARNING');
ok(-e "$path.v2" && !-e $path, "the file is now $files[0].v2");

my ($ret, $out, $err) = $node->psql('postgres', 'SELECT v FROM t WHERE id = 1');
like($err, qr/prepared transaction \d+, whose fpsketch state is not on this server/,
	'a read of t fails naming the prepared transaction');
($ret, $out, $err) = $node->psql('postgres', 'UPDATE t SET v = 5 WHERE id = 2');
like($err, qr/could not serialize access/, 'so does a write of another row of t');

$node->safe_psql('postgres', "COMMIT PREPARED 'older'");
is($node->safe_psql('postgres', 'SELECT v FROM t WHERE id = 1'), '1',
	'after COMMIT PREPARED, t reads the prepared write');
$node->safe_psql('postgres', 'UPDATE t SET v = 5 WHERE id = 2');
is($node->safe_psql('postgres', 'SELECT sum(v) FROM t'), '6', 'and takes writes again');

done_testing();
