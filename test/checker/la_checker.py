#!/usr/bin/python3
"""
Randomized list-append serializability checker for fpsketch (Elle-style).
With --workload predicate it runs the predicate workload of predicate.py
instead (inserts, deletes, key moves and predicate reads: phantoms); the
rest of this docstring is about list-append.

Workload: table `la (k int primary key, v text not null default '')` with a
fixed, pre-populated key set (no inserts, so phantoms play no part), USING
fpsketch or USING heap.  Concurrent clients, each with its own connection at
READ COMMITTED with autocommit off, run random transactions of 2-6 micro-ops
on skewed keys, drawn by --mix (default plain=76,sp=8,pick=10,join=6):

    plain: read k (--read-frac) or append k e
        SELECT v FROM la WHERE k = $1
        UPDATE la SET v = v || ',' || $e WHERE k = $1
    sp: a read of k inside a subtransaction that is rolled back, half the
        time with an append after the read that is rolled back with it: a
        client SAVEPOINT / ROLLBACK TO SAVEPOINT (half of these catch a
        40001/40P01 inside the savepoint and go on), a PL/pgSQL function, or
        a DO block, whose EXCEPTION handler keeps what the block read.  The
        value read counts (the client saw it); the rolled-back element must
        never be seen.
    pick: SELECT k, v FROM la WHERE k = ANY($keys)
              ORDER BY <number of elements of v>, k LIMIT 1 FOR UPDATE
        over 2-3 keys, then an append to the key it returned and reads of
        the other keys.  The returned list is a read; the order is a bound
        on the others (Analysis.pick_bounds).
    join: SELECT a.v, b.k, b.v FROM la a JOIN la b ON b.k = <partner of a>
              WHERE a.k = $1 FOR UPDATE
        where the partner is derived from the number of elements of a.v
        (join_partner), then an append to a or b.  Reads of both keys; no
        row (the partner always exists) is a bad result.

Every appended element is globally unique, so each key's value is the whole
list of its committed appends: the version order of every key is known.  After
the run the final value of every key is read, which gives the complete version
order; every observed list must be a prefix of it.  (To keep memory linear, a
read is checked when it happens against the longest value observed so far for
its key, and only its length is kept; see Chains.)

Outcomes: COMMIT returned = committed; 40001/40P01 anywhere = aborted; a
broken connection during COMMIT = unknown, resolved from the final state
(committed if any of its appends is there); any other error = failure.

From the committed transactions the checker builds the dependency graph (ww:
append order, wr: a read whose last element another transaction appended, or
the append a pick's bound needs, rw: a read followed in the version order by
another transaction's append) and
looks for cycles with Tarjan's SCC algorithm:

    G0   cycle of ww edges only
    G1c  cycle of ww/wr edges containing a wr edge
    G2   cycle containing an rw edge (G-single when it has exactly one)

and for the non-cycle anomalies:

    G1a               a committed read saw an element appended by an aborted
                      transaction (or an aborted append is in the final state)
    G1b               a committed read saw an intermediate state of another
                      transaction (not that transaction's last append to it)
    internal          a read after the transaction's own appends to the key
                      does not end with exactly those appends, or a read that
                      shows fewer elements of other transactions than an
                      earlier read of the key in the same transaction
    incompatible-order a read that is not a prefix of the key's final list,
                      a duplicate or unknown element
    lost-append       a committed append missing from the final state
    bad-result        a committed query result no state can give: a
                      self-join or pick without a row, a pick whose bound a
                      key never reached
    errors            any SQL error other than 40001/40P01 (including
                      statement timeouts), a wrong row count
    session           (only with --session-order) a cycle through the order
                      in which each client ran its own committed transactions:
                      stronger than serializability, which fpsketch does not
                      promise

Exit code: 0 no anomaly, 1 some check failed, 2 setup/unexpected error.
The last line is always `checker: N passed, M failed`.

With --expect-anomaly (positive control, e.g. heap at READ COMMITTED) the
result is inverted: the run passes when at least one anomaly class fires and
no errors occurred.
"""

import argparse
import collections
import json
import os
import random
import sys
import threading
import time
import traceback

try:
    import psycopg2
    import psycopg2.extensions
except ImportError:  # pragma: no cover
    sys.stderr.write("la_checker: psycopg2 missing: apt-get install -y python3-psycopg2 "
                     "and run with /usr/bin/python3\n")
    print("checker: 0 passed, 1 failed")
    sys.exit(2)

ABORT_CODES = ("40001", "40P01")
CLASSES = ["G0", "G1a", "G1b", "G1c", "G2", "internal",
           "incompatible-order", "lost-append", "bad-result", "ro-abort", "errors"]
# failures that are not anomalies of the history (a positive control must
# show an anomaly, and none of these)
NON_ANOMALY_CLASSES = ("ro-abort", "errors")
ANOMALY_CLASSES = [c for c in CLASSES if c not in NON_ANOMALY_CLASSES]
# with --session-order: a cycle through a client's own transaction order
SESSION_CLASS = "session"


class SetupError(Exception):
    pass


# --------------------------------------------------------------------------
# history
# --------------------------------------------------------------------------

class Txn(object):
    __slots__ = ("id", "client", "ops", "status", "sqlstate", "error",
                 "t_start", "t_end", "ro", "ro_info", "tpc")

    def __init__(self, tid, client):
        self.id = tid
        self.client = client
        # ops (reads are recorded once they returned):
        #   ["a", key, element]                 append
        #   ["x", key, element]                 append rolled back with its savepoint
        #   ["r", key, n, nbase, flag, raw(, where)]  read (Chains.observe); where:
        #                                       "sp", "fn", "do" inside a rolled-back
        #                                       subtransaction
        #   ["p", key, n, nbase, flag, raw, keys]  pick: the read of key, the
        #                                       smallest list of keys (Analysis)
        #   ["e", what, ...]                    a result no state can give
        # A long read-only transaction (ro set) records its reads as
        # ["r", key, n, nbase, flag, raw, "s<i>"]: read by its statement i.
        self.ops = []
        self.status = None      # 'committed', 'aborted', 'unknown', 'error'
        self.sqlstate = None
        self.error = None
        self.t_start = None
        self.t_end = None
        self.ro = None          # read-only transaction: how it was begun (RO_VARIANTS)
        self.ro_info = None     # read-only: {"scan", "stmts", "rows"}
        self.tpc = None         # two-phase commit: [mode, gid] (TPC_MODES)

    def to_json(self):
        d = {"id": self.id, "client": self.client, "ops": self.ops,
             "status": self.status, "sqlstate": self.sqlstate,
             "error": self.error, "t_start": self.t_start, "t_end": self.t_end}
        if self.ro:
            d["ro"] = self.ro
            d["ro_info"] = self.ro_info
        if self.tpc:
            d["tpc"] = self.tpc
        return d

    def describe(self, chains=None, focus=None, limit=24):
        """One line; a transaction of more than limit ops (a long read-only
        one) shows only the ops on the keys in focus (or its first ops)."""
        parts = []
        own = collections.defaultdict(list)
        ops = self.ops
        hidden = 0
        if len(ops) > limit:
            if focus:
                ops = [op for op in ops if op[0] == "e" or op[1] in focus]
            ops = ops[:limit]
            hidden = len(self.ops) - len(ops)
        for op in ops:
            if op[0] == "a":
                parts.append("a(%d,%d)" % (op[1], op[2]))
                own[op[1]].append(op[2])
                continue
            if op[0] == "x":
                parts.append("rolled-back-a(%d,%d)" % (op[1], op[2]))
                continue
            if op[0] == "e":
                parts.append("%s-result%s" % (op[1], json.dumps(op[2:]).replace(" ", "")))
                continue
            key, n, nbase, flag, raw = op[1:6]
            if raw is not None:
                val = fmt_list(parse_list(raw))
            elif chains is not None:
                val = fmt_list(chains[key][:nbase] + own[key][len(own[key]) - (n - nbase):])
            else:
                val = "#%d" % n
            if op[0] == "p":
                name = "pick%s->r" % json.dumps(op[6]).replace(" ", "")
            else:
                name = "r" if len(op) < 7 else op[6] + "-r"
            parts.append("%s(%d)=%s%s" % (name, key, val, " !" + flag if flag else ""))
        if hidden:
            parts.append("(+%d ops on other keys)" % hidden if focus else "(+%d ops)" % hidden)
        st = self.status
        if self.sqlstate:
            st += " " + self.sqlstate
        if self.ro:
            info = self.ro_info or {}
            st += ", read-only %s, %s scan, %s statements, %s rows" % (
                self.ro, info.get("scan", "?"), info.get("stmts", "?"), info.get("rows", "?"))
        if self.tpc:
            st += ", 2PC %s %s" % (self.tpc[0], self.tpc[1])
        return "T%d [client %d, %s, %.4f..%.4f] %s" % (
            self.id, self.client, st, self.t_start or 0, self.t_end or 0,
            " ".join(parts))


def fmt_list(lst, maxlen=8):
    if lst is None:
        return "?"
    if len(lst) <= maxlen:
        return "[" + ",".join(str(x) for x in lst) + "]"
    return "[..%d..,%s]" % (len(lst) - maxlen + 2,
                            ",".join(str(x) for x in lst[-(maxlen - 2):]))


def parse_list(v):
    if v is None:
        return None
    return [int(x) for x in v.split(",") if x != ""]


def elems_str(elems):
    return "".join("," + str(e) for e in elems)


class Chains(object):
    """The longest committed-looking value observed per key, as the raw
    string.  Each read is checked against it when it happens, so a read is
    stored as its length only (histories stay O(1) per read instead of
    O(list length)).  A read's value is s = base + the reader's own appends
    to the key so far; base must be a prefix of the chain or extend it."""

    def __init__(self, keys):
        self.lock = threading.Lock()
        self.chain = {k: "" for k in keys}

    def observe(self, key, s, own):
        """Returns the read op fields [n, nbase, flag, raw]; flag is None,
        'internal' (s does not end with own) or 'incompatible' (base and the
        chain are not prefixes of one another); raw is s when flagged."""
        n = s.count(",")
        suffix = elems_str(own)
        if own and not s.endswith(suffix):
            return [n, n, "internal", s]
        base = s[:len(s) - len(suffix)]
        nbase = n - len(own)
        with self.lock:
            c = self.chain.get(key, "")
            if len(base) <= len(c):
                ok = c.startswith(base) and (len(base) == len(c) or c[len(base)] == ",")
            else:
                ok = base.startswith(c) and base[len(c)] == ","
                if ok:
                    self.chain[key] = base
        if not ok:
            return [n, nbase, "incompatible", s]
        return [n, nbase, None, None]


# --------------------------------------------------------------------------
# database
# --------------------------------------------------------------------------

def connect(args, autocommit=False):
    kw = {}
    for name in ("host", "port", "user", "dbname"):
        val = getattr(args, name)
        if val:
            kw[name] = val
    kw["application_name"] = "la_checker"
    # libpq takes the rest from PGHOST, PGPORT, PGUSER, PGDATABASE, ...
    conn = psycopg2.connect(**kw)
    conn.set_session(isolation_level=psycopg2.extensions.ISOLATION_LEVEL_READ_COMMITTED,
                     autocommit=autocommit)
    return conn


def session_setup(conn, args):
    old = conn.autocommit
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SET statement_timeout = %s", (str(args.statement_timeout_ms),))
    cur.execute("SET default_transaction_isolation = 'read committed'")
    # Heap deadlocks (two appends in opposite key order) otherwise cost 1 s.
    try:
        cur.execute("SET deadlock_timeout = %s", (str(args.deadlock_timeout_ms),))
    except psycopg2.Error:
        pass
    for s in args.set or []:
        name, _, value = s.partition("=")
        cur.execute("SELECT set_config(%s, %s, false)", (name.strip(), value.strip()))
    cur.close()
    conn.autocommit = old


def rollback_orphaned_prepared(cur):
    """Roll back the prepared transactions of checkers that are gone (gid
    fpsck_PID_..., PID no longer running): a checker killed between PREPARE
    and its resolution leaves one, whose locks would block DROP TABLE."""
    cur.execute("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'fpsck\\_%%' "
                "AND database = current_database()")
    for (gid,) in cur.fetchall():
        try:
            pid = int(gid.split("_")[1])
            os.kill(pid, 0)
            continue
        except (ValueError, IndexError):
            continue
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        try:
            cur.execute("ROLLBACK PREPARED %s", (gid,))
        except psycopg2.Error:
            pass                # resolved meanwhile


def setup_table(args):
    try:
        conn = connect(args, autocommit=True)
    except psycopg2.Error as e:
        raise SetupError("cannot connect: %s" % str(e).strip())
    try:
        cur = conn.cursor()
        if args.am == "fpsketch":
            cur.execute("CREATE EXTENSION IF NOT EXISTS fpsketch")
        rollback_orphaned_prepared(cur)
        cur.execute("DROP TABLE IF EXISTS %s" % args.table)
        cur.execute("CREATE TABLE %s (k int PRIMARY KEY, v text NOT NULL DEFAULT '') USING %s"
                    % (args.table, args.am))
        cur.execute(SP_FUNCTION % {"t": args.table})
        # small batches: an fpsketch transaction may pin only so many rows
        for lo in range(0, args.nrows, 8):
            cur.execute("INSERT INTO %s (k) SELECT g FROM generate_series(%d, %d) g"
                        % (args.table, lo, min(lo + 8, args.nrows) - 1))
        cur.execute("SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam "
                    "WHERE c.oid = %s::regclass", (args.table,))
        am = cur.fetchone()[0]
        if am != args.am:
            raise SetupError("table %s uses access method %s, not %s" % (args.table, am, args.am))
        cur.execute("SELECT version()")
        server = cur.fetchone()[0]
    except psycopg2.Error as e:
        raise SetupError("setup failed: %s" % str(e).strip())
    finally:
        conn.close()
    return server


def read_final(args):
    conn = connect(args, autocommit=True)
    try:
        cur = conn.cursor()
        # by primary key, a few rows per transaction (every value is final
        # now; an fpsketch transaction may pin only so many rows)
        rows = []
        for lo in range(0, args.nrows, 8):
            cur.execute("SELECT k, v FROM %s WHERE k >= %%s AND k < %%s ORDER BY k" % args.table,
                        (lo, lo + 8))
            rows.extend(cur.fetchall())
        if [k for k, _ in rows] != list(range(args.nrows)):
            raise SetupError("final read: expected keys 0..%d, got %d rows" % (args.nrows - 1, len(rows)))
    finally:
        conn.close()
    return {k: parse_list(v) for k, v in rows}


# --------------------------------------------------------------------------
# workload
# --------------------------------------------------------------------------

class Shared(object):
    def __init__(self):
        self.lock = threading.Lock()
        self.next_id = 0
        self.txns = []
        self.fatal = []        # (client, message) of client crashes
        self.chains = None
        self.sql = None
        self.tpc = None        # TwoPhase
        self.counts = collections.Counter()   # micro-ops run, by kind

    def count(self, what):
        with self.lock:
            self.counts[what] += 1

    def new_txn(self, client):
        with self.lock:
            t = Txn(self.next_id, client)
            self.next_id += 1
            self.txns.append(t)
            return t


def pick_key(rng, args):
    """A key of the working set 0..keys-1 (hot keys first)."""
    if args.hot_keys > 0 and rng.random() < args.hot_frac:
        return rng.randrange(min(args.hot_keys, args.keys))
    return rng.randrange(args.keys)


def pick_key_wide(rng, args):
    """A key for a plain read or append, or a savepoint read: one of the
    cold keys keys..nrows-1 with probability --cold-frac, so that the long
    read-only transactions' hundreds of keys change while they run."""
    if args.cold_keys > 0 and rng.random() < args.cold_frac:
        return args.keys + rng.randrange(args.cold_keys)
    return pick_key(rng, args)


def parse_mix(text, names):
    out = []
    for part in text.split(","):
        name, _, w = part.partition("=")
        name = name.strip()
        if name not in names:
            raise ValueError("unknown name %r (one of %s)" % (name, ", ".join(names)))
        out.append((name, float(w)))
    if not out or sum(w for _, w in out) <= 0:
        raise ValueError("empty mix")
    return out


def weighted(rng, mix):
    x = rng.random() * sum(w for _, w in mix)
    for name, w in mix:
        x -= w
        if x < 0:
            return name
    return mix[-1][0]


# --------------------------------------------------------------------------
# long read-only transactions (both workloads)
# --------------------------------------------------------------------------
#
# A share (--ro-frac) of the transactions are read-only: several statements
# (--ro-min-stmts..--ro-max-stmts), each reading many rows, with a random
# pause of up to --ro-think-ms between them.  How they are begun (--ro-mix):
#
#   begin     BEGIN READ ONLY
#   set       BEGIN; SET TRANSACTION READ ONLY
#   rr        BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY
#   default   SET default_transaction_read_only = on; BEGIN (reset after)
#   auto      one SELECT in autocommit mode (a single-statement SELECT that
#             can write nothing), no BEGIN: one statement only
#
# and the scan methods they may use (--ro-scan-mix: SET LOCAL, or SET/RESET
# around an autocommit SELECT).  fpsketch reads them at a timestamp (DESIGN
# §9): they must never fail with 40001/40P01 (check "ro-abort"), and all
# their reads must come from one state, like any transaction's.

RO_VARIANTS = ["begin", "set", "rr", "default", "auto"]
RO_DEFAULT_MIX = "begin=35,set=20,rr=20,default=10,auto=15"
RO_BEGIN = {
    "begin": ["BEGIN READ ONLY"],
    "set": ["BEGIN", "SET TRANSACTION READ ONLY"],
    "rr": ["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"],
    "default": ["SET default_transaction_read_only = on", "BEGIN"],
}
SCAN_OFF = {
    "index": ("enable_seqscan", "enable_bitmapscan"),
    "seq": ("enable_indexscan", "enable_bitmapscan"),
    "bitmap": ("enable_seqscan", "enable_indexscan"),
    "default": (),
}
RO_DEFAULT_SCAN_MIX = "index=30,bitmap=25,seq=20,default=25"


def run_read_only(conn, variant, scan, stmts, run_stmt, think_s, rng, phase):
    """Run a read-only transaction begun as variant: run_stmt(cur, i, stmt)
    for each statement (only the first for "auto"), pausing up to think_s
    between them.  phase[0] becomes "commit" at the COMMIT.  Drives BEGIN and
    COMMIT itself (autocommit on meanwhile); on an error it rolls back and
    leaves the connection as it found it, then re-raises."""
    conn.autocommit = True
    cur = conn.cursor()
    in_block = False
    try:
        if variant == "auto":
            for guc in SCAN_OFF[scan]:
                cur.execute("SET %s = off" % guc)
            run_stmt(cur, 0, stmts[0])
            phase[0] = "commit"
            return
        for sql in RO_BEGIN[variant]:
            cur.execute(sql)
            in_block = in_block or sql.startswith("BEGIN")
        cur.execute("SHOW transaction_read_only")
        if cur.fetchone()[0] != "on":
            raise RuntimeError("read-only transaction (%s) is not read only" % variant)
        for guc in SCAN_OFF[scan]:
            cur.execute("SET LOCAL %s = off" % guc)
        for i, st in enumerate(stmts):
            if i and think_s > 0:
                time.sleep(rng.random() * think_s)
            run_stmt(cur, i, st)
        phase[0] = "commit"
        cur.execute("COMMIT")
        in_block = False
    except BaseException:
        if in_block and not conn.closed:
            try:
                cur.execute("ROLLBACK")
            except psycopg2.Error:
                pass
        raise
    finally:
        if not conn.closed:
            try:
                if variant == "default":
                    cur.execute("SET default_transaction_read_only = off")
                if variant == "auto":
                    for guc in SCAN_OFF[scan]:
                        cur.execute("RESET %s" % guc)
            except psycopg2.Error:
                conn.close()
        if not conn.closed:
            conn.autocommit = False


def ro_summary(txns, committed, escalation_threshold=1000):
    """Lines about the read-only transactions of a run: outcomes, by how they
    were begun, statements and rows of the committed ones."""
    ro = [t for t in txns if t.ro]
    if not ro:
        return ["read-only transactions: none"]
    st = collections.Counter(t.status if t.id not in committed else "committed" for t in ro)
    codes = collections.Counter(t.sqlstate for t in ro if t.status == "aborted")
    by = []
    for v in RO_VARIANTS:
        vs = [t for t in ro if t.ro == v]
        if vs:
            by.append("%s %d/%d" % (v, sum(1 for t in vs if t.id in committed), len(vs)))
    rows = [t.ro_info["rows"] for t in ro if t.id in committed]
    stmts = [t.ro_info["stmts"] for t in ro if t.id in committed]
    scans = collections.Counter(t.ro_info["scan"] for t in ro if t.id in committed)
    lines = ["read-only transactions: attempted %d, committed %d, aborted %d (%s), unknown %d, errors %d; "
             "committed/attempted by start: %s"
             % (len(ro), st["committed"], st["aborted"],
                ", ".join("%s: %d" % (c, n) for c, n in sorted(codes.items(), key=lambda x: str(x[0]))) or "-",
                st["unknown"], st["error"], ", ".join(by))]
    if rows:
        lines.append("read-only committed: %d statements, %d rows read (per transaction: avg %.0f, max %d; "
                     "%d past %d rows); scans %s"
                     % (sum(stmts), sum(rows), float(sum(rows)) / len(rows), max(rows),
                        sum(1 for r in rows if r > escalation_threshold), escalation_threshold,
                        ", ".join("%s %d" % kv for kv in sorted(scans.items()))))
    return lines


def server_settings(args):
    """fpsketch's protocol and timestamp_snapshots as the clients see them
    (with their --set), or None if fpsketch is not loaded."""
    conn = connect(args, autocommit=True)
    try:
        session_setup(conn, args)
        cur = conn.cursor()
        cur.execute("SELECT current_setting('fpsketch.protocol', true), "
                    "current_setting('fpsketch.timestamp_snapshots', true)")
        protocol, tss = cur.fetchone()
        if protocol is None:
            return None
        return {"protocol": protocol, "timestamp_snapshots": tss}
    finally:
        conn.close()


def ro_aborts_allowed(args, settings):
    """Read-only transactions validate (and may abort) only when they do not
    read at a timestamp: fpsketch.timestamp_snapshots off (not mvto), or
    tracking off.  --ro-aborts-ok says so by hand."""
    if args.ro_aborts_ok:
        return True
    if args.am != "fpsketch" or settings is None:
        return False
    return settings["protocol"] == "off" or \
        (settings["protocol"] != "mvto" and settings["timestamp_snapshots"] != "on")


def fps_stats(args):
    """fpsketch_stats as a dict, or None (heap, or no permission)."""
    if args.am != "fpsketch":
        return None
    try:
        conn = connect(args, autocommit=True)
        try:
            cur = conn.cursor()
            cur.execute("SELECT * FROM fpsketch_stats")
            row = cur.fetchone()
            return dict(zip([d[0] for d in cur.description], row))
        finally:
            conn.close()
    except psycopg2.Error:
        return None


def stats_diff(stats0, stats1, pred):
    if not stats0 or not stats1:
        return None
    return [(k, stats1[k] - stats0[k]) for k in stats1
            if pred(k) and isinstance(stats1[k], int) and not isinstance(stats1[k], bool)
            and stats1[k] - stats0[k]]


TS_STATS = ("ts_snapshots", "ts_waits", "escalations", "aborts_snapshot_too_old",
            "aborts_lock_timeout", "aborts_table_full", "commit_ts_drops", "commit_ts_lost")


# the number of elements of a list value (each element is ",<e>")
COUNT_SQL = "(length(%(c)s) - length(replace(%(c)s, ',', '')))"


def la_sql(table, nkeys):
    """The statements of the list-append micro-ops for table."""
    cnt_b = COUNT_SQL % {"c": "b.v"}
    cnt_a = COUNT_SQL % {"c": "a.v"}
    return {
        "read": "SELECT v FROM %s WHERE k = %%s" % table,
        "append": "UPDATE %s SET v = v || ',' || %%s WHERE k = %%s" % table,
        # the smallest list of a set (ties: the smaller key), locked
        "pick": "SELECT b.k, b.v FROM %s b WHERE b.k = ANY(%%s) ORDER BY %s, b.k LIMIT 1 FOR UPDATE"
                % (table, cnt_b),
        # a's partner is derived from a's list: another key every time
        "join": "SELECT a.v, b.k, b.v FROM %s a JOIN %s b ON b.k = %s WHERE a.k = %%s FOR UPDATE"
                % (table, table, join_partner_sql("a.k", cnt_a, nkeys).replace("%", "%%")),
        "sp_function": "SELECT %s_sp_read(%%s, %%s, %%s)" % table,
        # the long read-only transactions' statements
        "ro_any": "SELECT k, v FROM %s WHERE k = ANY(%%s)" % table,
        "ro_range": "SELECT k, v FROM %s WHERE k BETWEEN %%s AND %%s" % table,
        "ro_all": "SELECT k, v FROM %s" % table,
    }


def join_partner(k, n, nkeys):
    """The key the join op pairs key k holding n elements with (never k)."""
    return (k + 1 + n % (nkeys - 1)) % nkeys


def join_partner_sql(k, n, nkeys):
    return "(%s + 1 + %s %% %d) %% %d" % (k, n, nkeys - 1, nkeys)


# A read inside a PL/pgSQL block whose EXCEPTION handler rolls it back (and
# the optional append wk/we with it) and keeps what it read in a variable.
SP_FUNCTION = """
CREATE OR REPLACE FUNCTION %(t)s_sp_read(rk int, wk int, we text) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE
    r text;
BEGIN
    BEGIN
        SELECT v INTO r FROM %(t)s WHERE k = rk;
        IF we IS NOT NULL THEN
            UPDATE %(t)s SET v = v || ',' || we WHERE k = wk;
        END IF;
        RAISE SQLSTATE 'FPSRB';
    EXCEPTION WHEN SQLSTATE 'FPSRB' THEN
        NULL;
    END;
    RETURN r;
END
$f$"""

# The same as an anonymous block: the value comes back as a NOTICE.
SP_DO = """DO $d$
DECLARE
    r text;
BEGIN
    BEGIN
        SELECT v INTO r FROM %(t)s WHERE k = %(rk)d;
        %(write)s
        RAISE SQLSTATE 'FPSRB';
    EXCEPTION WHEN SQLSTATE 'FPSRB' THEN
        NULL;
    END;
    RAISE NOTICE 'la_sp_read %%', coalesce(r, '<null>');
END
$d$"""
SP_DO_WRITE = "UPDATE %(t)s SET v = v || ',' || '%(we)d' WHERE k = %(wk)d;"

SP_VARIANTS = ("client", "function", "do")
LA_OP_KINDS = ["plain", "sp", "pick", "join"]
LA_DEFAULT_MIX = "plain=76,sp=8,pick=10,join=6"
LA_RO_STMT_KINDS = ["any", "range", "all"]
LA_RO_DEFAULT_STMT_MIX = "any=50,range=35,all=15"


def plan_ro(rng, args, variant):
    """A long read-only transaction: (scan mode, statements).  Statements:
    ("any", keys) k = ANY(keys), usually with the whole working set (the hot
    keys) among a random sample of the table; ("range", lo, hi), half of them
    from key 0; ("all",) the whole table.  Up to --ro-keys keys each (a
    quarter at least)."""
    n = 1 if variant == "auto" else rng.randint(args.ro_min_stmts, args.ro_max_stmts)
    stmts = []
    for _ in range(n):
        kind = weighted(rng, args.ro_stmt_mix_parsed)
        m = min(args.nrows, rng.randint(max(1, args.ro_keys // 4), max(1, args.ro_keys)))
        if kind == "any":
            keys = set(rng.sample(range(args.nrows), m))
            if rng.random() < 0.8:
                keys.update(range(args.keys))
            keys = list(keys)
            rng.shuffle(keys)
            stmts.append(("any", keys))
        elif kind == "range":
            lo = 0 if rng.random() < 0.5 else rng.randrange(args.nrows - m + 1)
            stmts.append(("range", lo, lo + m - 1))
        else:
            stmts.append(("all",))
    return weighted(rng, args.ro_scan_mix_parsed), stmts


def plan_txn(rng, args, next_elem):
    """A transaction's micro-ops (see the docstring); next_elem() gives a
    fresh element."""
    nops = rng.randint(args.min_ops, args.max_ops)
    plan = []
    for _ in range(nops):
        kind = weighted(rng, args.mix_parsed)
        if kind == "pick" and args.keys >= 2:
            size = min(args.keys, rng.randint(2, 3))
            keys = set()
            while len(keys) < size:
                keys.add(pick_key(rng, args))
            plan.append(("pick", sorted(keys), next_elem()))
        elif kind == "join" and args.keys >= 2:
            plan.append(("join", pick_key(rng, args), next_elem(), rng.random() < 0.5))
        elif kind == "sp":
            rb = None
            if rng.random() < 0.5:
                rb = (pick_key_wide(rng, args), next_elem())
            variant = rng.choice(SP_VARIANTS)
            catch = variant == "client" and rng.random() < 0.5
            plan.append(("sp", pick_key_wide(rng, args), variant, rb, catch))
        elif rng.random() < args.read_frac:
            plan.append(("r", pick_key_wide(rng, args)))
        else:
            plan.append(("a", pick_key_wide(rng, args), next_elem()))
    return plan


class OpRunner(object):
    """Runs one transaction's micro-ops on cur and records what the client
    saw in t.ops (reads only once they returned)."""

    def __init__(self, conn, cur, t, shared, args):
        self.conn = conn
        self.cur = cur
        self.t = t
        self.shared = shared
        self.args = args
        self.sql = shared.sql
        self.own = collections.defaultdict(list)

    def observe(self, key, value, extra=None):
        if value is None:
            raise RuntimeError("read of key %d returned NULL" % key)
        op = ["r", key] + self.shared.chains.observe(key, value, self.own[key])
        if extra:
            op.append(extra)
        self.t.ops.append(op)
        return op

    def read(self, key, extra=None):
        self.cur.execute(self.sql["read"], (key,))
        rows = self.cur.fetchall()
        if len(rows) != 1:
            raise RuntimeError("read of key %d returned %d rows" % (key, len(rows)))
        return self.observe(key, rows[0][0], extra)

    def append(self, key, elem, kind="a"):
        self.t.ops.append([kind, key, elem])
        if kind == "a":
            self.own[key].append(elem)
        self.cur.execute(self.sql["append"], (str(elem), key))
        if self.cur.rowcount != 1:
            raise RuntimeError("append to key %d updated %d rows" % (key, self.cur.rowcount))

    def run(self, p):
        kind = p[0]
        if kind == "r":
            self.read(p[1])
        elif kind == "a":
            self.append(p[1], p[2])
        elif kind == "sp":
            self.savepoint_read(*p[1:])
        elif kind == "pick":
            self.pick(p[1], p[2])
        elif kind == "join":
            self.join(*p[1:])

    def read_only(self, plan, rng, phase):
        """Run the read-only transaction plan (plan_ro): every row returned
        is a read, recorded with the statement's index; a statement must
        return exactly the keys it names (every key exists), once each."""
        t = self.t
        scan, stmts = plan
        t.ro_info = {"scan": scan, "stmts": 0, "rows": 0}

        def run_stmt(cur, i, st):
            kind = st[0]
            if kind == "any":
                cur.execute(self.sql["ro_any"], (st[1],))
                want = set(st[1])
            elif kind == "range":
                cur.execute(self.sql["ro_range"], (st[1], st[2]))
                want = set(range(st[1], st[2] + 1))
            else:
                cur.execute(self.sql["ro_all"])
                want = set(range(self.args.nrows))
            rows = cur.fetchall()
            t.ro_info["stmts"] += 1
            t.ro_info["rows"] += len(rows)
            got = collections.Counter(k for k, _ in rows)
            if set(got) != want or len(rows) != len(want):
                t.ops.append(["e", "ro-rows", i, kind, len(want), len(rows),
                              sorted(want - set(got))[:5], sorted(set(got) - want)[:5],
                              sorted(k for k, c in got.items() if c > 1)[:5]])
            where = "s%d" % i
            for k, v in sorted(rows):
                if k in want:
                    self.observe(k, v, where)

        run_read_only(self.conn, t.ro, scan, stmts, run_stmt, self.args.ro_think_ms / 1000.0, rng, phase)

    def savepoint_read(self, key, variant, rb, catch):
        """Read key inside a subtransaction that is rolled back (with an
        append rb = (key, elem) after the read, rolled back too): the value
        read still counts, the append must never be seen."""
        cur = self.cur
        t = self.t
        if variant == "client":
            cur.execute("SAVEPOINT la_sp")
            try:
                self.read(key, "sp")
                if rb is not None:
                    self.append(rb[0], rb[1], "x")
            except psycopg2.Error as e:
                # catch a serialization failure inside the savepoint and go
                # on, as an application retrying a step would
                if not catch or e.pgcode not in ABORT_CODES or self.conn.closed:
                    raise
                self.shared.count("sp_caught")
            cur.execute("ROLLBACK TO SAVEPOINT la_sp")
            cur.execute("RELEASE SAVEPOINT la_sp")
        elif variant == "function":
            if rb is not None:
                t.ops.append(["x", rb[0], rb[1]])
            cur.execute(self.sql["sp_function"],
                        (key, rb[0] if rb else None, str(rb[1]) if rb else None))
            rows = cur.fetchall()
            self.observe(key, rows[0][0], "fn")
        else:
            write = ""
            if rb is not None:
                t.ops.append(["x", rb[0], rb[1]])
                write = SP_DO_WRITE % {"t": self.args.table, "we": rb[1], "wk": rb[0]}
            del self.conn.notices[:]
            cur.execute(SP_DO % {"t": self.args.table, "rk": key, "write": write})
            value = None
            for n in self.conn.notices:
                i = n.find("la_sp_read ")
                if i >= 0:
                    value = n[i + len("la_sp_read "):].split("\n")[0]
            if value is None:
                raise RuntimeError("DO block read of key %d: no notice (%r)" % (key, self.conn.notices))
            self.observe(key, None if value == "<null>" else value, "do")
        self.shared.count("sp_" + variant)
        if rb is not None:
            self.shared.count("sp_rolled_back_appends")

    def pick(self, keys, elem):
        """Lock the key of keys with the shortest list (ties: the smaller
        key), append to it, then read the others."""
        cur = self.cur
        cur.execute(self.sql["pick"], (keys,))
        rows = cur.fetchall()
        self.shared.count("pick")
        if len(rows) != 1:
            self.t.ops.append(["e", "pick", keys, len(rows)])
            return
        chosen, value = rows[0]
        op = self.observe(chosen, value)
        # ["p", key, n, nbase, flag, raw, keys]: a read of key, and a bound
        # on every other key of keys (Analysis)
        op[0] = "p"
        del op[6:]
        op.append(list(keys))
        self.append(chosen, elem)
        for k in keys:
            if k != chosen:
                self.read(k)

    def join(self, key, elem, to_partner):
        """Self-join of key with the partner its list gives, FOR UPDATE;
        then append to one of them."""
        cur = self.cur
        cur.execute(self.sql["join"], (key,))
        rows = cur.fetchall()
        self.shared.count("join")
        if len(rows) != 1:
            self.t.ops.append(["e", "join", key, len(rows)])
            return
        va, kb, vb = rows[0]
        if va is None or vb is None:
            raise RuntimeError("join of key %d returned NULL" % key)
        want = join_partner(key, va.count(","), self.args.keys)
        if kb != want:
            self.t.ops.append(["e", "join-partner", key, kb, want])
        self.observe(key, va)
        self.observe(kb, vb)
        self.append(kb if to_partner else key, elem)


def client_main(cid, args, shared, deadline, t0):
    rng = random.Random(args.seed * 1000003 + cid)
    seq = [0]
    conn = None

    def next_elem():
        seq[0] += 1
        return cid * 1000000 + seq[0]

    tpc = TwoPhaseClient(args, shared.tpc, cid)
    try:
        while time.time() < deadline:
            if conn is None or conn.closed:
                conn = connect(args)
                session_setup(conn, args)
            cur = conn.cursor()
            t = shared.new_txn(cid)
            tpc_mode = None
            if args.ro_frac > 0 and rng.random() < args.ro_frac:
                t.ro = weighted(rng, args.ro_mix_parsed)
                plan = plan_ro(rng, args, t.ro)
            else:
                plan = plan_txn(rng, args, next_elem)
                tpc_mode = tpc.choose(rng)
            t.t_start = time.time() - t0
            phase = "op"
            runner = OpRunner(conn, cur, t, shared, args)
            try:
                if t.ro:
                    ph = ["op"]
                    try:
                        runner.read_only(plan, rng, ph)
                    finally:
                        phase = ph[0]
                else:
                    for p in plan:
                        runner.run(p)
                        if args.think_ms > 0:
                            time.sleep(rng.random() * args.think_ms / 1000.0)
                    ph = ["commit"]
                    try:
                        tpc.end_transaction(conn, t, tpc_mode, rng, ph)
                    finally:
                        phase = ph[0]
                t.status = "committed"
            except RolledBackPrepared:
                t.status = "aborted"
                t.sqlstate = "rollback-prepared"
                t.error = "ROLLBACK PREPARED"
            except psycopg2.Error as e:
                code = e.pgcode
                t.sqlstate = code
                if code is None or conn.closed:
                    # connection broke: a COMMIT may or may not have happened
                    t.status = "unknown" if phase == "commit" else "aborted"
                    t.error = str(e).strip()
                    try:
                        conn.close()
                    except Exception:
                        pass
                    conn = None
                elif code in ABORT_CODES:
                    t.status = "aborted"
                    t.error = ("%s: " % phase) + str(e.pgerror or e).strip().split("\n")[0]
                    detail = getattr(getattr(e, "diag", None), "message_detail", None)
                    if detail:
                        t.error += " (%s)" % detail
                else:
                    t.status = "error"
                    t.error = ("%s: " % phase) + str(e.pgerror or e).strip()
                if conn is not None:
                    try:
                        conn.rollback()
                    except psycopg2.Error:
                        conn.close()
                        conn = None
            except RuntimeError as e:
                t.status = "error"
                t.error = str(e)
                try:
                    conn.rollback()
                except psycopg2.Error:
                    conn.close()
                    conn = None
            t.t_end = time.time() - t0
            tpc.end()
            cur = None
    except Exception:
        with shared.lock:
            shared.fatal.append((cid, traceback.format_exc()))
    finally:
        tpc.close()
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass


# --------------------------------------------------------------------------
# analysis
# --------------------------------------------------------------------------

def tarjan_scc(nodes, adj):
    """Iterative Tarjan: list of SCCs (lists of nodes) with more than one node
    or a self loop (no self loops are ever added here)."""
    index = {}
    low = {}
    onstack = set()
    stack = []
    sccs = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(adj.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        onstack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    onstack.add(w)
                    work.append((w, iter(adj.get(w, ()))))
                    advanced = True
                    break
                elif w in onstack:
                    if index[w] < low[v]:
                        low[v] = index[w]
            if advanced:
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    onstack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    sccs.append(comp)
    return sccs


def bfs_path(src, dst, edges, allowed, members):
    """Shortest path src -> dst inside members using edges whose type set
    meets allowed; returns list of nodes or None."""
    prev = {src: None}
    queue = collections.deque([src])
    while queue:
        u = queue.popleft()
        if u == dst:
            path = []
            while u is not None:
                path.append(u)
                u = prev[u]
            return path[::-1]
        for w, types in edges.get(u, {}).items():
            if w in members and w not in prev and (types & allowed):
                prev[w] = u
                queue.append(w)
    return None


def find_cycles(nodes, edges, specs, ekey, fmt_key):
    """For each (class, allowed edge types, key edge type) in specs: the
    number of SCCs of the graph restricted to allowed types that contain an
    edge of the key type (every edge inside an SCC lies on a cycle), and one
    example cycle through such an edge.  edges: a -> b -> set of types;
    ekey: (a, b, type) -> the object that edge is about, shown by fmt_key.
    Yields (class, count, example or None, text or None); example is
    (label, SCC size, [(u, types, v), ...]), label G-single for a G2 cycle
    with exactly one rw edge."""
    for cls, allowed, key_type in specs:
        adj = {}
        for a, outs in edges.items():
            lst = [b for b, types in outs.items() if types & allowed]
            if lst:
                adj[a] = lst
        sccs = tarjan_scc(nodes, adj)
        count = 0
        example = None
        tries = 0
        for comp in sccs:
            members = set(comp)
            found = []
            for a in comp:
                for b, types in edges.get(a, {}).items():
                    if b in members and key_type in types:
                        found.append((a, b))
                        if len(found) >= 8:
                            break
                if len(found) >= 8:
                    break
            if not found:
                continue
            count += 1
            # the example: the shortest cycle through a few key edges of the
            # first SCCs (for G2, a G-single one if there is one)
            for a, b in found:
                if tries >= 24:
                    break
                tries += 1
                label = cls
                path = None
                used = allowed
                if cls == "G2":
                    path = bfs_path(b, a, edges, {"ww", "wr"}, members)
                    label = "G-single" if path else "G2"
                    if path:
                        used = {"ww", "wr"}
                if path is None:
                    path = bfs_path(b, a, edges, allowed, members)
                cyc = [a] + path     # a -> b -> ... -> a
                rank = (label != "G-single", len(cyc))
                if example is not None and rank >= example[3]:
                    continue
                steps = []
                for i in range(len(cyc) - 1):
                    u, v = cyc[i], cyc[i + 1]
                    if i == 0:
                        ty = key_type
                    else:
                        ty = "/".join(sorted(edges[u][v] & used))
                    steps.append((u, ty, v))
                example = (label, len(comp), steps, rank)
        if example:
            example = example[:3]
        txt = None
        if example:
            label, size, steps = example
            txt = "%s: " % label + " ".join(
                "T%d -%s->" % (u, "/".join(x if x == "po" else "%s(%s)" % (x, fmt_key(ekey[(u, v, x)]))
                                           for x in ty.split("/")))
                for u, ty, v in steps) + " T%d (SCC of %d txns)" % (steps[-1][2], size)
        yield cls, count, example, txt


def fmt_edge_key(k):
    if isinstance(k, tuple):
        # a pick's bound: the reader needed key k[1] to hold k[2] elements
        return "k%d, pick: len>=%d" % (k[1], k[2])
    return "k%d" % k


def describe_bad_result(op):
    what = op[1]
    if what == "pick":
        return "the pick from keys %s returned %d rows (every key exists: 1)" % (op[2], op[3])
    if what == "join":
        return "the self-join of key %d with its partner returned %d rows (the partner always exists: 1)" \
            % (op[2], op[3])
    if what == "join-partner":
        return "the self-join of key %d paired it with key %d, but the list it returned gives partner %d" \
            % (op[2], op[3], op[4])
    if what == "ro-rows":
        return ("read-only statement %d (%s) returned %d rows for %d keys (every key exists, once): "
                "missing %s, unexpected %s, twice %s" % tuple(op[2:9]))
    return json.dumps(op)


class Analysis(object):
    def __init__(self, txns, final, chains, args):
        self.txns = txns
        self.chains = chains      # key -> longest observed value (string)
        self.final = final
        self.args = args
        self.session = bool(getattr(args, "session_order", False))
        self.classes = CLASSES + ([SESSION_CLASS] if self.session else [])
        self.findings = {c: [] for c in self.classes}   # class -> list of strings
        self.cycle_counts = {"G0": 0, "G1c": 0, "G2": 0, SESSION_CLASS: 0}
        self.example_cycles = {}
        self.involved = set()                         # txn ids to dump

    def add(self, cls, msg, tids=()):
        self.findings[cls].append(msg)
        self.involved.update(tids)

    def pick_bounds(self, t, key, n, keys, own_so_far, writer, committed, edge):
        """Committed t's pick returned key with n elements as the smallest
        list of keys, ties to the smaller key: at t's serialization point
        (plus t's own appends so far) every other key b held at least n
        elements (b > key) or n + 1 (b < key).  Less own appends, the
        committed list of b then held at least `need`, so whoever appended
        b's need-th element precedes t: a wr edge.  A b whose final list
        never got that long, or whose need-th element is t's own, is a bad
        result by itself."""
        final = self.final
        for b in keys:
            if b == key:
                continue
            need_view = n if b > key else n + 1
            need = need_view - len(own_so_far[b])
            if need <= 0:
                continue
            flst = final[b]
            why = "T%d's pick from keys %s returned key %d with %d elements: key %d must have held >= %d%s" \
                % (t.id, keys, key, n, b, need_view,
                   " (%d without T%d's own appends)" % (need, t.id) if need != need_view else "")
            if len(flst) < need:
                self.add("bad-result", "%s, but its final list has %d" % (why, len(flst)), [t.id])
                continue
            w = writer.get(flst[need - 1])
            if w == t.id:
                self.add("bad-result", "%s, but element %d there is T%d's own append (the list it saw was shorter)"
                         % (why, need, t.id), [t.id])
                continue
            if w is None or w not in committed:
                continue        # G1a, reported with the final state
            self.npick_edges += 1
            self.pick_edge_set.add((w, t.id))
            edge(w, t.id, "wr", ("pick", b, need))

    def run(self):
        txns = self.txns
        final = self.final
        byid = {t.id: t for t in txns}

        # errors
        for t in txns:
            if t.status == "error":
                self.add("errors", "T%d: %s %s" % (t.id, t.sqlstate or "", t.error), [t.id])
        # read-only transactions never fail for a serialization reason
        if not getattr(self.args, "ro_aborts_ok", False):
            for t in txns:
                if t.ro and t.status == "aborted" and t.sqlstate in ABORT_CODES:
                    self.add("ro-abort", "read-only T%d (%s) failed with %s: %s"
                             % (t.id, t.ro, t.sqlstate, t.error), [t.id])

        # who appended what
        writer = {}          # element -> txn id
        rolled_back = {}     # element -> txn id whose savepoint rolled its append back
        appends = collections.defaultdict(lambda: collections.defaultdict(list))  # tid -> key -> [elems]
        for t in txns:
            for op in t.ops:
                kind = op[0]
                if kind in ("a", "x"):
                    key, val = op[1], op[2]
                    if val in writer or val in rolled_back:
                        raise SetupError("element %d appended twice by the workload" % val)
                    if kind == "x":
                        rolled_back[val] = t.id
                        continue
                    writer[val] = t.id
                    appends[t.id][key].append(val)

        def not_committed(e):
            """Who wrote e, which no committed transaction wrote."""
            w = writer.get(e)
            if w is not None:
                return "aborted T%d (%s)" % (w, byid[w].sqlstate)
            if e in rolled_back:
                return "T%d (%s), rolled back with its savepoint" % (rolled_back[e], byid[rolled_back[e]].status)
            return "nobody"

        def culprits(e):
            return [x for x in (writer.get(e), rolled_back.get(e)) if x is not None]

        # resolve unknown outcomes from the final state
        in_final = {}
        for key, lst in final.items():
            for i, e in enumerate(lst):
                in_final.setdefault(e, []).append((key, i))
        for t in txns:
            if t.status != "unknown":
                continue
            mine = [e for ks in appends[t.id].values() for e in ks]
            seen = [e for e in mine if e in in_final]
            if mine and seen:
                t.status = "committed"
            else:
                t.status = "aborted"   # read-only or nothing visible: nothing to check
        committed = set(t.id for t in txns if t.status == "committed")
        self.committed = committed

        # final state: duplicates, unknown elements, aborted appends, lost appends
        pos = {}             # key -> {elem: index}
        for key, lst in final.items():
            p = {}
            for i, e in enumerate(lst):
                if e in p:
                    self.add("incompatible-order", "final value of key %d has element %d twice" % (key, e),
                             [writer[e]] if e in writer else [])
                p[e] = i
                w = writer.get(e)
                if e in rolled_back:
                    self.add("G1a", "final value of key %d has element %d of %s"
                             % (key, e, not_committed(e)), culprits(e))
                elif w is None:
                    self.add("incompatible-order", "final value of key %d has unknown element %d" % (key, e))
                elif w not in committed:
                    self.add("G1a", "final value of key %d has element %d of aborted T%d (%s)"
                             % (key, e, w, byid[w].sqlstate), [w])
            pos[key] = p
        for tid in committed:
            for key, elems in appends[tid].items():
                for e in elems:
                    if e not in pos.get(key, {}):
                        self.add("lost-append", "committed T%d appended %d to key %d; not in final value"
                                 % (tid, e, key), [tid])

        # edges
        edges = collections.defaultdict(lambda: collections.defaultdict(set))
        ecount = collections.Counter()
        ekey = {}            # (a, b, type) -> key of the first such edge
        self.ekey = ekey

        def edge(a, b, typ, key):
            if a == b or a not in committed or b not in committed:
                return
            if typ not in edges[a][b]:
                edges[a][b].add(typ)
                ekey[(a, b, typ)] = key
                ecount[typ] += 1

        for key, lst in final.items():
            for i in range(1, len(lst)):
                a, b = writer.get(lst[i - 1]), writer.get(lst[i])
                if a is not None and b is not None:
                    edge(a, b, "ww", key)

        # chains (longest observed values) against the final state
        chain_lists = {}
        agree = {}           # key -> length of the common prefix chain/final
        first_bad = {}       # key -> first chain index holding a non-committed element
        for key in final:
            cl = parse_list(self.chains.get(key, ""))
            chain_lists[key] = cl
            flst = final[key]
            i = 0
            while i < len(cl) and i < len(flst) and cl[i] == flst[i]:
                i += 1
            agree[key] = i
            fb = len(cl)
            for j, e in enumerate(cl):
                if writer.get(e) not in committed:
                    fb = j
                    break
            first_bad[key] = fb
        self.chain_lists = chain_lists

        nreads = 0
        self.npicks = self.npick_edges = self.nbad = 0
        self.pick_edge_set = set()
        for t in txns:
            own_so_far = collections.defaultdict(list)
            # the most elements of others a read of the key has shown so far
            seen_base = {}
            is_committed = t.id in committed
            for op in t.ops:
                if op[0] == "a":
                    own_so_far[op[1]].append(op[2])
                    continue
                if op[0] == "x":
                    continue
                if op[0] == "e":
                    if is_committed:
                        self.nbad += 1
                        self.add("bad-result", "committed T%d: %s" % (t.id, describe_bad_result(op)), [t.id])
                    continue
                key, n, nbase, flag, raw = op[1:6]
                if n is None:
                    continue
                nreads += 1
                if op[0] == "p" and is_committed:
                    self.npicks += 1
                    self.pick_bounds(t, key, n, op[6], own_so_far, writer, committed, edge)
                own = own_so_far[key]
                who = "%s T%d" % ("committed" if is_committed else "aborted", t.id)
                if flag == "internal":
                    self.add("internal", "%s read key %d = %s after appending %s"
                             % (who, key, fmt_list(parse_list(raw)), own), [t.id])
                    continue
                if flag is None:
                    # a read never goes back behind one the transaction made
                    # before (committed or not: the application saw both)
                    if nbase < seen_base.get(key, 0):
                        self.add("internal", "%s read key %d with %d elements of other "
                                 "transactions after a read that showed %d"
                                 % (who, key, nbase, seen_base[key]), [t.id])
                    seen_base[key] = max(seen_base.get(key, 0), nbase)
                if flag == "incompatible":
                    lst = parse_list(raw)
                    cl = chain_lists[key]
                    i = 0
                    while i < len(lst) and i < len(cl) and lst[i] == cl[i]:
                        i += 1
                    self.add("incompatible-order",
                             "%s read key %d = %s, but another read saw %s: they diverge at index %d (%s vs %s)"
                             % (who, key, fmt_list(lst), fmt_list(cl), i,
                                lst[i] if i < len(lst) else "end", cl[i] if i < len(cl) else "end"),
                             [t.id] + [writer[e] for e in (lst[i:i + 1] + cl[i:i + 1]) if e in writer])
                    continue
                flst = final[key]
                cl = chain_lists[key]
                if is_committed and first_bad[key] < nbase:
                    e = cl[first_bad[key]]
                    self.add("G1a", "committed T%d read key %d = %s containing %d of %s"
                             % (t.id, key, fmt_list(cl[:nbase] + own), e, not_committed(e)),
                             [t.id] + culprits(e))
                    continue
                if nbase > agree[key]:
                    i = agree[key]
                    e = cl[i]
                    w = writer.get(e)
                    why = "written by %s" % (not_committed(e) if w is None else
                                             "T%d (%s)" % (w, byid[w].status))
                    self.add("incompatible-order",
                             "%s read key %d = %s, not a prefix of the final value %s: diverges at index %d, element %d %s"
                             % (who, key, fmt_list(cl[:nbase] + own), fmt_list(flst), i, e, why),
                             [t.id] + culprits(e))
                    continue
                if not is_committed:
                    continue
                # the read is final[:n] when the own appends follow base there
                if own and flst[nbase:n] != own:
                    self.add("incompatible-order",
                             "committed T%d read key %d = %s, but its appends %s are not at index %d of the final value %s"
                             % (t.id, key, fmt_list(cl[:nbase] + own), own, nbase, fmt_list(flst)),
                             [t.id])
                    continue
                m = n
                if m > 0:
                    w = writer.get(flst[m - 1])
                    if w is not None and w != t.id:
                        # G1b: not the writer's last append to this key
                        wl = appends[w][key]
                        if wl and wl[-1] != flst[m - 1]:
                            self.add("G1b", "T%d read key %d = %s: intermediate state of T%d, whose appends to it are %s"
                                     % (t.id, key, fmt_list(flst[:m]), w, wl), [t.id, w])
                        edge(w, t.id, "wr", key)
                if m < len(flst):
                    w = writer.get(flst[m])
                    # (the writer of the read's last element again: an
                    # intermediate read, already reported as G1b)
                    if w is not None and (m == 0 or w != writer.get(flst[m - 1])):
                        edge(t.id, w, "rw", key)
        self.nreads = nreads
        self.ecount = ecount

        # cycles
        nodes = sorted(committed)
        specs = [("G0", {"ww"}, "ww"), ("G1c", {"ww", "wr"}, "wr"), ("G2", {"ww", "wr", "rw"}, "rw")]
        if self.session:
            # each client's committed transactions in the order it ran them
            last = {}
            for t in sorted(txns, key=lambda x: x.id):
                if t.id in committed:
                    if t.client in last:
                        edge(last[t.client], t.id, "po", None)
                    last[t.client] = t.id
            specs.append((SESSION_CLASS, {"ww", "wr", "rw", "po"}, "po"))
        for cls, count, example, txt in find_cycles(nodes, edges, specs, ekey, fmt_edge_key):
            self.cycle_counts[cls] = count
            if example:
                self.example_cycles[cls] = example
                self.add(cls, "%d SCC(s) with a %s cycle; example %s" % (count, cls, txt),
                         [u for u, _, _ in example[2]])
        # how many of the dependency cycles need a pick's bound, and how
        # many have a long read-only transaction in them
        self.pick_sccs = 0
        self.sccs, self.ro_sccs = ro_scc_counts(nodes, edges, txns)
        if self.pick_edge_set and (self.cycle_counts["G1c"] or self.cycle_counts["G2"]):
            adj = {}
            for a, outs in edges.items():
                lst = [b for b, types in outs.items() if types & {"ww", "wr", "rw"}]
                if lst:
                    adj[a] = lst
            comp_of = {}
            for i, comp in enumerate(tarjan_scc(nodes, adj)):
                for u in comp:
                    comp_of[u] = i
            self.pick_sccs = len(set(comp_of[a] for a, b in self.pick_edge_set
                                     if a in comp_of and comp_of.get(b) == comp_of[a]))


def ro_scc_counts(nodes, edges, txns):
    """(SCCs of the dependency graph, those with a read-only transaction)."""
    ro = set(t.id for t in txns if getattr(t, "ro", None))
    if not ro:
        return 0, 0
    adj = {}
    for a, outs in edges.items():
        lst = [b for b, types in outs.items() if types & {"ww", "wr", "rw"}]
        if lst:
            adj[a] = lst
    sccs = tarjan_scc(nodes, adj)
    return len(sccs), sum(1 for comp in sccs if ro.intersection(comp))


def cycle_focus(example, u, ekey):
    """The keys of the example cycle's edges into and out of u (what to show
    of a long transaction)."""
    keys = set()
    for a, ty, b in example[2]:
        if u in (a, b):
            for x in ty.split("/"):
                k = ekey.get((a, b, x))
                if isinstance(k, tuple):
                    k = k[1] if k and k[0] == "pick" else k[0]
                if k is not None:
                    keys.add(k)
    return keys


def settings_text(settings, args):
    if settings is None:
        return "fpsketch not loaded"
    return "fpsketch.protocol=%s, fpsketch.timestamp_snapshots=%s; read-only aborts %s" % (
        settings["protocol"], settings["timestamp_snapshots"],
        "allowed" if args.ro_aborts_ok else "are a failure (check ro-abort)")


# --------------------------------------------------------------------------
# two-phase commit
# --------------------------------------------------------------------------
# A share (--tpc-frac) of the read-write transactions ends with PREPARE
# TRANSACTION instead of COMMIT, waits up to --tpc-hold-ms (other clients
# meet its keys meanwhile), then is resolved:
#   other     COMMIT PREPARED from the client's second connection
#   same      COMMIT PREPARED from the connection that prepared it
#   rollback  ROLLBACK PREPARED from the second connection: the transaction
#             is aborted, so anything it wrote that someone read is G1a and
#             any append of it in the final state a lost/incompatible order
# A transaction that fails at PREPARE (40001) is aborted like one failing at
# COMMIT; an error of COMMIT/ROLLBACK PREPARED is an unexpected error.
# Prepared transactions at a time are limited to max_prepared_transactions
# (a transaction that finds no free slot commits the ordinary way).

TPC_MODES = ("other", "same", "rollback")


class RolledBackPrepared(Exception):
    """A transaction this client rolled back with ROLLBACK PREPARED."""


class TwoPhase(object):
    """Shared two-phase-commit state of one run."""

    def __init__(self, args, max_prepared):
        self.frac = args.tpc_frac if max_prepared > 0 else 0.0
        self.max_prepared = max_prepared
        self.slots = threading.BoundedSemaphore(max_prepared) if max_prepared > 0 else None
        self.prefix = "fpsck_%d_" % os.getpid()
        self.lock = threading.Lock()
        self.counts = collections.Counter()
        self.unresolved = []     # gids whose resolution failed or was lost

    def count(self, what, n=1):
        with self.lock:
            self.counts[what] += n

    def summary(self):
        c = self.counts
        if self.max_prepared == 0:
            return "two-phase commit off (max_prepared_transactions = 0)"
        if self.frac <= 0:
            return "two-phase commit off (--tpc-frac 0)"
        return ("two-phase commit %.2f of the read-write transactions: prepared %d (COMMIT PREPARED %d from "
                "another session, %d from the same; ROLLBACK PREPARED %d), failed at PREPARE %d, "
                "resolution errors %d, no free slot %d (max_prepared_transactions %d)"
                % (self.frac, c["prepared"], c["commit_other"], c["commit_same"], c["rollback"],
                   c["prepare_failed"], c["resolve_failed"], c["no_slot"], self.max_prepared))


class TwoPhaseClient(object):
    """One client's side: its mode choice, slot and resolver connection."""

    def __init__(self, args, tpc, cid):
        self.args = args
        self.tpc = tpc
        self.cid = cid
        self.seq = 0
        self.resolver = None
        self.slot = False
        self.keep_slot = False

    def choose(self, rng):
        """The mode of the next read-write transaction (a slot taken), or None."""
        tpc, args = self.tpc, self.args
        if tpc is None or tpc.frac <= 0 or rng.random() >= tpc.frac:
            return None
        if not tpc.slots.acquire(blocking=False):
            tpc.count("no_slot")
            return None
        self.slot = True
        self.keep_slot = False
        r = rng.random()
        if r < args.tpc_rollback_frac:
            return "rollback"
        if r < args.tpc_rollback_frac + args.tpc_same_frac:
            return "same"
        return "other"

    def end(self):
        """After every transaction: give the slot back unless a prepared
        transaction may still hold it."""
        if self.slot and not self.keep_slot:
            self.tpc.slots.release()
        self.slot = False

    def _resolver(self):
        if self.resolver is None or self.resolver.closed:
            self.resolver = connect(self.args, autocommit=True)
            session_setup(self.resolver, self.args)
        return self.resolver

    def close(self):
        if self.resolver is not None:
            try:
                self.resolver.close()
            except Exception:
                pass

    def end_transaction(self, conn, t, mode, rng, phase):
        """End the transaction: COMMIT, or (mode set) finish().  phase[0]
        says where an exception came from ("commit", or finish()'s phases);
        RolledBackPrepared if finish() rolled it back on purpose."""
        phase[0] = "commit"
        if mode:
            if not self.finish(conn, t, mode, rng, phase):
                raise RolledBackPrepared()
        else:
            conn.commit()

    def finish(self, conn, t, mode, rng, phase):
        """PREPARE TRANSACTION, hold, resolve.  Returns True if committed,
        False if rolled back on purpose.  phase[0] says where an exception
        came from: "prepare" (the transaction is gone), "commit" (a lost
        connection leaves the outcome unknown) or "rollback-prepared"."""
        self.seq += 1
        gid = "%s%d_%d" % (self.tpc.prefix, self.cid, self.seq)
        t.tpc = [mode, gid]
        phase[0] = "prepare"
        cur = conn.cursor()
        try:
            # psycopg2 thinks the transaction is still open after PREPARE:
            # the BEGIN opens one so that its ROLLBACK below ends something
            # (rather than draw a WARNING per prepared transaction)
            cur.execute("PREPARE TRANSACTION %s; BEGIN", (gid,))
        except psycopg2.Error:
            self.tpc.count("prepare_failed")
            raise
        self.keep_slot = True
        conn.rollback()
        self.tpc.count("prepared")
        if self.args.tpc_hold_ms > 0:
            time.sleep(rng.random() * self.args.tpc_hold_ms / 1000.0)
        verb = "ROLLBACK" if mode == "rollback" else "COMMIT"
        phase[0] = "commit" if verb == "COMMIT" else "rollback-prepared"
        try:
            if mode == "same":
                conn.autocommit = True
                try:
                    conn.cursor().execute("COMMIT PREPARED %s", (gid,))
                finally:
                    if not conn.closed:
                        conn.autocommit = False
            else:
                self._resolver().cursor().execute(verb + " PREPARED %s", (gid,))
        except psycopg2.Error as e:
            with self.tpc.lock:
                self.tpc.unresolved.append(gid)
            self.tpc.count("resolve_failed")
            if e.pgcode is None:
                if self.resolver is not None and self.resolver.closed:
                    self.resolver = None
                raise
            raise RuntimeError("%s PREPARED '%s' failed: %s" % (verb, gid, str(e.pgerror or e).strip()))
        self.keep_slot = False
        self.tpc.count({"other": "commit_other", "same": "commit_same", "rollback": "rollback"}[mode])
        return verb == "COMMIT"


def tpc_final_check(args, tpc):
    """After the run: no prepared transaction of the run is left (any are
    rolled back and reported), and fpsketch_prepared_xacts then has no row
    of the run; the share was exercised.  Returns a list of problems."""
    if tpc is None or tpc.frac <= 0:
        return []
    problems = []
    conn = connect(args, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE %s ORDER BY gid", (tpc.prefix + "%",))
        left = [r[0] for r in cur.fetchall()]
        for gid in left:
            cur.execute("ROLLBACK PREPARED %s", (gid,))
        if left:
            problems.append("prepared transactions left after the run (rolled back now): %s"
                            % ", ".join(left[:10]))
        cur.execute("SELECT to_regclass('fpsketch_prepared_xacts') IS NOT NULL")
        if cur.fetchone()[0]:
            cur.execute("SELECT gid FROM fpsketch_prepared_xacts WHERE gid LIKE %s", (tpc.prefix + "%",))
            rows = [r[0] for r in cur.fetchall()]
            if rows:
                problems.append("fpsketch_prepared_xacts still lists resolved transactions: %s"
                                % ", ".join(rows[:10]))
    finally:
        conn.close()
    c = tpc.counts
    if c["commit_other"] + c["commit_same"] == 0:
        problems.append("no transaction committed through PREPARE TRANSACTION: two-phase commit was not checked")
    if c["rollback"] == 0 and c["prepared"] >= 20:
        problems.append("no ROLLBACK PREPARED ran")
    return problems


def server_max_prepared(args):
    conn = connect(args, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("SHOW max_prepared_transactions")
        return int(cur.fetchone()[0])
    finally:
        conn.close()



def vacuum_main(args, shared, deadline):
    """VACUUM the table every --vacuum-every seconds: versions a running
    timestamp snapshot still reads must survive it."""
    conn = None
    try:
        conn = connect(args, autocommit=True)
        cur = conn.cursor()
        while time.time() + args.vacuum_every < deadline:
            time.sleep(args.vacuum_every)
            try:
                cur.execute("VACUUM %s" % args.table)
                shared.count("vacuum")
            except psycopg2.Error:
                shared.count("vacuum_failed")
                if conn.closed:
                    conn = connect(args, autocommit=True)
                    cur = conn.cursor()
    except Exception:
        with shared.lock:
            shared.fatal.append((-1, traceback.format_exc()))
    finally:
        if conn is not None:
            conn.close()


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description="Elle-style serializability checker "
                                             "(list-append or predicate workload)")
    ap.add_argument("--host", default=os.environ.get("PGHOST"))
    ap.add_argument("--port", default=os.environ.get("PGPORT"))
    ap.add_argument("--user", "-U", default=os.environ.get("PGUSER"))
    ap.add_argument("--dbname", "-d", default=os.environ.get("PGDATABASE"))
    ap.add_argument("--am", choices=["fpsketch", "heap"], default="fpsketch")
    ap.add_argument("--workload", choices=["list-append", "predicate"], default="list-append",
                    help="list-append (fixed keys, reads by primary key, appends) or predicate "
                         "(inserts, deletes, key moves, predicate reads; see predicate.py)")
    ap.add_argument("--table", default=None, help="table name (default la, or pr for predicate)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--keys", type=int, default=8,
                    help="list-append: the working set of the ordinary ops (picks and self-joins stay in it)")
    ap.add_argument("--cold-keys", type=int, default=504,
                    help="list-append: further keys of the table (it holds --keys + --cold-keys rows), "
                         "which the long read-only transactions read by the hundred")
    ap.add_argument("--cold-frac", type=float, default=0.1,
                    help="list-append: share of plain and savepoint ops on a cold key")
    ap.add_argument("--hot-keys", type=int, default=2)
    ap.add_argument("--hot-frac", type=float, default=0.8)
    ap.add_argument("--read-frac", type=float, default=0.5)
    ap.add_argument("--min-ops", type=int, default=None, help="default 2 (list-append), 2 (predicate)")
    ap.add_argument("--max-ops", type=int, default=None, help="default 6 (list-append), 5 (predicate)")
    ap.add_argument("--groups", type=int, default=4, help="predicate: number of groups g")
    ap.add_argument("--hot-group-frac", type=float, default=0.5,
                    help="predicate: share of ops on group 0 (the rest uniform)")
    ap.add_argument("--target", type=int, default=8,
                    help="predicate: rows per group the inserts/deletes aim at")
    ap.add_argument("--mix", default=None,
                    help="micro-op weights; list-append default %s (plain: a read or an append by "
                         "--read-frac), predicate default grp=20,cti=18,ins=12,del=12,mov=8,rng=8,kgt=6,pt=6,lim=10"
                         % LA_DEFAULT_MIX)
    ap.add_argument("--sp-frac", type=float, default=0.15,
                    help="predicate: share of predicate reads run inside a savepoint that is rolled "
                         "back right after the read")
    ap.add_argument("--infer-window", type=float, default=0.05,
                    help="predicate: resolve ambiguous absences of rows deleted within this many "
                         "seconds of the reader (0: never)")
    ap.add_argument("--scan-mix", default=None,
                    help="predicate: per-transaction scan mode weights, default "
                         "index=50,default=20,seq=15,bitmap=15")
    ap.add_argument("--think-ms", type=float, default=0.5,
                    help="random pause of up to this many ms after each op (widens races)")
    ap.add_argument("--ro-frac", type=float, default=0.05,
                    help="share of the transactions that are long read-only ones (0: none)")
    ap.add_argument("--ro-mix", default=RO_DEFAULT_MIX,
                    help="how read-only transactions begin: begin (BEGIN READ ONLY), set (SET TRANSACTION "
                         "READ ONLY), rr (REPEATABLE READ READ ONLY), default (default_transaction_read_only), "
                         "auto (one autocommit SELECT); default %(default)s")
    ap.add_argument("--ro-min-stmts", type=int, default=3)
    ap.add_argument("--ro-max-stmts", type=int, default=6)
    ap.add_argument("--ro-stmt-mix", default=None,
                    help="read-only statements; list-append default %s (k = ANY(keys), a range of keys, "
                         "the whole table), predicate default %s" % (LA_RO_DEFAULT_STMT_MIX,
                                                                     "grp=30,rng=15,all=15,kgt=15,cnt=25"))
    ap.add_argument("--ro-keys", type=int, default=160,
                    help="list-append: most keys one read-only any/range statement reads (at least a quarter)")
    ap.add_argument("--ro-scan-mix", default=RO_DEFAULT_SCAN_MIX,
                    help="read-only transactions' scan modes (SET LOCAL), default %(default)s")
    ap.add_argument("--ro-think-ms", type=float, default=20.0,
                    help="random pause of up to this many ms between a read-only transaction's statements")
    ap.add_argument("--ro-aborts-ok", action="store_true",
                    help="do not fail on read-only transactions that abort (automatic when "
                         "fpsketch.timestamp_snapshots is off and the protocol is not mvto)")
    ap.add_argument("--tpc-frac", type=float, default=0.15,
                    help="share of the read-write transactions that end with PREPARE TRANSACTION and are "
                         "resolved by COMMIT/ROLLBACK PREPARED (0: none; off when max_prepared_transactions = 0)")
    ap.add_argument("--tpc-rollback-frac", type=float, default=0.25,
                    help="share of those resolved by ROLLBACK PREPARED")
    ap.add_argument("--tpc-same-frac", type=float, default=0.25,
                    help="share of those committed from the connection that prepared them (the rest: "
                         "from the client's second connection)")
    ap.add_argument("--tpc-hold-ms", type=float, default=3.0,
                    help="random pause of up to this between PREPARE TRANSACTION and its resolution")
    ap.add_argument("--vacuum-every", type=float, default=0.0,
                    help="VACUUM the table every this many seconds during the run (0: never)")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--statement-timeout-ms", type=int, default=10000)
    ap.add_argument("--deadlock-timeout-ms", type=int, default=10,
                    help="session deadlock_timeout (superuser only; heap deadlocks otherwise cost 1 s)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--set", action="append", metavar="GUC=VALUE",
                    help="session setting for every client (repeatable)")
    ap.add_argument("--session-order", action="store_true",
                    help="also require each client's transactions to serialize in the order it ran "
                         "them (strong session serializability; extra check class 'session')")
    ap.add_argument("--expect-anomaly", action="store_true",
                    help="positive control: pass only if some anomaly is found")
    ap.add_argument("--history", metavar="FILE",
                    help="write the whole history as JSON lines")
    ap.add_argument("--save-on-failure", metavar="DIR", default=None,
                    help="on anomalies, write the history and findings under DIR")
    ap.add_argument("--max-report", type=int, default=5,
                    help="findings printed per class")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 30)
    pred = args.workload == "predicate"
    if args.table is None:
        args.table = "pr" if pred else "la"
    if args.min_ops is None:
        args.min_ops = 2
    if args.max_ops is None:
        args.max_ops = 5 if pred else 6
    if not (0 <= args.tpc_frac <= 1 and 0 <= args.tpc_rollback_frac and 0 <= args.tpc_same_frac
            and args.tpc_rollback_frac + args.tpc_same_frac <= 1 and args.tpc_hold_ms >= 0):
        ap.error("bad --tpc-* parameters")
    if args.ro_frac < 0 or args.ro_min_stmts < 1 or args.ro_max_stmts < args.ro_min_stmts:
        ap.error("bad read-only transaction parameters")
    try:
        args.ro_mix_parsed = parse_mix(args.ro_mix, RO_VARIANTS)
        args.ro_scan_mix_parsed = parse_mix(args.ro_scan_mix, list(SCAN_OFF))
    except ValueError as e:
        ap.error("bad --ro-mix/--ro-scan-mix: %s" % e)
    if pred:
        if args.clients < 1 or args.min_ops < 1 or args.max_ops < args.min_ops:
            ap.error("bad workload parameters")
        if args.session_order:
            ap.error("--session-order is for the list-append workload")
        import predicate
        args.mix = args.mix or predicate.DEFAULT_MIX
        args.scan_mix = args.scan_mix or predicate.DEFAULT_SCAN_MIX
        args.ro_stmt_mix = args.ro_stmt_mix or getattr(predicate, "RO_DEFAULT_STMT_MIX", None)
        return predicate.main(args)
    if args.keys < 1 or args.clients < 1 or args.min_ops < 1 or args.max_ops < args.min_ops \
            or args.cold_keys < 0:
        ap.error("bad workload parameters")
    args.nrows = args.keys + args.cold_keys
    args.mix = args.mix or LA_DEFAULT_MIX
    args.ro_stmt_mix = args.ro_stmt_mix or LA_RO_DEFAULT_STMT_MIX
    try:
        args.mix_parsed = parse_mix(args.mix, LA_OP_KINDS)
        args.ro_stmt_mix_parsed = parse_mix(args.ro_stmt_mix, LA_RO_STMT_KINDS)
    except ValueError as e:
        ap.error("bad --mix/--ro-stmt-mix: %s" % e)

    tag = "heap RC control" if args.expect_anomaly else args.am
    print("checker[%s]: am=%s clients=%d keys=%d+%d cold@%.2f hot=%d@%.2f reads=%.2f ops=%d-%d mix=%s think=%.1fms "
          "seconds=%g seed=%d"
          % (tag, args.am, args.clients, args.keys, args.cold_keys, args.cold_frac, args.hot_keys, args.hot_frac,
             args.read_frac, args.min_ops, args.max_ops, args.mix, args.think_ms, args.seconds, args.seed))
    print("checker[%s]: read-only transactions %.2f of all: start %s, %d-%d statements of %s, up to %d keys "
          "each, scans %s, think up to %gms%s"
          % (tag, args.ro_frac, args.ro_mix, args.ro_min_stmts, args.ro_max_stmts, args.ro_stmt_mix,
             args.ro_keys, args.ro_scan_mix, args.ro_think_ms,
             "; VACUUM every %gs" % args.vacuum_every if args.vacuum_every > 0 else ""))
    sys.stdout.flush()

    try:
        server = setup_table(args)
        settings = server_settings(args)
    except (SetupError, psycopg2.Error) as e:
        print("checker[%s]: SETUP ERROR: %s" % (tag, e))
        print("checker: 0 passed, 1 failed")
        return 2
    args.ro_aborts_ok = ro_aborts_allowed(args, settings)
    print("checker[%s]: server %s; %s" % (tag, server.split(",")[0], settings_text(settings, args)))

    stats0 = fps_stats(args)
    shared = Shared()
    shared.tpc = TwoPhase(args, server_max_prepared(args))
    shared.chains = Chains(range(args.nrows))
    shared.sql = la_sql(args.table, args.keys)
    t0 = time.time()
    deadline = t0 + args.seconds
    threads = [threading.Thread(target=client_main, args=(c, args, shared, deadline, t0), daemon=True)
               for c in range(args.clients)]
    if args.vacuum_every > 0:
        threads.append(threading.Thread(target=vacuum_main, args=(args, shared, deadline), daemon=True))
    for th in threads:
        th.start()
    hung = False
    for th in threads:
        th.join(max(1.0, deadline - time.time()) + args.statement_timeout_ms / 1000.0 + 15)
        if th.is_alive():
            hung = True
    elapsed = time.time() - t0
    stats1 = fps_stats(args)

    if shared.fatal:
        for cid, tb in shared.fatal:
            print("checker[%s]: client %d crashed:\n%s" % (tag, cid, tb))
        print("checker: 0 passed, 1 failed")
        return 2
    if hung:
        print("checker[%s]: a client did not finish (hung past statement_timeout)" % tag)
        print("checker: 0 passed, 1 failed")
        return 2

    try:
        # before the final read, which a prepared transaction left behind
        # would make wait
        tpc_problems = tpc_final_check(args, shared.tpc)
        final = read_final(args)
    except (psycopg2.Error, SetupError) as e:
        print("checker[%s]: reading the final state failed: %s" % (tag, e))
        print("checker: 0 passed, 1 failed")
        return 2

    txns = [t for t in shared.txns if t.status is not None]
    try:
        an = Analysis(txns, final, shared.chains.chain, args)
        an.run()
    except SetupError as e:
        print("checker[%s]: UNEXPECTED: %s" % (tag, e))
        print("checker: 0 passed, 1 failed")
        return 2

    st = collections.Counter(t.status for t in txns)
    codes = collections.Counter(t.sqlstate for t in txns if t.status == "aborted")
    ncommitted = len(an.committed)
    nappends = sum(1 for t in txns for op in t.ops if op[0] == "a" and t.id in an.committed)
    print("checker[%s]: %.1f s, transactions attempted %d, committed %d, aborted %d (%s), "
          "unknown %d, errors %d; %.0f commits/s"
          % (tag, elapsed, len(txns), ncommitted, st["aborted"],
             ", ".join("%s: %d" % (c, n) for c, n in sorted(codes.items(), key=lambda x: str(x[0]))) or "-",
             sum(1 for t in shared.txns if t.status == "unknown"), st["error"],
             ncommitted / max(elapsed, 1e-9)))
    print("checker[%s]: checked %d committed transactions, %d reads, %d committed appends, "
          "final list lengths %s; edges ww %d, wr %d (%d from picks' bounds), rw %d"
          % (tag, ncommitted, an.nreads, nappends,
             [len(final[k]) for k in sorted(final)], an.ecount["ww"], an.ecount["wr"], an.npick_edges,
             an.ecount["rw"]))
    c = shared.counts
    print("checker[%s]: new ops run: savepoint reads %d (client %d, function %d, DO %d; %d with a "
          "rolled-back append; %d 40001/40P01 caught in the savepoint), picks %d (%d committed), "
          "self-joins %d"
          % (tag, c["sp_client"] + c["sp_function"] + c["sp_do"], c["sp_client"], c["sp_function"],
             c["sp_do"], c["sp_rolled_back_appends"], c["sp_caught"], c["pick"], an.npicks, c["join"]))
    for line in ro_summary(txns, an.committed):
        print("checker[%s]: %s" % (tag, line))
    print("checker[%s]: %s" % (tag, shared.tpc.summary()))
    for msg in tpc_problems:
        print("checker[%s]: two-phase commit: FAILED: %s" % (tag, msg))
    diff = stats_diff(stats0, stats1, lambda k: k in TS_STATS)
    if diff is not None:
        print("checker[%s]: fpsketch_stats during the run: %s; VACUUMs %d"
              % (tag, ", ".join("%s %d" % kv for kv in diff) or "-", shared.counts["vacuum"]))
    print("checker[%s]: cycles G0 %d, G1c %d, G2 %d%s (SCCs; %d through a pick's bound; %d of %d SCCs "
          "with a read-only transaction)"
          % (tag, an.cycle_counts["G0"], an.cycle_counts["G1c"], an.cycle_counts["G2"],
             ", session %d" % an.cycle_counts[SESSION_CLASS] if an.session else "", an.pick_sccs,
             an.ro_sccs, an.sccs))

    failed_classes = [c for c in an.classes if an.findings[c]]
    byid_all = {t.id: t for t in txns}
    for c in an.classes:
        f = an.findings[c]
        if not f:
            print("  %-19s none" % c)
            continue
        print("  %-19s %s (%d finding%s)" % (c, "FOUND" if c not in NON_ANOMALY_CLASSES else "FAILED",
                                              len(f), "" if len(f) == 1 else "s"))
        for msg in f[:args.max_report]:
            print("      " + msg)
        if c in an.example_cycles:
            for u, _, _ in an.example_cycles[c][2]:
                print("        " + byid_all[u].describe(an.final, cycle_focus(an.example_cycles[c], u, an.ekey)))
        if len(f) > args.max_report:
            print("      ... %d more" % (len(f) - args.max_report))

    if failed_classes and an.involved and not args.expect_anomaly:
        byid = {t.id: t for t in txns}
        print("checker[%s]: transactions involved (up to 20; long ones cut short):" % tag)
        for tid in sorted(an.involved)[:20]:
            if tid in byid:
                print("    " + byid[tid].describe(an.chain_lists))

    if args.history:
        with open(args.history, "w") as fh:
            for t in txns:
                fh.write(json.dumps(t.to_json()) + "\n")
    anomaly_classes = [c for c in an.classes if c not in NON_ANOMALY_CLASSES]
    if args.save_on_failure and any(an.findings[c] for c in anomaly_classes) and not args.expect_anomaly \
            or args.save_on_failure and any(an.findings[c] for c in NON_ANOMALY_CLASSES):
        os.makedirs(args.save_on_failure, exist_ok=True)
        base = os.path.join(args.save_on_failure, "la-%s-seed%d" % (args.am, args.seed))
        with open(base + ".history.jsonl", "w") as fh:
            for t in txns:
                fh.write(json.dumps(t.to_json()) + "\n")
        with open(base + ".findings.json", "w") as fh:
            json.dump({"args": {k: v for k, v in vars(args).items() if not k.endswith("_parsed")}, "final": {str(k): v for k, v in final.items()},
                       "chains": {str(k): v for k, v in an.chain_lists.items()},
                       "findings": an.findings,
                       "involved": [byid[t].to_json() for t in sorted(an.involved) if t in byid]
                       if an.involved else []}, fh, indent=1)
        print("checker[%s]: history saved to %s.*" % (tag, base))

    if args.expect_anomaly:
        detected = [c for c in anomaly_classes if an.findings[c]]
        checks = [("anomaly detected (%s)" % (", ".join(detected) or "none"), bool(detected)),
                  ("no unexpected errors", not an.findings["errors"]),
                  ("no read-only transaction aborted", not an.findings["ro-abort"]),
                  ("transactions committed", ncommitted > 0),
                  ("two-phase commit ran, nothing left", not tpc_problems)]
        npass = sum(1 for _, ok in checks if ok)
        for name, ok in checks:
            print("  control: %-40s %s" % (name, "ok" if ok else "FAILED"))
        print("checker: %d passed, %d failed" % (npass, len(checks) - npass))
        return 0 if npass == len(checks) else 1

    checks_failed = len(failed_classes)
    if ncommitted == 0:
        print("checker[%s]: no transaction committed: nothing was checked" % tag)
        checks_failed += 1
    if args.ro_frac > 0 and not any(t.ro and t.id in an.committed for t in txns):
        print("checker[%s]: no read-only transaction committed: timestamp snapshots were not checked" % tag)
        checks_failed += 1
    checks_failed += len(tpc_problems)
    tpc_passed = 1 if shared.tpc.frac > 0 and not tpc_problems else 0
    print("checker: %d passed, %d failed" % (len(an.classes) - len(failed_classes) + tpc_passed, checks_failed))
    return 1 if checks_failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        print("checker: 0 passed, 1 failed")
        sys.exit(2)
