#!/bin/bash
# CPU time (ns, /proc/PID/schedstat) of the backend running transactions of
# 1 or 64 primary-key reads (r1, r64) or 1 read + 1 update (w1) on an
# fpsketch table (bench/overhead.sh's procedure), per transaction, for two
# builds (bench/snapshot_install.sh DIR for each) taking turns: on a shared,
# loaded machine the backend's CPU time moves less than wall time.
#   BASE_BIN=/tmp/a/usr/lib/postgresql/15/bin NEW_BIN=/tmp/b/usr/lib/postgresql/15/bin \
#     N=40000 R=8 bench/results/relation-stats/cpu_ab.sh
set -u
cd "$(dirname "$0")/../../.."
N=${N:-20000}; R=${R:-5}; ROWS=100000
declare -A port=([base]=${BASE_PORT:-55482} [new]=${NEW_PORT:-55483})
declare -A bin=([base]=$BASE_BIN [new]=$NEW_BIN)
for b in base new; do
  PGBIN=${bin[$b]} FPS_PGDATA=/tmp/relstats-cpu-$b FPS_PGPORT=${port[$b]} scripts/cluster.sh start "shared_buffers = 256MB" "synchronous_commit = off" >/dev/null
  ${bin[$b]}/psql -X -q -h /tmp -p ${port[$b]} -U postgres -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION fpsketch;
BEGIN;
CREATE TABLE oh_fps (id int PRIMARY KEY, v int) USING fpsketch;
INSERT INTO oh_fps SELECT g, 0 FROM generate_series(1, $ROWS) g;
COMMIT;
VACUUM ANALYZE oh_fps;
CREATE PROCEDURE run_oh(ntx int, nreads int, nwrites int, rows int)
LANGUAGE plpgsql AS \$body\$
DECLARE x int; k int := 0;
BEGIN
  FOR i IN 1 .. ntx LOOP
    FOR j IN 1 .. nreads LOOP
      k := k + 1;
      SELECT v INTO x FROM oh_fps WHERE id = (k * 7919) % rows + 1;
    END LOOP;
    FOR j IN 1 .. nwrites LOOP
      k := k + 1;
      UPDATE oh_fps SET v = v + 1 WHERE id = (k * 7919) % rows + 1;
    END LOOP;
    COMMIT;
  END LOOP;
END \$body\$;
CALL run_oh(2000, 64, 1, $ROWS);
SQL
done
cpu_ns() { # build nreads nwrites ntx -> ns per transaction
  local b=$1
  ${bin[$b]}/psql -X -q -At -h /tmp -p ${port[$b]} -U postgres <<SQL | awk 'NR==1{a=$1} NR==2{print ($1-a)/'$4'}'
SELECT pg_backend_pid() AS pid \gset
\setenv PID :pid
\! cut -d" " -f1 /proc/\$PID/schedstat
CALL run_oh($4, $2, $3, $ROWS);
\! cut -d" " -f1 /proc/\$PID/schedstat
SQL
}
for r in $(seq $R); do
  for b in base new new base; do
    echo "$r $b r1 $(cpu_ns $b 1 0 $N) r64 $(cpu_ns $b 64 0 $((N/16))) w1 $(cpu_ns $b 1 1 $((N/4)))"
  done
done
for b in base new; do PGBIN=${bin[$b]} FPS_PGDATA=/tmp/relstats-cpu-$b FPS_PGPORT=${port[$b]} scripts/cluster.sh stop; done
