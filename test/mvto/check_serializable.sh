#!/usr/bin/env bash
# Check that every MVTO outcome is serializable: test/check_serializable.py on
# each test/mvto/specs/NAME.spec (the MVTO variant, or a symlink to specs/) and
# its output (and NAME_N.out, alternative outputs).
#   test/mvto/check_serializable.sh [DIR] [check_serializable.py options]
# DIR holds the outputs (default test/mvto/expected; e.g. output_iso_mvto/results
# after a run).  Connects like libpq (PGHOST, PGPORT, PGUSER) to the
# isolation_regression database of the run, or --conn CONNSTR.
# Exit status 1 if an outcome is not serializable.
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=test/mvto/expected
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	dir=$1
	shift
fi
args=()
for out in test/mvto/expected/*.out; do
	name=$(basename "$out" .out)
	# NAME_1.out: an alternative output of NAME.spec (pg_regress's convention)
	args+=("test/mvto/specs/${name%_[0-9]}.spec" "$dir/$name.out")
done
exec python3 test/check_serializable.py "$@" "${args[@]}"
