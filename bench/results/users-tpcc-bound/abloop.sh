#!/bin/bash
# (the run in ab-delta-overflow-60s.txt: NEW was /tmp/pg-dev, a build of 2bde623 with 124f429's header guard: the same server code as d3133f7)
# abloop.sh WL ROUNDS T: heap RC, fpsketch 86803a3 (OLD) and the fixed build (NEW) alternating, ab.sh each (a fresh server per run)
WL=$1; R=${2:-3}; T=${3:-20}
AB=/work/main/bench/results/users-tpcc-bound/ab.sh
OLD=/tmp/pg-main/usr/lib/postgresql/15/bin; NEW=/tmp/pg-final/usr/lib/postgresql/15/bin
for r in $(seq 1 $R); do
  bash $AB rc $OLD tictoc tpcc_w1_nodecl_heap $WL $T
  bash $AB old-86803a3 $OLD tictoc tpcc_w1_nodecl_fpsketch $WL $T
  psql -h /tmp -p 55460 -U postgres -Atc "select 'old aborts', relname, aborts_validate_changed, aborts_stale_read from fpsketch_relation_stats where aborts>0" tpcc_w1_nodecl_fpsketch | tr '\n' ' '; echo
  bash $AB new-d3133f7 $NEW tictoc tpcc_w1_nodecl_fpsketch $WL $T
  psql -h /tmp -p 55460 -U postgres -Atc "select 'new aborts', relname, aborts_validate_changed, aborts_stale_read from fpsketch_relation_stats where aborts>0" tpcc_w1_nodecl_fpsketch | tr '\n' ' '; echo
done
