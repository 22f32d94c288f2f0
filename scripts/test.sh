#!/usr/bin/env bash
# Run every fpsketch test against a throwaway cluster:
#   build with -Wall -Werror, install, start a cluster with
#   shared_preload_libraries = fpsketch, then
#   1. make installcheck: pg_regress (sql/), isolation specs (specs/, with
#      heap READ COMMITTED positive controls), standalone sketch tests
#   2. the sketch tests under AddressSanitizer and ThreadSanitizer
#   3. TAP tests (t/): bad input, server restarts
#   4. the randomized serializability checker (fpsketch: no cycle; heap
#      READ COMMITTED: at least one)
#      and again with fpsketch.wait_policy = block (heap's row-lock waits)
#   5. pgbench TPC-B-like on fpsketch tables: zero client errors, no pin or
#      lock bit left behind
#   then 1's isolation specs, 4 and 5 again with fpsketch.protocol = sto
#   (test/sto) and with fpsketch.protocol = mvto (test/mvto); last, the
#   commit-window specs (test/window) on a build with -DFPS_TEST_COMMIT_WINDOW
# Ends with "N passed, M failed" over all test cases.
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
. scripts/prereqs.sh

export FPS_PGDATA=${FPS_PGDATA:-/tmp/fpsketch-test-pgdata}
export FPS_PGPORT=${FPS_PGPORT:-55499}
export PGHOST=/tmp PGPORT=$FPS_PGPORT PGUSER=postgres
LOG=$(mktemp -d /tmp/fpsketch-test.XXXXXX)
chmod 777 "$LOG"
passed=0
failed=0
summary=()

record() {						# record SUITE PASSED FAILED
	passed=$((passed + $2))
	failed=$((failed + $3))
	summary+=("$(printf '%-28s %4d passed, %d failed' "$1" "$2" "$3")")
}

# pg_regress prints "All N tests passed." or "M of N tests failed."
record_pg_regress() {
	local suite=$1 out=$2 n m
	if n=$(grep -oE 'All [0-9]+ tests passed' "$out" | grep -oE '[0-9]+'); then
		record "$suite" "$n" 0
	elif grep -qE '[0-9]+ of [0-9]+ tests failed' "$out"; then
		m=$(grep -oE '[0-9]+ of [0-9]+ tests failed' "$out" | head -1 | awk '{print $1}')
		n=$(grep -oE '[0-9]+ of [0-9]+ tests failed' "$out" | head -1 | awk '{print $3}')
		record "$suite" $((n - m)) "$m"
	else
		record "$suite" 0 1
	fi
}

# run_checker SUITE LOGFILE TAILLINES [run_checks.sh options...]: the
# randomized checker against the running cluster, recorded as SUITE.
run_checker() {
	local suite=$1 log=$2 tail=$3 line
	shift 3
	[ -x test/checker/run_checks.sh ] || return 0
	test/checker/run_checks.sh "$@" >"$LOG/$log" 2>&1
	tail -"$tail" "$LOG/$log"
	line=$(grep -E '^checker: [0-9]+ passed, [0-9]+ failed' "$LOG/$log" | tail -1)
	if [ -n "$line" ]; then
		record "$suite" "$(echo "$line" | awk '{print $2}')" "$(echo "$line" | awk '{print $4}')"
	else
		record "$suite" 0 1
	fi
}

echo "== build (-Wall -Werror) and install"
make -s clean >/dev/null 2>&1
if ! make -s COPT="-Wall -Werror" >"$LOG/build.log" 2>&1 || ! make -s install >>"$LOG/build.log" 2>&1; then
	cat "$LOG/build.log"
	record build 0 1
	echo "0 passed, 1 failed"
	exit 1
fi
record build 1 0

echo "== throwaway cluster on port $FPS_PGPORT"
scripts/cluster.sh start || { echo "0 passed, 1 failed"; exit 1; }
trap 'scripts/cluster.sh stop' EXIT

echo "== standalone sketch tests"
make -s -C sketch clean >/dev/null 2>&1
make -s -C sketch test 2>&1 | tee "$LOG/sketch.log" | grep -E '^(PASS|FAIL|test_fpsketch)'
line=$(grep -E 'test_fpsketch: [0-9]+ passed, [0-9]+ failed' "$LOG/sketch.log" | tail -1)
n=$(echo "$line" | awk '{print $2+0}')
m=$(echo "$line" | awk '{print $4+0}')
[ -n "$line" ] || m=1
# the test must catch a deliberately broken merge order
if make -s -C sketch test-broken >"$LOG/sketch-broken.log" 2>&1 &&
	grep -q 'broken merge order detected: ok' "$LOG/sketch-broken.log"; then
	echo "broken merge order detected: ok"
	n=$((n + 1))
else
	tail -20 "$LOG/sketch-broken.log"
	m=$((m + 1))
fi
record "sketch (standalone)" "${n:-0}" "${m:-1}"

echo "== sketch tests under ASan and TSan"
if make -s -C sketch asan tsan >"$LOG/sanitizers.log" 2>&1; then
	record "sketch (asan, tsan)" 2 0
else
	tail -40 "$LOG/sanitizers.log"
	record "sketch (asan, tsan)" 0 2
fi

echo "== pg_regress"
make -s installcheck-regress-only >"$LOG/regress.log" 2>&1
cat "$LOG/regress.log" | grep -E '^(ok|not ok|test |     |All|[0-9]+ of)' | tail -60
record_pg_regress "pg_regress" "$LOG/regress.log"
[ -f regression.diffs ] && head -80 regression.diffs

echo "== heap positive-control specs match their sources"
if sh test/make_heap_controls.sh --check; then
	record "heap controls current" 1 0
else
	record "heap controls current" 0 1
fi

echo "== isolation specs (fpsketch and heap positive controls)"
make -s installcheck-isolation-only >"$LOG/isolation.log" 2>&1
grep -E '^(ok|not ok|test |All|[0-9]+ of)' "$LOG/isolation.log" | tail -80
record_pg_regress "isolation" "$LOG/isolation.log"
[ -f output_iso/regression.diffs ] && head -80 output_iso/regression.diffs

echo "== TAP tests"
if ls t/*.pl >/dev/null 2>&1; then
	scripts/run_tap.sh >"$LOG/tap.log" 2>&1
	tail -30 "$LOG/tap.log"
	# the failures with their diagnostics, wherever they are in the log
	grep -E -B2 -A12 '^not ok [0-9]+' "$LOG/tap.log" | head -120
	n=$(grep -E '^ok [0-9]+' "$LOG/tap.log" | wc -l)
	m=$(grep -E '^not ok [0-9]+' "$LOG/tap.log" | wc -l)
	grep -q '^Result: PASS' "$LOG/tap.log" || m=$((m > 0 ? m : 1))
	record "TAP" "$n" "$m"
fi

echo "== randomized serializability checker"
run_checker "checker" checker.log 30

echo "== randomized serializability checker, fpsketch.wait_policy = block"
PGOPTIONS="-c fpsketch.wait_policy=block" run_checker "checker (block)" checker-block.log 6 \
	--fps-seconds 10 --pred-fps-seconds 10 --heap-seconds 5 --pred-heap-seconds 4 \
	--out "${TMPDIR:-/tmp}/fpsketch-checker-block"

echo "== pgbench TPC-B-like on fpsketch (16 clients, 20 s, --max-tries=10)"
scripts/pgbench_smoke.sh >"$LOG/pgbench.log" 2>&1
rc=$?
cat "$LOG/pgbench.log"
if [ $rc = 0 ]; then record "pgbench smoke" 1 0; else record "pgbench smoke" 0 1; fi

echo "== STO: the same protocol checks with fpsketch.protocol = sto"
scripts/cluster.sh stop
export FPS_PGDATA=${FPS_PGDATA}-sto
scripts/cluster.sh start "fpsketch.protocol = sto" || { record "sto cluster" 0 1; }
sto_specs=$(ls test/sto/expected/*.out 2>/dev/null | xargs -n1 basename | sed 's/\.out$//' | tr '\n' ' ')
if [ -n "$sto_specs" ]; then
	make -s installcheck-isolation-only ISOLATION_OPTS="--load-extension=fpsketch --inputdir=test/sto --outputdir=output_iso_sto" \
		ISOLATION="$sto_specs" >"$LOG/isolation-sto.log" 2>&1
	grep -E '^(ok|not ok|test |All|[0-9]+ of)' "$LOG/isolation-sto.log" | tail -80
	record_pg_regress "isolation (sto)" "$LOG/isolation-sto.log"
	[ -f output_iso_sto/regression.diffs ] && head -80 output_iso_sto/regression.diffs
fi
# same checks; the server now runs STO
run_checker "checker (sto)" checker-sto.log 12
scripts/pgbench_smoke.sh >"$LOG/pgbench-sto.log" 2>&1
rc=$?
cat "$LOG/pgbench-sto.log"
if [ $rc = 0 ]; then record "pgbench smoke (sto)" 1 0; else record "pgbench smoke (sto)" 0 1; fi

echo "== MVTO: the same protocol checks with fpsketch.protocol = mvto"
scripts/cluster.sh stop
export FPS_PGDATA=${FPS_PGDATA%-sto}-mvto
scripts/cluster.sh start "fpsketch.protocol = mvto" || { record "mvto cluster" 0 1; }
mvto_specs=$(ls test/mvto/expected/*.out 2>/dev/null | xargs -n1 basename | sed 's/\.out$//; s/_[0-9]$//' | sort -u | tr '\n' ' ')
if [ -n "$mvto_specs" ]; then
	make -s installcheck-isolation-only ISOLATION_OPTS="--load-extension=fpsketch --inputdir=test/mvto --outputdir=output_iso_mvto" \
		ISOLATION="$mvto_specs" >"$LOG/isolation-mvto.log" 2>&1
	grep -E '^(ok|not ok|test |All|[0-9]+ of)' "$LOG/isolation-mvto.log" | tail -80
	record_pg_regress "isolation (mvto)" "$LOG/isolation-mvto.log"
	[ -f output_iso_mvto/regression.diffs ] && head -80 output_iso_mvto/regression.diffs
fi
# same checks; the server now runs MVTO (the heap controls, which do not
# depend on the protocol, shorter)
run_checker "checker (mvto)" checker-mvto.log 12 --heap-seconds 5 --pred-heap-seconds 4 \
	--out "${TMPDIR:-/tmp}/fpsketch-checker-mvto"
scripts/pgbench_smoke.sh >"$LOG/pgbench-mvto.log" 2>&1
rc=$?
cat "$LOG/pgbench-mvto.log"
if [ $rc = 0 ]; then record "pgbench smoke (mvto)" 1 0; else record "pgbench smoke (mvto)" 0 1; fi

echo
echo "== commit window: a build with -DFPS_TEST_COMMIT_WINDOW (test/window/README.md)"
scripts/cluster.sh stop
export FPS_PGDATA=${FPS_PGDATA%-mvto}-window
make -s clean >/dev/null 2>&1
if make -s COPT="-Wall -Werror -DFPS_TEST_COMMIT_WINDOW" >"$LOG/build-window.log" 2>&1 &&
	make -s install >>"$LOG/build-window.log" 2>&1; then
	for proto in tictoc sto; do
		scripts/cluster.sh start "fpsketch.protocol = $proto" || { record "window cluster ($proto)" 0 1; continue; }
		window_specs=$(ls test/window/$proto/specs/*.spec | xargs -n1 basename | sed 's/\.spec$//' | tr '\n' ' ')
		make -s installcheck-isolation-only ISOLATION_OPTS="--load-extension=fpsketch --inputdir=test/window/$proto --outputdir=output_iso_window_$proto" \
			ISOLATION="$window_specs" >"$LOG/isolation-window-$proto.log" 2>&1
		grep -E '^(ok|not ok|test |All|[0-9]+ of)' "$LOG/isolation-window-$proto.log"
		record_pg_regress "isolation (window, $proto)" "$LOG/isolation-window-$proto.log"
		[ -f output_iso_window_$proto/regression.diffs ] && head -60 output_iso_window_$proto/regression.diffs
		scripts/cluster.sh stop
	done
else
	cat "$LOG/build-window.log"
	record "window build" 0 1
fi
# leave the ordinary build installed
make -s clean >/dev/null 2>&1
make -s COPT="-Wall -Werror" >/dev/null 2>&1 && make -s install >/dev/null 2>&1 || record "rebuild" 0 1

echo
echo "== summary (logs in $LOG)"
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
