# 021_read_pin_reserve.pl: reads leave an eighth of a transaction's pin
# limit to its writes (cc/txn.c, fps_txn_try_read_access).
#
# Found by helper-26: under STO, whose writes cannot escalate to ACCESS
# EXCLUSIVE, a transaction that counted 17 tables of 1000 rows (each at
# fpsketch.escalation_threshold, so none escalated) pinned its whole limit
# (16384 keys) with reads, and its one-row INSERT then failed with 54000
# "transaction writes more rows than fpsketch can track", on every retry.
# Now, under STO and MVTO, its reads past seven eighths of the limit read
# the relations' escalation keys instead, and the INSERT commits.  (Under
# TicToc reads use the whole budget, and the INSERT takes its table in
# ACCESS EXCLUSIVE mode instead: it commits too.)
# Control: a transaction that writes more rows than its limit still fails
# with 54000 under STO (the reserve is for writes, not on top of them).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/lib";
use FpsTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = fps_node('fps_read_pin_reserve');
my $ntables = 17;
$node->safe_psql('postgres',
	join('', map { "CREATE TABLE rq$_ (k int PRIMARY KEY, v int) USING fpsketch;
		INSERT INTO rq$_ SELECT g, 0 FROM generate_series(1, 1000) g;" } 1 .. $ntables)
	  . 'CREATE TABLE rqlog (id serial PRIMARY KEY, note text) USING fpsketch;
	     CREATE TABLE wide (k int PRIMARY KEY, v int) USING fpsketch;
	     INSERT INTO wide SELECT g, 0 FROM generate_series(1, 20000) g;
	     VACUUM ANALYZE;');
my $reads = join(' ', map { "SELECT count(*) FROM rq$_;" } 1 .. $ntables);

foreach my $proto (protocols($node))
{
	set_conf($node, 'fpsketch.protocol', $proto);
	$node->restart;
	my ($ret, $out, $err) = $node->psql('postgres',
		"BEGIN; $reads INSERT INTO rqlog (note) VALUES ('$proto'); COMMIT;");
	is($err =~ /ERROR:\s+(?:\w+:\s+)?(.*)/ ? $1 : 'committed', 'committed',
		"$proto: $ntables x 1000 rows read, then a one-row INSERT commits");
	is(wait_idle($node)->{pinned}, 0, "$proto: nothing stays pinned");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM rqlog'),
	scalar(protocols($node)), 'every INSERT is there');

SKIP:
{
	skip 'this build has no STO', 2 unless grep { $_ eq 'sto' } protocols($node);
	set_conf($node, 'fpsketch.protocol', 'sto');
	$node->restart;
	my ($ret, $out, $err) = $node->psql('postgres',
		'SET enable_seqscan = off; UPDATE wide SET v = v + 1 WHERE k <= 17000;');
	like($err, qr/54000|more rows than fpsketch can track/,
		'sto: writing more rows than the limit still fails with 54000');
	# helper-29: with fpsketch.max_pins_per_transaction at about a
	# backend's own share, the first version of the reserve left nothing
	($ret, $out, $err) = $node->psql('postgres',
		q{BEGIN; SET LOCAL fpsketch.max_pins_per_transaction = 140;
		  SELECT count(*) FROM (SELECT * FROM wide WHERE k <= 180 ORDER BY k) s;
		  INSERT INTO rqlog (note) VALUES ('small limit'); COMMIT;});
	is($err =~ /ERROR:\s+(?:\w+:\s+)?(.*)/ ? $1 : 'committed', 'committed',
		'sto: 180 rows read under a limit of 140, then a one-row INSERT commits');
}

done_testing();
