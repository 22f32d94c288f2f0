#!/usr/bin/env bash
# Throwaway PostgreSQL 15 cluster for fpsketch: never the system cluster.
#   scripts/cluster.sh start [extra postgresql.conf lines...]
#   scripts/cluster.sh stop | restart | env
# Data directory and port come from FPS_PGDATA / FPS_PGPORT.
set -euo pipefail

PGBIN=${PGBIN:-$(pg_config --bindir)}
export FPS_PGDATA=${FPS_PGDATA:-/tmp/fpsketch-pgdata}
export FPS_PGPORT=${FPS_PGPORT:-55432}

run_pg() {
	# PostgreSQL refuses to run as root: use the postgres user then.
	if [ "$(id -u)" = 0 ]; then
		su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
	else
		"$@"
	fi
}

case "${1:-}" in
	start)
		shift
		run_pg "$PGBIN/pg_ctl" -D "$FPS_PGDATA" -m immediate stop >/dev/null 2>&1 || true
		rm -rf "$FPS_PGDATA"
		mkdir -p "$FPS_PGDATA"
		[ "$(id -u)" = 0 ] && chown postgres "$FPS_PGDATA"
		run_pg "$PGBIN/initdb" -D "$FPS_PGDATA" -U postgres --no-sync -A trust >/dev/null
		{
			echo "shared_preload_libraries = 'fpsketch'"
			echo "port = $FPS_PGPORT"
			echo "listen_addresses = '127.0.0.1'"
			echo "unix_socket_directories = '/tmp'"
			echo "max_connections = 100"
			echo "max_prepared_transactions = 4"
			# small enough for sql/13_prepared to exceed cheaply (53400)
			echo "fpsketch.max_prepared_keys = 1000"
			echo "fsync = off"
			for line in "$@"; do echo "$line"; done
		} >> "$FPS_PGDATA/postgresql.conf"
		run_pg "$PGBIN/pg_ctl" -D "$FPS_PGDATA" -l "$FPS_PGDATA/server.log" -w start >/dev/null
		echo "cluster up: port $FPS_PGPORT, data $FPS_PGDATA"
		;;
	restart)
		run_pg "$PGBIN/pg_ctl" -D "$FPS_PGDATA" -l "$FPS_PGDATA/server.log" -w restart >/dev/null
		;;
	stop)
		run_pg "$PGBIN/pg_ctl" -D "$FPS_PGDATA" -m fast stop >/dev/null 2>&1 || true
		;;
	*)
		echo "usage: $0 start [conf lines...] | stop | restart" >&2
		exit 2
		;;
esac
