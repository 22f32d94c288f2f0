#!/bin/bash
# one.sh PGBIN LABEL SCRIPT DB SECONDS: single-client run; prints label script tps cpu_us_per_tx increfs_per_commit
PGBIN=$1; LABEL=$2; SCRIPT=$3; DB=$4; T=${5:-15}
export PGHOST=/tmp PGPORT=55460 PGUSER=postgres
psql -q -Atc "select fpsketch_stats_reset()" $DB >/dev/null
$PGBIN/pgbench -n -M prepared -c 1 -j 1 -T $T --max-tries=10 --random-seed=5381 -D c_last_c=223 -D c_id_c=259 -D ol_i_id_c=7911 -D warehouses=1 -f /work/main/bench/tpcc/$SCRIPT.sql $DB > /tmp/ab/pgb.out 2>&1 &
PB=$!
PM=$(head -1 /tmp/bench-data/postmaster.pid)
sleep 1
pid=$(pgrep -P $PM -f "postgres: postgres $DB" | head -1)
last=0
while kill -0 $PB 2>/dev/null; do
  v=$(awk '{print $14+$15}' /proc/$pid/stat 2>/dev/null) && [ -n "$v" ] && last=$v
  sleep 0.2
done
tps=$(grep "^tps" /tmp/ab/pgb.out | awk '{print $3}')
n=$(grep "actually processed" /tmp/ab/pgb.out | awk '{print $NF}' | cut -d/ -f1)
st=$(psql -Atc "select round(increfs::numeric/greatest(commits,1),1), round(seeds::numeric/greatest(commits,1),1) from fpsketch_stats" $DB)
echo "$LABEL $SCRIPT tps=$tps cpu_us_per_tx=$(python3 -c "print(round($last*10000/$n,1))") increfs,seeds/commit=$st n=$n"
