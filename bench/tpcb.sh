#!/usr/bin/env bash
# pgbench's own TPC-B-like workload, side by side in one run on one
# throwaway cluster: heap at READ COMMITTED and SERIALIZABLE, and fpsketch
# tables (session at READ COMMITTED, serializable by fpsketch.protocol).
# Scale 1 (one branch row that every transaction updates: maximal
# contention), pgbench --max-tries=10 --failures-detailed.
#
#   bench/tpcb.sh                    # 16 clients, 60 s per row
#   CLIENTS=8 SECONDS_RUN=20 bench/tpcb.sh [extra postgresql.conf lines...]
#
# Prints one line per row: goodput (committed transactions/s), abort rate
# (serialization + deadlock failures over attempts), client errors (pgbench
# aborted clients), and, for fpsketch, the abort reasons, the high-water marks
# of pinned and stored keys, and whether any key stayed pinned or lock bit
# leaked.  Exits 1 on a client error or a leak.
set -uo pipefail
cd "$(dirname "$0")/.."

CLIENTS=${CLIENTS:-16}
SECONDS_RUN=${SECONDS_RUN:-60}
SCALE=${SCALE:-1}
export FPS_PGDATA=${FPS_PGDATA:-/tmp/fpsketch-tpcb-pgdata}
export FPS_PGPORT=${FPS_PGPORT:-55497}
export PGHOST=/tmp PGPORT=$FPS_PGPORT PGUSER=postgres

scripts/cluster.sh start "shared_buffers = 512MB" "$@" >/dev/null || exit 1
trap 'scripts/cluster.sh stop' EXIT
psql -X -q -d postgres -c "SHOW fpsketch.protocol" -At | sed 's/^/fpsketch.protocol = /'

ok=1
printf '%-22s %9s %9s %9s %8s  %s\n' configuration goodput/s attempts "aborts" errors "fpsketch reasons"
for row in "heap|read committed" "heap|serializable" "fpsketch|read committed"; do
	am=${row%%|*}
	iso=${row##*|}
	db=tpcb_$am
	dropdb --if-exists "$db" >/dev/null 2>&1
	createdb "$db" || exit 1
	psql -X -q -d "$db" -c "CREATE EXTENSION fpsketch" || exit 1
	PGOPTIONS="-c default_table_access_method=$am" pgbench -q -i -s "$SCALE" "$db" >/dev/null 2>&1 || exit 1
	psql -X -q -d "$db" -c "VACUUM ANALYZE" -c "SELECT fpsketch_stats_reset()" >/dev/null
	# PGOPTIONS separates options by spaces: escape the one in the level
	out=$(PGOPTIONS="-c default_transaction_isolation=${iso// /\\ }" \
		pgbench -n -c "$CLIENTS" -j 2 -T "$SECONDS_RUN" --max-tries=10 --failures-detailed "$db" 2>&1)
	rc=$?
	processed=$(echo "$out" | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')
	failed=$(echo "$out" | sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p')
	retried=$(echo "$out" | sed -n 's/^number of transactions retried: \([0-9]*\).*/\1/p')
	retries=$(echo "$out" | sed -n 's/^total number of retries: \([0-9]*\).*/\1/p')
	tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
	errors=$(echo "$out" | grep -c 'aborted in command')
	[ $rc = 0 ] || errors=$((errors + 1))
	attempts=$((${processed:-0} + ${failed:-0} + ${retries:-0}))
	aborts=$((${failed:-0} + ${retries:-0}))
	reasons=""
	if [ "$am" = fpsketch ]; then
		reasons=$(psql -X -At -d "$db" -c "
			SELECT concat_ws(' ', 'pinned=' || pinned, 'lock_leaks=' || lock_leaks,
				'pinned_hwm=' || pinned_hwm, 'entries_hwm=' || entries_hwm,
				string_agg(key || '=' || value, ' ' ORDER BY key))
			FROM fpsketch_stats s, json_each_text(row_to_json(s))
			WHERE key LIKE 'aborts_%' AND value <> '0'
			GROUP BY pinned, lock_leaks, pinned_hwm, entries_hwm")
		echo "$reasons" | grep -q 'pinned=0 lock_leaks=0' || ok=0
	fi
	[ "$errors" = 0 ] || ok=0
	printf '%-22s %9.0f %9d %8.1f%% %8d  %s\n' "$am $iso" "${tps:-0}" "$attempts" \
		"$(echo "${aborts} ${attempts}" | awk '{ print $2 ? 100 * $1 / $2 : 0 }')" "$errors" "$reasons"
	dropdb "$db"
done
echo "clients = $CLIENTS, scale = $SCALE, $SECONDS_RUN s per row, pgbench --max-tries=10 --failures-detailed, -j 2"
[ $ok = 1 ]
