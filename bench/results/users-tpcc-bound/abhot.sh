#!/bin/bash
# abhot.sh C N: alternate base (686cd79) and dev builds, statio.sh sp C 15 on the fpsketch DB
C=$1; N=$2; DB=${3:-tpcc_w1_nodecl_fpsketch}
R=/work/main/bench/results/users-tpcc-bound
for i in $(seq 1 $N); do
  for b in base dev; do
    P=/tmp/pg-$b/usr/lib/postgresql/15/bin
    su postgres -s /bin/sh -c "$P/pg_ctl -D /tmp/bench-data -m fast -w stop" >/dev/null 2>&1
    su postgres -s /bin/sh -c "$P/pg_ctl -D /tmp/bench-data -l /tmp/bench-data/server.log -w start" >/dev/null || exit 1
    echo -n "$i $b: "; PGB=/tmp/pg-$b $R/statio.sh $DB sp $C 15 | egrep "cpu_ms|^T (stock|district)" | tr '\n' ' '; echo
  done
done
