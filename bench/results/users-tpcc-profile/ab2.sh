#!/bin/bash
for r in 1 2; do
for b in prev:/tmp/pg-prev cur:/tmp/bench-pg; do
  L=${b%%:*}; P=${b#*:}/usr/lib/postgresql/15/bin
  for x in /tmp/pg-prev /tmp/bench-pg /tmp/pg-base; do su postgres -c "$x/usr/lib/postgresql/15/bin/pg_ctl -D /tmp/bench-data stop -w -m fast" >/dev/null 2>&1; done
  su postgres -c "$P/pg_ctl -D /tmp/bench-data start -w -l /tmp/bench-data.log" >/dev/null
  # /tmp/ab/one.sh is bench/results/users-tpcc-levels/one.sh
  bash /tmp/ab/one.sh $P $L sp_new_order tpcc_w1_nodecl_fpsketch 15
done
done
