#!/usr/bin/env bash
# The README's main command: build and install fpsketch, start a throwaway
# cluster and run the quick mode of the benchmark suite (bench/run.py --quick,
# about 4 minutes): TPC-C-like New-Order + Payment on 1 warehouse and
# YCSB-like 8 reads + 8 writes at Zipf theta 0.99, each side by side on
#   heap READ COMMITTED | REPEATABLE READ | SERIALIZABLE (SSI)
#   fpsketch TicToc and STO, each focus_sketch | focus_counter | exact
# with TPC-C consistency checks after every run.  Prints the table and writes
# bench/results/quick/ (results.csv, results.md, PNG plots).
# Settings: CLIENTS (16), DURATION seconds per row (quick mode: 10); further
# arguments go to bench/run.py (e.g. --full, --sweep; see bench/README.md).
set -uo pipefail

cd "$(dirname "$0")/.."
. scripts/prereqs.sh

export FPS_PGDATA=${FPS_PGDATA:-/tmp/fpsketch-demo-pgdata}
export FPS_PGPORT=${FPS_PGPORT:-55498}

echo "== build and install"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
make -s COPT="-Wall -Werror" >/dev/null && $SUDO make -s install >/dev/null || exit 1
args=(--clients "${CLIENTS:-16}" --pgdata "$FPS_PGDATA" --port "$FPS_PGPORT")
[ -n "${DURATION:-}" ] && args+=(--duration "$DURATION")
mode=--quick
for a in "$@"; do
	case "$a" in --full | --sweep | --workloads* | --replot*) mode= ;; esac
done
# Debian's python3 (python3-matplotlib), not whatever python3 is first in PATH
exec /usr/bin/python3 bench/run.py $mode "${args[@]}" "$@"
