#!/usr/bin/env bash
# Randomized serializability checks (list-append and predicate workloads)
# against a running server that has fpsketch in shared_preload_libraries.
#
#   test/checker/run_checks.sh [-h HOST] [-p PORT] [-U USER] [-d DB]
#                              [--fps-seconds N] [--heap-seconds N]
#                              [--pred-fps-seconds N] [--pred-heap-seconds N]
#                              [--checker-args "ARGS"] [--out DIR]
#
# Connection settings default to the PG* environment variables.  Every
# stage's default mix has long read-only transactions (5 % of the
# transactions: BEGIN READ ONLY, SET TRANSACTION READ ONLY, REPEATABLE READ
# READ ONLY, default_transaction_read_only, single autocommit SELECTs; several
# statements of hundreds of rows; README: Long read-only transactions).  On
# fpsketch they read at a timestamp and must never fail with 40001/40P01
# (check ro-abort); the fpsketch stages also VACUUM the table every 2 s.
# The server's fpsketch.protocol is printed by each stage: run this against a
# cluster started with "fpsketch.protocol = mvto" to check MVTO.
# Every stage also ends 15 % of its read-write transactions with PREPARE
# TRANSACTION and COMMIT PREPARED (from another connection or the same) or
# ROLLBACK PREPARED (README: Two-phase commit); off when the server has
# max_prepared_transactions = 0.
# --checker-args adds arguments to every checker run (e.g. "--ro-mix begin=1").
# Runs:
#   0. the analysis self-test (hand-made histories, no database);
#   1. list-append on an fpsketch table: every anomaly class must be clean;
#      the default mix includes reads in rolled-back savepoints (client,
#      PL/pgSQL function, DO block), pick-the-smallest ORDER BY ... LIMIT 1
#      FOR UPDATE, and a self-join FOR UPDATE (README: List-append micro-ops);
#   2. list-append on a heap table at READ COMMITTED, the positive control:
#      the checker must find at least one anomaly;
#   3. the predicate workload (inserts, deletes, moves, predicate reads, some
#      of them in rolled-back savepoints) on an fpsketch table: must be clean;
#   4. the predicate workload on heap at READ COMMITTED: must find an anomaly
#      (phantoms: predicate write skew, non-repeatable predicate reads);
#      without the inference step, which heap's many anomalies do not need
#      and which would only make the analysis slow.
# Prints `checker: N passed, M failed` last; exits nonzero if anything failed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
conn=()
fps_seconds=20
heap_seconds=10
pred_fps_seconds=20
pred_heap_seconds=6
extra=()
out=${TMPDIR:-/tmp}/fpsketch-checker
while [ $# -gt 0 ]; do
	case "$1" in
		-h|--host) conn+=(--host "$2"); shift 2 ;;
		-p|--port) conn+=(--port "$2"); shift 2 ;;
		-U|--user) conn+=(--user "$2"); shift 2 ;;
		-d|--dbname) conn+=(--dbname "$2"); shift 2 ;;
		--fps-seconds) fps_seconds=$2; shift 2 ;;
		--heap-seconds) heap_seconds=$2; shift 2 ;;
		--pred-fps-seconds) pred_fps_seconds=$2; shift 2 ;;
		--pred-heap-seconds) pred_heap_seconds=$2; shift 2 ;;
		--checker-args) read -r -a more <<< "$2"; extra+=("${more[@]}"); shift 2 ;;
		--out) out=$2; shift 2 ;;
		*) echo "usage: $0 [-h host] [-p port] [-U user] [-d db] [--fps-seconds N] [--heap-seconds N]" \
		        "[--pred-fps-seconds N] [--pred-heap-seconds N] [--checker-args ARGS] [--out DIR]" >&2
		   echo "checker: 0 passed, 1 failed"; exit 2 ;;
	esac
done

# Debian's python3 with Debian's psycopg2, not whatever python3 is on PATH.
PY=/usr/bin/python3
if ! "$PY" -c 'import psycopg2' 2>/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		apt-get install -y -q python3-psycopg2 >/dev/null 2>&1 ||
			{ apt-get update -q >/dev/null 2>&1 && apt-get install -y -q python3-psycopg2 >/dev/null 2>&1; }
	fi
	if ! "$PY" -c 'import psycopg2' 2>/dev/null; then
		echo "run_checks: $PY cannot import psycopg2 (apt-get install -y python3-psycopg2)"
		echo "checker: 0 passed, 1 failed"
		exit 2
	fi
fi
mkdir -p "$out"

total_pass=0
total_fail=0
stage_start=$SECONDS
tally() {	# $1 = log file, $2 = exit code, $3 = label
	local line p f
	line=$(grep -E '^checker(-selftest)?: [0-9]+ passed, [0-9]+ failed$' "$1" | tail -1)
	if [ -n "$line" ]; then
		p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
		f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed$/\1/')
	else
		p=0; f=1
	fi
	# a nonzero exit must count as a failure even if the line said otherwise
	if [ "$2" != 0 ] && [ "$f" = 0 ]; then f=1; fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	printf 'run_checks: %-40s exit %s, %s passed, %s failed (%d s)\n' "$3" "$2" "$p" "$f" \
		$((SECONDS - stage_start))
	stage_start=$SECONDS
}

start=$SECONDS

"$PY" "$here/test_analysis.py" > "$out/selftest.log" 2>&1
rc=$?
[ $rc = 0 ] || cat "$out/selftest.log"
tally "$out/selftest.log" $rc "analysis self-test"

"$PY" "$here/la_checker.py" "${conn[@]}" --am fpsketch --table la_fpsketch \
	--seconds "$fps_seconds" --vacuum-every 2 --save-on-failure "$out" ${extra[@]+"${extra[@]}"} 2>&1 |
	tee "$out/fpsketch.log"
rc=${PIPESTATUS[0]}
tally "$out/fpsketch.log" $rc "fpsketch (must be clean)"

"$PY" "$here/la_checker.py" "${conn[@]}" --am heap --table la_heap \
	--seconds "$heap_seconds" --expect-anomaly ${extra[@]+"${extra[@]}"} 2>&1 | tee "$out/heap.log"
rc=${PIPESTATUS[0]}
tally "$out/heap.log" $rc "heap RC (must find anomaly)"

"$PY" "$here/la_checker.py" "${conn[@]}" --workload predicate --am fpsketch --table pr_fpsketch \
	--seconds "$pred_fps_seconds" --vacuum-every 2 --save-on-failure "$out" ${extra[@]+"${extra[@]}"} 2>&1 |
	tee "$out/pred-fpsketch.log"
rc=${PIPESTATUS[0]}
tally "$out/pred-fpsketch.log" $rc "predicate fpsketch (must be clean)"

"$PY" "$here/la_checker.py" "${conn[@]}" --workload predicate --am heap --table pr_heap \
	--seconds "$pred_heap_seconds" --infer-window 0 --expect-anomaly --max-report 2 ${extra[@]+"${extra[@]}"} 2>&1 |
	tee "$out/pred-heap.log"
rc=${PIPESTATUS[0]}
tally "$out/pred-heap.log" $rc "predicate heap RC (must find anomaly)"

echo "run_checks: $((SECONDS - start)) s, logs in $out"
echo "checker: $total_pass passed, $total_fail failed"
[ $total_fail = 0 ]
