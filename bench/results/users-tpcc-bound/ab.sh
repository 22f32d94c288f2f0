#!/bin/bash
# ab.sh LABEL PGBIN PROTO DB WORKLOAD [T]: one 16-client run (client = full mix, sp =
# stored procedures) on the bench cluster; prints tps, context switches and
# machine CPU per transaction (/proc/stat), retries, fpsketch row-lock waits.
# Stops and starts the server with PGBIN's binary (pg_ctl restart would rerun the
# binary recorded in postmaster.opts).
LABEL=$1; P=$2; PROTO=$3; DB=$4; WL=$5; T=${6:-20}
export PGHOST=/tmp PGPORT=55460 PGUSER=postgres
sed -i "s/^fpsketch.protocol = .*/fpsketch.protocol = '$PROTO'/" /tmp/bench-data/bench.conf
su postgres -s /bin/sh -c "$P/pg_ctl -D /tmp/bench-data -m fast -w stop" >/dev/null 2>&1; su postgres -s /bin/sh -c "$P/pg_ctl -D /tmp/bench-data -l /tmp/bench-data/server.log -w start" >/dev/null || exit 1
psql -qAtc "select fpsketch_stats_reset()" $DB >/dev/null 2>&1
cd /work/main/bench/tpcc
case $WL in
 client) F="-f client_new_order.sql@45 -f client_payment.sql@43 -f client_order_status.sql@4 -f client_delivery.sql@4 -f client_stock_level.sql@4";;
 sp) F="-f sp_new_order.sql@50 -f sp_payment.sql@50";;
esac
W=$(echo $DB | sed 's/tpcc_w\([0-9]*\)_.*/\1/')
c0=$(awk '/^ctxt/{print $2}' /proc/stat); t0=$(awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat)
PGOPTIONS='-c default_transaction_isolation=read\ committed' $P/pgbench -n -M prepared -c 16 -j 2 -T $T --max-tries=10 --random-seed=5381 -D c_last_c=223 -D c_id_c=259 -D ol_i_id_c=7911 -D warehouses=$W $F $DB > /tmp/ab/ab_last.pgb 2>&1
c1=$(awk '/^ctxt/{print $2}' /proc/stat); t1=$(awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat)
n=$(grep "actually processed" /tmp/ab/ab_last.pgb | awk '{print $NF}' | cut -d/ -f1)
tps=$(grep "^tps" /tmp/ab/ab_last.pgb | awk '{print $3}')
ret=$(grep "^number of transactions retried" /tmp/ab/ab_last.pgb | awk '{print $5}')
rlw=$(psql -qAtc "select row_lock_waits from fpsketch_stats" $DB 2>/dev/null)
echo "$LABEL $WL $DB tps=$tps ctxt/tx=$(( (c1-c0)/n )) cpu_ms/tx=$(python3 -c "print(round(($t1-$t0)*10/$n,3))") retried=$ret row_lock_waits/tx=$(python3 -c "print(round(${rlw:-0}/$n,2))")"
