#!/bin/bash
# (the runs in ab-60s-fifth.txt; ab-60s-fifth-sp.txt: the same with " sp 60"): heap READ COMMITTED against fpsketch 7ebc562 (/tmp/pg-fix3), 60 s each, alternating, fresh server per run, 16 clients, 1 warehouse
AB=/work/main/bench/results/users-tpcc-bound/ab.sh
P=/tmp/pg-fix3/usr/lib/postgresql/15/bin
for r in 1 2 3; do
  bash $AB rc $P tictoc tpcc_w1_nodecl_heap client 60
  bash $AB fps-7ebc562 $P tictoc tpcc_w1_nodecl_fpsketch client 60
done
