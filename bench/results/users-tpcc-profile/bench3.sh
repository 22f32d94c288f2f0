#!/bin/bash
# bench3.sh [PGBIN [OUT]]: three runs of the two 1-warehouse workloads without
# declarations, into OUT-1 .. OUT-3 (used by ../users-tpcc-identity too).
cd /work/main
P=${1:-/tmp/bench-pg/usr/lib/postgresql/15/bin}
OUT=${2:-/tmp/ab/cur}
for r in 1 2 3; do
  python3 bench/run.py --pgbin $P --port 55460 --pgdata /tmp/bench-data --reuse \
    --workloads tpcc-w1-sp,tpcc-w1-client \
    --rows "heap READ COMMITTED,heap SERIALIZABLE,fpsketch tictoc focus_sketch" \
    --duration 20 --out $OUT-$r > $OUT-$r.log 2>&1
done
