#!/bin/bash
# alternate base and new: run.py on the same data directory (--reuse)
cd /work/main
for r in 1 2; do   # then again with 3 4
  for b in base:/tmp/pg-base new:/tmp/bench-pg; do
    L=${b%%:*}; P=${b#*:}/usr/lib/postgresql/15/bin
    python3 bench/run.py --pgbin $P --port 55460 --pgdata /tmp/bench-data --reuse \
      --workloads tpcc-w1-sp,tpcc-w1-client \
      --rows "heap READ COMMITTED,heap SERIALIZABLE,fpsketch tictoc focus_sketch" \
      --duration 20 --out /tmp/ab/$L-$r > /tmp/ab/$L-$r.log 2>&1
  done
done
