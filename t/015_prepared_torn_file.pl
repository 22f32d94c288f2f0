# 015_prepared_torn_file.pl: a backend killed while it writes the file of
# a prepared transaction (pg_fpsketch/prepared) does not keep the server
# from restarting.
#
# PREPARE TRANSACTION writes what the prepared transaction keeps to a file
# before PREPARE's WAL record; server start reads every such file, and
# refuses to start for one it cannot read (as PostgreSQL does for a corrupt
# two-phase state file).  The file used to be written in place: SIGKILL
# after its first write() left a file with the header only, the crash
# restart stopped with FATAL "could not read prepared transaction file",
# and the server stayed down until someone removed the file by hand, for a
# transaction that was never prepared.  The file is written under a
# temporary name and renamed once complete now: the restart removes the
# torn temporary file, the transaction is not prepared, its row is not
# locked, and nothing is left pinned or on disk.
#
# Needs gdb (a catchpoint on the write() syscall); skipped without it.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

plan skip_all => 'gdb cannot attach to backends here' unless gdb_usable();

my $node = fps_node('fps_torn', conf => 'max_prepared_transactions = 4');
my $dir = $node->data_dir . '/pg_fpsketch/prepared';

$node->safe_psql(
	'postgres', q{
	CREATE TABLE torn (k int PRIMARY KEY, v int NOT NULL) USING fpsketch;
	INSERT INTO torn SELECT g, 0 FROM generate_series(1, 10) g;
});

my $v = FpsTest::Session->new($node, app => 'fps_victim');
my $pid = $v->pid;
$v->query('BEGIN; UPDATE torn SET v = 1 WHERE k = 1;');

# stop in the file's writer, let its first write() complete, then SIGKILL
my $flag = PostgreSQL::Test::Utils::tempdir() . '/gdb_ready';
my $gdb_out = '';
my $gdb = IPC::Run::start(
	[
		'gdb', '-p', $pid, '-batch',
		'-ex', 'break write_file',
		'-ex', "shell touch $flag",
		'-ex', 'continue',
		'-ex', 'catch syscall write',
		'-ex', 'continue',
		'-ex', 'continue',
		'-ex', "shell ls -l $dir",
		'-ex', "shell kill -9 $pid"
	],
	'<', \undef, '>&', \$gdb_out, IPC::Run::timeout(60));
my $t = time;
usleep(50_000) until -e $flag || time - $t > 60;
$v->send("PREPARE TRANSACTION 'torn';");
eval { $gdb->finish; };
if ($@) { diag "gdb: $@"; eval { $gdb->kill_kill; }; }
like($gdb_out, qr/returned from syscall write/,
	'the backend was killed after the first write() of the file')
  or diag $gdb_out;
$v->close;

# the crash restart must come back by itself
my $ready = eval { wait_ready($node, 60); 1 };
ok($ready, 'the server restarts after the crash')
  or diag `tail -5 ${\ $node->logfile}`;

SKIP:
{
	skip 'the server did not restart', 5 unless $ready;
	is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'),
		'0', 'the transaction was not prepared');
	is( $node->safe_psql(
			'postgres',
			'SET fpsketch.lock_wait_timeout = 100; BEGIN; SELECT v FROM torn WHERE k = 1; COMMIT;'
		),
		'0',
		'its row is neither changed nor locked');
	my @files = glob("$dir/*");
	is(scalar(@files), 0, 'no file left in pg_fpsketch/prepared')
	  or diag join(' ', @files);
	my $s = wait_idle($node);
	is($s->{pinned},     0, 'nothing pinned');
	is($s->{lock_leaks}, 0, 'no lock leaks');
}

eval { $node->stop('immediate'); };
done_testing();
