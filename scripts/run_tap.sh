#!/usr/bin/env bash
# Run the TAP tests (t/*.pl) with PostgreSQL::Test::Cluster.  Those refuse
# to run as root, so as root the tree is copied to a directory owned by the
# postgres user and prove runs as that user.
set -euo pipefail
cd "$(dirname "$0")/.."
BINDIR=$(pg_config --bindir)
PGXSDIR=$(dirname "$(pg_config --pgxs)")/..
PERLLIB="$PGXSDIR/test/perl"
cmd="cd '%s' && PATH='$BINDIR':\$PATH PG_REGRESS='$PGXSDIR/test/regress/pg_regress' TESTDIR='%s' PGPORT=57432 prove -I '$PERLLIB' -v t/*.pl"
if [ "$(id -u)" = 0 ]; then
	dir=/tmp/fpsketch-tap
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -r t "$dir/"
	chown -R postgres "$dir"
	su postgres -s /bin/bash -c "$(printf "$cmd" "$dir" "$dir")"
else
	bash -c "$(printf "$cmd" "$(pwd)" "$(pwd)")"
fi
