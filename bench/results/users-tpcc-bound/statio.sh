#!/bin/bash
# (statio.sh DB WL CLIENTS SECONDS: blocks, index scans and CPU per committed transaction from pg_statio, on the bench cluster, no restart)
# statio.sh DB WL C T: run pgbench, print per-tx blocks hit per relation and index scans
DB=$1; WL=$2; C=${3:-1}; T=${4:-15}
P=${PGB:-/tmp/pg-main}/usr/lib/postgresql/15/bin
export PGHOST=/tmp PGPORT=55460 PGUSER=postgres
cd /work/main/bench/tpcc
case $WL in
 client) F="-f client_new_order.sql@45 -f client_payment.sql@43 -f client_order_status.sql@4 -f client_delivery.sql@4 -f client_stock_level.sql@4";;
 sp) F="-f sp_new_order.sql@50 -f sp_payment.sql@50";;
 no) F="-f sp_new_order.sql";;
 pay) F="-f sp_payment.sql";;
esac
W=$(echo $DB | sed 's/tpcc_w\([0-9]*\)_.*/\1/')
psql -qAtc "select pg_stat_reset()" $DB >/dev/null
psql -qAtc "select fpsketch_stats_reset()" $DB >/dev/null 2>&1
t0=$(awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat)
PGOPTIONS='-c default_transaction_isolation=read\ committed' $P/pgbench -n -M prepared -c $C -j $C -T $T --max-tries=10 --random-seed=5381 -D c_last_c=223 -D c_id_c=259 -D ol_i_id_c=7911 -D warehouses=$W $F $DB > /tmp/s19/last.pgb 2>&1
t1=$(awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat)
n=$(grep "actually processed" /tmp/s19/last.pgb | awk '{print $NF}' | cut -d/ -f1)
echo "$DB $WL c=$C n=$n tps=$(grep ^tps /tmp/s19/last.pgb|awk '{print $3}') cpu_ms/tx=$(python3 -c "print(round(($t1-$t0)*10/$n,3))")"
sleep 1
psql -qAt -F' ' $DB -c "select 'T', relname, round((heap_blks_hit+heap_blks_read)::numeric/$n,2), round((coalesce(idx_blks_hit,0)+coalesce(idx_blks_read,0))::numeric/$n,2) from pg_statio_user_tables where heap_blks_hit+coalesce(idx_blks_hit,0)>0 order by 1,2" -c "select 'I', s.indexrelname, round(idx_scan::numeric/$n,2), round(idx_tup_read::numeric/$n,2), round((idx_blks_hit+idx_blks_read)::numeric/$n,2) from pg_stat_user_indexes s join pg_statio_user_indexes i using (indexrelid) where idx_scan>0 order by 2" -c "select 'S', relname, round(seq_scan::numeric/$n,2), round(seq_tup_read::numeric/$n,2) from pg_stat_user_tables where seq_scan>0"
