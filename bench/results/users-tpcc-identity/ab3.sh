#!/bin/bash
# alternate base (aed21b2, /tmp/bench-pg) and new (0a62a90, /tmp/pg-new): single-client SP New-Order
for r in 1 2 3; do
for b in base:/tmp/bench-pg new:/tmp/pg-new; do
  L=${b%%:*}; P=${b#*:}/usr/lib/postgresql/15/bin
  for x in /tmp/pg-prev /tmp/bench-pg /tmp/pg-new; do su postgres -c "$x/usr/lib/postgresql/15/bin/pg_ctl -D /tmp/bench-data stop -w -m fast" >/dev/null 2>&1; done
  su postgres -c "$P/pg_ctl -D /tmp/bench-data start -w -l /tmp/bench-data.log" >/dev/null
  bash /tmp/ab/one.sh $P $L sp_new_order tpcc_w1_nodecl_fpsketch 15
  bash /tmp/ab/one.sh $P $L sp_payment tpcc_w1_nodecl_fpsketch 10
done
done
