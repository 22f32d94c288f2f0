#!/bin/bash
# perf16.sh PROTO DB OUT [SECONDS]: the 16-client full mix (1 warehouse) under
# `perf record -a -g`, on the bench cluster (/tmp/bench-data, port 55460) that
# bench.sh leaves; PGBIN (default /tmp/pg-head/...) holds the build measured.
PROTO=$1; DB=$2; OUT=$3; T=${4:-20}
P=${PGBIN:-/tmp/pg-head/usr/lib/postgresql/15/bin}
export PGHOST=/tmp PGPORT=55460 PGUSER=postgres
sed -i "s/^fpsketch.protocol = .*/fpsketch.protocol = '$PROTO'/" /tmp/bench-data/bench.conf
su postgres -s /bin/sh -c "$P/pg_ctl -D /tmp/bench-data -m fast -w stop" >/dev/null 2>&1; su postgres -s /bin/sh -c "$P/pg_ctl -D /tmp/bench-data -l /tmp/bench-data/server.log -w start" >/dev/null || exit 1
psql -qAtc "select fpsketch_stats_reset()" $DB >/dev/null 2>&1
cd /work/main/bench/tpcc
perf record -a -g -F 499 -o $OUT.data -- sleep $((T+1)) >/dev/null 2>&1 &
PGOPTIONS='-c default_transaction_isolation=read\ committed' $P/pgbench -n -M prepared -c 16 -j 2 -T $T --max-tries=10 --random-seed=5381 -D c_last_c=223 -D c_id_c=259 -D ol_i_id_c=7911 -D warehouses=1 -f client_new_order.sql@45 -f client_payment.sql@43 -f client_order_status.sql@4 -f client_delivery.sql@4 -f client_stock_level.sql@4 $DB > $OUT.pgb 2>&1
wait
grep -E "^tps|number of (failed|trans)|retried" $OUT.pgb
