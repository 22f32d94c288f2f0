#!/bin/bash
# bench.sh PGBIN OUT [ROUNDS]: TPC-C as users write it, no declarations, at 1
# and 2 warehouses, plus the stored procedures with bench/tpcc/indexes.sql's
# groups declared (tpcc-w1-sp-decl), side by side against heap READ COMMITTED
# and SERIALIZABLE, ROUNDS runs of bench/run.py into OUT-1 .. OUT-ROUNDS.
# The data sets must have learned their groups before (a warm-up run): a
# fresh load starts with one group per table.
cd "$(dirname "$0")/../../.."
P=${1:-/tmp/pg-head/usr/lib/postgresql/15/bin}
OUT=${2:-/tmp/ab/bound}
for r in $(seq 1 "${3:-3}"); do
  python3 bench/run.py --pgbin "$P" --port 55460 --pgdata /tmp/bench-data --reuse \
    --workloads tpcc-w1-client,tpcc-w2-client,tpcc-w1-sp,tpcc-w2-sp,tpcc-w1-sp-decl \
    --rows "heap READ COMMITTED,heap SERIALIZABLE,fpsketch tictoc focus_sketch" \
    --duration 20 --out "$OUT-$r" > "$OUT-$r.log" 2>&1
done
