#!/usr/bin/env bash
# What fpsketch costs per row read and per commit, without contention: one
# session, a procedure that runs N transactions of K primary-key reads (and
# optionally one update) with a COMMIT after each, on a heap table and on an
# fpsketch table of the same rows, side by side on one throwaway cluster.
#
#   per read    = (time of K=64 reads - time of K=1 read) / (63 * N)
#   per commit  = time of a K=1 transaction, minus one per-read cost
#   write txn   = time of a 1-read + 1-update transaction
#   per update  = (time of 1 read + 64 updates - time of 1 read + 1 update) / 63
#
# The procedure's UPDATE sets v only, so fpsketch learns a column group for v
# (fpsketch.learn_column_groups, on by default) during the warm-up: then a
# read of v pins two row keys (group 0 for id, v's group) and an update
# writes v's group.  EXTRA_CONF="fpsketch.learn_column_groups = off" measures
# the single key per row; the groups measured are printed below the table.
#
# fpsketch minus heap is the overhead of tracking: pinning the row key and
# the index-prefix key (INCREF), the staleness check, validation and
# unpinning at commit.  Each figure is the best of ROUNDS runs, heap and
# fpsketch taking turns within each round (the machine is shared and noisy:
# the minimum is the least disturbed run, and turns expose both tables to
# the same disturbances).
#
#   bench/overhead.sh                       # N=2000, ROUNDS=5, port 55497
#   N=5000 ROUNDS=7 bench/overhead.sh
#   PGBIN=/tmp/fps-x/usr/lib/postgresql/15/bin bench/overhead.sh   # a private build
#   EXTRA_CONF="fpsketch.eviction = unpin" bench/overhead.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/prereqs.sh

N=${N:-2000}
ROUNDS=${ROUNDS:-5}
ROWS=${ROWS:-100000}
export FPS_PGDATA=${FPS_PGDATA:-/tmp/fpsketch-overhead-pgdata}
export FPS_PGPORT=${FPS_PGPORT:-55497}
export PGBIN=${PGBIN:-$(pg_config --bindir)}
PSQL="$PGBIN/psql -X -q -At -h /tmp -p $FPS_PGPORT -U postgres -d postgres -v ON_ERROR_STOP=1"

conf=("shared_buffers = 256MB" "synchronous_commit = off")
[ -n "${EXTRA_CONF:-}" ] && conf+=("$EXTRA_CONF")
scripts/cluster.sh start "${conf[@]}" >/dev/null
trap 'scripts/cluster.sh stop' EXIT

$PSQL <<EOF
CREATE EXTENSION fpsketch;
-- created and filled in one transaction: a bulk load fpsketch need not track
BEGIN;
CREATE TABLE oh_heap (id int PRIMARY KEY, v int) USING heap;
CREATE TABLE oh_fps (id int PRIMARY KEY, v int) USING fpsketch;
INSERT INTO oh_heap SELECT g, 0 FROM generate_series(1, $ROWS) g;
INSERT INTO oh_fps SELECT g, 0 FROM generate_series(1, $ROWS) g;
COMMIT;
VACUUM ANALYZE oh_heap, oh_fps;
-- one procedure per table: static SQL, planned once, as an application's
-- prepared statements would be
DO \$do\$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['oh_heap', 'oh_fps'] LOOP
    EXECUTE format(\$p\$
      CREATE PROCEDURE run_%1\$s(ntx int, nreads int, nwrites int, rows int)
      LANGUAGE plpgsql AS \$body\$
      DECLARE
        x int;
        k int := 0;
      BEGIN
        FOR i IN 1 .. ntx LOOP
          FOR j IN 1 .. nreads LOOP
            k := k + 1;
            SELECT v INTO x FROM %1\$s WHERE id = (k * 7919) %% rows + 1;
          END LOOP;
          FOR j IN 1 .. nwrites LOOP
            k := k + 1;
            UPDATE %1\$s SET v = v + 1 WHERE id = (k * 7919) %% rows + 1;
          END LOOP;
          COMMIT;
        END LOOP;
      END \$body\$ \$p\$, t);
  END LOOP;
END \$do\$;
EOF

# microseconds per transaction of one run
run_once() {				# run_once TABLE NREADS NWRITES
	$PSQL <<-EOF
		SELECT clock_timestamp() AS t0 \\gset
		CALL run_$1($N, $2, $3, $ROWS);
		SELECT round(extract(epoch FROM clock_timestamp() - :'t0') * 1e6 / $N, 3);
	EOF
}

# Best of ROUNDS for heap and for fpsketch, the two tables taking turns
# within each round, so that both see the same disturbances.
declare -A t
measure() {					# measure NAME NREADS NWRITES
	local r us tbl
	for r in $(seq "$ROUNDS"); do
		for tbl in oh_heap oh_fps; do
			us=$(run_once $tbl "$2" "$3")
			if [ -z "${t[$tbl,$1]:-}" ] || awk "BEGIN{exit !($us < ${t[$tbl,$1]})}"; then
				t[$tbl,$1]=$us
			fi
		done
	done
}

# warm the buffers and the plans
run_once oh_heap 64 1 >/dev/null
run_once oh_fps 64 1 >/dev/null

measure r1 1 0
measure r64 64 0
measure w1 1 1
measure w64 1 64

echo "fpsketch overhead without contention: $N transactions per run, best of $ROUNDS runs,"
echo "$ROWS-row tables, one session (PL/pgSQL procedure, COMMIT per transaction)"
echo "settings: ${conf[*]}"
$PSQL -c "SELECT 'fpsketch: protocol ' || protocol || ', variant ' || variant || ', eviction ' || current_setting('fpsketch.eviction') FROM fpsketch_stats"
echo
awk -v hr1="${t[oh_heap,r1]}" -v hr64="${t[oh_heap,r64]}" -v hw1="${t[oh_heap,w1]}" \
	-v fr1="${t[oh_fps,r1]}" -v fr64="${t[oh_fps,r64]}" -v fw1="${t[oh_fps,w1]}" \
	-v hw64="${t[oh_heap,w64]}" -v fw64="${t[oh_fps,w64]}" 'BEGIN {
	hread = (hr64 - hr1) / 63; fread = (fr64 - fr1) / 63;
	hcommit = hr1 - hread; fcommit = fr1 - fread;
	printf "| µs | heap | fpsketch | fpsketch - heap | fpsketch / heap |\n";
	printf "|---|---:|---:|---:|---:|\n";
	printf "| per primary-key read (in a 64-read transaction) | %.2f | %.2f | %.2f | %.2f |\n", hread, fread, fread - hread, fread / hread;
	printf "| per read-only commit (transaction less its read) | %.2f | %.2f | %.2f | %.2f |\n", hcommit, fcommit, fcommit - hcommit, fcommit / hcommit;
	printf "| transaction of 1 read | %.2f | %.2f | %.2f | %.2f |\n", hr1, fr1, fr1 - hr1, fr1 / hr1;
	printf "| transaction of 64 reads | %.2f | %.2f | %.2f | %.2f |\n", hr64, fr64, fr64 - hr64, fr64 / hr64;
	printf "| transaction of 1 read + 1 update (lock, install) | %.2f | %.2f | %.2f | %.2f |\n", hw1, fw1, fw1 - hw1, fw1 / hw1;
	hupd = (hw64 - hw1) / 63; fupd = (fw64 - fw1) / 63;
	printf "| per primary-key update (in a 64-update transaction) | %.2f | %.2f | %.2f | %.2f |\n", hupd, fupd, fupd - hupd, fupd / hupd;
}'
echo
echo "column groups of oh_fps: $($PSQL -c "SELECT coalesce(string_agg(group_name || ' ' || columns::text, ', '), 'none') FROM fpsketch_column_groups WHERE relation = 'oh_fps'::regclass")"
$PSQL -c "SELECT 'fpsketch_stats: commits ' || commits || ', read-only commits ' || read_only_commits || ', increfs ' || increfs || ', seeds ' || seeds || ', merges ' || merges || ', evictions ' || evictions || ', pinned ' || pinned || ', lock_leaks ' || lock_leaks FROM fpsketch_stats"
