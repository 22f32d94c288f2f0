#!/bin/bash
# perf_flat.sh DB OUT WL: a 16-client run (WL = client or sp, 1 warehouse) under `perf record -a -F 999`
# (PERFG=-g adds call graphs), on the bench cluster (port 55460) with the build in /tmp/pg-head.
DB=$1; OUT=$2; WL=$3; T=15
P=/tmp/pg-head/usr/lib/postgresql/15/bin
export PGHOST=/tmp PGPORT=55460 PGUSER=postgres
su postgres -s /bin/sh -c "$P/pg_ctl -D /tmp/bench-data -m fast -w stop" >/dev/null 2>&1; su postgres -s /bin/sh -c "$P/pg_ctl -D /tmp/bench-data -l /tmp/bench-data/server.log -w start" >/dev/null || exit 1
psql -qAtc "vacuum" $DB
psql -qAtc "select fpsketch_stats_reset()" $DB >/dev/null 2>&1
cd /work/main/bench/tpcc
case $WL in
 client) F="-f client_new_order.sql@45 -f client_payment.sql@43 -f client_order_status.sql@4 -f client_delivery.sql@4 -f client_stock_level.sql@4";;
 sp) F="-f sp_new_order.sql@50 -f sp_payment.sql@50";;
esac
perf record -a ${PERFG} -F 999 -o $OUT.data -- sleep $((T+1)) >/dev/null 2>&1 &
PGOPTIONS='-c default_transaction_isolation=read\ committed' $P/pgbench -n -M prepared -c 16 -j 2 -T $T --max-tries=10 --random-seed=5381 -D c_last_c=223 -D c_id_c=259 -D ol_i_id_c=7911 -D warehouses=1 $F $DB > $OUT.pgb 2>&1
wait
grep -E "^tps|actually" $OUT.pgb
perf report -i $OUT.data --no-children --sort comm 2>/dev/null | grep -v "^#" | grep -v '^$' | head -4
