#!/usr/bin/python3
"""Where do New-Order's validate_changed aborts in tpcc-w<N>-client come from?

Runs variants of the -client mix, one thing changed at a time, each on a
freshly restarted server (fpsketch TicToc focus_sketch, the runner's
settings), and prints per variant: committed and aborted attempts per
transaction type (pgbench's per-transaction log), fpsketch_stats' abort
reasons, and New-Order's aborts by reason, relation and failing statement
from the server log (bench/run.py's log_aborts).

Uses a cluster that bench/run.py left behind (its --pgdata), with the
database tpcc_w<N>_nodecl_fpsketch; variants "groups*" use a copy of it with
the tuned column groups declared (tpcc_w<N>_groups, made on first use).

    bench/results/tpcc-client/diag.py --pgdata /tmp/tpcc-client-bench --port 55470 \\
        --pgbin /tmp/pg-tpcc-client/usr/lib/postgresql/15/bin --warehouses 2 --duration 15 \\
        baseline no_delivery_stocklevel groups ...
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(os.path.dirname(HERE))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import run  # noqa: E402

CLIENT = dict((os.path.basename(f)[:-4], w) for f, w in run.TPCC_MIXES["client"])
GROUPS_SQL = """
SELECT fpsketch_set_column_group('warehouse', 'ytd', ARRAY['w_ytd']);
SELECT fpsketch_set_column_group('district', 'next_o_id', ARRAY['d_next_o_id']);
SELECT fpsketch_set_column_group('district', 'ytd', ARRAY['d_ytd']);
SELECT fpsketch_set_column_group('customer', 'payment',
    ARRAY['c_balance', 'c_ytd_payment', 'c_payment_cnt', 'c_delivery_cnt', 'c_data']);
SELECT fpsketch_set_column_group('stock', 'quantity',
    ARRAY['s_quantity', 's_ytd', 's_order_cnt', 's_remote_cnt']);
"""


def src(name):
    with open(os.path.join(BENCH, "tpcc", name + ".sql")) as f:
        return f.read()


def sub(text, old, new, count=1):
    """text with old replaced by new exactly count times (else the variant is stale)."""
    n = text.count(old)
    if n != count:
        raise SystemExit(f"variant edit expects {count} x {old!r}, found {n}")
    return text.replace(old, new)


def sorted_items(no):
    """New-Order with its item ids sorted ascending before BEGIN (the tuned
    workload's habit): a sorting network over i_id_1..i_id_15 of the drawn
    lines; the unused item 100001 (largest) stays on the last line."""
    names = [f"i_id_{n}" for n in range(1, 16)]
    # lines beyond ol_cnt must not take part: park them above every item id
    park = "".join(f"\\set i_id_{n} CASE WHEN {n} > :ol_cnt THEN 200000 + {n} ELSE :i_id_{n} END\n"
                   for n in range(1, 16))
    import gen
    return sub(no, "\\set missing 0\nBEGIN;", park + gen.sort_network(names) + "\\set missing 0\nBEGIN;")


def variants(whole, w):
    """{script name: (text, weight)} and the database suffix for a variant
    (names joined by + combine their changes)."""
    s = {k: [src(k), wt] for k, wt in CLIENT.items()}
    db = "nodecl_fpsketch"
    no = "client_new_order"
    for name in whole.split("+"):           # a+b: both changes
        if name.startswith("sp"):                   # the -sp workload's two function calls
            s = {os.path.basename(f)[:-4]: [src(os.path.basename(f)[:-4]), wt] for f, wt in run.TPCC_MIXES["sp"]}
            if name == "sp_groups":
                db = "groups"
            elif name == "sp_no_warehouse_read":     # New-Order's join without the warehouse
                s["sp_new_order"][0] = s["sp_new_order"][0].replace(
                    "SELECT tpcc_sp_new_order(", "SELECT tpcc_sp_new_order_nowh(")
            elif name != "sp":
                raise SystemExit(f"unknown variant {name}")
        elif name == "baseline":
            pass
        elif name == "groups":                      # the tuned workloads' declarations
            db = "groups"
        elif name == "no_delivery_stocklevel":
            del s["client_delivery"], s["client_stock_level"]
        elif name == "no_payment":
            del s["client_payment"]
        elif name == "new_order_only":
            s = {no: s[no]}
        elif name == "sorted_items":
            s[no][0] = sorted_items(s[no][0])
        elif name == "no_for_update_district":       # New-Order reads the district plainly
            s[no][0] = sub(s[no][0], "WHERE d_w_id = :w_id AND d_id = :d_id FOR UPDATE \\gset",
                           "WHERE d_w_id = :w_id AND d_id = :d_id \\gset")
        elif name == "no_for_update_stock":          # ... and each stock row
            s[no][0] = sub(s[no][0], "FOR UPDATE \\gset s", "\\gset s", 15)
        elif name == "no_warehouse_read":            # New-Order skips SELECT w_tax
            s[no][0] = sub(s[no][0], "SELECT w_tax FROM warehouse WHERE w_id = :w_id \\gset\n", "")
        elif name == "no_customer_read":             # New-Order skips its customer read
            s[no][0] = sub(s[no][0], "SELECT c_discount, c_last, c_credit FROM customer\n"
                           " WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :c_id \\gset\n", "")
        elif name == "warehouse_select_star":      # New-Order reads the whole warehouse row
            s[no][0] = sub(s[no][0], "SELECT w_tax FROM warehouse WHERE w_id = :w_id \\gset\n",
                           "SELECT * FROM warehouse WHERE w_id = :w_id \\gset\n")
        elif name == "payment_for_update":         # Payment reads warehouse and district FOR UPDATE, then sets them
            pay = s["client_payment"][0]
            pay = sub(pay, "UPDATE warehouse SET w_ytd = w_ytd + :h_cents / 100.0 WHERE w_id = :w_id;\n"
                      "SELECT w_street_1, w_street_2, w_city, w_state, w_zip, w_name\n"
                      "  FROM warehouse WHERE w_id = :w_id \\gset\n",
                      "SELECT w_ytd, w_street_1, w_street_2, w_city, w_state, w_zip, w_name\n"
                      "  FROM warehouse WHERE w_id = :w_id FOR UPDATE \\gset\n"
                      "UPDATE warehouse SET w_ytd = :w_ytd::numeric + :h_cents / 100.0 WHERE w_id = :w_id;\n")
            pay = sub(pay, "UPDATE district SET d_ytd = d_ytd + :h_cents / 100.0 WHERE d_w_id = :w_id AND d_id = :d_id;\n"
                      "SELECT d_street_1, d_street_2, d_city, d_state, d_zip, d_name\n"
                      "  FROM district WHERE d_w_id = :w_id AND d_id = :d_id \\gset\n",
                      "SELECT d_ytd, d_street_1, d_street_2, d_city, d_state, d_zip, d_name\n"
                      "  FROM district WHERE d_w_id = :w_id AND d_id = :d_id FOR UPDATE \\gset\n"
                      "UPDATE district SET d_ytd = :d_ytd::numeric + :h_cents / 100.0 "
                      "WHERE d_w_id = :w_id AND d_id = :d_id;\n")
            s["client_payment"][0] = pay
        elif name == "warehouse_read_last":          # New-Order reads w_tax just before COMMIT
            s[no][0] = sub(s[no][0], "SELECT w_tax FROM warehouse WHERE w_id = :w_id \\gset\n", "")
            s[no][0] = sub(s[no][0], "COMMIT /* new_order */;",
                           "SELECT w_tax FROM warehouse WHERE w_id = :w_id \\gset\nCOMMIT /* new_order */;")
        elif name == "payment_no_warehouse":         # Payment leaves the warehouse row alone
            s["client_payment"][0] = sub(
                s["client_payment"][0],
                "UPDATE warehouse SET w_ytd = w_ytd + :h_cents / 100.0 WHERE w_id = :w_id;\n", "")
        elif name == "payment_no_district":          # Payment leaves the district row alone
            s["client_payment"][0] = sub(
                s["client_payment"][0],
                "UPDATE district SET d_ytd = d_ytd + :h_cents / 100.0 WHERE d_w_id = :w_id AND d_id = :d_id;\n", "")
        elif name == "groups_no_warehouse_read":
            db = "groups"
            s[no][0] = sub(s[no][0], "SELECT w_tax FROM warehouse WHERE w_id = :w_id \\gset\n", "")
        elif name == "groups_payment_no_district":
            db = "groups"
            s["client_payment"][0] = sub(
                s["client_payment"][0],
                "UPDATE district SET d_ytd = d_ytd + :h_cents / 100.0 WHERE d_w_id = :w_id AND d_id = :d_id;\n", "")
        else:
            raise SystemExit(f"unknown variant {name}")

    return {k: tuple(v) for k, v in s.items()}, f"tpcc_w{w}_{db}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variants", nargs="+")
    ap.add_argument("--pgdata", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pgbin", required=True)
    ap.add_argument("--warehouses", type=int, default=2)
    ap.add_argument("--duration", type=int, default=15)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--set", action="append", default=[], help="extra bench.conf line for every variant")
    ap.add_argument("--json", help="append one JSON line per variant to this file")
    args = ap.parse_args()
    env = dict(os.environ, FPS_PGDATA=args.pgdata, FPS_PGPORT=str(args.port), PGBIN=args.pgbin,
               PGHOST="/tmp", PGPORT=str(args.port), PGUSER="postgres",
               PATH=args.pgbin + ":" + os.environ["PATH"])
    env.pop("PGOPTIONS", None)
    with open(os.path.join(args.pgdata, "bench.conf"), "w") as f:
        f.write("# written by bench/results/tpcc-client/diag.py\n"
                "shared_buffers = 2GB\nsynchronous_commit = on\ndeadlock_timeout = 1s\n"
                "max_pred_locks_per_transaction = 64\nlog_min_messages = warning\nlog_checkpoints = off\n"
                "fpsketch.protocol = 'tictoc'\nfpsketch.variant = 'focus_sketch'\n"
                + "".join(line + "\n" for line in args.set))
    cluster = os.path.join(ROOT, "scripts/cluster.sh")

    def psql(db, sql):
        return subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql],
                              env=env, check=True, capture_output=True, text=True).stdout.strip()

    # a stopped cluster is started, a running one restarted
    subprocess.run([cluster, "restart"], env=env, check=False, capture_output=True)
    if subprocess.run(["pg_isready", "-q"], env=env).returncode != 0:
        subprocess.run([os.path.join(args.pgbin, "pg_ctl"), "-D", args.pgdata, "-l",
                        os.path.join(args.pgdata, "server.log"), "-w", "start"], env=env, check=True,
                       capture_output=True)
    base = f"tpcc_w{args.warehouses}_nodecl_fpsketch"
    groups_db = f"tpcc_w{args.warehouses}_groups"
    if any("groups" in v for v in args.variants) and \
            not psql("postgres", f"SELECT 1 FROM pg_database WHERE datname = '{groups_db}'"):
        print(f"== {groups_db}: a copy of {base} with the tuned column groups", flush=True)
        psql("postgres", f"CREATE DATABASE {groups_db} TEMPLATE {base}")
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", groups_db, "-c", GROUPS_SQL],
                       env=env, check=True, capture_output=True)
    if "sp_no_warehouse_read" in args.variants:
        # tpcc_sp_new_order reading w_tax as a constant instead of the warehouse row
        for db in (base,):
            fdef = psql(db, "SELECT pg_get_functiondef('tpcc_sp_new_order'::regproc)")
            fdef = fdef.replace("FUNCTION public.tpcc_sp_new_order(", "FUNCTION public.tpcc_sp_new_order_nowh(")
            fdef = fdef.replace("SELECT c_discount, c_last, c_credit, w_tax",
                                "SELECT c_discount, c_last, c_credit, 0.1")
            fdef = fdef.replace("FROM customer JOIN warehouse ON w_id = c_w_id", "FROM customer")
            psql(db, fdef)
    work = tempfile.mkdtemp(prefix="tpcc-client-diag-")
    for vname in args.variants:
        scripts, db = variants(vname, args.warehouses)
        subprocess.run([cluster, "restart"], env=env, check=True, capture_output=True)
        psql(db, "SELECT count(pg_prewarm(c.oid)) FROM pg_class c "
                 "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'i')")
        psql(db, "VACUUM")
        psql(db, "CHECKPOINT")
        groups = psql(db, "SELECT count(*) FROM fpsketch_column_group")
        psql(db, "SELECT fpsketch_stats_reset()")
        files = []
        for k, (text, wt) in scripts.items():
            p = os.path.join(work, k + ".sql")
            with open(p, "w") as f:
                f.write(text)
            files.append((p, wt, k))
        prefix = os.path.join(work, "log_" + vname)
        server_log = os.path.join(args.pgdata, "server.log")
        offset = os.path.getsize(server_log)
        cmd = ["pgbench", "-n", "-M", "prepared", "-c", str(args.clients), "-j", "2", "-T", str(args.duration),
               "--max-tries=10", "--failures-detailed", "-l", f"--log-prefix={prefix}", "--random-seed=5381",
               "-D", f"warehouses={args.warehouses}"] + \
            [a for k, v in run.TPCC_C.items() for a in ("-D", f"{k}={v}")] + \
            [a for p, wt, _ in files for a in ("-f", f"{p}@{wt}")] + [db]
        t0 = time.time()
        out = subprocess.run(cmd, env=env, capture_output=True, text=True).stdout
        summ = run.parse_summary(out)
        logs = run.parse_logs(prefix, len(files))
        for p in os.listdir(work):
            if p.startswith("log_"):
                os.remove(os.path.join(work, p))
        cols = psql(db, "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute "
                        "WHERE attrelid = 'fpsketch_stats'::regclass AND attname LIKE 'aborts_%'").split(",")
        names = cols + ["early_aborts", "reevaluations"]
        vals = psql(db, "SELECT " + ", ".join(names) + " FROM fpsketch_stats").split("|")
        st = {c.replace("aborts_", ""): int(v) for c, v in zip(names, vals)}
        # the scripts as the log knows them: pgbench's copies in work/
        logged = run.log_aborts(server_log, offset, [(p, wt) for p, wt, _ in files])
        per = {k: (logs["per_script"][i], logs["per_script_aborts"][i]) for i, (_, _, k) in enumerate(files)}
        res = {"variant": vname, "db": db, "groups": int(groups), "duration": args.duration,
               "elapsed": round(time.time() - t0, 1), "tps": summ["tps"], "client_errors": summ["client_errors"],
               "per_script": per, "fps": {k: v for k, v in st.items() if v},
               "logged": [list(e) for e in logged[:25]]}
        no = [e for e in logged if e[1].endswith("new_order")]
        vc = sum(e[0] for e in no if e[3] == "validate_changed")
        print(f"== {vname} ({db}, {groups} groups): {summ['tps']:.0f} tps, client errors {summ['client_errors']}",
              flush=True)
        print("   committed/aborted: " + ", ".join(f"{k[7:] if k.startswith('client_') else k} {c}/{a}"
                                                  for k, (c, a) in per.items()))
        print("   fpsketch_stats: " + ", ".join(f"{k} {v}" for k, v in res["fps"].items()))
        print(f"   new_order validate_changed (log): {vc}")
        for e in no[:8]:
            print(f"     {e[0]:6d}  {e[3]}/{e[4]}  at {e[2]}")
        others = [e for e in logged if not e[1].endswith("new_order")][:6]
        for e in others:
            print(f"     ({e[1]}) {e[0]:6d}  {e[3]}/{e[4]}  at {e[2]}")
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(res) + "\n")
    subprocess.run([cluster, "stop"], env=env, check=False)


if __name__ == "__main__":
    main()
