#!/bin/bash
# sub/run.sh: PL/pgSQL with 20 EXCEPTION blocks, each reading one fpsketch and one heap table by key; cf636c2 vs 643c164, alternating
export PGHOST=/tmp PGPORT=55460 PGUSER=postgres
for r in 1 2 3; do
 for b in cf6:/tmp/pg-cf6 s7:/tmp/pg-s7; do
  L=${b%%:*}; P=${b#*:}/usr/lib/postgresql/15/bin
  su postgres -s /bin/sh -c "$P/pg_ctl -D /tmp/bench-data -m fast -w stop" >/dev/null 2>&1; su postgres -s /bin/sh -c "$P/pg_ctl -D /tmp/bench-data -l /tmp/bench-data/server.log -w start" >/dev/null || exit 1
  for c in 1 2; do
   tps=$($P/pgbench -n -M prepared -c $c -j $c -T 8 -f /tmp/s7/sub/tx.sql subx 2>&1 | awk '/^tps/{print $3}')
   echo "$L c=$c tps=$tps"
  done
 done
done
