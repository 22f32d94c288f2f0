#!/bin/bash
# (the runs in statio-1-client.txt: PGBIN /tmp/pg-final, the bench cluster)
# prof.sh LABEL PGBIN DB C: perf record -a -F 999 over a 15 s sp run with C clients; symbols per 1000 tx
LABEL=$1; P=$2; DB=$3; C=$4; T=15
export PGHOST=/tmp PGPORT=55460 PGUSER=postgres
su postgres -s /bin/sh -c "$P/pg_ctl -D /tmp/bench-data -m fast -w stop" >/dev/null 2>&1; su postgres -s /bin/sh -c "$P/pg_ctl -D /tmp/bench-data -l /tmp/bench-data/server.log -w start" >/dev/null || exit 1
cd /work/main/bench/tpcc
perf record -a -F 999 -o /tmp/s19/$LABEL.data -- sleep $((T+1)) >/dev/null 2>&1 &
PGOPTIONS='-c default_transaction_isolation=read\ committed' $P/pgbench -n -M prepared -c $C -j $C -T $T --max-tries=10 --random-seed=5381 -D c_last_c=223 -D c_id_c=259 -D ol_i_id_c=7911 -D warehouses=1 -f sp_new_order.sql@50 -f sp_payment.sql@50 $DB > /tmp/s19/$LABEL.pgb 2>&1
wait
n=$(grep "actually processed" /tmp/s19/$LABEL.pgb | awk '{print $NF}' | cut -d/ -f1)
echo "$LABEL n=$n $(grep ^tps /tmp/s19/$LABEL.pgb)"
perf report -i /tmp/s19/$LABEL.data --no-children --comm postgres --sort dso,sym 2>/dev/null | grep -v "^#" | grep -v '^$' | awk -v n=$n '{print}' > /tmp/s19/$LABEL.syms
perf report -i /tmp/s19/$LABEL.data --no-children --comm postgres --sort dso,sym -F sample,dso,sym 2>/dev/null | grep -v "^#" | grep -v '^$' | awk -v n=$n '{s=$1; $1=""; printf "%.1f %s\n", s*1000/n, $0}' > /tmp/s19/$LABEL.pertx
head -3 /tmp/s19/$LABEL.pertx
