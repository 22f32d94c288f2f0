#!/usr/bin/env bash
# pgbench's TPC-B-like workload on fpsketch tables: no client may fail with
# anything but retried serialization failures, and once idle no key may
# stay pinned and no lock bit may have leaked.
set -uo pipefail
DB=fps_pgbench_smoke
CLIENTS=${CLIENTS:-16}
SECONDS_RUN=${SECONDS_RUN:-20}
dropdb --if-exists $DB >/dev/null 2>&1
createdb $DB || exit 1
psql -X -q -d $DB -c "CREATE EXTENSION fpsketch" || exit 1
PGOPTIONS="-c default_table_access_method=fpsketch" pgbench -q -i -s 1 $DB 2>&1 | tail -1
psql -X -q -d $DB -c "SELECT fpsketch_stats_reset()" >/dev/null
out=$(pgbench -n -c "$CLIENTS" -j 2 -T "$SECONDS_RUN" --max-tries=10 --failures-detailed $DB 2>&1)
rc=$?
echo "$out" | grep -E 'processed|failed|serialization|deadlock|tps|latency average|aborted'
stats=$(psql -X -At -d $DB -c "SELECT pinned, lock_leaks, entries_hwm FROM fpsketch_stats")
echo "fpsketch_stats after the run: pinned|lock_leaks|entries_hwm = $stats"
ok=1
[ $rc = 0 ] || { echo "FAIL: pgbench exited with $rc"; ok=0; }
echo "$out" | grep -q 'aborted in command' && { echo "FAIL: a client aborted"; ok=0; }
IFS='|' read -r pinned leaks hwm <<<"$stats"
[ "$pinned" = 0 ] || { echo "FAIL: $pinned keys still pinned when idle"; ok=0; }
[ "$leaks" = 0 ] || { echo "FAIL: $leaks lock bits leaked"; ok=0; }
[ "${hwm:-0}" -gt 0 ] || { echo "FAIL: nothing was ever pinned"; ok=0; }
dropdb $DB
[ $ok = 1 ] && echo "pgbench smoke: ok"
[ $ok = 1 ]
