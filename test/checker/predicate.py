"""
Predicate workload of the checker (`la_checker.py --workload predicate`):
inserts, deletes, key-changing updates and predicate reads, so that phantom
anomalies are in scope.

Table `pr (g int, k int, v int, PRIMARY KEY (g, k))` USING fpsketch or heap,
initially empty, with a few groups g (0 .. --groups-1, group 0 hot).  Every
row is a *slot* (g, k): k comes from a global counter, so every INSERT writes
a slot nobody ever wrote before; a row is deleted or moved only by a
transaction that first claimed it, among the rows whose insert a client has
seen commit, and a move never goes back to a group the row has been in.  So
every slot is inserted by exactly one transaction attempt and deleted by at
most one committed transaction: its versions are

    absent  ->  present (inserter I)  ->  deleted (deleter D, optional)

Micro-ops (2-5 per transaction by default, groups skewed):

    grp   SELECT k FROM pr WHERE g = $g [AND k > $x]
          (index: equality-prefix read of (g), with or without a range on k)
    cti   count-then-insert: the grp read, then INSERT into g only if the
          group had fewer than a random cap of rows (the write-skew classic)
    ins   INSERT INTO pr VALUES ($g, $new_k, $txn)
    del   DELETE FROM pr WHERE g = $g AND k = $k          (a claimed row)
    mov   UPDATE pr SET g = $g2 WHERE g = $g AND k = $k   (a claimed row;
          a primary-key change, so a non-HOT update: delete of slot (g,k),
          insert of slot (g2,k))
    rng   SELECT g, k FROM pr WHERE g BETWEEN $a AND $b   (relation-key read)
    kgt   SELECT g, k FROM pr WHERE k > $x                (all groups)
    pt    SELECT k FROM pr WHERE g = $g AND k = $k        (unique lookup of a
          recently allocated slot, often absent: an absent-key read)

Each transaction runs with a random scan mode (SET LOCAL): index scans only,
sequential scans only, bitmap scans only, or the planner's choice, so group
reads go through equality-prefix keys as well as relation keys.

A share of the reads (--sp-frac, 0.15) runs inside a SAVEPOINT that is
rolled back right after the read: the rows the client saw count all the
same (a count-then-insert may decide on them).

Analysis.  A read with predicate P that returned the row set S is, for every
slot s matching P, an observation of one of s's versions:

    s in S                  it read I's version:  I -wr-> T, and T -rw-> D
                            when a committed D deleted s later
    s not in S, s never     it read the absent version before I:
    deleted by a committed  T -rw-> I
    transaction
    s not in S, s deleted   ambiguous (before I, or after D): no direct
    by a committed D != T   edge, but see the inference below

plus I -ww-> D for every slot.  Inference for ambiguous absences whose D
ended within --infer-window seconds of T (a filter only): if the certain
edges already give a path I -> T (up to two steps), T cannot have read the
absent version before I, so D -wr-> T; if they give T -> D, then T -rw-> I.
If the history were serializable every inferred edge would hold, so a cycle
through inferred edges still proves non-serializability.  The reader's own writes are not
observations: its inserts (and move targets) must be in S and its deletes
(and move sources) must not ("internal").  A slot that the reader deletes
later in the same transaction and that is missing from S can only have been
read before I: T -rw-> I, which closes a cycle with I -ww-> T.  Cycles are
found with the same Tarjan machinery as list-append: G0 (ww), G1c (ww/wr
with a wr), G2 (with an rw edge; G-single when exactly one).  Other classes:

    G1a          a committed read saw a row of an aborted insert, or the
                 final table holds one
    internal     a read disagrees with the transaction's own earlier writes
                 (or sees a row the transaction itself inserts only later)
    incompatible a read returned a row outside its predicate, a row twice,
                 or a row nobody inserted; two committed deletes of a slot
    lost-write   a committed insert missing from the final table without a
                 committed delete, or a committed delete still present
    count-mismatch
                 a read-only transaction counted a group's rows (cnt) and
                 read that group's rows in another statement, and the two
                 disagree: it saw two states
    ro-abort     a read-only transaction failed with 40001/40P01
    errors       any SQL error but 40001/40P01, a wrong row count

Long read-only transactions (--ro-frac, la_checker.run_read_only): several
statements, each a predicate read of the table or a count, with pauses:

    grp   SELECT g, k FROM pr WHERE g = $g
    rng   SELECT g, k FROM pr WHERE g BETWEEN $a AND $b
    all   SELECT g, k FROM pr                              (every group)
    kgt   SELECT g, k FROM pr WHERE k > $x
    cnt   SELECT g, count(*) FROM pr WHERE g BETWEEN $a AND $b GROUP BY g,
          or SELECT count(*) FROM pr (a third of them; an index-only scan
          when the scan mode forbids sequential scans)

Their row reads are ordinary observations (with the statement's index as an
eighth field); a count is recorded as ["c", glo, ghi, {g: n} or None, total]
and checked against every row read of the same transaction that covers its
groups completely (a transaction with a count always has an `all` read).
"""

import bisect
import collections
import json
import os
import random
import sys
import threading
import time
import traceback

import psycopg2

import la_checker as lc

CLASSES = ["G0", "G1a", "G1c", "G2", "internal", "incompatible", "lost-write", "count-mismatch",
           "ro-abort", "errors"]
NON_ANOMALY_CLASSES = lc.NON_ANOMALY_CLASSES
RO_STMT_KINDS = ["grp", "rng", "all", "kgt", "cnt"]
RO_DEFAULT_STMT_MIX = "grp=30,rng=15,all=15,kgt=15,cnt=25"

OP_KINDS = ["grp", "cti", "ins", "del", "mov", "rng", "kgt", "pt", "lim"]
DEFAULT_MIX = "grp=20,cti=18,ins=12,del=12,mov=8,rng=8,kgt=6,pt=6,lim=10"

SCAN_MODES = {
    "index": "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off",
    "seq": "SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off",
    "bitmap": "SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off",
    "default": None,
}
DEFAULT_SCAN_MIX = "index=50,default=20,seq=15,bitmap=15"


# op and scan mixes: "name=weight,..." (shared with list-append)
parse_mix = lc.parse_mix
weighted = lc.weighted


# --------------------------------------------------------------------------
# history
# --------------------------------------------------------------------------
#
# ops:  ["i", g, k]            insert slot (g,k)
#       ["d", g, k]            delete slot (g,k)
#       ["m", g1, g2, k]       move: delete (g1,k), insert (g2,k)
#       ["r", kind, glo, ghi, kmin, kexact, rows(, "s<i>", [t0, t1])]
#                              read of g in [glo,ghi] (and k > kmin, k = kexact
#                              when not None); rows = sorted [[g,k],...];
#                              "s<i>": statement i of a read-only transaction,
#                              which ran from t0 to t1 (run-relative seconds)
#       ["c", glo, ghi, counts, total]
#                              read-only count of the rows of groups glo..ghi:
#                              counts = [[g, n], ...] (groups without rows left
#                              out) or None (only the total asked for)

def matches(op, g, k):
    if op[1] == "lim":      # op[5] is the largest k a LIMIT read covers, or None
        return (op[2] <= g <= op[3] and (op[4] is None or k > op[4])
                and (op[5] is None or k <= op[5]))
    return (op[2] <= g <= op[3] and (op[4] is None or k > op[4])
            and (op[5] is None or k == op[5]))


def op_writes(op):
    """(inserted slots, deleted slots) of a write op."""
    if op[0] == "i":
        return [(op[1], op[2])], []
    if op[0] == "d":
        return [], [(op[1], op[2])]
    if op[0] == "m":
        return [(op[2], op[3])], [(op[1], op[3])]
    return [], []


def fmt_pred(op):
    kind, glo, ghi, kmin, kexact = op[1:6]
    if kind == "lim":
        return "g=%d,k>%s,k<=%s" % (glo, kmin, kexact)
    if kexact is not None:
        return "g%d,k%d" % (glo, kexact)
    if glo == ghi:
        s = "g=%d" % glo
    elif kind == "kgt":
        s = ""
    else:
        s = "g%d..%d" % (glo, ghi)
    if kmin is not None:
        s += ("," if s else "") + "k>%d" % kmin
    return s


def fmt_rows(op, maxn=12):
    rows = op[6]
    if rows is None:
        return "?"
    if op[5] is not None and op[1] != "lim":
        return "present" if rows else "absent"
    one = op[2] == op[3]
    items = [str(k) if one else "%d:%d" % (g, k) for g, k in rows]
    if len(items) > maxn:
        items = items[:maxn - 1] + ["..+%d" % (len(items) - maxn + 1)]
    return "{" + ",".join(items) + "}"


def fmt_slot(s):
    if len(s) > 2:
        return "g%d/k%d, inferred" % s[:2]
    return "g%d/k%d" % s


def describe(t, limit=24):
    parts = []
    for op in t.ops[:limit]:
        if op[0] == "c":
            parts.append("%s-cnt[g%d..%d]=%s" % (
                op[5] if len(op) > 5 else "?", op[1], op[2],
                "{%s}" % ",".join("%d:%d" % (g, n) for g, n in op[3]) if op[3] is not None
                else "total %d" % op[4]))
        elif op[0] == "i":
            parts.append("i(%d,%d)" % (op[1], op[2]))
        elif op[0] == "d":
            parts.append("d(%d,%d)" % (op[1], op[2]))
        elif op[0] == "m":
            parts.append("m(%d->%d,%d)" % (op[1], op[2], op[3]))
        else:
            parts.append("%s%s[%s]=%s" % (op[7] + "-" if len(op) > 7 else "", op[1], fmt_pred(op),
                                          fmt_rows(op)))
    if len(t.ops) > limit:
        parts.append("(+%d ops)" % (len(t.ops) - limit))
    st = t.status
    if t.sqlstate:
        st += " " + t.sqlstate
    if getattr(t, "ro", None):
        info = t.ro_info or {}
        st += ", read-only %s, %s statements, %s rows" % (t.ro, info.get("stmts", "?"), info.get("rows", "?"))
        scan = info.get("scan", "?")
    else:
        scan = getattr(t, "scan", "?") or "?"
    if getattr(t, "tpc", None):
        st += ", 2PC %s %s" % (t.tpc[0], t.tpc[1])
    return "T%d [client %d, %s, %s scan, %.4f..%.4f] %s" % (
        t.id, t.client, st, scan, t.t_start or 0, t.t_end or 0,
        " ".join(parts))


class PTxn(lc.Txn):
    __slots__ = ("scan",)

    def __init__(self, tid, client):
        lc.Txn.__init__(self, tid, client)
        self.scan = None

    def to_json(self):
        d = lc.Txn.to_json(self)
        d["scan"] = self.scan
        return d

    def describe(self, *_):
        return describe(self)


# --------------------------------------------------------------------------
# database
# --------------------------------------------------------------------------

def setup_table(args):
    try:
        conn = lc.connect(args, autocommit=True)
    except psycopg2.Error as e:
        raise lc.SetupError("cannot connect: %s" % str(e).strip())
    try:
        cur = conn.cursor()
        if args.am == "fpsketch":
            cur.execute("CREATE EXTENSION IF NOT EXISTS fpsketch")
        lc.rollback_orphaned_prepared(cur)
        cur.execute("DROP TABLE IF EXISTS %s" % args.table)
        cur.execute("CREATE TABLE %s (g int NOT NULL, k int NOT NULL, v int NOT NULL, "
                    "PRIMARY KEY (g, k)) USING %s" % (args.table, args.am))
        cur.execute("SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam "
                    "WHERE c.oid = %s::regclass", (args.table,))
        am = cur.fetchone()[0]
        if am != args.am:
            raise lc.SetupError("table %s uses access method %s, not %s" % (args.table, am, args.am))
        cur.execute("SELECT version()")
        server = cur.fetchone()[0]
    except psycopg2.Error as e:
        raise lc.SetupError("setup failed: %s" % str(e).strip())
    finally:
        conn.close()
    return server


def read_final(args):
    conn = lc.connect(args, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute("SELECT g, k FROM %s" % args.table)
        rows = cur.fetchall()
    finally:
        conn.close()
    final = set()
    for g, k in rows:
        if (g, k) in final:
            raise lc.SetupError("final read: row (%d,%d) twice" % (g, k))
        final.add((g, k))
    return final


fps_stats = lc.fps_stats


# --------------------------------------------------------------------------
# workload
# --------------------------------------------------------------------------

class Shared(object):
    def __init__(self, args):
        self.lock = threading.Lock()
        self.next_id = 0
        self.txns = []
        self.fatal = []
        self.next_k = 1
        self.live = {g: set() for g in range(args.groups)}   # committed, unclaimed
        self.visited = {}        # k -> groups its slots were ever attempted in
        self.recent = collections.deque(maxlen=48)           # recently allocated slots
        self.sp_reads = 0        # reads inside a rolled-back savepoint
        self.counts = collections.Counter()

    def count(self, what):
        with self.lock:
            self.counts[what] += 1

    def new_txn(self, client):
        with self.lock:
            t = PTxn(self.next_id, client)
            self.next_id += 1
            self.txns.append(t)
            return t

    def alloc(self, g):
        with self.lock:
            k = self.next_k
            self.next_k += 1
            self.visited[k] = {g}
            self.recent.append((g, k))
            return k

    def live_count(self, g):
        with self.lock:
            return len(self.live[g])

    def live_total(self):
        with self.lock:
            return sum(len(x) for x in self.live.values())

    def claim(self, g, rng, move_groups=None):
        """Take a committed, unclaimed row of group g; for a move also pick
        a target group it has never been in.  Returns (k, g2) or None."""
        with self.lock:
            if not self.live[g]:
                return None
            cands = sorted(self.live[g])
            for _ in range(4):
                k = rng.choice(cands)
                if move_groups is None:
                    self.live[g].discard(k)
                    return k, None
                free = [x for x in move_groups if x not in self.visited[k]]
                if free:
                    g2 = rng.choice(free)
                    self.live[g].discard(k)
                    self.visited[k].add(g2)
                    self.recent.append((g2, k))
                    return k, g2
            return None

    def settle(self, committed, claimed, added):
        """After a transaction: committed -> its new slots become claimable;
        aborted -> its claims are released.  (Unknown outcome: neither.)"""
        with self.lock:
            if committed:
                for g, k in added:
                    self.live[g].add(k)
            else:
                for g, k in claimed:
                    self.live[g].add(k)

    def recent_slot(self, rng):
        with self.lock:
            if not self.recent:
                return None
            return rng.choice(self.recent)

    def k_high(self):
        with self.lock:
            return self.next_k


def pick_group(rng, args):
    if rng.random() < args.hot_group_frac:
        return 0
    return rng.randrange(args.groups)


def plan_ro(rng, args, variant):
    """A long read-only transaction: (scan mode, statements), see the
    docstring.  One statement (never a count) for "auto"; a transaction
    with a count also reads every group (`all`), to check the count on."""
    n = 1 if variant == "auto" else rng.randint(args.ro_min_stmts, args.ro_max_stmts)
    last = args.groups - 1
    stmts = []
    for _ in range(n):
        kind = weighted(rng, args.ro_stmt_mix_parsed)
        if variant == "auto" and kind == "cnt":
            kind = "all"
        g = pick_group(rng, args)
        span = rng.randint(1, max(1, last))
        lo = max(0, min(g, last - span))
        if kind == "grp":
            stmts.append(("grp", g, g))
        elif kind == "rng":
            stmts.append(("rng", lo, lo + span))
        elif kind == "all":
            stmts.append(("all", 0, last))
        elif kind == "kgt":
            stmts.append(("kgt", 0, last))
        elif rng.random() < 1.0 / 3:
            stmts.append(("cnt", 0, last, True))
        else:
            stmts.append(("cnt", lo, lo + span, False))
    if any(st[0] == "cnt" for st in stmts) and not any(st[0] == "all" for st in stmts):
        stmts.insert(rng.randint(0, len(stmts)), ("all", 0, last))
    return weighted(rng, args.ro_scan_mix_parsed), stmts


def run_ro(conn, t, plan, rng, args, shared, phase):
    """Run the read-only transaction plan (plan_ro) and record its reads."""
    tbl = args.table
    scan, stmts = plan
    t.ro_info = {"scan": scan, "stmts": 0, "rows": 0}

    def run_stmt(cur, i, st):
        kind, glo, ghi = st[:3]
        where = "s%d" % i
        ts = time.time() - shared.t0
        if kind == "cnt":
            if st[3]:
                cur.execute("SELECT count(*) FROM %s" % tbl)
                total = cur.fetchone()[0]
                op = ["c", glo, ghi, None, total, where]
            else:
                cur.execute("SELECT g, count(*) FROM %s WHERE g BETWEEN %%s AND %%s GROUP BY g" % tbl, (glo, ghi))
                counts = sorted([g, n] for g, n in cur.fetchall())
                total = sum(n for _, n in counts)
                op = ["c", glo, ghi, counts, total, where]
            t.ro_info["rows"] += total
        else:
            kmin = None
            if kind == "grp":
                cur.execute("SELECT g, k FROM %s WHERE g = %%s" % tbl, (glo,))
            elif kind == "kgt":
                kmin = shared.k_high() - rng.randint(1, 6 * args.target)
                cur.execute("SELECT g, k FROM %s WHERE k > %%s" % tbl, (kmin,))
            elif kind == "all":
                cur.execute("SELECT g, k FROM %s" % tbl)
            else:
                cur.execute("SELECT g, k FROM %s WHERE g BETWEEN %%s AND %%s" % tbl, (glo, ghi))
            rows = sorted([g, k] for g, k in cur.fetchall())
            op = ["r", kind, glo, ghi, kmin, None, rows, where, [ts, time.time() - shared.t0]]
            t.ro_info["rows"] += len(rows)
        t.ro_info["stmts"] += 1
        t.ops.append(op)

    lc.run_read_only(conn, t.ro, scan, stmts, run_stmt, args.ro_think_ms / 1000.0, rng, phase)


def client_main(cid, args, shared, deadline, t0):
    rng = random.Random(args.seed * 1000003 + cid)
    conn = None
    tbl = args.table
    groups = list(range(args.groups))
    tpc = lc.TwoPhaseClient(args, shared.tpc, cid)
    try:
        while time.time() < deadline:
            if conn is None or conn.closed:
                conn = lc.connect(args)
                lc.session_setup(conn, args)
            cur = conn.cursor()
            t = shared.new_txn(cid)
            ro_plan = None
            tpc_mode = None
            if args.ro_frac > 0 and rng.random() < args.ro_frac:
                t.ro = weighted(rng, args.ro_mix_parsed)
                ro_plan = plan_ro(rng, args, t.ro)
            else:
                tpc_mode = tpc.choose(rng)
            t.scan = weighted(rng, args.scan_mix_parsed)
            nops = rng.randint(args.min_ops, args.max_ops)
            claimed = []     # slots taken from the live pool
            added = []       # slots that become live if we commit
            t.t_start = time.time() - t0
            phase = "op"

            def read(kind, glo, ghi, kmin=None, kexact=None):
                op = ["r", kind, glo, ghi, kmin, kexact, None]
                t.ops.append(op)
                # in a savepoint rolled back after the read: what the client
                # saw counts all the same
                in_sp = rng.random() < args.sp_frac
                if in_sp:
                    cur.execute("SAVEPOINT pr_sp")
                if kind == "lim":
                    # ORDER BY k LIMIT n under the equality prefix: the read
                    # covers k <= the last row returned when it got n rows
                    cur.execute("SELECT g, k FROM %s WHERE g = %%s AND k > %%s ORDER BY k LIMIT %%s"
                                % tbl, (glo, kmin, kexact))
                    got = cur.fetchall()
                    op[5] = got[-1][1] if len(got) == kexact else None
                    op[6] = sorted([g, k] for g, k in got)
                elif kexact is not None:
                    cur.execute("SELECT g, k FROM %s WHERE g = %%s AND k = %%s" % tbl, (glo, kexact))
                elif glo == ghi:
                    if kmin is None:
                        cur.execute("SELECT g, k FROM %s WHERE g = %%s" % tbl, (glo,))
                    else:
                        cur.execute("SELECT g, k FROM %s WHERE g = %%s AND k > %%s" % tbl, (glo, kmin))
                elif kind == "kgt":
                    cur.execute("SELECT g, k FROM %s WHERE k > %%s" % tbl, (kmin,))
                else:
                    cur.execute("SELECT g, k FROM %s WHERE g BETWEEN %%s AND %%s" % tbl, (glo, ghi))
                if kind != "lim":
                    op[6] = sorted([g, k] for g, k in cur.fetchall())
                if in_sp:
                    cur.execute("ROLLBACK TO SAVEPOINT pr_sp")
                    cur.execute("RELEASE SAVEPOINT pr_sp")
                    with shared.lock:
                        shared.sp_reads += 1
                return op[6]

            def insert(g):
                k = shared.alloc(g)
                t.ops.append(["i", g, k])
                cur.execute("INSERT INTO %s (g, k, v) VALUES (%%s, %%s, %%s)" % tbl, (g, k, t.id))
                added.append((g, k))

            def delete(g):
                c = shared.claim(g, rng)
                if c is None:
                    return False
                k = c[0]
                claimed.append((g, k))
                t.ops.append(["d", g, k])
                cur.execute("DELETE FROM %s WHERE g = %%s AND k = %%s" % tbl, (g, k))
                if cur.rowcount == 0:
                    found_none(g, k)
                elif cur.rowcount != 1:
                    raise RuntimeError("delete of (%d,%d) deleted %d rows" % (g, k, cur.rowcount))
                return True

            def found_none(g, k):
                """The DELETE or move of a claimed row found no row: its
                scan saw the slot absent.  The claim ensures the insert
                committed before, in real time, but a transaction may be
                ordered before it (MVTO: a timestamp from before the insert
                committed).  A read of an absent row, for the analysis."""
                t.ops[-1] = ["r", "pt", g, g, None, k, []]
                claimed.remove((g, k))
                shared.settle(False, [(g, k)], [])
                shared.count("write_found_none")

            def move(g):
                c = shared.claim(g, rng, groups)
                if c is None:
                    return False
                k, g2 = c
                claimed.append((g, k))
                t.ops.append(["m", g, g2, k])
                cur.execute("UPDATE %s SET g = %%s WHERE g = %%s AND k = %%s" % tbl, (g2, g, k))
                if cur.rowcount == 0:
                    found_none(g, k)
                    return True
                if cur.rowcount != 1:
                    raise RuntimeError("move of (%d,%d) to group %d updated %d rows"
                                       % (g, k, g2, cur.rowcount))
                added.append((g2, k))
                return True

            try:
                if ro_plan is not None:
                    ph = ["op"]
                    try:
                        run_ro(conn, t, ro_plan, rng, args, shared, ph)
                    finally:
                        phase = ph[0]
                else:
                    setting = SCAN_MODES[t.scan]
                    if setting:
                        cur.execute(setting)
                    for _ in range(nops):
                        kind = weighted(rng, args.mix_parsed)
                        g = pick_group(rng, args)
                        if kind == "grp":
                            kmin = None
                            if rng.random() < 0.25:
                                kmin = shared.k_high() - rng.randint(1, 4 * args.target)
                            read("grp", g, g, kmin)
                        elif kind == "cti":
                            rows = read("grp", g, g)
                            if len(rows) < rng.randint(args.target // 2, 2 * args.target):
                                insert(g)
                        elif kind == "ins":
                            n = shared.live_count(g)
                            if n < 2 * args.target or not delete(g):
                                insert(g)
                        elif kind in ("del", "mov"):
                            n = shared.live_count(g)
                            done = False
                            if n > args.target // 2:
                                done = move(g) if kind == "mov" else delete(g)
                            if not done:
                                if shared.live_total() < args.groups * args.target:
                                    insert(g)
                                else:
                                    read("grp", g, g)   # keep the table small
                        elif kind == "rng":
                            span = rng.randint(1, max(1, args.groups - 1))
                            lo = max(0, min(g, args.groups - 1 - span))
                            read("rng", lo, lo + span)
                        elif kind == "kgt":
                            read("kgt", 0, args.groups - 1,
                                 shared.k_high() - rng.randint(1, 6 * args.target))
                        elif kind == "lim":
                            kmin = shared.k_high() - rng.randint(1, 8 * args.target)
                            if rng.random() < 0.3:
                                kmin = -1
                            read("lim", g, g, kmin, rng.randint(1, 3))
                        elif kind == "pt":
                            s = shared.recent_slot(rng)
                            if s is None or rng.random() < 0.1:
                                s = (g, shared.k_high() + rng.randint(0, 3))   # maybe inserted soon
                            read("pt", s[0], s[0], None, s[1])
                        if args.think_ms > 0:
                            time.sleep(rng.random() * args.think_ms / 1000.0)
                    ph = ["commit"]
                    try:
                        tpc.end_transaction(conn, t, tpc_mode, rng, ph)
                    finally:
                        phase = ph[0]
                t.status = "committed"
            except lc.RolledBackPrepared:
                t.status = "aborted"
                t.sqlstate = "rollback-prepared"
                t.error = "ROLLBACK PREPARED"
            except psycopg2.Error as e:
                code = e.pgcode
                t.sqlstate = code
                if code is None or conn.closed:
                    t.status = "unknown" if phase == "commit" else "aborted"
                    t.error = str(e).strip()
                    try:
                        conn.close()
                    except Exception:
                        pass
                    conn = None
                elif code in lc.ABORT_CODES:
                    t.status = "aborted"
                    detail = getattr(getattr(e, "diag", None), "message_detail", None)
                    t.error = ("%s: " % phase) + (detail or str(e.pgerror or e).strip().split("\n")[0])
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
            # a read that did not complete has no value
            if t.ops and t.ops[-1][0] == "r" and t.ops[-1][6] is None:
                t.ops.pop()
            if t.status == "committed":
                shared.settle(True, claimed, added)
            elif t.status in ("aborted", "error"):
                shared.settle(False, claimed, added)
            t.t_end = time.time() - t0
            tpc.end()
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

class Analysis(object):
    def __init__(self, txns, final, args=None):
        self.txns = txns
        self.final = set(tuple(s) for s in final)
        self.args = args
        self.classes = list(CLASSES)
        self.findings = {c: [] for c in self.classes}
        self.cycle_counts = {"G0": 0, "G1c": 0, "G2": 0}
        self.example_cycles = {}
        self.involved = set()
        self.nreads = collections.Counter()
        self.nambiguous = 0
        self.ninferred = 0
        self.infer_budget = getattr(args, "infer_budget", 5000000) if args is not None else 5000000
        self.infer_exhausted = False
        self.ecount = collections.Counter()
        self.committed = set()
        self.ncounts = 0
        self.sccs = self.ro_sccs = 0

    def add(self, cls, msg, tids=()):
        self.findings[cls].append(msg)
        self.involved.update(tids)

    def check_counts(self, txns, committed):
        """A count of a transaction that writes nothing against its row reads
        that cover the counted groups: one state, one number."""
        self.ncounts = 0
        for t in txns:
            if t.id not in committed:
                continue
            cnts = [op for op in t.ops if op[0] == "c"]
            if not cnts or any(op[0] in ("i", "d", "m") for op in t.ops):
                continue
            reads = [op for op in t.ops if op[0] == "r" and op[4] is None and op[5] is None
                     and op[6] is not None]
            for c in cnts:
                self.ncounts += 1
                glo, ghi, counts, total = c[1:5]
                for r in reads:
                    if not (r[2] <= glo and ghi <= r[3]):
                        continue
                    per = collections.Counter(g for g, _ in r[6] if glo <= g <= ghi)
                    if counts is None:
                        ok = total == sum(per.values())
                        got = "total %d" % total
                        saw = "%d rows" % sum(per.values())
                    else:
                        cd = dict((g, n) for g, n in counts)
                        ok = all(cd.get(g, 0) == per.get(g, 0) for g in range(glo, ghi + 1))
                        got = "{%s}" % ",".join("%d:%d" % (g, cd.get(g, 0)) for g in range(glo, ghi + 1))
                        saw = "{%s}" % ",".join("%d:%d" % (g, per.get(g, 0)) for g in range(glo, ghi + 1))
                    if not ok:
                        self.add("count-mismatch",
                                 "committed read-only T%d counted groups %d..%d = %s (statement %s) but read "
                                 "[%s] = %s (statement %s)"
                                 % (t.id, glo, ghi, got, c[5][1:] if len(c) > 5 else "?", fmt_pred(r), saw,
                                    r[7][1:] if len(r) > 7 else "?"), [t.id])

    def run(self):
        txns = self.txns
        final = self.final
        byid = {t.id: t for t in txns}

        for t in txns:
            if t.status == "error":
                self.add("errors", "T%d: %s %s" % (t.id, t.sqlstate or "", t.error), [t.id])
        # read-only transactions never fail for a serialization reason
        if not getattr(self.args, "ro_aborts_ok", False):
            for t in txns:
                if getattr(t, "ro", None) and t.status == "aborted" and t.sqlstate in lc.ABORT_CODES:
                    self.add("ro-abort", "read-only T%d (%s) failed with %s: %s"
                             % (t.id, t.ro, t.sqlstate, t.error), [t.id])

        # who wrote which slot
        ins_by = {}                                  # slot -> txn id (attempt)
        del_by = collections.defaultdict(list)       # slot -> txn ids (attempts)
        wrote = collections.defaultdict(lambda: ([], []))   # tid -> (inserted, deleted)
        for t in txns:
            for op in t.ops:
                ins, dels = op_writes(op)
                for s in ins:
                    if s in ins_by:
                        raise lc.SetupError("slot %s inserted twice by the workload" % fmt_slot(s))
                    ins_by[s] = t.id
                    wrote[t.id][0].append(s)
                for s in dels:
                    del_by[s].append(t.id)
                    wrote[t.id][1].append(s)

        # unknown outcomes, from the final table
        for t in txns:
            if t.status != "unknown":
                continue
            ins, dels = wrote[t.id]
            if any(s in final for s in ins) or any(s not in final for s in dels):
                t.status = "committed"
            else:
                t.status = "aborted"
        committed = set(t.id for t in txns if t.status == "committed")
        self.committed = committed

        deleter = {}                                  # slot -> committed deleter
        for s, tids in del_by.items():
            c = [x for x in tids if x in committed]
            if len(c) > 1:
                self.add("incompatible", "slot %s deleted by committed T%d and T%d"
                         % (fmt_slot(s), c[0], c[1]), c)
            if c:
                deleter[s] = c[0]

        # final table
        for s in final:
            i = ins_by.get(s)
            if i is None:
                self.add("incompatible", "final table has row %s that nobody inserted" % fmt_slot(s))
            elif i not in committed:
                self.add("G1a", "final table has row %s of aborted T%d (%s)"
                         % (fmt_slot(s), i, byid[i].sqlstate), [i])
            if s in deleter:
                self.add("lost-write", "committed T%d deleted %s, but it is in the final table"
                         % (deleter[s], fmt_slot(s)), [deleter[s]])
        for s, i in ins_by.items():
            if i in committed and s not in final and s not in deleter:
                self.add("lost-write", "committed T%d inserted %s: not in the final table, "
                         "no committed delete" % (i, fmt_slot(s)), [i])

        # final rows by group, sorted by k, for predicate enumeration
        fin_by_g = collections.defaultdict(list)
        for g, k in final:
            fin_by_g[g].append(k)
        for g in fin_by_g:
            fin_by_g[g].sort()

        window = getattr(self.args, "infer_window", 0.05) if self.args is not None else 0.05
        if window is not None and window <= 0:
            window = None
        del_by_g = collections.defaultdict(list)     # (deleter's end time, slot) by group
        for s, d in deleter.items():
            del_by_g[s[0]].append((byid[d].t_end or 0.0, s))
        del_t_by_g = {}
        for g in del_by_g:
            del_by_g[g].sort()
            del_t_by_g[g] = [x[0] for x in del_by_g[g]]
        ambiguous = collections.defaultdict(set)     # tid -> {(slot, I, D)}

        edges = collections.defaultdict(lambda: collections.defaultdict(set))
        ekey = {}

        def edge(a, b, typ, slot):
            if a == b or a not in committed or b not in committed:
                return
            if typ not in edges[a][b]:
                edges[a][b].add(typ)
                ekey[(a, b, typ)] = slot
                self.ecount[typ] += 1

        for s, d in deleter.items():
            i = ins_by.get(s)
            if i is not None:
                edge(i, d, "ww", s)

        for t in txns:
            is_c = t.id in committed
            who = "%s T%d" % ("committed" if is_c else "aborted", t.id)
            own_ins = set()
            own_del = set()
            later_del = set(wrote[t.id][1]) if t.id in wrote else set()
            for op in t.ops:
                if op[0] != "r":
                    ins, dels = op_writes(op)
                    own_ins.update(ins)
                    own_del.update(dels)
                    later_del.difference_update(dels)
                    continue
                rows = op[6]
                if rows is None:
                    continue
                self.nreads[op[1]] += 1
                pred = fmt_pred(op)
                seen = set()
                bad = False
                for g, k in rows:
                    s = (g, k)
                    if s in seen:
                        self.add("incompatible", "%s read [%s]: row %s twice" % (who, pred, fmt_slot(s)),
                                 [t.id])
                        bad = True
                    seen.add(s)
                    if not matches(op, g, k):
                        self.add("incompatible", "%s read [%s]: row %s does not match"
                                 % (who, pred, fmt_slot(s)), [t.id])
                        bad = True
                if bad:
                    continue
                # own writes
                for s in own_ins:
                    if matches(op, *s) and s not in seen and s not in own_del:
                        self.add("internal", "%s read [%s] = %s without its own insert %s"
                                 % (who, pred, fmt_rows(op), fmt_slot(s)), [t.id])
                for s in seen:
                    if s in own_del:
                        self.add("internal", "%s read [%s] = %s, including %s it had deleted"
                                 % (who, pred, fmt_rows(op), fmt_slot(s)), [t.id])
                # rows seen
                for s in seen:
                    if s in own_ins or s in own_del:
                        continue
                    i = ins_by.get(s)
                    if i is None:
                        self.add("incompatible", "%s read [%s]: row %s that nobody inserted"
                                 % (who, pred, fmt_slot(s)), [t.id])
                        continue
                    if i == t.id:
                        self.add("internal", "%s read [%s]: row %s it inserts only later"
                                 % (who, pred, fmt_slot(s)), [t.id])
                        continue
                    if not is_c:
                        continue
                    if i not in committed:
                        self.add("G1a", "committed T%d read [%s]: row %s of aborted T%d (%s)"
                                 % (t.id, pred, fmt_slot(s), i, byid[i].sqlstate), [t.id, i])
                        continue
                    edge(i, t.id, "wr", s)
                    d = deleter.get(s)
                    if d is not None:
                        edge(t.id, d, "rw", s)
                if not is_c:
                    continue
                # rows not seen: committed and never deleted (= in the final table)
                for g in range(op[2], op[3] + 1):
                    ks = fin_by_g.get(g)
                    if not ks:
                        continue
                    if op[1] == "lim":
                        lo = bisect.bisect_right(ks, op[4]) if op[4] is not None else 0
                        hi = bisect.bisect_right(ks, op[5]) if op[5] is not None else len(ks)
                        cand = ks[lo:hi]
                    elif op[5] is not None:
                        cand = [op[5]] if (g, op[5]) in final else []
                    elif op[4] is not None:
                        cand = ks[bisect.bisect_right(ks, op[4]):]
                    else:
                        cand = ks
                    for k in cand:
                        s = (g, k)
                        if s in seen or s in own_ins or s in own_del:
                            continue
                        i = ins_by.get(s)
                        if i is None or i == t.id or s in deleter:
                            continue      # reported above / own later insert
                        edge(t.id, i, "rw", s)
                # rows not seen that this transaction deletes later: they
                # were read before their insert (which cannot be)
                for s in later_del:
                    if matches(op, *s) and s not in seen:
                        i = ins_by.get(s)
                        if i is not None and i != t.id:
                            edge(t.id, i, "rw", s)
                # rows not seen, deleted by another committed transaction:
                # ambiguous (read before the insert, or after the delete).
                # Those deleted around the time T ran are kept for inference.
                if window is None:
                    continue
                # a long read-only transaction's statement: when it ran
                span = op[8] if len(op) > 8 else (t.t_start, t.t_end)
                for g in range(op[2], op[3] + 1):
                    times = del_t_by_g.get(g)
                    if not times:
                        continue
                    lst = del_by_g[g]
                    lo = bisect.bisect_left(times, span[0] - window)
                    hi = bisect.bisect_right(times, span[1] + window)
                    for j in range(lo, hi):
                        s = lst[j][1]
                        if s in seen or s in own_ins or s in own_del or not matches(op, *s):
                            continue
                        d = deleter[s]
                        i = ins_by.get(s)
                        if d == t.id or i is None or i == t.id or i not in committed:
                            continue
                        ambiguous[t.id].add((s, i, d))
        self.nambiguous = sum(len(v) for v in ambiguous.values())
        self.check_counts(txns, committed)

        # Inference for the ambiguous absences: if the certain edges already
        # put I before T, T cannot have read the absent version before I, so
        # it read D's deletion: D -wr-> T.  If they put T before D, it cannot
        # have read D's deletion: T -rw-> I.  Were the history serializable,
        # every inferred edge would hold, so a cycle still proves it is not.
        # (Ancestors and descendants up to two steps: cheap, and enough for
        # the common case of an inserter seen by a reader that T saw.)
        if ambiguous:
            preds = collections.defaultdict(set)
            for a, outs in edges.items():
                for b in outs:
                    preds[b].add(a)
            budget = [self.infer_budget]

            def path2(a, b):
                """a -> b or a -> x -> b in the certain edges."""
                outs = edges.get(a)
                if not outs:
                    return False
                if b in outs:
                    return True
                ins = preds.get(b)
                if not ins:
                    return False
                if len(outs) <= len(ins):
                    budget[0] -= len(outs)
                    return any(x in ins for x in outs)
                budget[0] -= len(ins)
                return any(x in outs for x in ins)

            # closest in time first, in case the budget runs out
            work = sorted(((abs((byid[d].t_end or 0.0) - (byid[tid].t_start or 0.0)), tid, s, i, d)
                           for tid, obs in ambiguous.items() for s, i, d in obs),
                          key=lambda x: x[0])
            inferred = []
            def path1(a, b):
                """a -> b in the certain edges."""
                outs = edges.get(a)
                return bool(outs) and b in outs

            for _, tid, s, i, d in work:
                if budget[0] <= 0:
                    self.infer_exhausted = True
                    break
                # a long read-only transaction has hundreds of edges in and
                # out: one step only there, or its paths eat the budget
                path = path1 if byid[tid].ro else path2
                if path(d, tid):
                    continue            # D before T already: nothing new
                if path(i, tid):
                    inferred.append((d, tid, "wr", s))
                elif path(tid, i):
                    continue            # T before I already: nothing new
                elif path(tid, d):
                    inferred.append((tid, i, "rw", s))
            for a, b, typ, s in inferred:
                if typ not in edges[a][b]:
                    self.ninferred += 1
                edge(a, b, typ, s + ("inferred",))
        self.edges = edges

        nodes = sorted(committed)
        specs = [("G0", {"ww"}, "ww"), ("G1c", {"ww", "wr"}, "wr"), ("G2", {"ww", "wr", "rw"}, "rw")]
        for cls, count, example, txt in lc.find_cycles(nodes, edges, specs, ekey, fmt_slot):
            self.cycle_counts[cls] = count
            if example:
                self.example_cycles[cls] = example
                self.add(cls, "%d SCC(s) with a %s cycle; example %s" % (count, cls, txt),
                         [u for u, _, _ in example[2]])
        self.sccs, self.ro_sccs = lc.ro_scc_counts(nodes, edges, txns)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main(args):
    try:
        args.mix_parsed = parse_mix(args.mix, OP_KINDS)
        args.scan_mix_parsed = parse_mix(args.scan_mix, list(SCAN_MODES))
        args.ro_stmt_mix_parsed = parse_mix(args.ro_stmt_mix, RO_STMT_KINDS)
    except ValueError as e:
        print("checker: bad --mix/--scan-mix: %s" % e)
        print("checker: 0 passed, 1 failed")
        return 2
    if args.groups < 2 or args.target < 2:
        print("checker: need --groups >= 2 and --target >= 2")
        print("checker: 0 passed, 1 failed")
        return 2
    tag = ("heap RC control" if args.expect_anomaly else args.am) + ", predicate"
    print("checker[%s]: am=%s clients=%d groups=%d hot=%.2f target=%d ops=%d-%d mix=%s scans=%s "
          "sp=%.2f think=%.1fms seconds=%g seed=%d"
          % (tag, args.am, args.clients, args.groups, args.hot_group_frac, args.target,
             args.min_ops, args.max_ops, args.mix, args.scan_mix, args.sp_frac, args.think_ms,
             args.seconds, args.seed))
    print("checker[%s]: read-only transactions %.2f of all: start %s, %d-%d statements of %s, scans %s, "
          "think up to %gms%s"
          % (tag, args.ro_frac, args.ro_mix, args.ro_min_stmts, args.ro_max_stmts, args.ro_stmt_mix,
             args.ro_scan_mix, args.ro_think_ms,
             "; VACUUM every %gs" % args.vacuum_every if args.vacuum_every > 0 else ""))
    sys.stdout.flush()

    try:
        server = setup_table(args)
        settings = lc.server_settings(args)
    except (lc.SetupError, psycopg2.Error) as e:
        print("checker[%s]: SETUP ERROR: %s" % (tag, e))
        print("checker: 0 passed, 1 failed")
        return 2
    args.ro_aborts_ok = lc.ro_aborts_allowed(args, settings)
    print("checker[%s]: server %s; %s" % (tag, server.split(",")[0], lc.settings_text(settings, args)))

    stats0 = fps_stats(args)
    shared = Shared(args)
    shared.tpc = lc.TwoPhase(args, lc.server_max_prepared(args))
    t0 = time.time()
    shared.t0 = t0
    deadline = t0 + args.seconds
    threads = [threading.Thread(target=client_main, args=(c, args, shared, deadline, t0), daemon=True)
               for c in range(args.clients)]
    if args.vacuum_every > 0:
        threads.append(threading.Thread(target=lc.vacuum_main, args=(args, shared, deadline), daemon=True))
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
        tpc_problems = lc.tpc_final_check(args, shared.tpc)
        final = read_final(args)
    except (psycopg2.Error, lc.SetupError) as e:
        print("checker[%s]: reading the final state failed: %s" % (tag, e))
        print("checker: 0 passed, 1 failed")
        return 2

    txns = [t for t in shared.txns if t.status is not None]
    ta = time.time()
    try:
        an = Analysis(txns, final, args)
        an.run()
    except lc.SetupError as e:
        print("checker[%s]: UNEXPECTED: %s" % (tag, e))
        print("checker: 0 passed, 1 failed")
        return 2

    st = collections.Counter(t.status for t in txns)
    codes = collections.Counter(t.sqlstate for t in txns if t.status == "aborted")
    ncommitted = len(an.committed)
    nw = collections.Counter(op[0] for t in txns if t.id in an.committed for op in t.ops if op[0] != "r")
    print("checker[%s]: %.1f s, transactions attempted %d, committed %d, aborted %d (%s; %.1f%%), "
          "unknown %d, errors %d; %.0f commits/s"
          % (tag, elapsed, len(txns), ncommitted, st["aborted"],
             ", ".join("%s: %d" % (c, n) for c, n in sorted(codes.items(), key=lambda x: str(x[0]))) or "-",
             100.0 * st["aborted"] / max(1, len(txns)),
             sum(1 for t in shared.txns if t.status == "unknown"), st["error"],
             ncommitted / max(elapsed, 1e-9)))
    if stats0 and stats1:
        diff = [(k, stats1[k] - stats0[k]) for k in stats1
                if (k.startswith("aborts_") or k.startswith("phantom_") or k in lc.TS_STATS
                    or k == "snapshot_refreshes")
                and isinstance(stats1[k], int) and stats1[k] - stats0[k]]
        print("checker[%s]: fpsketch_stats during the run: %s"
              % (tag, ", ".join("%s %d" % kv for kv in diff) or "-"))
    print("checker[%s]: checked %d committed transactions: reads %s (of all attempts, %d ran in a rolled-back savepoint); "
          "committed inserts %d, deletes %d, "
          "moves %d; final rows %d; edges ww %d, wr %d, rw %d; ambiguous absences %d (near their delete), %d edges inferred from them"
          % (tag, ncommitted, dict(sorted(an.nreads.items())), shared.sp_reads, nw["i"], nw["d"], nw["m"], len(final),
             an.ecount["ww"], an.ecount["wr"], an.ecount["rw"], an.nambiguous, an.ninferred))
    for line in lc.ro_summary(txns, an.committed):
        print("checker[%s]: %s" % (tag, line))
    print("checker[%s]: %s" % (tag, shared.tpc.summary()))
    for msg in tpc_problems:
        print("checker[%s]: two-phase commit: FAILED: %s" % (tag, msg))
    if any(t.ro for t in txns):
        print("checker[%s]: read-only counts checked %d; VACUUMs %d" % (tag, an.ncounts, shared.counts["vacuum"]))
    if shared.counts["write_found_none"]:
        print("checker[%s]: deletes and moves of a claimed row that found no row (recorded as reads of "
              "its absence): %d" % (tag, shared.counts["write_found_none"]))
    print("checker[%s]: cycles G0 %d, G1c %d, G2 %d (SCCs; %d of %d SCCs with a read-only transaction); "
          "analysis %.1f s%s"
          % (tag, an.cycle_counts["G0"], an.cycle_counts["G1c"], an.cycle_counts["G2"], an.ro_sccs, an.sccs,
             time.time() - ta,
             " (inference budget exhausted)" if an.infer_exhausted else ""))

    byid = {t.id: t for t in txns}
    failed_classes = [c for c in an.classes if an.findings[c]]
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
                print("        " + describe(byid[u]))
        if len(f) > args.max_report:
            print("      ... %d more" % (len(f) - args.max_report))

    if failed_classes and an.involved and not args.expect_anomaly:
        print("checker[%s]: transactions involved (up to 20):" % tag)
        for tid in sorted(an.involved)[:20]:
            if tid in byid:
                print("    " + describe(byid[tid]))

    if args.history:
        with open(args.history, "w") as fh:
            for t in txns:
                fh.write(json.dumps(t.to_json()) + "\n")
    anomaly_classes = [c for c in an.classes if c not in NON_ANOMALY_CLASSES]
    if args.save_on_failure and (any(an.findings[c] for c in anomaly_classes) and not args.expect_anomaly
                                 or any(an.findings[c] for c in NON_ANOMALY_CLASSES)):
        os.makedirs(args.save_on_failure, exist_ok=True)
        base = os.path.join(args.save_on_failure, "pr-%s-seed%d" % (args.am, args.seed))
        with open(base + ".history.jsonl", "w") as fh:
            for t in txns:
                fh.write(json.dumps(t.to_json()) + "\n")
        with open(base + ".findings.json", "w") as fh:
            json.dump({"args": {k: v for k, v in vars(args).items() if not k.endswith("_parsed")},
                       "final": sorted(final), "findings": an.findings,
                       "involved": [byid[t].to_json() for t in sorted(an.involved) if t in byid]},
                      fh, indent=1)
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
