#!/bin/bash
AB=/work/main/bench/results/users-tpcc-bound/ab.sh
# (the runs in ab-s7-643c164.txt: 643c164 at /tmp/pg-s7, 7ebc562 at /tmp/pg-fix3; 30 s each, alternating)
for r in 1 2 3; do
 for wl in sp client; do
  bash $AB rc /tmp/pg-s7/usr/lib/postgresql/15/bin tictoc tpcc_w1_nodecl_heap $wl 30
  bash $AB fps-7ebc562 /tmp/pg-fix3/usr/lib/postgresql/15/bin tictoc tpcc_w1_nodecl_fpsketch $wl 30
  bash $AB fps-643c164 /tmp/pg-s7/usr/lib/postgresql/15/bin tictoc tpcc_w1_nodecl_fpsketch $wl 30
 done
done
