#!/bin/bash
# perf1.sh DB SCRIPT OUT: single client, perf record the backend 10 s
DB=$1; SCRIPT=$2; OUT=$3
export PGHOST=/tmp PGPORT=55460 PGUSER=postgres
P=/tmp/bench-pg/usr/lib/postgresql/15/bin
$P/pgbench -n -M prepared -c 1 -j 1 -T 13 --max-tries=10 -D c_last_c=223 -D c_id_c=259 -D ol_i_id_c=7911 -D warehouses=1 -f /work/main/bench/tpcc/$SCRIPT.sql $DB > $OUT.pgbench 2>&1 &
PB=$!
sleep 1.5
PM=$(head -1 /tmp/bench-data/postmaster.pid)
pid=$(pgrep -P $PM -f "postgres: postgres $DB" | head -1)
perf record -e cpu-clock -g -p $pid -o $OUT.data -- sleep 10 >/dev/null 2>&1
wait $PB
grep "^tps\|processed" $OUT.pgbench
