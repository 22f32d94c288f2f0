#!/usr/bin/python3
"""The New-Order abort of the -client and -sp workloads in two sessions.

New-Order reads the warehouse row (w_tax) early; a Payment then adds to
w_ytd of the same row and to d_ytd of the district New-Order is about to
lock and update; New-Order updates the district and commits.  Without column
groups the warehouse row has one key: New-Order read it before the Payment
(so must serialize before it) and overwrites the district after the Payment
(so must serialize after it), a cycle at row granularity, and TicToc fails
New-Order with 40001 validate_changed on "warehouse" (before the district
update when fpsketch.early_aborts is on, else at COMMIT).  With w_ytd and
d_ytd in groups of their own (as bench/tpcc/indexes.sql declares them) the
read of w_tax and the write of w_ytd touch different keys and New-Order
commits.  Heap SERIALIZABLE fails the same schedule ("concurrent update" on
the district), heap READ COMMITTED commits it.

    bench/results/tpcc-client/repro.py "host=/tmp port=55470 user=postgres dbname=postgres"
"""
import sys

import psycopg2

dsn = sys.argv[1] if len(sys.argv) > 1 else "host=/tmp port=55470 user=postgres dbname=postgres"


def run(groups, am="fpsketch", iso="read committed"):
    setup = psycopg2.connect(dsn)
    setup.autocommit = True
    c = setup.cursor()
    c.execute("CREATE EXTENSION IF NOT EXISTS fpsketch")
    c.execute("DROP TABLE IF EXISTS repro_warehouse, repro_district")
    c.execute(f"CREATE TABLE repro_warehouse (w_id int PRIMARY KEY, w_tax numeric, w_ytd numeric) USING {am}")
    c.execute(f"CREATE TABLE repro_district (d_w_id int, d_id int, d_tax numeric, d_ytd numeric, "
              f"d_next_o_id int, PRIMARY KEY (d_w_id, d_id)) USING {am}")
    c.execute("INSERT INTO repro_warehouse VALUES (1, 0.1, 0)")
    c.execute("INSERT INTO repro_district VALUES (1, 1, 0.1, 0, 3001)")
    if groups:
        c.execute("SELECT fpsketch_set_column_group('repro_warehouse', 'ytd', ARRAY['w_ytd'])")
        c.execute("SELECT fpsketch_set_column_group('repro_district', 'next_o_id', ARRAY['d_next_o_id'])")
        c.execute("SELECT fpsketch_set_column_group('repro_district', 'ytd', ARRAY['d_ytd'])")
    no, pay = psycopg2.connect(dsn), psycopg2.connect(dsn)
    for conn in (no, pay):
        conn.set_session(isolation_level=iso)
    n, p = no.cursor(), pay.cursor()
    step = "New-Order: SELECT w_tax"
    try:
        n.execute("SELECT w_tax FROM repro_warehouse WHERE w_id = 1")
        p.execute("UPDATE repro_warehouse SET w_ytd = w_ytd + 10 WHERE w_id = 1")
        p.execute("UPDATE repro_district SET d_ytd = d_ytd + 10 WHERE d_w_id = 1 AND d_id = 1")
        pay.commit()
        step = "New-Order: SELECT district FOR UPDATE"
        n.execute("SELECT d_next_o_id, d_tax FROM repro_district WHERE d_w_id = 1 AND d_id = 1 FOR UPDATE")
        step = "New-Order: UPDATE district"
        n.execute("UPDATE repro_district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 1")
        step = "New-Order: COMMIT"
        no.commit()
        out = "New-Order committed"
    except psycopg2.Error as e:
        out = f"{step}: {e.pgcode} {e.pgerror.splitlines()[0]} / {(e.diag.message_detail or '')}"
        no.rollback()
    for conn in (no, pay, setup):
        conn.close()
    return out


if __name__ == "__main__":
    print("fpsketch, no column groups:   ", run(False))
    print("fpsketch, w_ytd/d_ytd groups: ", run(True))
    print("heap READ COMMITTED:          ", run(False, "heap"))
    print("heap SERIALIZABLE:            ", run(False, "heap", "serializable"))
