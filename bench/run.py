#!/usr/bin/python3
"""fpsketch benchmark suite: TPC-C-like and YCSB-like workloads, run side by
side on heap (READ COMMITTED, REPEATABLE READ, SERIALIZABLE) and on fpsketch
tables (every fpsketch.protocol x fpsketch.variant the server offers), in one
invocation, on one throwaway cluster.  See bench/README.md.

    bench/run.py --quick            # < 5 minutes: TPC-C 1 warehouse, YCSB 8r+8w
    bench/run.py --full             # the table of the issue (about 90 minutes)
    bench/run.py --sweep            # sketch size 1 KiB .. 1 MiB against exact
    bench/run.py --workloads tpcc-w2,ycsb-r15w1-t0.6 --duration 20
    bench/run.py --workloads tpcc-w1-report       # + a READ ONLY report in a loop
    bench/run.py --workloads tpcc-w1-reader60 --duration 150   # + one 60 s reader

Use /usr/bin/python3 (Debian's, with python3-matplotlib).
"""
import argparse
import csv
import datetime
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "ycsb"))
import zipf  # noqa: E402

# ------------------------------------------------------------ workloads ----

# TPC-C run-time NURand constants (clause 2.1.6); the loader used C = 157
# for C_LAST, and |223 - 157| = 66 is in the range clause 2.1.6.1 requires.
TPCC_C = {"c_last_c": 223, "c_id_c": 259, "ol_i_id_c": 7911}
TPCC_MIXES = {
    # New-Order + Payment 50/50, as the FPSketch paper and most CC papers run it
    "np": [("tpcc/new_order.sql", 50), ("tpcc/payment.sql", 50)],
    # the full five-transaction mix at the minimum percentages of clause 5.2.3
    "full": [("tpcc/new_order.sql", 45), ("tpcc/payment.sql", 43),
             ("tpcc/order_status.sql", 4), ("tpcc/delivery.sql", 4),
             ("tpcc/stock_level.sql", 4)],
    # TPC-C as users write it (no fpsketch declaration, database *_nodecl):
    # the five transactions as BenchBase issues them, and New-Order + Payment
    # as PL/pgSQL functions (tpcc/sp.sql), one call per transaction
    "client": [("tpcc/client_new_order.sql", 45), ("tpcc/client_payment.sql", 43),
               ("tpcc/client_order_status.sql", 4), ("tpcc/client_delivery.sql", 4),
               ("tpcc/client_stock_level.sql", 4)],
    "sp": [("tpcc/sp_new_order.sql", 50), ("tpcc/sp_payment.sql", 50)],
    # New-Order + Payment ending with PREPARE TRANSACTION + COMMIT PREPARED
    # (-2pc), and without (-simple), both for pgbench -M simple (bench/gen.py)
    "2pc": [("tpcc/new_order_2pc.sql", 50), ("tpcc/payment_2pc.sql", 50)],
    "simple": [("tpcc/new_order_simple.sql", 50), ("tpcc/payment_simple.sql", 50)],
}
TPCC_MIX_DESC = {
    "np": "TPC-C-like New-Order + Payment 50/50",
    "full": "TPC-C-like full mix 45/43/4/4/4",
    "client": "TPC-C as a client (BenchBase) issues it, full mix 45/43/4/4/4, no declarations",
    "sp": "TPC-C New-Order + Payment 50/50 as PL/pgSQL functions, no declarations",
    "2pc": "TPC-C-like New-Order + Payment 50/50, each ending with PREPARE TRANSACTION + COMMIT PREPARED "
           "(pgbench -M simple)",
    "simple": "TPC-C-like New-Order + Payment 50/50 (pgbench -M simple, as -2pc without two-phase commit)",
}
YCSB_KINDS = {
    "r8w8": [("ycsb/r8w8.sql", 100)],
    "r8w8u": [("ycsb/r8w8u.sql", 100)],
    "r15w1": [("ycsb/r15w1.sql", 100)],
    "mixed": [("ycsb/r2w2.sql", 80), ("ycsb/r28.sql", 20)],
    "long": [("ycsb/r1000.sql", 5), ("ycsb/r8w8.sql", 95)],
}
YCSB_DESC = {
    "r8w8": "8 reads + 8 writes",
    "r8w8u": "8 reads + 8 writes in random order",
    "r15w1": "15 reads + 1 write",
    "mixed": "80% 2r+2w, 20% 28r",
    "long": "5% 1000r, 95% 8r+8w",
}

QUICK_WORKLOADS = ["tpcc-w1", "ycsb-r8w8-t0.99"]
FULL_WORKLOADS = ["tpcc-w1", "tpcc-w2", "tpcc-w4", "tpcc-w8",
                  "ycsb-r8w8-t0.99", "ycsb-r15w1-t0.99",
                  "ycsb-r8w8-t0.6", "ycsb-r15w1-t0.6",
                  "ycsb-mixed-t0.9", "ycsb-mixed-t0.6", "ycsb-long-t0.9"]
SWEEP_WORKLOADS = ["ycsb-r8w8-t0.99", "ycsb-r15w1-t0.99", "tpcc-w1"]
SWEEP_SIZES_KB = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


class Workload:
    """tpcc-w<W>[-full|-client|-sp|-2pc|-simple][-report|-reader<S>] or ycsb-<kind>-t<theta>.

    -2pc: New-Order + Payment ending with PREPARE TRANSACTION and COMMIT
    PREPARED; -simple: the same without two-phase commit.  Both run pgbench
    with -M simple (the gid holds :client_id, which -M prepared cannot
    substitute inside a literal), on the tpcc_w<W> database of the default.

    -client and -sp run on their own database (tpcc_w<W>_nodecl), loaded
    without the column groups that tpcc/indexes.sql declares for the others.

    -report: one more client runs tpcc/report.sql (a READ ONLY report over
    130,001 rows per warehouse) in a loop beside the TPC-C clients.
    -reader<S>: one more session opens a read-only transaction at a fifth of
    the run, reads the report's tables, holds its snapshot for S seconds and
    reads them again (LeanStore's experiment: goodput over time)."""

    def __init__(self, name, records):
        self.name = name
        self.report = False
        self.reader_hold = 0
        m = re.fullmatch(r"tpcc-w(\d+)(-full|-client|-sp|-2pc|-simple)?(-decl)?(?:-report|-reader(\d+))?", name)
        if m:
            self.report = name.endswith("-report")
            self.reader_hold = int(m.group(4) or 0)
            self.kind = "tpcc"
            self.warehouses = int(m.group(1))
            self.mix = (m.group(2) or "-np")[1:]
            self.query_mode = "prepared"
            self.two_pc = self.mix == "2pc"
            if self.mix in ("2pc", "simple"):
                self.query_mode = "simple"
                if m.group(3):
                    raise SystemExit(f"{name}: -decl is for -client and -sp")
            self.scripts = TPCC_MIXES[self.mix]
            # users' TPC-C runs on tables without fpsketch declarations;
            # -decl: the same statements with bench/tpcc/indexes.sql's groups
            self.with_decl = bool(m.group(3)) and self.mix in ("client", "sp")
            self.declared = self.mix in ("np", "full", "2pc", "simple") or self.with_decl
            self.dataset = f"tpcc_w{self.warehouses}" + (
                "_decl" if self.with_decl else "" if self.declared else "_nodecl")
            self.defines = dict(TPCC_C, warehouses=self.warehouses)
            self.param = f"{self.warehouses} warehouse{'s' if self.warehouses > 1 else ''}"
            self.desc = TPCC_MIX_DESC[self.mix]
            if self.with_decl:
                self.desc = self.desc.replace("no declarations",
                                              "with bench/tpcc/indexes.sql's column groups declared")
            if self.report:
                self.desc += ", and one client running a READ ONLY report (tpcc/report.sql) in a loop"
            if self.reader_hold:
                self.desc += (f", and one read-only transaction that holds its snapshot for "
                              f"{self.reader_hold} s")
            return
        m = re.fullmatch(r"ycsb-(\w+?)-t([0-9.]+)", name)
        if m and m.group(1) in YCSB_KINDS:
            self.kind = "ycsb"
            self.ycsb_kind = m.group(1)
            self.theta = float(m.group(2))
            self.records = records
            self.scripts = YCSB_KINDS[self.ycsb_kind]
            self.dataset = f"ycsb_{records}"
            self.defines = zipf.constants(records, self.theta)
            self.param = f"theta {self.theta:g}, {records} keys"
            self.desc = f"YCSB-like {YCSB_DESC[self.ycsb_kind]}"
            self.query_mode = "prepared"
            self.two_pc = False
            return
        raise SystemExit(f"unknown workload {name!r} (tpcc-w<N>[-full|-client|-sp|-2pc|-simple][-report|-reader<S>] or "
                         f"ycsb-{{{','.join(YCSB_KINDS)}}}-t<theta>)")


# ------------------------------------------------------- configurations ----

class Row:
    """One configuration: access method, isolation level, fpsketch GUCs."""

    def __init__(self, label, am, iso, fps=None, deferrable=False):
        self.label, self.am, self.iso = label, am, iso
        self.fps = fps or {}        # fpsketch.* settings for this row
        self.deferrable = deferrable    # the report/reader is READ ONLY DEFERRABLE

    @property
    def key(self):
        return self.label


ISO_SHORT = {"read committed": "READ COMMITTED", "repeatable read": "REPEATABLE READ",
             "serializable": "SERIALIZABLE"}


def heap_rows():
    return [Row(f"heap {ISO_SHORT[i]}", "heap", i)
            for i in ("read committed", "repeatable read", "serializable")] + \
        [Row("heap SERIALIZABLE (reader DEFERRABLE)", "heap", "serializable", deferrable=True)]


def row_applies(row, w):
    """The DEFERRABLE row differs from heap SERIALIZABLE only in its report or reader."""
    return not row.deferrable or w.report or w.reader_hold


def reader_begin(row, w):
    """How the report or the long reader begins its transaction.  Heap at READ
    COMMITTED holds no snapshot across statements: the long reader there runs
    at REPEATABLE READ (the report keeps READ COMMITTED, and its checks show
    what that gives)."""
    if row.deferrable:
        return "BEGIN READ ONLY DEFERRABLE;"
    if w.reader_hold and row.am == "heap" and row.iso == "read committed":
        return "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;"
    return "BEGIN READ ONLY;"


def extra_row(spec, protocols, variants, exact_max_entries):
    """--extra-row 'PROTOCOL VARIANT name=value ...': an fpsketch row with extra
    settings (names without a dot get the fpsketch. prefix), labelled
    'fpsketch PROTOCOL VARIANT (name=value, ...)'."""
    words = spec.split()
    if len(words) < 2 or words[0] not in protocols or words[1] not in variants \
            or not all("=" in w for w in words[2:]):
        raise SystemExit(f"--extra-row {spec!r}: expected 'PROTOCOL VARIANT name=value ...' with "
                         f"PROTOCOL in {protocols} and VARIANT in {variants}")
    base = fps_rows([words[0]], [words[1]], exact_max_entries)[0]
    shown = []
    for w in words[2:]:
        k, v = w.split("=", 1)
        base.fps[k if "." in k else "fpsketch." + k] = v
        shown.append(f"{k}={v}")
    if shown:
        base.label += " (" + ", ".join(shown) + ")"
    return base


def fps_rows(protocols, variants, exact_max_entries):
    rows = []
    for p in protocols:
        if p == "off":
            continue
        for v in variants:
            fps = {"fpsketch.protocol": p, "fpsketch.variant": v}
            if v == "exact" and exact_max_entries:
                fps["fpsketch.max_entries"] = str(exact_max_entries)
            rows.append(Row(f"fpsketch {p} {v}", "fpsketch", "read committed", fps))
    return rows


# ------------------------------------------------------------- cluster ----

def log(msg=""):
    print(msg, flush=True)


class Cluster:
    def __init__(self, args):
        self.args = args
        self.env = dict(os.environ, FPS_PGDATA=args.pgdata, FPS_PGPORT=str(args.port),
                        PGHOST="/tmp", PGPORT=str(args.port), PGUSER="postgres")
        self.env["PATH"] = args.pgbin + ":" + self.env.get("PATH", "")
        self.env["PGBIN"] = args.pgbin
        self.env.pop("PGOPTIONS", None)
        self.env.pop("PGDATABASE", None)
        self.conf_path = os.path.join(args.pgdata, "bench.conf")
        self.base_conf = [
            "shared_buffers = " + args.shared_buffers,
            "synchronous_commit = " + args.synchronous_commit,
            "deadlock_timeout = " + args.deadlock_timeout,
            "max_pred_locks_per_transaction = " + str(args.max_pred_locks),
            "log_min_messages = warning",
            "log_checkpoints = off",
        ] + list(args.set or [])
        self.current = None

    def sh(self, *cmd, check=True, **kw):
        return subprocess.run(cmd, env=self.env, check=check, **kw)

    def psql(self, db, sql, check=True, env=None):
        r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql],
                           env=env or self.env, capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"psql {db}: {sql[:80]}...: {r.stderr.strip()}")
        return r.stdout.strip()

    def psql_file(self, db, path, variables=(), env=None):
        cmd = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db, "-f", path]
        for k, v in variables:
            cmd += ["-v", f"{k}={v}"]
        return subprocess.run(cmd, env=env or self.env, capture_output=True, text=True)

    def write_conf(self, extra):
        with open(self.conf_path, "w") as f:
            f.write("# written by bench/run.py before every restart\n")
            for line in self.base_conf:
                f.write(line + "\n")
            for k, v in sorted(extra.items()):
                f.write(f"{k} = '{v}'\n")

    def up(self, reuse):
        pgdata = self.args.pgdata
        conf = os.path.join(pgdata, "postgresql.conf")
        if reuse and os.path.exists(conf) and "bench.conf" in open(conf).read():
            log(f"== reusing cluster {pgdata} (port {self.args.port})")
            self.sh(os.path.join(ROOT, "scripts/cluster.sh"), "stop")
        else:
            self.sh(os.path.join(ROOT, "scripts/cluster.sh"), "start",
                    "include_if_exists = 'bench.conf'", stdout=subprocess.DEVNULL)
        self.restart({}, force=True)

    def restart(self, fps, force=False):
        if not force and self.current == fps:
            return
        self.write_conf(fps)
        r = self.sh(os.path.join(ROOT, "scripts/cluster.sh"), "restart", check=False,
                    capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("cannot restart the cluster: " + r.stdout + r.stderr)
        self.current = dict(fps)

    def stop(self):
        self.sh(os.path.join(ROOT, "scripts/cluster.sh"), "stop", check=False)

    def settings(self):
        names = ["server_version", "shared_buffers", "synchronous_commit", "fsync",
                 "deadlock_timeout", "max_pred_locks_per_transaction", "max_connections",
                 "max_prepared_transactions", "autovacuum_max_workers", "max_worker_processes",
                 "max_wal_senders", "autovacuum", "full_page_writes", "wal_level",
                 "fpsketch.protocol", "fpsketch.variant", "fpsketch.sketch_size",
                 "fpsketch.sketch_rows", "fpsketch.max_entries", "fpsketch.lock_wait_timeout"] + FPS_SWITCHES
        out = self.psql("postgres", "SELECT name, setting, coalesce(unit, '') FROM pg_settings "
                        "WHERE name IN (" + ",".join(f"'{n}'" for n in names) + ")")
        s = {}
        for line in out.splitlines():
            n, v, u = line.split("|")
            s[n] = v
            s[n + ".unit"] = u
        return s

    def enumvals(self, name):
        out = self.psql("postgres", f"SELECT array_to_string(enumvals, ',') FROM pg_settings "
                        f"WHERE name = '{name}'")
        return [v for v in out.split(",") if v]


# fpsketch's on/off and threshold settings, recorded when the server has them
FPS_SWITCHES = ["fpsketch.prefix_predicates", "fpsketch.column_groups", "fpsketch.reevaluate_updates",
                "fpsketch.escalation_threshold"]


def unit_bytes(value, unit):
    mult = {"": 1, "B": 1, "kB": 1024, "8kB": 8192, "MB": 1 << 20, "GB": 1 << 30}
    return int(value) * mult.get(unit, 1)


# ------------------------------------------------------------ SSI memory ----

def hash_estimate_size(num_entries, entrysize):
    """dynahash's hash_estimate_size() (PostgreSQL 15, 64-bit)."""
    def next_pow2(n):
        p = 1
        while p < n:
            p <<= 1
        return p

    def maxalign(n):
        return (n + 7) & ~7
    seg, dirsize, hashhdr, hashelem = 256, 256, 848, 16
    nbuckets = next_pow2(num_entries)
    nsegments = next_pow2((nbuckets - 1) // seg + 1)
    ndir = dirsize
    while ndir < nsegments:
        ndir <<= 1
    size = maxalign(hashhdr) + ndir * 8 + nsegments * maxalign(seg * 8)
    elem = maxalign(hashelem) + maxalign(entrysize)
    alloc, nelem = 32 * 4, 0
    while True:
        alloc <<= 1
        nelem = alloc // elem
        if nelem >= 32:
            break
    nallocs = (num_entries - 1) // nelem + 1
    return size + nallocs * nelem * elem


def ssi_memory(s):
    """SSI shared memory for the server's settings, as PredicateLockShmemSize()
    computes it (PostgreSQL 15, x86-64 struct sizes: PREDICATELOCKTARGET 32,
    PREDICATELOCK 56, SERIALIZABLEXACT list element 168, SERIALIZABLEXID 16,
    RWConflictData 48 bytes).  Returns (predicate-lock tables, all of SSI)."""
    max_backends = (int(s["max_connections"]) + int(s["autovacuum_max_workers"]) + 1
                    + int(s["max_worker_processes"]) + int(s["max_wal_senders"]))
    prepared = int(s["max_prepared_transactions"])
    targets = int(s["max_pred_locks_per_transaction"]) * (max_backends + prepared)
    pred = hash_estimate_size(targets, 32) + hash_estimate_size(2 * targets, 56)
    pred += pred // 10                      # the 10% safety margin
    xacts = 10 * (max_backends + prepared)
    total = pred + 48 + xacts * 168 + hash_estimate_size(xacts, 16) + 24 + 5 * xacts * 48
    total += 16 + 16 + 133568               # finished list, SLRU control + 16 buffers
    return pred, total


# ---------------------------------------------------------------- loading ----

def dbname(dataset, am):
    return f"{dataset}_{am}"


def load_commands(w, am):
    """Files and psql variables to build dataset w.dataset on access method am."""
    if w.kind == "tpcc":
        if w.with_decl:
            return [("tpcc/schema.sql", [("am", am)]),
                    ("tpcc/load.sql", [("warehouses", w.warehouses)]),
                    ("tpcc/indexes.sql", []),
                    ("tpcc/sp.sql", [])]
        if not w.declared:
            return [("tpcc/schema.sql", [("am", am)]),
                    ("tpcc/load.sql", [("warehouses", w.warehouses)]),
                    ("tpcc/indexes.sql", [("no_column_groups", 1)]),
                    ("tpcc/sp.sql", [])]
        return [("tpcc/schema.sql", [("am", am)]),
                ("tpcc/load.sql", [("warehouses", w.warehouses)]),
                ("tpcc/indexes.sql", [])]
    return [("ycsb/load.sql", [("am", am), ("records", w.records)])]


def ensure_datasets(cl, workloads, ams, reuse):
    todo = []
    seen = set()
    for w in workloads:
        for am in ams:
            db = dbname(w.dataset, am)
            if db in seen:
                continue
            seen.add(db)
            exists = cl.psql("postgres", f"SELECT 1 FROM pg_database WHERE datname = '{db}'")
            if exists and reuse:
                done = cl.psql(db, "SELECT count(*) FROM pg_tables WHERE tablename = 'bench_loaded'",
                               check=False)
                if done == "1":
                    log(f"   {db}: already loaded, reused")
                    continue
            todo.append((w, am, db))
    # two loads at a time (2 cores): heap and fpsketch of the same data set
    running = []

    def start(w, am, db):
        cl.psql("postgres", f"DROP DATABASE IF EXISTS {db}")
        cl.psql("postgres", f"CREATE DATABASE {db}")
        cl.psql(db, "CREATE EXTENSION fpsketch; CREATE EXTENSION pg_prewarm")
        script = " && ".join(
            "psql -X -q -v ON_ERROR_STOP=1 -d {} {} -f {}".format(
                db, " ".join(f"-v {k}={v}" for k, v in vs), os.path.join(HERE, f))
            for f, vs in load_commands(w, am))
        script += f" && psql -X -q -d {db} -c 'CREATE TABLE bench_loaded () USING heap'"
        t0 = time.time()
        p = subprocess.Popen(["bash", "-c", script], env=cl.env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        log(f"   loading {db} ...")
        return (p, db, t0)

    while todo or running:
        while todo and len(running) < 2:
            running.append(start(*todo.pop(0)))
        p, db, t0 = running.pop(0)
        out, _ = p.communicate()
        noise = [line for line in out.splitlines()
                 if line.strip() and "NOTICE" not in line and "does not exist, skipping" not in line]
        if p.returncode != 0:
            raise RuntimeError(f"loading {db} failed:\n" + "\n".join(noise))
        log(f"   loaded {db} in {time.time() - t0:.0f} s")


# ---------------------------------------------------------------- a run ----

def pgbench_cmd(args, w, db, logprefix):
    cmd = ["pgbench", "-n", "-M", w.query_mode, "-c", str(args.clients), "-j", str(args.jobs),
           "-T", str(args.duration), f"--max-tries={args.max_tries}", "--failures-detailed",
           "-P", str(args.progress), "-l", f"--log-prefix={logprefix}",
           f"--random-seed={args.random_seed}"]
    for k, v in w.defines.items():
        cmd += ["-D", f"{k}={v}"]
    for f, weight in w.scripts:
        cmd += ["-f", f"{os.path.join(HERE, f)}@{weight}"]
    return cmd + [db]


def parse_summary(out):
    def num(pattern, default=0.0):
        m = re.search(pattern, out, re.M)
        return float(m.group(1)) if m else default
    return {
        "processed": int(num(r"^number of transactions actually processed: (\d+)")),
        "failed": int(num(r"^number of failed transactions: (\d+)")),
        "failed_serialization": int(num(r"^number of serialization failures: (\d+)")),
        "failed_deadlock": int(num(r"^number of deadlock failures: (\d+)")),
        "retried": int(num(r"^number of transactions retried: (\d+)")),
        "retries": int(num(r"^total number of retries: (\d+)")),
        "tps": num(r"^tps = ([0-9.]+)"),
        "client_errors": len(re.findall(r"^pgbench: error: client \d+ (?:script \d+ )?aborted", out, re.M))
                         + len(re.findall(r"^client \d+ aborted", out, re.M)),
    }


def parse_logs(prefix, nscripts):
    """Per-transaction logs: 'client n latency|failed|serialization|deadlock
    script epoch us [retries]' (retries with --max-tries other than 1)."""
    lat = []
    per_script = [0] * nscripts
    per_script_aborts = [0] * nscripts      # retries + failures
    per_second = {}                         # epoch second -> [committed, aborts]
    failed = 0
    for path in glob.glob(prefix + ".*"):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 6:
                    continue
                script = int(parts[3])
                retries = int(parts[6]) if len(parts) > 6 and parts[6].isdigit() else 0
                sec = per_second.setdefault(int(parts[4]), [0, 0])
                if parts[2].isdigit():
                    lat.append(int(parts[2]))
                    per_script[script] += 1
                    sec[0] += 1
                else:
                    failed += 1
                    per_script_aborts[script] += 1
                    sec[1] += 1
                per_script_aborts[script] += retries
                sec[1] += retries
    lat.sort()
    res = {"committed_logged": len(lat), "failed_logged": failed, "per_script": per_script,
           "per_script_aborts": per_script_aborts, "per_second": per_second}
    if lat:
        res["lat_avg_ms"] = sum(lat) / len(lat) / 1000.0
        res["lat_p95_ms"] = lat[min(len(lat) - 1, int(0.95 * len(lat)))] / 1000.0
        res["lat_p50_ms"] = lat[len(lat) // 2] / 1000.0
    else:
        res["lat_avg_ms"] = res["lat_p95_ms"] = res["lat_p50_ms"] = float("nan")
    return res


# fpsketch_stats columns reported (all aborts_* columns are added as found,
# so abort reasons that later versions add show up without changes here)
FPS_STAT_COLS = ["max_entries", "entries_hwm", "pinned_hwm", "evictions", "table_full", "lock_leaks",
                 "sketch_rows", "sketch_cols", "sketch_bytes", "table_bytes", "sketch_cells_used",
                 "commits", "lock_waits", "pinned", "escalations", "phantom_writes",
                 "phantom_relation_reads", "phantom_prefix_reads", "snapshot_refreshes",
                 "row_lock_waits", "reevaluations", "reads_valid_before_overwrite", "stable_rereads",
                 "early_aborts", "ts_snapshots", "ts_waits", "commit_ts_capacity", "commit_ts_entries_hwm",
                 "commit_ts_drops", "commit_ts_lost"]


def fps_stats(cl, db):
    cols = cl.psql(db, "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute "
                       "WHERE attrelid = 'fpsketch_stats'::regclass AND attnum > 0").split(",")
    want = [c for c in cols if c in FPS_STAT_COLS or c.startswith("aborts_")]
    out = cl.psql(db, "SELECT " + ", ".join(want) + " FROM fpsketch_stats")
    return {c: int(v) for c, v in zip(want, out.split("|"))}


def fps_abort_cols(results):
    cols = []
    for r in results:
        for k in r:
            if k.startswith("fps_aborts_") and k not in cols:
                cols.append(k)
    return cols


def db_stats(cl, db):
    out = cl.psql(db, "SELECT xact_commit, xact_rollback, deadlocks FROM pg_stat_database "
                      f"WHERE datname = '{db}'")
    return [int(x) for x in out.split("|")]


def intended_rollbacks(cl, db):
    return int(cl.psql(db, "SELECT CASE WHEN is_called THEN last_value ELSE 0 END "
                           "FROM tpcc_intended_rollbacks"))


def has_delivery(w):
    return any("delivery" in f for f, _ in w.scripts)


def consistency_check(cl, w, db):
    # condition 11 holds only on a database no Delivery ever ran on: rows
    # share their database with the other workloads of its data set
    delivered = cl.psql(db, "SELECT count(*) FROM pg_tables WHERE tablename = 'bench_delivery_ran'") == "1"
    r = cl.psql_file(db, os.path.join(HERE, "tpcc/check.sql"),
                     [("full_mix", 1 if has_delivery(w) or delivered else 0)],
                     env=dict(cl.env, PGOPTIONS="-c jit=off"))
    if r.returncode != 0:
        return None, "check failed: " + r.stderr.strip()
    checks = []
    for line in r.stdout.split("\n"):
        parts = line.strip().split("|")
        if len(parts) == 3 and parts[0].isdigit():
            checks.append((int(parts[0]), parts[1], int(parts[2])))
    bad = [f"#{c}: {v} {what}" for c, what, v in checks if v]
    return sum(v for _, _, v in checks), ("; ".join(bad) if bad else f"{len(checks)} conditions ok")


# ------------------------------------------- abort reasons from the log ----

# fpsketch's 40001 DETAILs (cc/txn.c) -> the fpsketch_stats reason; heap's
# serialization failures and deadlocks by their message
FPS_DETAIL_REASONS = [
    ("was read after a concurrent transaction had committed a newer version", "stale_read"),
    ("Two different versions of a row of relation", "reread_changed"),
    ("read by this transaction was overwritten before it could commit", "validate_changed"),
    ("read by this transaction is being overwritten by a concurrently committing", "validate_locked"),
    ("was updated or deleted by a concurrent transaction", "concurrent_update"),
    ("Waited longer than fpsketch.lock_wait_timeout", "lock_timeout"),
    ("The FPSketch exact table is full", "table_full"),
    ("inserted into a range or predicate of relation", "phantom"),
    ("was read on a snapshot taken before a concurrent commit", "phantom_snapshot"),
    ("(timestamp ordering: read too late)", "sto_read_too_late"),
    ("(timestamp ordering: write too late)", "sto_write_too_late"),
    ("committed while this transaction waited to read it", "sto_waited_for_writer"),
    ("would close a cycle of waits", "wait_cycle"),
    ("(snapshot too old)", "snapshot_too_old"),
    ("The statement looked read-only", "read_only_guess"),
    ("could not be pinned", "pool_held"),
]
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \w+ \[(\d+)\] (\w+):  (.*)$")


def normalize_sql(text):
    """A statement as pgbench's script has it (:var) or as the server logs a
    prepared one ($n), in one comparable form."""
    text = re.sub(r"(?<!:):\w+|\$\d+", "?", text)
    return re.sub(r"\s+", " ", text).strip().rstrip(";").strip()


def script_statements(scripts):
    """normalized statement -> names of the scripts that contain it."""
    where = {}
    for f, _ in scripts:
        name = os.path.basename(f)[:-4]
        with open(os.path.join(HERE, f)) as fh:
            buf = []
            for line in fh:
                st = line.strip()
                if st.startswith("--") or st.startswith("\\"):
                    continue
                m = re.search(r"\\[ag]set\b", line)
                end = m is not None or st.endswith(";")
                buf.append(line[:m.start()] if m else line)
                if end:
                    where.setdefault(normalize_sql("".join(buf)), set()).add(name)
                    buf = []
    return where


def log_aborts(path, offset, scripts):
    """The ERRORs the server logged from offset on, grouped by (transaction
    type, where, reason, relation): where is the statement that failed
    (COMMIT: at validation; another statement: before or while it ran, e.g.
    an early abort before a write, or a PL/pgSQL line).  Returns a list of
    (count, script, where, reason, relation), largest first."""
    try:
        with open(path, errors="replace") as f:
            f.seek(offset)
            text = f.read()
    except OSError:
        return []
    where = script_statements(scripts)
    # one entry per logged message; continuation lines start with a tab
    entries = []
    for line in text.split("\n"):
        m = LOG_LINE.match(line)
        if m:
            entries.append([m.group(1), m.group(2), m.group(3)])
        elif entries and line.startswith("\t"):
            entries[-1][2] += "\n" + line[1:]
    counts = {}
    cur = {}                                # pid -> the error being collected

    def flush(pid):
        e = cur.pop(pid, None)
        if not e:
            return
        msg, detail, stmt, ctx = e.get("ERROR", ""), e.get("DETAIL", ""), e.get("STATEMENT", ""), e.get("CONTEXT", "")
        reason, rel = None, ""
        for pat, r in FPS_DETAIL_REASONS:
            if pat in detail:
                reason = r
                m = re.search(r'relation \"([^"]+)\"', detail)
                rel = m.group(1) if m else ""
                break
        if reason is None:
            if "read/write dependencies" in msg:
                reason = "ssi"
            elif "could not serialize access due to concurrent" in msg:
                reason = "concurrent update (heap)"
            elif msg.startswith("deadlock detected"):
                reason = "deadlock"
            else:
                reason = "ERROR " + msg[:60]
        norm = normalize_sql(stmt)
        names = where.get(norm)
        script = "/".join(sorted(names)) if names else ("?" if norm else "")
        short = norm if len(norm) <= 70 else norm[:67] + "..."
        m = re.search(r"PL/pgSQL function (\w+)\(.*?\) (line \d+ at [\w ]+)", ctx)
        if m:
            short += f" [{m.group(1)} {m.group(2)}]"
        key = (script, short, reason, rel)
        counts[key] = counts.get(key, 0) + 1

    for pid, level, msg in entries:
        if level == "ERROR":
            flush(pid)
            cur[pid] = {"ERROR": msg}
        elif pid in cur and level in ("DETAIL", "HINT", "CONTEXT", "STATEMENT"):
            cur[pid].setdefault(level, msg)
            if level == "STATEMENT":
                flush(pid)
    for pid in list(cur):
        flush(pid)
    return sorted(((n,) + k for k, n in counts.items()), key=lambda t: -t[0])


def aborts_by_script(entries):
    """'new_order: validate_changed/district 120, ...' per script, from log_aborts()."""
    per = {}
    for n, script, _, reason, rel in entries:
        k = (script or "?", reason + (f"/{rel}" if rel else ""))
        per[k] = per.get(k, 0) + n
    return "; ".join(f"{sc}: {r} {n}" for (sc, r), n in sorted(per.items(), key=lambda t: (t[0][0], -t[1])))


def check_no_declarations(cl, db):
    """The -client and -sp workloads run on tables without fpsketch declarations."""
    # groups fpsketch learned from the workload's UPDATEs are not declarations
    n = cl.psql(db, "SELECT count(*) FROM fpsketch_column_group g "
                "WHERE to_jsonb(g)->>'source' IS DISTINCT FROM 'learned'", check=False)
    if n not in ("0", ""):
        raise RuntimeError(f"{db} has {n} column groups declared; the -client/-sp workloads need none")


def library_id(pgbin):
    """md5 of the installed fpsketch.so: the server loads it at every restart,
    so a `make install` during a run would change what later rows measure."""
    import hashlib
    libdir = subprocess.run([os.path.join(pgbin, "pg_config"), "--pkglibdir"], capture_output=True,
                            text=True).stdout.strip()
    try:
        with open(os.path.join(libdir, "fpsketch.so"), "rb") as f:
            return hashlib.md5(f.read()).hexdigest()[:12]
    except OSError:
        return "?"


def prepare_db(cl, db):
    cl.psql(db, "SELECT count(pg_prewarm(c.oid)) FROM pg_class c "
                "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'i')")
    cl.psql(db, "VACUUM")
    cl.psql(db, "CHECKPOINT")


def foreign_pgbench():
    """pids of pgbench processes this runner did not start (someone else's benchmark)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        comm = st[st.index("(") + 1:st.rindex(")")]
        ppid = int(st[st.rindex(")") + 2:].split()[1])
        if comm == "pgbench" and ppid != os.getpid():
            pids.append(int(d))
    return pids


def foreign_runners():
    """pids of other bench/run.py processes (another benchmark that is between rows)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"bench/run.py") for a in argv) and b"--replot" not in argv \
                and (b"python" in argv[0] or argv[0].endswith(b"run.py")):
            pids.append(int(d))
    return pids


def cpu_busy(seconds=2.0):
    """Fraction of all cores busy over the next `seconds` (from /proc/stat)."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return v[3] + v[4], sum(v)            # idle + iowait, total
    i0, t0 = sample()
    time.sleep(seconds)
    i1, t1 = sample()
    return 1.0 - (i1 - i0) / max(1, t1 - t0)


def proc_times(pid):
    """(own, children's) CPU ticks of a process, or (0, 0)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
    except OSError:
        return 0, 0
    rest = st[st.rindex(")") + 2:].split()
    return int(rest[11]) + int(rest[12]), int(rest[13]) + int(rest[14])


class CpuMeter:
    """How much of the machine others used during a row: all busy CPU ticks
    minus those of this runner (and pgbench, its child) and of our server
    (postmaster, its live children, and the exited ones it reaped)."""

    def __init__(self, pgdata):
        try:
            with open(os.path.join(pgdata, "postmaster.pid")) as f:
                self.pm = int(f.readline())
        except (OSError, ValueError):
            self.pm = None
        self.start = self.sample()

    def ours(self):
        t = sum(proc_times(os.getpid()))
        if self.pm:
            t += sum(proc_times(self.pm))
            for d in os.listdir("/proc"):
                if d.isdigit():
                    try:
                        with open(f"/proc/{d}/stat") as f:
                            st = f.read()
                    except OSError:
                        continue
                    if int(st[st.rindex(")") + 2:].split()[1]) == self.pm:
                        t += proc_times(int(d))[0]
        return t

    def sample(self):
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v) - v[3] - v[4], sum(v), self.ours()

    def foreign_share(self):
        b0, t0, o0 = self.start
        b1, t1, o1 = self.sample()
        return max(0.0, (b1 - b0) - (o1 - o0)) / max(1, t1 - t0)


def wait_quiet(max_wait):
    """Before a row: wait up to max_wait seconds until no other pgbench or
    benchmark runner runs and the machine is mostly idle.  Returns (seconds
    waited, CPU busy fraction)."""
    t0 = time.time()
    said = False
    while True:
        others, busy = foreign_pgbench() + foreign_runners(), cpu_busy()
        if (not others and busy < 0.25) or time.time() - t0 >= max_wait:
            if said:
                log(f"      ... waited {time.time() - t0:.0f} s" + ("" if not others and busy < 0.25 else
                                                                   " and gave up waiting"))
            return round(time.time() - t0), busy
        if not said:
            log(f"      waiting for a quiet machine (other pgbench or bench/run.py: {others or 'none'}, "
                f"CPU {100 * busy:.0f}% busy; up to {max_wait} s)")
            said = True
        time.sleep(10)


def report_cmd(args, w, row, db, workdir, prefix, report_log):
    """pgbench for the report client: tpcc/report.sql with the row's BEGIN,
    retried until it commits (--max-tries=0 under -T)."""
    with open(os.path.join(HERE, "tpcc/report.sql")) as f:
        src = f.read()
    path = os.path.join(workdir, "report.sql")
    with open(path, "w") as f:
        f.write(re.sub(r"^BEGIN READ ONLY;$", reader_begin(row, w), src, count=1, flags=re.M))
    return ["pgbench", "-n", "-M", "prepared", "-c", "1", "-j", "1", "-T", str(args.duration),
            "--max-tries=0", "--failures-detailed", "-l", f"--log-prefix={prefix}",
            "-D", f"warehouses={w.warehouses}", "-D", f"report_log={report_log}", "-f", path, db]


READER_READS = ["SELECT sum(w_ytd) FROM warehouse;",
                "SELECT count(*), sum(c_ytd_payment), sum(c_balance) FROM customer;",
                "SELECT count(*), sum(s_ytd), sum(s_quantity) FROM stock;",
                "SELECT sum(d_ytd), sum(d_next_o_id) FROM district;"]


class LongReader:
    """One session that, start_after seconds in, begins a read-only transaction,
    reads the report's tables, holds its snapshot for hold seconds (pg_sleep
    inside the transaction) and reads them again, then commits.  Both reads
    must agree (one snapshot)."""

    def __init__(self, cl, w, row, db, env, start_after):
        import threading
        self.begin = reader_begin(row, w)
        self.start_after, self.hold = start_after, w.reader_hold
        self.sql = "\n".join(["\\set ON_ERROR_STOP on", self.begin] + READER_READS
                              + [f"SELECT pg_sleep({self.hold}) IS NULL AS slept;"] + READER_READS
                              + ["COMMIT;"]) + "\n"
        self.cmd = ["psql", "-X", "-q", "-At", "-d", db]
        self.env = env
        self.result = None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        time.sleep(self.start_after)
        t0 = time.time()
        r = subprocess.run(self.cmd, input=self.sql, env=self.env, capture_output=True, text=True)
        lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
        n = len(READER_READS)
        first, second = lines[:n], lines[n + 1:2 * n + 1]
        self.result = {
            "reader_begin": self.begin, "reader_start_s": self.start_after,
            "reader_elapsed_s": round(time.time() - t0, 1),
            "reader_result": "committed" if r.returncode == 0 else
                             "ERROR: " + " ".join(r.stderr.strip().splitlines()[-2:])[:200],
            "reader_stable": "" if r.returncode != 0 else ("yes" if first == second else "NO"),
        }

    def join(self):
        self.thread.join()
        return self.result


def window_rate(per_second, t0, lo, hi):
    """Mean committed transactions/s over the run's seconds [lo, hi)."""
    secs = range(int(t0) + int(lo), int(t0) + int(hi))
    return round(sum(per_second.get(s, [0, 0])[0] for s in secs) / max(1, len(secs)), 1)


def file_label(label):
    """'fpsketch tictoc focus_sketch (prefix_predicates=off)' -> fpsketch_tictoc_focus_sketch_prefix_predicates=off"""
    return re.sub(r"[^\w.=-]+", "_", label).strip("_")


def run_row(cl, args, w, row, settings, workdir, rawdir, idx, total, eta):
    db = dbname(w.dataset, row.am)
    fps_conf = dict(row.fps)
    lib = library_id(args.pgbin)
    cl.restart(fps_conf, force=True)            # a fresh server for every row
    # the row's own settings (beyond the protocol and variant), as the server reports them
    row_settings = "; ".join(
        f"{k} = {cl.psql(db, f'SELECT current_setting($${k}$$)')}" for k in sorted(fps_conf)
        if k not in ("fpsketch.protocol", "fpsketch.variant"))
    prepare_db(cl, db)
    if w.kind == "tpcc" and not w.declared:
        check_no_declarations(cl, db)
    if w.kind == "tpcc" and has_delivery(w):
        cl.psql(db, "CREATE TABLE IF NOT EXISTS bench_delivery_ran () USING heap")
    if row.am == "fpsketch":
        cl.psql(db, "SELECT fpsketch_stats_reset()")
    before = db_stats(cl, db)
    rb_before = intended_rollbacks(cl, db) if w.kind == "tpcc" else 0
    prefix = os.path.join(workdir, f"log_{w.name}_{file_label(row.label)}")
    for old in glob.glob(prefix + ".*"):
        os.remove(old)
    env = dict(cl.env, PGOPTIONS="-c default_transaction_isolation=" + row.iso.replace(" ", "\\ "))
    cmd = pgbench_cmd(args, w, db, prefix)
    waited, busy = wait_quiet(args.wait_quiet) if args.wait_quiet else (0, cpu_busy(1.0))
    log(f"[{idx}/{total}] {w.name} ({w.param}) x {row.label}: {args.clients} clients, "
        f"{args.duration} s{eta}")
    t0 = time.time()
    load_before = os.getloadavg()[0]
    server_log = os.path.join(args.pgdata, "server.log")
    log_offset = os.path.getsize(server_log) if os.path.exists(server_log) else 0
    meter = CpuMeter(args.pgdata)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         cwd=workdir)
    rp = reader = None
    if w.report:
        rprefix = prefix + "_report"
        report_log = prefix + "_report_inconsistent.txt"
        for old in glob.glob(rprefix + ".*") + [report_log]:
            if os.path.exists(old):
                os.remove(old)
        rcmd = report_cmd(args, w, row, db, workdir, rprefix, report_log)
        rp = subprocess.Popen(rcmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              cwd=workdir)
    if w.reader_hold:
        if args.duration < args.duration / 5 + w.reader_hold + 10:
            log(f"      !! --duration {args.duration} is too short for a {w.reader_hold} s reader "
                f"starting at {args.duration // 5} s")
        reader = LongReader(cl, w, row, db, env, args.duration // 5)
    out_lines = []
    others_seen = set()
    for line in p.stdout:
        out_lines.append(line)
        if line.startswith("progress:"):
            log("      " + line.rstrip())
            others_seen.update(foreign_pgbench())
    p.wait()
    rout = rp.communicate()[0] if rp else ""
    reader_res = reader.join() if reader else None
    foreign_cpu = meter.foreign_share()
    out = "".join(out_lines)
    with open(os.path.join(rawdir, f"{w.name}__{file_label(row.label)}.txt"), "w") as f:
        f.write("$ PGOPTIONS='" + env["PGOPTIONS"] + "' " + " ".join(cmd) + "\n" + out)
        if rp:
            f.write("\n$ PGOPTIONS='" + env["PGOPTIONS"] + "' " + " ".join(rcmd) + "\n" + rout)
        if reader:
            f.write("\n$ PGOPTIONS='" + env["PGOPTIONS"] + "' " + " ".join(reader.cmd) + " <<EOF\n"
                    + reader.sql + "EOF\n" + json.dumps(reader_res) + "\n")
    time.sleep(1.0)                             # let exiting backends flush their stats
    # a prepared transaction pgbench left behind (it ends between PREPARE
    # and COMMIT PREPARED only on an error) would hold its locks into the
    # next row: roll it back and count it
    prepared_left = 0
    if w.two_pc:
        for gid in cl.psql(db, "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()").split():
            cl.psql(db, f"ROLLBACK PREPARED '{gid}'")
            prepared_left += 1
        if prepared_left:
            log(f"      !! {prepared_left} prepared transactions were left behind (rolled back)")
    after = db_stats(cl, db)
    logged = log_aborts(server_log, log_offset, w.scripts)
    with open(os.path.join(rawdir, f"{w.name}__{file_label(row.label)}_aborts.txt"), "w") as f:
        f.write("count | transaction | where (statement that failed) | reason | relation\n")
        for e in logged:
            f.write(" | ".join(map(str, e)) + "\n")
    summ = parse_summary(out)
    if p.returncode not in (0,) and summ["client_errors"] == 0:
        summ["client_errors"] = 1               # pgbench failed in some other way
    logs = parse_logs(prefix, len(w.scripts))
    rlogs = parse_logs(rprefix, 1) if rp else None
    if not args.keep_logs:
        for fpath in glob.glob(prefix + ".*") + (glob.glob(rprefix + ".*") if rp else []):
            os.remove(fpath)
    res = {
        "workload": w.name, "workload_desc": w.desc, "param": w.param, "config": row.label,
        "am": row.am, "isolation": row.iso,
        "protocol": row.fps.get("fpsketch.protocol", ""), "variant": row.fps.get("fpsketch.variant", ""),
        "clients": args.clients, "jobs": args.jobs, "duration_s": args.duration,
        "max_tries": args.max_tries,
        "warehouses": getattr(w, "warehouses", ""), "theta": getattr(w, "theta", ""),
        "records": getattr(w, "records", ""), "mix": getattr(w, "mix", getattr(w, "ycsb_kind", "")),
        "goodput_tps": round(summ["tps"], 1),
        "committed": summ["processed"], "failed": summ["failed"],
        "failed_serialization": summ["failed_serialization"], "failed_deadlock": summ["failed_deadlock"],
        "retries": summ["retries"],
        "client_errors": summ["client_errors"],
        "prepared_left": prepared_left,
        "lat_avg_ms": round(logs["lat_avg_ms"], 2), "lat_p50_ms": round(logs["lat_p50_ms"], 2),
        "lat_p95_ms": round(logs["lat_p95_ms"], 2),
        "per_script_committed": "/".join(str(c) for c in logs["per_script"]),
        "per_script_aborts": "/".join(str(c) for c in logs["per_script_aborts"]),
        "aborts_by_script": aborts_by_script(logged),
        "aborts_logged": json.dumps([list(e) for e in logged[:40]]),
        "server_deadlocks": after[2] - before[2],
        "server_rollbacks": after[1] - before[1],
    }
    res["attempts"] = res["committed"] + res["failed"] + res["retries"]
    res["aborts"] = res["failed"] + res["retries"]
    res["abort_rate"] = round(res["aborts"] / res["attempts"], 4) if res["attempts"] else 0.0
    res["aborts_deadlock"] = res["server_deadlocks"]
    res["aborts_serialization"] = max(0, res["aborts"] - res["server_deadlocks"])
    # explicit ROLLBACKs that pgbench counted as processed (TPC-C's 1% New-Order)
    res["intended_rollbacks"] = intended_rollbacks(cl, db) - rb_before if w.kind == "tpcc" else ""
    if row.am == "fpsketch":
        st = fps_stats(cl, db)
        res.update({"fps_" + k: v for k, v in st.items()})
        res["cc_memory_bytes"] = st["sketch_bytes"] + st["table_bytes"]
        # every transaction has ended: nothing may stay pinned or locked
        res["fps_leaks"] = st.get("lock_leaks", 0) + st.get("pinned", 0)
        res["cc_memory_what"] = "FPSketch sketch + exact table"
    elif row.iso == "serializable":
        res["cc_memory_bytes"] = settings["ssi_predlock_bytes"]
        res["cc_memory_what"] = "SSI predicate-lock tables"
    else:
        res["cc_memory_bytes"] = 0
        res["cc_memory_what"] = "none (row locks in tuples)"
    res["row_settings"] = row_settings
    if rp:
        rs = parse_summary(rout)
        inconsistent = 0
        if os.path.exists(report_log):
            with open(report_log) as f:
                inconsistent = sum(1 for _ in f)
            os.remove(report_log)
        res.update({
            "report_begin": reader_begin(row, w), "report_committed": rs["processed"],
            "report_per_min": round(rs["processed"] * 60.0 / args.duration, 1),
            "report_retries": rs["retries"], "report_failed": rs["failed"],
            "report_client_errors": rs["client_errors"], "report_inconsistent": inconsistent,
            "report_lat_p50_ms": round(rlogs["lat_p50_ms"], 1),
        })
        res["client_errors"] += rs["client_errors"]
    if reader:
        res.update(reader_res or {"reader_result": "no result"})
        start = args.duration // 5
        res["goodput_before"] = window_rate(logs["per_second"], t0, 2, start)
        res["goodput_during"] = window_rate(logs["per_second"], t0, start, start + w.reader_hold)
        res["goodput_after"] = window_rate(logs["per_second"], t0, start + w.reader_hold, args.duration - 1)
        outdir = os.path.dirname(rawdir)
        new = not os.path.exists(os.path.join(outdir, "timeline.csv"))
        with open(os.path.join(outdir, "timeline.csv"), "a") as f:
            if new:
                f.write("workload,config,second,committed,aborts\n")
            for sec in range(int(t0), int(t0) + args.duration):
                c, a = logs["per_second"].get(sec, [0, 0])
                f.write(f"{w.name},{row.label},{sec - int(t0)},{c},{a}\n")
    if row.am == "fpsketch":
        res["fps_sketch_size_kb"] = row.fps.get("fpsketch.sketch_size", settings.get("fpsketch.sketch_size"))
    # the settings that change the result, as the server reported them
    for k in ("shared_buffers", "synchronous_commit", "fsync", "deadlock_timeout",
              "max_pred_locks_per_transaction", "max_connections", "server_version"):
        res["set_" + k] = settings["pretty"][k]
    res["fpsketch_so_md5"] = lib
    # 1-minute load average before and after: pgbench + server use both cores,
    # so anything above ~3 means someone else was using the machine
    res["loadavg_before"] = round(load_before, 1)
    res["loadavg_after"] = round(os.getloadavg()[0], 1)
    res["elapsed_s"] = round(time.time() - t0, 1)
    # another benchmark on the machine makes the row meaningless: say so
    res["cpu_busy_before"] = round(busy, 2)
    res["waited_s"] = waited
    res["other_pgbench_during"] = len(others_seen)
    res["foreign_cpu"] = round(foreign_cpu, 3)
    res["disturbed"] = int(bool(others_seen) or foreign_cpu > args.max_foreign_cpu)
    if others_seen:
        log(f"      !! other pgbench processes ran during this row: {sorted(others_seen)}")
    if foreign_cpu > args.max_foreign_cpu:
        log(f"      !! other processes used {100 * foreign_cpu:.0f}% of the machine's CPU during this row")
    if w.kind == "tpcc":
        if row.am == "fpsketch":
            # whole-table reads would pin more rows than max_entries: check untracked
            cl.restart({"fpsketch.protocol": "off"}, force=True)
        res["check_violations"], res["check_detail"] = consistency_check(cl, w, db)
    else:
        res["check_violations"], res["check_detail"] = "", "n/a"
    return res


# ------------------------------------------------------------- reports ----

CSV_COLS = [
    "workload", "workload_desc", "param", "config", "am", "isolation", "protocol", "variant",
    "row_settings", "fps_sketch_size_kb", "goodput_tps", "attempts", "committed", "aborts", "abort_rate", "retries",
    "failed", "failed_serialization", "failed_deadlock", "aborts_serialization", "aborts_deadlock",
    "intended_rollbacks", "client_errors", "prepared_left", "check_violations", "check_detail",
    "lat_avg_ms", "lat_p50_ms", "lat_p95_ms", "per_script_committed", "per_script_aborts",
    "aborts_by_script", "aborts_logged",
    "report_begin", "report_committed", "report_per_min", "report_retries", "report_failed",
    "report_client_errors", "report_inconsistent", "report_lat_p50_ms",
    "reader_begin", "reader_start_s", "reader_elapsed_s", "reader_result", "reader_stable",
    "goodput_before", "goodput_during", "goodput_after",
    "cc_memory_bytes", "cc_memory_what",
] + ["fps_" + c for c in FPS_STAT_COLS] + ["@fps_aborts"] + [
    "clients", "jobs", "duration_s", "max_tries", "warehouses", "theta", "records", "mix",
    "set_shared_buffers", "set_synchronous_commit", "set_fsync", "set_deadlock_timeout",
    "set_max_pred_locks_per_transaction", "set_max_connections", "set_server_version",
    "server_deadlocks", "server_rollbacks", "fpsketch_so_md5", "loadavg_before", "loadavg_after",
    "cpu_busy_before", "waited_s", "other_pgbench_during", "foreign_cpu", "disturbed", "elapsed_s",
]


def write_csv(path, results):
    i = CSV_COLS.index("@fps_aborts")
    cols = CSV_COLS[:i] + fps_abort_cols(results) + CSV_COLS[i + 1:]
    with open(path, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        wr.writeheader()
        for r in results:
            wr.writerow(r)


def human_bytes(n):
    if n in ("", None) or n == 0:
        return "—"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def abort_reasons(r):
    parts = []
    if r["aborts_deadlock"]:
        parts.append(f"deadlock {r['aborts_deadlock']}")
    if r["am"] == "fpsketch":
        fps_aborts = [k for k in r if k.startswith("fps_aborts_")]
        for c in fps_aborts:
            if r[c]:
                parts.append(f"{c[len('fps_aborts_'):]} {r[c]}")
        other = r["aborts_serialization"] - sum(r[c] for c in fps_aborts)
        if other > 0:
            parts.append(f"other 40001 {other}")
    elif r["aborts_serialization"]:
        parts.append(f"40001 {r['aborts_serialization']}")
    if r["failed"]:
        parts.append(f"(gave up: {r['failed']})")
    return ", ".join(parts) if parts else "—"


def per_script(r):
    """'new_order 2808 (31 aborts), payment 3378 (12 aborts)': committed
    transactions of each script and its aborted attempts (retries and
    failures; a script whose transactions never commit shows 0)."""
    mix = str(r.get("mix", ""))
    scripts = TPCC_MIXES.get(mix) if str(r["workload"]).startswith("tpcc") else YCSB_KINDS.get(mix)
    counts = str(r.get("per_script_committed", "")).split("/")
    aborts = str(r.get("per_script_aborts", "")).split("/")
    if not scripts or len(counts) != len(scripts):
        return str(r.get("per_script_committed", ""))
    if len(aborts) != len(scripts) or len(scripts) == 1:
        aborts = [None] * len(scripts)
    return ", ".join(f"{os.path.basename(f)[:-4]} {c}" + (f" ({a} aborts)" if a is not None else "")
                     for (f, _), c, a in zip(scripts, counts, aborts))


def ratio(a, b):
    return f"{a / b:.2f}" if b else "—"


def markdown(results, meta, title):
    out = [f"# {title}", ""]
    out.append(f"Run {meta['started']} … {meta['finished']} on {meta['host']}; fpsketch "
               f"{meta['git']} (fpsketch.so md5 {meta['fpsketch_so']}); {meta['server_version']}.")
    out.append("")
    out.append("Settings (identical for every row): " + ", ".join(f"{k} = {v}" for k, v in meta["settings"]))
    out.append("")
    own = {r["config"]: r.get("row_settings") for r in results if r.get("row_settings")}
    if own:
        out.append("Settings of single rows (as the server reported them): "
                   + "; ".join(f"{c}: {v}" for c, v in own.items()) + ".")
        out.append("")
    out.append("Goodput = committed transactions/s (pgbench tps; TPC-C New-Orders that roll back on "
               "purpose count as committed business transactions). Attempts = committed + retries + "
               "failed. Abort rate = (retries + failed) / attempts. Latency of committed transactions "
               "(including their retries) from pgbench's per-transaction log. Reasons: deadlock = "
               "pg_stat_database.deadlocks, fpsketch reasons from fpsketch_stats, other 40001 = the rest; "
               "'gave up' = transactions that failed all max-tries. CC memory: FPSketch = sketch_bytes + "
               "table_bytes; SSI = predicate-lock hash tables sized by max_pred_locks_per_transaction "
               "(see README). Checks = TPC-C consistency conditions violated after the run.")
    out.append("")
    out.append("Load average (1 min) during the rows: "
               f"{min(r['loadavg_before'] for r in results):.1f} … "
               f"{max(max(r['loadavg_before'], r['loadavg_after']) for r in results):.1f} "
               "(it counts the run's own clients and backends waiting for the cores, so 3–6 is usual on 2 cores "
               "here; the share of CPU other processes used, when recorded, measures outside work).")
    out.append("")
    if any("foreign_cpu" in r and r["foreign_cpu"] != "" for r in results):
        fc = [float(r["foreign_cpu"]) for r in results if r.get("foreign_cpu", "") != ""]
        out.append(f"CPU used by other processes during the rows (share of both cores): median "
                   f"{100 * sorted(fc)[len(fc) // 2]:.0f}%, max {100 * max(fc):.0f}%.")
        out.append("")
    disturbed = [r for r in results if r.get("disturbed") or r.get("other_pgbench_during")]
    if disturbed:
        out.append("**Other work on the machine (another pgbench, or other processes above the "
                   "--max-foreign-cpu share) during "
                   + ", ".join(f"{r['workload']} x {r['config']}"
                               + (f" ({100 * float(r['foreign_cpu']):.0f}% CPU)" if r.get("foreign_cpu", "") != "" else "")
                               for r in disturbed)
                   + ": those rows are less comparable.**")
        out.append("")
    by_w = {}
    for r in results:
        by_w.setdefault(r["workload"], []).append(r)
    if meta.get("mode") == "sweep":
        out += sweep_summary(by_w)
    else:
        out += summary(by_w)
    for wname, rows in by_w.items():
        r0 = rows[0]
        out.append(f"## {wname}: {r0['workload_desc']}, {r0['param']}")
        out.append("")
        out.append(f"{r0['clients']} clients, {r0['duration_s']} s per row, --max-tries={r0['max_tries']}.")
        out.append("")
        out.append("| configuration | goodput/s | attempts | abort rate | aborts by reason | committed by script "
                   "| avg ms | p95 ms | CC memory | check violations | client errors |")
        out.append("|---|---:|---:|---:|---|---|---:|---:|---:|---|---:|")
        for r in rows:
            chk = r["check_violations"]
            chk_s = "n/a" if chk == "" else (str(chk) if chk is not None else "ERROR")
            out.append(f"| {r['config']} | {r['goodput_tps']:.0f} | {r['attempts']} | "
                       f"{100 * r['abort_rate']:.1f}% | {abort_reasons(r)} | {per_script(r)} | {r['lat_avg_ms']:.1f} | "
                       f"{r['lat_p95_ms']:.1f} | {human_bytes(r['cc_memory_bytes'])} | {chk_s} | "
                       f"{r['client_errors']} |")
        out.append("")
        out += logged_abort_tables(rows)
        out += report_tables(rows)
        for r in rows:
            pinned, leaks = r.get("fps_pinned") or 0, r.get("fps_lock_leaks") or 0
            if pinned or leaks:
                out.append(f"**{r['config']}: fpsketch_stats after the run shows pinned = {pinned}, "
                           f"lock_leaks = {leaks} (both must be 0).**")
                out.append("")
        g = {r["config"]: r["goodput_tps"] for r in rows}
        fps = [r for r in rows if r["am"] == "fpsketch"]
        if fps and any(k.startswith("heap") for k in g):
            out.append("| fpsketch configuration | / heap SERIALIZABLE | / heap READ COMMITTED | "
                       "/ heap REPEATABLE READ |")
            out.append("|---|---:|---:|---:|")
            for r in fps:
                out.append(f"| {r['config']} | {ratio(r['goodput_tps'], g.get('heap SERIALIZABLE', 0))} | "
                           f"{ratio(r['goodput_tps'], g.get('heap READ COMMITTED', 0))} | "
                           f"{ratio(r['goodput_tps'], g.get('heap REPEATABLE READ', 0))} |")
            out.append("")
            for p in sorted({r["protocol"] for r in fps}):
                fs = g.get(f"fpsketch {p} focus_sketch")
                ex = g.get(f"fpsketch {p} exact")
                if fs is not None and ex:
                    out.append(f"{p}: focus_sketch / exact = {ratio(fs, ex)}")
            out.append("")
    return "\n".join(out) + "\n"


def logged_abort_tables(rows):
    """Aborted attempts by transaction type, failing statement and reason,
    from the server log (the top ten per configuration)."""
    out = []
    have = [r for r in rows if r.get("aborts_logged") not in (None, "", "[]")]
    if not have:
        return out
    out.append("Aborted attempts by transaction, the statement that failed (COMMIT: at validation) "
               "and reason, from the server log (top 10 per configuration; all in raw/*_aborts.txt):")
    out.append("")
    out.append("| configuration | transaction | statement | reason | relation | count |")
    out.append("|---|---|---|---|---|---:|")
    for r in have:
        for n, script, stmt, reason, rel in json.loads(r["aborts_logged"])[:10]:
            stmt_md = stmt.replace("|", "\\|")
            out.append(f"| {r['config']} | {script} | `{stmt_md}` | {reason} | {rel} | {n} |")
    out.append("")
    return out


def report_tables(rows):
    """The report client's and the long reader's results, when the workload had them."""
    out = []
    if any(r.get("report_begin") for r in rows):
        out.append("The report (tpcc/report.sql, one extra client, retried until it commits): "
                   "inconsistent = reports whose statements disagreed (a Payment seen by one and "
                   "not by another).")
        out.append("")
        out.append("| configuration | report begins with | reports committed | per minute | retries (40001) "
                   "| gave up | inconsistent | p50 s | TPC-C goodput/s |")
        out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            if r.get("report_begin"):
                out.append(f"| {r['config']} | `{r['report_begin']}` | {r['report_committed']} | "
                           f"{r['report_per_min']} | {r['report_retries']} | {r['report_failed']} | "
                           f"{r['report_inconsistent']} | {float(r['report_lat_p50_ms']) / 1000:.2f} | "
                           f"{r['goodput_tps']:.0f} |")
        out.append("")
    if any(r.get("reader_begin") or r.get("reader_result") for r in rows):
        out.append("The long reader: TPC-C goodput (committed/s) before it, while it holds its "
                   "snapshot, and after; stable = both of its reads agreed.")
        out.append("")
        out.append("| configuration | reader begins with | reader | stable | before | during | after "
                   "| during / before |")
        out.append("|---|---|---|---|---:|---:|---:|---:|")
        for r in rows:
            out.append(f"| {r['config']} | `{r.get('reader_begin', '')}` | {r.get('reader_result', '')} | "
                       f"{r.get('reader_stable', '')} | {r.get('goodput_before', '')} | "
                       f"{r.get('goodput_during', '')} | {r.get('goodput_after', '')} | "
                       f"{ratio(float(r.get('goodput_during') or 0), float(r.get('goodput_before') or 0))} |")
        out.append("")
    return out


def summary(by_w):
    """One line per workload: goodput of every configuration and the ratios."""
    configs = list(dict.fromkeys(r["config"] for rows in by_w.values() for r in rows))
    short = {c: c.replace("fpsketch ", "").replace("heap ", "").replace("READ COMMITTED", "RC")
             .replace("REPEATABLE READ", "RR").replace("SERIALIZABLE", "SER") for c in configs}
    fs_cfgs = [c for c in configs if c.endswith("focus_sketch")]
    r0 = next(iter(by_w.values()))[0]
    out = [f"## Summary: goodput (committed transactions/s), {r0['clients']} clients, "
           f"{r0['duration_s']} s per row", ""]
    hdr = ["workload"] + [short[c] for c in configs]
    ratio_names = []
    for fs in fs_cfgs:
        p = fs.split()[1]
        pre = "" if len(fs_cfgs) == 1 else p + " "
        ratio_names += [(fs, "heap SERIALIZABLE", f"{pre}focus_sketch / SER"),
                        (fs, "heap READ COMMITTED", f"{pre}focus_sketch / RC"),
                        (fs, f"fpsketch {p} exact", f"{pre}focus_sketch / exact")]
    hdr += [n for _, _, n in ratio_names] + ["violations", "client errors"]
    out.append("| " + " | ".join(hdr) + " |")
    out.append("|---|" + "---:|" * (len(hdr) - 1))
    for wname, rows in by_w.items():
        g = {r["config"]: r["goodput_tps"] for r in rows}
        line = [f"{wname} ({rows[0]['param']})"]
        line += [f"{g[c]:.0f}" if c in g else "" for c in configs]
        line += [ratio(g[a], g[b]) if a in g and b in g else "" for a, b, _ in ratio_names]
        viol = [r["check_violations"] for r in rows if r["check_violations"] != ""]
        line.append(str(sum(v for v in viol if v is not None)) if viol else "n/a")
        line.append(str(sum(r["client_errors"] for r in rows)))
        out.append("| " + " | ".join(line) + " |")
    out.append("")
    out.append("Abort rates (%):")
    out.append("")
    out.append("| workload | " + " | ".join(short[c] for c in configs) + " |")
    out.append("|---|" + "---:|" * len(configs))
    for wname, rows in by_w.items():
        a = {r["config"]: r["abort_rate"] for r in rows}
        out.append(f"| {wname} | " + " | ".join(f"{100 * a[c]:.1f}" if c in a else "" for c in configs) + " |")
    out.append("")
    # every other protocol against TicToc, variant by variant
    pairs = [(c, "fpsketch tictoc " + c.split(" ", 2)[2]) for c in configs
             if c.startswith("fpsketch ") and not c.startswith("fpsketch tictoc ")
             and "fpsketch tictoc " + c.split(" ", 2)[2] in configs]
    if pairs:
        out.append("Protocols: goodput of each configuration over TicToc with the same variant "
                   "(abort rates in parentheses):")
        out.append("")
        out.append("| workload | " + " | ".join(f"{short[a]} / {short[b]}" for a, b in pairs) + " |")
        out.append("|---|" + "---:|" * len(pairs))
        for wname, rows in by_w.items():
            g = {r["config"]: r for r in rows}
            cells = []
            for a, b in pairs:
                if a in g and b in g:
                    cells.append(f"{ratio(g[a]['goodput_tps'], g[b]['goodput_tps'])} "
                                 f"({100 * g[a]['abort_rate']:.0f}% vs {100 * g[b]['abort_rate']:.0f}%)")
                else:
                    cells.append("")
            out.append(f"| {wname} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def sweep_summary(by_w):
    out = ["## Summary: goodput and abort rate vs sketch size", ""]
    for wname, rows in by_w.items():
        out.append(f"{wname} ({rows[0]['param']}):")
        out.append("")
        out.append("| variant | sketch bytes | CC memory | goodput/s | / exact | abort rate | "
                   "sketch cells used | entries hwm |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        ex = [r for r in rows if r["variant"] == "exact"]
        exg = ex[0]["goodput_tps"] if ex else 0
        for r in sorted(rows, key=lambda r: (r["variant"] == "exact", r["fps_sketch_bytes"])):
            out.append(f"| {r['variant']} | {r['fps_sketch_bytes']} | {human_bytes(r['cc_memory_bytes'])} | "
                       f"{r['goodput_tps']:.0f} | {ratio(r['goodput_tps'], exg)} | "
                       f"{100 * r['abort_rate']:.1f}% | {r.get('fps_sketch_cells_used', '')} | "
                       f"{r.get('fps_entries_hwm', '')} |")
        out.append("")
    return out


def print_table(results):
    cw = max([30] + [len(r["config"]) for r in results])
    hdr = f"{'workload':<18} {'configuration':<{cw}} {'goodput/s':>10} {'abort%':>7} {'avg ms':>8} " \
          f"{'p95 ms':>8} {'CC mem':>10} {'chk':>4} {'err':>4}"
    log(hdr)
    log("-" * len(hdr))
    for r in results:
        chk = r["check_violations"]
        log(f"{r['workload']:<18} {r['config']:<{cw}} {r['goodput_tps']:>10.0f} {100 * r['abort_rate']:>6.1f}% "
            f"{r['lat_avg_ms']:>8.1f} {r['lat_p95_ms']:>8.1f} {human_bytes(r['cc_memory_bytes']):>10} "
            f"{('-' if chk == '' else chk):>4} {r['client_errors']:>4}")


# ---------------------------------------------------------------- plots ----

def plots(results, outdir, sweep):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("   (no matplotlib: install python3-matplotlib and run /usr/bin/python3 for plots)")
        return []
    made = []
    if sweep:
        by_w = {}
        for r in results:
            by_w.setdefault(r["workload"], []).append(r)
        fig, axes = plt.subplots(len(by_w), 2, figsize=(12, 3.6 * len(by_w)), squeeze=False)
        for (wname, rows), ax2 in zip(by_w.items(), axes):
            pts = sorted((r["fps_sketch_bytes"], r) for r in rows if r["variant"] == "focus_sketch")
            xs = [p[0] for p in pts]
            ax2[0].plot(xs, [p[1]["goodput_tps"] for p in pts], "o-", label="focus_sketch")
            ax2[1].plot(xs, [100 * p[1]["abort_rate"] for p in pts], "o-", label="focus_sketch")
            for r in rows:
                if r["variant"] == "exact":
                    ax2[0].axhline(r["goodput_tps"], ls="--", color="gray", label="exact")
                    ax2[1].axhline(100 * r["abort_rate"], ls="--", color="gray", label="exact")
            for ax, yl in zip(ax2, ("goodput (committed tx/s)", "abort rate (%)")):
                ax.set_xscale("log", base=2)
                ax.set_xticks(xs)
                ax.set_xticklabels([f"{x // 1024}K" if x < 1 << 20 else f"{x >> 20}M" for x in xs],
                                   fontsize=7)
                ax.minorticks_off()
                ax.set_xlabel("sketch bytes (fpsketch.sketch_size)")
                ax.set_ylabel(yl)
                ax.set_title(f"{wname} ({rows[0]['param']})", fontsize=9)
                ax.grid(True, alpha=0.3)
                ax.set_ylim(bottom=0)
                ax.legend(fontsize=7)
        fig.suptitle(f"fpsketch TicToc: sketch size sweep, {rows[0]['clients']} clients, "
                     f"{rows[0]['duration_s']} s per point (dashed: exact)")
        fig.tight_layout()
        path = os.path.join(outdir, "sweep.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return [path]
    groups = {"tpcc": [r for r in results if r["workload"].startswith("tpcc")],
              "ycsb": [r for r in results if r["workload"].startswith("ycsb")]}
    for gname, rows in groups.items():
        if not rows:
            continue
        wnames = list(dict.fromkeys(r["workload"] for r in rows))
        configs = list(dict.fromkeys(r["config"] for r in rows))
        val = {(r["workload"], r["config"]): r for r in rows}
        fig, axes = plt.subplots(2, 1, figsize=(max(7, 1.6 * len(wnames) + 3), 8))
        width = 0.8 / len(configs)
        for i, c in enumerate(configs):
            xs = [j + (i - (len(configs) - 1) / 2) * width for j in range(len(wnames))]
            g = [val[(wn, c)]["goodput_tps"] if (wn, c) in val else 0 for wn in wnames]
            a = [100 * val[(wn, c)]["abort_rate"] if (wn, c) in val else 0 for wn in wnames]
            axes[0].bar(xs, g, width, label=c)
            axes[1].bar(xs, a, width, label=c)
        for ax, yl in zip(axes, ("goodput (committed tx/s)", "abort rate (%)")):
            ax.set_xticks(range(len(wnames)))
            ax.set_xticklabels(wnames, rotation=15, fontsize=8)
            ax.set_ylabel(yl)
            ax.grid(True, axis="y", alpha=0.3)
        axes[0].legend(fontsize=7, ncol=2)
        r0 = rows[0]
        fig.suptitle(f"{'TPC-C-like' if gname == 'tpcc' else 'YCSB-like'}: {r0['clients']} clients, "
                     f"{r0['duration_s']} s per row")
        fig.tight_layout()
        path = os.path.join(outdir, f"{gname}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(path)
    tl_path = os.path.join(outdir, "timeline.csv")
    if os.path.exists(tl_path):
        series = {}
        with open(tl_path) as f:
            for rec in csv.DictReader(f):
                series.setdefault((rec["workload"], rec["config"]), {})[int(rec["second"])] = \
                    int(rec["committed"])
        for wname in dict.fromkeys(k[0] for k in series):
            fig, ax = plt.subplots(figsize=(11, 5))
            for (wn, c), pts in series.items():
                if wn != wname:
                    continue
                xs = sorted(pts)
                ys = [pts[x] for x in xs]
                k = 5       # 5-second moving average: pgbench's per-second counts are noisy
                sm = [sum(ys[max(0, i - k + 1):i + 1]) / len(ys[max(0, i - k + 1):i + 1]) for i in range(len(ys))]
                ax.plot(xs, sm, label=c)
            r0 = next(r for r in results if r["workload"] == wname)
            if r0.get("reader_start_s", "") != "":
                st = float(r0["reader_start_s"])
                hold = int(re.search(r"reader(\d+)", wname).group(1))
                ax.axvspan(st, st + hold, color="gray", alpha=0.15, label="reader holds its snapshot")
            ax.set_xlabel("seconds")
            ax.set_ylabel("committed transactions/s (5 s moving average)")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
            ax.set_title(f"{wname}: {r0['workload_desc']}, {r0['param']}, {r0['clients']} clients", fontsize=9)
            fig.tight_layout()
            path = os.path.join(outdir, f"{wname}_timeline.png")
            fig.savefig(path, dpi=110)
            plt.close(fig)
            made.append(path)
    # TPC-C goodput vs warehouses, when several warehouse counts ran
    tp = [r for r in results if re.fullmatch(r"tpcc-w\d+", r["workload"])]
    if len({r["warehouses"] for r in tp}) > 1:
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        for c in dict.fromkeys(r["config"] for r in tp):
            pts = sorted((int(r["warehouses"]), r) for r in tp if r["config"] == c)
            axes[0].plot([p[0] for p in pts], [p[1]["goodput_tps"] for p in pts], "o-", label=c)
            axes[1].plot([p[0] for p in pts], [100 * p[1]["abort_rate"] for p in pts], "o-", label=c)
        for ax, yl in zip(axes, ("goodput (committed tx/s)", "abort rate (%)")):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("warehouses")
            ax.set_ylabel(yl)
            ax.grid(True, alpha=0.3)
        axes[0].legend(fontsize=7)
        fig.suptitle("TPC-C-like New-Order + Payment vs warehouses")
        fig.tight_layout()
        path = os.path.join(outdir, "tpcc_warehouses.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(path)
    return made


# ----------------------------------------------------------------- main ----

def git_describe(pgbin):
    """The fpsketch build measured: bench/snapshot_install.sh records it next
    to a private install; else this checkout (dirty = changes outside bench/,
    scripts/ and the READMEs, i.e. changes that can affect the build)."""
    stamp = os.path.join(pgbin, "..", "..", "..", "..", "..", "fpsketch-build.txt")   # DIR/usr/lib/postgresql/15/bin
    if os.path.exists(stamp):
        return open(stamp).read().strip()
    try:
        h = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no",
                                "--", ".", ":!bench", ":!scripts", ":!*.md"],
                               capture_output=True, text=True).stdout.strip()
        return h + ("+dirty" if dirty else "")
    except OSError:
        return "?"


def replot(outdir):
    """Rebuild results.md and the plots from results.csv and meta.json."""
    def conv(v):
        for t in (int, float):
            try:
                return t(v)
            except ValueError:
                pass
        return v
    with open(os.path.join(outdir, "results.csv")) as f:
        results = [{k: (conv(v) if k not in ("check_violations",) or v != "" else "")
                    for k, v in r.items()} for r in csv.DictReader(f)]
    for r in results:
        if r["check_violations"] == "" and r["check_detail"].startswith("check failed"):
            r["check_violations"] = None
    with open(os.path.join(outdir, "meta.json")) as f:
        meta = json.load(f)
    meta.setdefault("mode", "custom")
    meta.setdefault("title", "fpsketch benchmark")
    meta.setdefault("fpsketch_so", "?")
    for r in results:
        r.setdefault("loadavg_before", 0.0)
        r.setdefault("loadavg_after", 0.0)
    with open(os.path.join(outdir, "results.md"), "w") as f:
        f.write(markdown(results, meta, meta["title"]))
    made = plots(results, outdir, meta.get("mode") == "sweep")
    print_table(results)
    log("== rewrote " + os.path.join(outdir, "results.md") + "".join(", " + p for p in made))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="TPC-C 1 warehouse + YCSB 8r8w 0.99, 10 s per row")
    mode.add_argument("--full", action="store_true", help="TPC-C 1,2,4,8 warehouses + 7 YCSB workloads, 60 s")
    mode.add_argument("--sweep", action="store_true", help="sketch size 1 KiB .. 1 MiB vs exact, 30 s")
    ap.add_argument("--workloads", help="comma-separated: tpcc-w<N>[-full], ycsb-<r8w8|r15w1|mixed|long>-t<theta>")
    ap.add_argument("--rows", help="only configurations whose label contains one of these (comma-separated)")
    ap.add_argument("--extra-row", action="append", metavar="'PROTOCOL VARIANT name=value ...'",
                    help="add an fpsketch row with extra settings in its server config, e.g. "
                         "'tictoc focus_sketch prefix_predicates=off' (repeatable; not filtered by --rows)")
    ap.add_argument("--duration", type=int, help="seconds per row (quick 10, full 60, sweep 30)")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--jobs", type=int, default=2, help="pgbench threads (-j)")
    ap.add_argument("--max-tries", type=int, default=10)
    ap.add_argument("--records", type=int, default=1000000, help="YCSB keys")
    ap.add_argument("--sweep-sizes", default=",".join(map(str, SWEEP_SIZES_KB)), help="kB, comma-separated")
    ap.add_argument("--exact-max-entries", type=int, default=4194304,
                    help="fpsketch.max_entries for the exact variant (it never evicts); 0 = server default")
    ap.add_argument("--shared-buffers", default="2GB")
    ap.add_argument("--synchronous-commit", default="on")
    ap.add_argument("--deadlock-timeout", default="1s")
    ap.add_argument("--max-pred-locks", type=int, default=64, help="max_pred_locks_per_transaction")
    ap.add_argument("--set", action="append", help="extra postgresql.conf line for every row (repeatable)")
    ap.add_argument("--random-seed", default="5381", help="pgbench --random-seed")
    ap.add_argument("--progress", type=int, default=0, help="pgbench -P seconds (default: duration/4)")
    ap.add_argument("--port", type=int, default=int(os.environ.get("FPS_PGPORT", 55445)))
    ap.add_argument("--pgdata", default=os.environ.get("FPS_PGDATA", "/tmp/fpsketch-bench-pgdata"))
    ap.add_argument("--pgbin", default=os.environ.get("PGBIN", "/usr/lib/postgresql/15/bin"),
                    help="PostgreSQL binaries (see bench/snapshot_install.sh)")
    ap.add_argument("--wait-quiet", type=int, default=0, metavar="SECONDS",
                    help="before every row wait up to SECONDS until no other pgbench runs and the CPUs are "
                         "mostly idle (shared machines)")
    ap.add_argument("--rerun-disturbed", type=int, default=0, metavar="N",
                    help="run a row again (up to N times) when another pgbench ran during it")
    ap.add_argument("--max-foreign-cpu", type=float, default=0.15, metavar="SHARE",
                    help="a row is disturbed when other processes used more than this share of all CPUs "
                         "during it (or another pgbench ran)")
    ap.add_argument("--reuse", action="store_true", help="reuse the cluster and loaded data sets if present")
    ap.add_argument("--keep", action="store_true", help="leave the cluster running at the end")
    ap.add_argument("--keep-logs", action="store_true", help="keep pgbench per-transaction logs")
    ap.add_argument("--out", help="output directory (default bench/results/<mode>)")
    ap.add_argument("--replot", metavar="DIR", help="only rebuild results.md and plots from DIR/results.csv")
    args = ap.parse_args()
    if args.replot:
        return replot(args.replot)

    mode_name = "full" if args.full else "sweep" if args.sweep else "quick" if args.quick else "custom"
    if args.workloads:
        wl_names = args.workloads.split(",")
    else:
        wl_names = {"full": FULL_WORKLOADS, "sweep": SWEEP_WORKLOADS}.get(mode_name, QUICK_WORKLOADS)
        if mode_name == "custom":
            mode_name = "quick"
    args.duration = args.duration or {"full": 60, "sweep": 30}.get(mode_name, 10)
    args.progress = args.progress or max(1, args.duration // 4)
    workloads = [Workload(n, args.records) for n in wl_names]
    if any(w.two_pc for w in workloads):
        # one prepared transaction per client at a time; every row of the run
        # gets the setting, so that the rows compared share it
        args.set = (args.set or []) + [f"max_prepared_transactions = {args.clients + 4}"]
    outdir = args.out or os.path.join(HERE, "results", mode_name)
    os.makedirs(outdir, exist_ok=True)
    rawdir = os.path.join(outdir, "raw")
    shutil.rmtree(rawdir, ignore_errors=True)
    os.makedirs(rawdir)
    if os.path.exists(os.path.join(outdir, "timeline.csv")):
        os.remove(os.path.join(outdir, "timeline.csv"))
    workdir = tempfile.mkdtemp(prefix="fpsketch-bench-")
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    t_start = time.time()

    def terminate(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    # SIGTERM (and SIGINT, which background shells ignore) stop the cluster through `finally`
    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGINT, terminate)

    cl = Cluster(args)
    log(f"== cluster: {args.pgdata}, port {args.port}")
    cl.up(args.reuse)
    try:
        protocols = cl.enumvals("fpsketch.protocol")
        variants = cl.enumvals("fpsketch.variant")
        if args.sweep:
            sizes = [int(s) for s in args.sweep_sizes.split(",")]
            rows = [Row(f"fpsketch tictoc focus_sketch {s}kB", "fpsketch", "read committed",
                        {"fpsketch.protocol": "tictoc", "fpsketch.variant": "focus_sketch",
                         "fpsketch.sketch_size": f"{s}kB"}) for s in sizes]
            rows += [r for r in fps_rows(["tictoc"], ["exact"], args.exact_max_entries)]
        else:
            rows = heap_rows() + fps_rows(protocols, variants, args.exact_max_entries)
        if args.rows:
            keep = args.rows.split(",")
            rows = [r for r in rows if any(k in r.label for k in keep)]
        for spec in args.extra_row or []:
            er = extra_row(spec, protocols, variants, args.exact_max_entries)
            # right after the row it modifies, if that one runs
            same = [i for i, r in enumerate(rows) if r.fps.get("fpsketch.protocol") == er.fps["fpsketch.protocol"]
                    and r.fps.get("fpsketch.variant") == er.fps["fpsketch.variant"]]
            rows.insert(same[-1] + 1 if same else len(rows), er)
        ams = sorted({r.am for r in rows})
        log(f"== {len(workloads)} workloads x {len(rows)} configurations "
            f"({', '.join(r.label for r in rows)})")
        s = cl.settings()
        pretty = {k: (s[k] if not s.get(k + ".unit") else
                      human_bytes(unit_bytes(s[k], s[k + ".unit"])) if s[k + ".unit"] in ("8kB", "kB", "MB")
                      and k != "fpsketch.sketch_size" else s[k] + s[k + ".unit"])
                  for k in s if not k.endswith(".unit")}
        s["pretty"] = pretty
        s["ssi_predlock_bytes"], s["ssi_total_bytes"] = ssi_memory(s)
        log(f"== SSI shared memory for these settings: predicate-lock tables "
            f"{human_bytes(s['ssi_predlock_bytes'])}, all of SSI {human_bytes(s['ssi_total_bytes'])}")

        if args.wait_quiet:
            wait_quiet(args.wait_quiet)
        log("== loading data sets (once per access method)")
        ensure_datasets(cl, workloads, ams, args.reuse)

        results = []
        total = sum(1 for w in workloads for row in rows if row_applies(row, w))
        idx = 0
        t_runs = time.time()
        csv_path = os.path.join(outdir, "results.csv")
        for w in workloads:
            for row in rows:
                if not row_applies(row, w):
                    continue
                idx += 1
                eta = ""
                if idx > 1:
                    per = (time.time() - t_runs) / (idx - 1)
                    eta = f" (ETA {datetime.timedelta(seconds=int(per * (total - idx + 1)))})"
                r = run_row(cl, args, w, row, s, workdir, rawdir, idx, total, eta)
                for _ in range(args.rerun_disturbed):
                    if not r.get("disturbed"):
                        break
                    log("      !! rerunning the row: other work on the machine during it")
                    r = run_row(cl, args, w, row, s, workdir, rawdir, idx, total, eta)
                results.append(r)
                chk = r["check_violations"]
                log(f"      => goodput {r['goodput_tps']:.0f}/s, abort rate {100 * r['abort_rate']:.1f}%, "
                    f"avg {r['lat_avg_ms']:.1f} ms, p95 {r['lat_p95_ms']:.1f} ms, client errors "
                    f"{r['client_errors']}, checks: {r['check_detail']}")
                if r["client_errors"] or (chk not in ("", 0)):
                    log("      !! client errors or consistency violations: see " + rawdir)
                if r.get("fps_leaks"):
                    log(f"      !! fpsketch_stats after the run: pinned {r.get('fps_pinned')}, "
                        f"lock_leaks {r.get('fps_lock_leaks')} (both must be 0)")
                write_csv(csv_path, results)

        meta = {
            "started": started, "finished": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
            "host": f"{os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') >> 30} GiB",
            "git": git_describe(args.pgbin), "fpsketch_so": ", ".join(sorted({r["fpsketch_so_md5"] for r in results})),
            "server_version": "PostgreSQL " + pretty["server_version"],
            "settings": [
                ("clients", args.clients), ("pgbench -j", args.jobs), ("duration", f"{args.duration} s"),
                ("max-tries", args.max_tries), ("shared_buffers", pretty["shared_buffers"]),
                ("synchronous_commit", pretty["synchronous_commit"]), ("fsync", pretty["fsync"]),
                ("deadlock_timeout", pretty["deadlock_timeout"]),
                ("max_pred_locks_per_transaction", pretty["max_pred_locks_per_transaction"]),
                ("max_connections", pretty["max_connections"]),
                ("fpsketch.sketch_size", pretty["fpsketch.sketch_size"] if not args.sweep else "swept"),
                ("fpsketch.max_entries", f"variant default; exact {args.exact_max_entries or 'default'}"),
                ("YCSB keys", args.records), ("pgbench --random-seed", args.random_seed),
            ] + [(k, pretty[k]) for k in FPS_SWITCHES if k in pretty],
        }
        meta["mode"] = mode_name
        meta["title"] = {"custom": "fpsketch benchmark: selected workloads",
                         "quick": "fpsketch benchmark: quick mode", "full": "fpsketch benchmark: full mode",
                         "sweep": "fpsketch benchmark: sketch-size sweep"}[mode_name]
        md = markdown(results, meta, meta["title"])
        with open(os.path.join(outdir, "results.md"), "w") as f:
            f.write(md)
        with open(os.path.join(outdir, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        made = plots(results, outdir, args.sweep)
        log("")
        print_table(results)
        log("")
        log(f"== {len(results)} rows in {datetime.timedelta(seconds=int(time.time() - t_start))}: "
            f"{csv_path}, {os.path.join(outdir, 'results.md')}" + "".join(", " + p for p in made))
        libs = sorted({r["fpsketch_so_md5"] for r in results})
        if len(libs) > 1:
            log(f"!! fpsketch.so changed during the run ({', '.join(libs)}): rows are not comparable")
        leaky = [r for r in results if r.get("fps_leaks")]
        if leaky:
            log(f"!! {len(leaky)} fpsketch rows left pinned keys or lock bits: "
                + ", ".join(f"{r['workload']} x {r['config']}" for r in leaky))
        bad = [r for r in results if r["client_errors"] or r["check_violations"] not in ("", 0)]
        if bad:
            log(f"!! {len(bad)} rows with client errors or consistency violations")
        return 1 if bad else 0
    finally:
        if not args.keep:
            cl.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
