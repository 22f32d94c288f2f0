#!/bin/bash
cd /work/main
P=/tmp/pg-new/usr/lib/postgresql/15/bin
for r in 1 2 3; do
  python3 bench/run.py --pgbin $P --port 55460 --pgdata /tmp/bench-data --reuse \
    --workloads tpcc-w1-sp,tpcc-w1-client \
    --rows "heap READ COMMITTED,heap SERIALIZABLE,fpsketch tictoc focus_sketch" \
    --duration 20 --out run-$r > /tmp/ab/pl-$r.log 2>&1
done

