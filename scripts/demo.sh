#!/usr/bin/env bash
# The README's main command (until the benchmark suite lands): build and
# install fpsketch, start a throwaway cluster, load pgbench's TPC-B-like data
# set once into heap tables and once into fpsketch tables, run the same
# pgbench workload side by side and print one table:
#   heap READ COMMITTED | heap SERIALIZABLE (SSI) | fpsketch TicToc
# Settings: CLIENTS (16), DURATION seconds per row (30), SCALE (1).
set -uo pipefail

cd "$(dirname "$0")/.."
. scripts/prereqs.sh

CLIENTS=${CLIENTS:-16}
DURATION=${DURATION:-30}
SCALE=${SCALE:-1}
export FPS_PGDATA=${FPS_PGDATA:-/tmp/fpsketch-demo-pgdata}
export FPS_PGPORT=${FPS_PGPORT:-55498}
export PGHOST=/tmp PGPORT=$FPS_PGPORT PGUSER=postgres

echo "== build and install"
make -s COPT="-Wall -Werror" >/dev/null && make -s install >/dev/null || exit 1
scripts/cluster.sh start "shared_buffers = 256MB" "synchronous_commit = on" || exit 1
trap 'scripts/cluster.sh stop' EXIT

for am in heap fpsketch; do
	createdb "demo_$am"
	psql -X -q -d "demo_$am" -c "CREATE EXTENSION fpsketch"
	PGOPTIONS="-c default_table_access_method=$am" pgbench -q -i -s "$SCALE" "demo_$am" 2>&1 | tail -1
done

results=()
run_row() {						# run_row LABEL DB ISOLATION
	local label=$1 db=$2 iso=$3 out tps processed failed serial dl lat
	psql -X -q -d "$db" -c "SELECT fpsketch_stats_reset()" >/dev/null
	out=$(PGOPTIONS="-c default_transaction_isolation=${iso/ /\\ }" \
		  pgbench -n -c "$CLIENTS" -j 2 -T "$DURATION" --max-tries=10 --failures-detailed "$db" 2>&1)
	processed=$(echo "$out" | awk -F': ' '/actually processed/ {print $2}')
	failed=$(echo "$out" | awk -F': ' '/number of failed transactions/ {print $2}' | awk '{print $1}')
	serial=$(echo "$out" | awk -F': ' '/number of serialization failures/ {print $2}' | awk '{print $1}')
	dl=$(echo "$out" | awk -F': ' '/number of deadlock failures/ {print $2}' | awk '{print $1}')
	retries=$(echo "$out" | awk -F': ' '/total number of retries/ {print $2}')
	lat=$(echo "$out" | awk '/latency average/ {print $4}')
	tps=$(echo "$out" | awk '/^tps/ {print $3}')
	results+=("$(printf '| %-28s | %10s | %9s | %8s | %8s | %8s | %8s |' \
		"$label" "$tps" "$processed" "${retries:-0}" "${failed:-0}" "${dl:-0}" "$lat")")
	echo "$label: $tps tps"
}

echo "== pgbench TPC-B-like, scale $SCALE, $CLIENTS clients, ${DURATION}s per row, --max-tries=10"
run_row "heap READ COMMITTED" demo_heap "read committed"
run_row "heap SERIALIZABLE (SSI)" demo_heap serializable
run_row "fpsketch TicToc focus_sketch" demo_fpsketch "read committed"

echo
echo "pgbench TPC-B-like, scale $SCALE, $CLIENTS clients, ${DURATION}s, --max-tries=10, $(nproc) cores"
echo "| configuration                |  goodput/s | committed |  retries | failed   | deadlock | lat (ms) |"
echo "|------------------------------|------------|-----------|----------|----------|----------|----------|"
printf '%s\n' "${results[@]}"
echo
psql -X -d demo_fpsketch -c "SELECT variant, entries, entries_hwm, pinned, sketch_bytes, commits, aborts_stale_read, aborts_validate_changed, aborts_validate_locked, aborts_concurrent_update, lock_leaks FROM fpsketch_stats"
