#!/bin/bash
# (the runs in ab-60s-hot.txt: four rounds, client = full mix, sp = stored procedures, 1 warehouse, 16 clients)
# heap READ COMMITTED against fpsketch 566a772 (/tmp/pg-hot), 60 s each, alternating, fresh server per run
AB=/work/main/bench/results/users-tpcc-bound/ab.sh
P=/tmp/pg-hot/usr/lib/postgresql/15/bin
for r in 1 2; do
 for wl in client sp; do
  bash $AB rc $P tictoc tpcc_w1_nodecl_heap $wl 60
  bash $AB fps-566a772 $P tictoc tpcc_w1_nodecl_fpsketch $wl 60
 done
done
