#!/usr/bin/env bash
# Run the TAP tests (t/*.pl, or the files given as arguments) with
# PostgreSQL::Test::Cluster.  Those refuse to run as root, so as root the
# tests (t/, and bench/tpcc whose TPC-C scripts the crash tests run) are
# copied to a directory owned by the postgres user and prove runs as that
# user (in $TAP_DIR, default /tmp/fpsketch-tap).  PG_BINDIR overrides the
# PostgreSQL binaries (default: pg_config's).
set -euo pipefail
cd "$(dirname "$0")/.."
BINDIR=${PG_BINDIR:-$(pg_config --bindir)}
PGXSDIR=$(dirname "$("$BINDIR/pg_config" --pgxs 2>/dev/null || pg_config --pgxs)")/..
PERLLIB="$PGXSDIR/test/perl"
tests="${*:-t/*.pl}"
cmd="cd '%s' && PATH='$BINDIR':\$PATH PG_REGRESS='$PGXSDIR/test/regress/pg_regress' TESTDIR='%s' PGPORT=57432 prove -I '$PERLLIB' -v $tests"
if [ "$(id -u)" = 0 ]; then
	dir=${TAP_DIR:-/tmp/fpsketch-tap}
	rm -rf "$dir"
	mkdir -p "$dir/bench"
	cp -r t "$dir/"
	cp -r bench/tpcc "$dir/bench/"
	chown -R postgres "$dir"
	su postgres -s /bin/bash -c "$(printf "$cmd" "$dir" "$dir")"
else
	bash -c "$(printf "$cmd" "$(pwd)" "$(pwd)")"
fi
