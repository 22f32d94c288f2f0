#!/bin/bash
# b3.sh PORT PGBIN: single-UPDATE SERIALIZABLE transactions on t beside an
# unrelated writer of another fpsketch table; prints failed/processed
PORT=$1; P=$2
export PGHOST=/tmp PGPORT=$PORT PGUSER=postgres
psql -qX -c "DROP DATABASE IF EXISTS b3" -c "CREATE DATABASE b3" >/dev/null
psql -qX b3 -c "CREATE EXTENSION fpsketch" -c "CREATE TABLE t (id int, v text) USING fpsketch" -c "INSERT INTO t VALUES (1, 'x')" -c "CREATE TABLE other (a int) USING fpsketch" >/dev/null
printf 'INSERT INTO other VALUES (1);\n' > /tmp/b3w.sql
printf 'BEGIN ISOLATION LEVEL SERIALIZABLE;\nUPDATE t SET v = $$y$$ WHERE id = 1;\nCOMMIT;\n' > /tmp/b3r.sql
$P/pgbench -n -c 1 -T 8 -f /tmp/b3w.sql b3 > /tmp/b3w.out 2>&1 &
$P/pgbench -n -c 1 -T 8 -f /tmp/b3r.sql b3 2>&1 | grep -E "actually processed|failed transactions"
wait
