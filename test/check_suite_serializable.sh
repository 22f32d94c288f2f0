#!/usr/bin/env bash
# Check that every outcome of a protocol's isolation suite is serializable:
# test/check_serializable.py on each test/SUITE/specs/NAME.spec and its output
# (NAME_N.out too: an alternative output of NAME.spec, pg_regress's
# convention).
#   test/check_suite_serializable.sh SUITE [DIR] [check_serializable.py options]
# SUITE is sto or mvto; DIR holds the outputs (default test/SUITE/expected;
# e.g. output_iso_SUITE/results after a run).  Connects like libpq (PGHOST,
# PGPORT, PGUSER) to the isolation_regression database of the run, or
# --conn CONNSTR.  Exit status 1 if an outcome is not serializable.
set -uo pipefail
cd "$(dirname "$0")/.."
suite=$1
shift
dir=test/$suite/expected
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	dir=$1
	shift
fi
args=()
for out in test/$suite/expected/*.out; do
	name=$(basename "$out" .out)
	args+=("test/$suite/specs/${name%_[0-9]}.spec" "$dir/$name.out")
done
exec python3 test/check_serializable.py "$@" "${args[@]}"
