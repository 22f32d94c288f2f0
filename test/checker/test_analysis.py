#!/usr/bin/python3
"""
Self-test of la_checker's analyses (list-append, and the predicate workload
of predicate.py): hand-made histories, one per anomaly class, must be flagged
in exactly that class (plus the classes the anomaly necessarily implies), and
serializable histories must pass.  No database.
Prints `checker-selftest: N passed, M failed`; exit 0 if all passed.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import la_checker as lc  # noqa: E402
import predicate as pr  # noqa: E402


def mk(tid, status, ops, client=0):
    """ops: ("a", key, elem), ("r", key, list read[, where]), ("x", key,
    elem) (an append rolled back with its savepoint), ("p", key, list read,
    keys) (a pick from keys that returned key), ("e", what, ...) (a bad
    result); reads are recorded through Chains.observe in the order the
    transactions are listed, as the clients would."""
    t = lc.Txn(tid, client)
    t.ops = [list(o) for o in ops]
    t.status = status
    t.t_start = t.t_end = 0.0
    return t


class SessionArgs(object):
    session_order = True


def analyse(txns, final, args=None):
    chains = lc.Chains(final.keys())
    for t in txns:
        own = {}
        recorded = []
        for op in t.ops:
            if op[0] == "a":
                own.setdefault(op[1], []).append(op[2])
                recorded.append(op)
            elif op[0] in ("x", "e"):
                recorded.append(op)
            else:
                s = lc.elems_str(op[2])
                rec = [op[0], op[1]] + chains.observe(op[1], s, own.get(op[1], [])) + op[3:]
                recorded.append(rec)
        t.ops = recorded
    an = lc.Analysis(txns, final, chains.chain, args)
    an.run()
    for t in txns:
        t.describe(an.chain_lists)
        t.describe()
        t.describe(an.chain_lists, focus={0}, limit=1)
    return an


def found(an):
    return set(c for c in an.classes if an.findings[c])


CASES = []


def case(name, expect, args=None):
    def deco(fn):
        CASES.append((name, expect, fn, args))
        return fn
    return deco


@case("serializable history", set())
def _():
    return [mk(0, "committed", [("a", 0, 1), ("a", 1, 2)]),
            mk(1, "committed", [("r", 0, [1]), ("r", 1, [2]), ("a", 0, 3)]),
            mk(2, "committed", [("r", 0, [1, 3]), ("r", 1, [2])]),
            mk(3, "aborted", [("r", 0, [1]), ("a", 1, 4)]),
            mk(4, "committed", [("r", 0, []), ("r", 1, [])]),
            mk(5, "committed", [("a", 1, 5), ("r", 1, [2, 5])])], \
        {0: [1, 3], 1: [2, 5]}


@case("G0 write cycle", {"G0"})
def _():
    # T0 before T1 on key 0, T1 before T0 on key 1
    return [mk(0, "committed", [("a", 0, 1), ("a", 1, 2)]),
            mk(1, "committed", [("a", 0, 3), ("a", 1, 4)])], \
        {0: [1, 3], 1: [4, 2]}


@case("G1a aborted read", {"G1a"})
def _():
    return [mk(0, "aborted", [("a", 0, 1)]),
            mk(1, "committed", [("r", 0, [1])])], \
        {0: []}


@case("G1a aborted write in final state", {"G1a"})
def _():
    return [mk(0, "aborted", [("a", 0, 1)])], {0: [1]}


@case("G1b intermediate read", {"G1b"})
def _():
    return [mk(0, "committed", [("a", 0, 1), ("a", 0, 2)]),
            mk(1, "committed", [("r", 0, [1])])], \
        {0: [1, 2]}


@case("G1c circular information flow", {"G1c"})
def _():
    # T1 reads T0's append to key 0, T0 reads T1's append to key 1
    return [mk(0, "committed", [("a", 0, 1), ("r", 1, [2])]),
            mk(1, "committed", [("a", 1, 2), ("r", 0, [1])])], \
        {0: [1], 1: [2]}


@case("G-single read skew", {"G2"})
def _():
    # T0 reads key 0 before T1's append, key 1 after it
    return [mk(0, "committed", [("r", 0, []), ("r", 1, [3])]),
            mk(1, "committed", [("a", 0, 2), ("a", 1, 3)])], \
        {0: [2], 1: [3]}


@case("G2 write skew", {"G2"})
def _():
    return [mk(0, "committed", [("r", 0, []), ("r", 1, []), ("a", 0, 1)]),
            mk(1, "committed", [("r", 0, []), ("r", 1, []), ("a", 1, 2)])], \
        {0: [1], 1: [2]}


@case("internal: own append not visible", {"internal"})
def _():
    return [mk(0, "committed", [("a", 0, 1), ("r", 0, [])])], {0: [1]}


@case("internal: a read goes back behind an earlier one (aborted)", {"internal"})
def _():
    # T2 saw [1, 2], then [1] again (a reread handing back an older version)
    return [mk(0, "committed", [("a", 0, 1)]),
            mk(1, "committed", [("a", 0, 2)]),
            mk(2, "aborted", [("r", 0, [1, 2]), ("r", 0, [1], "do")])], \
        {0: [1, 2]}


@case("no finding: a reread of the same version, then a newer one", set())
def _():
    return [mk(0, "committed", [("a", 0, 1)]),
            mk(1, "committed", [("a", 0, 2)]),
            mk(2, "aborted", [("r", 0, [1]), ("r", 0, [1], "sp"), ("r", 0, [1, 2])])], \
        {0: [1, 2]}


@case("incompatible order", {"incompatible-order"})
def _():
    return [mk(0, "committed", [("a", 0, 1)]),
            mk(1, "committed", [("a", 0, 2)]),
            mk(2, "committed", [("r", 0, [2])])], \
        {0: [1, 2]}


@case("incompatible reads (neither a prefix of the other)", {"incompatible-order"})
def _():
    return [mk(0, "committed", [("a", 0, 1)]),
            mk(1, "committed", [("a", 0, 2)]),
            mk(2, "committed", [("r", 0, [1])]),
            mk(3, "committed", [("r", 0, [2])])], \
        {0: [1, 2]}


@case("G1a read with own appends on top", {"G1a"})
def _():
    return [mk(0, "aborted", [("a", 0, 1)]),
            mk(1, "committed", [("a", 0, 2), ("r", 0, [1, 2])])], \
        {0: [1, 2]}


@case("own appends not contiguous in final", {"incompatible-order"})
def _():
    return [mk(0, "committed", [("a", 0, 1), ("r", 0, [1])]),
            mk(1, "committed", [("a", 0, 2)])], \
        {0: [2, 1]}


@case("aborted reader of own appends", set())
def _():
    return [mk(0, "committed", [("a", 0, 1)]),
            mk(1, "aborted", [("a", 0, 5), ("r", 0, [1, 5]), ("a", 0, 6), ("r", 0, [1, 5, 6])])], \
        {0: [1]}


@case("session order: stale read in the client's next transaction", {"session"}, SessionArgs)
def _():
    # client 0 appends 1 to key 0, then its next transaction reads key 0 empty
    return [mk(0, "committed", [("a", 0, 1)], client=0),
            mk(1, "committed", [("r", 0, [])], client=0)], \
        {0: [1]}


@case("session order: same history without the flag", set())
def _():
    return [mk(0, "committed", [("a", 0, 1)], client=0),
            mk(1, "committed", [("r", 0, [])], client=0)], \
        {0: [1]}


@case("lost append", {"lost-append"})
def _():
    return [mk(0, "committed", [("a", 0, 1)]),
            mk(1, "committed", [("a", 0, 2)])], \
        {0: [2]}


@case("unexpected error", {"errors"})
def _():
    t = mk(0, "error", [("a", 0, 1)])
    t.sqlstate = "57014"
    t.error = "canceling statement due to statement timeout"
    return [t], {0: []}


@case("unknown outcome resolved from final state", set())
def _():
    return [mk(0, "unknown", [("a", 0, 1)]),
            mk(1, "committed", [("r", 0, [1])]),
            mk(2, "unknown", [("a", 0, 2)])], \
        {0: [1]}


# savepoints: reads inside rolled-back subtransactions count, their appends
# must never be seen

@case("savepoints: serializable history", set())
def _():
    return [mk(0, "committed", [("a", 0, 1)]),
            mk(1, "committed", [("r", 0, [1], "sp"), ("x", 1, 9), ("a", 1, 2)]),
            mk(2, "committed", [("r", 1, [2], "fn"), ("x", 0, 8), ("r", 0, [1], "do")]),
            mk(3, "aborted", [("x", 0, 7), ("a", 0, 6)])], \
        {0: [1], 1: [2]}


@case("savepoints: a rolled-back read still counts (write skew)", {"G2"})
def _():
    return [mk(0, "committed", [("r", 0, [], "sp"), ("a", 1, 1)]),
            mk(1, "committed", [("r", 1, [], "fn"), ("a", 0, 2)])], \
        {0: [2], 1: [1]}


@case("savepoints: a rolled-back append read by a committed transaction", {"G1a"})
def _():
    return [mk(0, "committed", [("x", 0, 5), ("a", 1, 1)]),
            mk(1, "committed", [("r", 0, [5])])], \
        {0: [], 1: [1]}


@case("savepoints: a rolled-back append in the final state", {"G1a"})
def _():
    return [mk(0, "committed", [("x", 0, 5), ("a", 0, 1)])], {0: [5, 1]}


# pick: SELECT ... WHERE k = ANY(keys) ORDER BY <elements>, k LIMIT 1 FOR
# UPDATE returned (key, list): every other key of keys held at least as many
# elements (more if it is the smaller key)

@case("pick: serializable history", set())
def _():
    # counts (1,1): T1 takes 0; (2,1): T2 takes 1; (2,2): T3 takes 0
    return [mk(0, "committed", [("a", 0, 1), ("a", 1, 2)]),
            mk(1, "committed", [("p", 0, [1], [0, 1]), ("a", 0, 3), ("r", 1, [2])]),
            mk(2, "committed", [("p", 1, [2], [0, 1]), ("a", 1, 4), ("r", 0, [1, 3])]),
            mk(3, "committed", [("p", 0, [1, 3], [0, 1]), ("a", 0, 5), ("r", 1, [2, 4])])], \
        {0: [1, 3, 5], 1: [2, 4]}


def pick_reevaluated(read_other):
    """Bug 1: T1 and T2 both take key 0 at counts (1,1); T2 appends first and
    T1, re-evaluated on T2's version, returns key 0 with 2 elements while key
    1 has 1 (it should have returned key 1).  T3 later takes key 1."""
    t1 = [("p", 0, [1, 3], [0, 1]), ("a", 0, 5)] + ([("r", 1, [2])] if read_other else [])
    return [mk(0, "committed", [("a", 0, 1), ("a", 1, 2)]),
            mk(2, "committed", [("p", 0, [1], [0, 1]), ("a", 0, 3)]),
            mk(1, "committed", t1),
            mk(3, "committed", [("p", 1, [2], [0, 1]), ("a", 1, 4)])], \
        {0: [1, 3, 5], 1: [2, 4]}


@case("pick: re-evaluated on a newer version, then reads the other key (G-single)", {"G2"})
def _():
    # T3 -wr(bound: key 1 has 2)-> T1 -rw(read key 1 = [2])-> T3
    return pick_reevaluated(True)


@case("pick: the same without the read of the other key is serializable", set())
def _():
    # T0 T2 T3 T1: T1 then sees counts (2,2) and takes key 0
    return pick_reevaluated(False)


@case("pick: bound met only by an append after the picker's (G1c)", {"G1c"})
def _():
    # T1 takes key 1 at (?,1): key 0 must have had 2, and T2 appended that
    # element; T2 also appended to key 1 after T1
    return [mk(0, "committed", [("a", 0, 1), ("a", 1, 2)]),
            mk(1, "committed", [("p", 1, [2], [0, 1]), ("a", 1, 3)]),
            mk(2, "committed", [("a", 1, 4), ("a", 0, 5)])], \
        {0: [1, 5], 1: [2, 3, 4]}


@case("pick: a key never as long as the bound", {"bad-result"})
def _():
    return [mk(0, "committed", [("a", 0, 1)]),
            mk(1, "committed", [("p", 0, [1], [0, 1]), ("a", 0, 2)])], \
        {0: [1, 2], 1: []}


@case("pick: the bound falls on the picker's own later append", {"bad-result"})
def _():
    # T1 saw key 1 empty, yet took key 0 with one element
    return [mk(0, "committed", [("a", 0, 1)]),
            mk(1, "committed", [("p", 0, [1], [0, 1]), ("a", 0, 2), ("a", 1, 3)])], \
        {0: [1, 2], 1: [3]}


@case("pick: own appends before the pick count toward the bound", set())
def _():
    # T1's view: key 0 [1], key 1 [2] (its own): a tie, key 0
    return [mk(0, "committed", [("a", 0, 1)]),
            mk(1, "committed", [("a", 1, 2), ("p", 0, [1], [0, 1]), ("a", 0, 3)])], \
        {0: [1, 3], 1: [2]}


@case("pick: no row", {"bad-result"})
def _():
    return [mk(0, "committed", [("e", "pick", [0, 1], 0)])], {0: [], 1: []}


@case("pick: bound not met in an aborted transaction", set())
def _():
    return [mk(0, "committed", [("a", 0, 1)]),
            mk(1, "aborted", [("p", 0, [1], [0, 1]), ("a", 0, 2)])], \
        {0: [1], 1: []}


# join: SELECT ... FROM la a JOIN la b ON b.k = partner(a) WHERE a.k = $1
# FOR UPDATE: reads of a and b; the partner always exists

@case("join: no row", {"bad-result"})
def _():
    return [mk(0, "committed", [("a", 0, 1)]),
            mk(1, "committed", [("e", "join", 0, 0), ("a", 0, 2)])], \
        {0: [1, 2]}


@case("join: wrong partner", {"bad-result"})
def _():
    return [mk(0, "committed", [("e", "join-partner", 0, 3, 1), ("r", 0, []), ("r", 3, [])])], \
        {0: [], 3: []}


@case("join: no row in an aborted transaction", set())
def _():
    return [mk(0, "aborted", [("e", "join", 0, 0)])], {0: []}


# long read-only transactions: several statements, each read recorded with
# its statement ("s<i>", a seventh field); all of them from one state

def ro(tid, status, ops, variant="begin", sqlstate=None):
    t = mk(tid, status, ops)
    t.ro = variant
    t.ro_info = {"scan": "index", "stmts": 1 + max([int(o[3][1:]) for o in ops if o[0] == "r"] or [0]),
                 "rows": sum(1 for o in ops if o[0] == "r")}
    t.sqlstate = sqlstate
    t.error = "op: could not serialize access" if sqlstate else None
    return t


class RoAbortsOk(object):
    ro_aborts_ok = True


@case("read-only: one state across statements", set())
def _():
    return [mk(0, "committed", [("a", 0, 1), ("a", 1, 2)]),
            ro(1, "committed", [("r", 0, [1], "s0"), ("r", 1, [2], "s0"), ("r", 2, [], "s0"),
                                ("r", 1, [2], "s1"), ("r", 0, [1], "s2"), ("r", 2, [], "s2")]),
            mk(2, "committed", [("a", 2, 3), ("a", 0, 4)]),
            ro(3, "committed", [("r", 2, [3], "s0"), ("r", 0, [1, 4], "s1")], "rr")], \
        {0: [1, 4], 1: [2], 2: [3]}


@case("read-only: a later statement sees a commit the first did not (G-single)", {"G2"})
def _():
    # T1's statement 0 reads key 0 before T2's append, statement 1 after it
    return [mk(0, "committed", [("a", 0, 1)]),
            ro(1, "committed", [("r", 0, [1], "s0"), ("r", 1, [], "s0"), ("r", 0, [1, 2], "s1")]),
            mk(2, "committed", [("a", 0, 2)])], \
        {0: [1, 2], 1: []}


@case("read-only: read skew over two keys and statements (G-single)", {"G2"})
def _():
    return [ro(0, "committed", [("r", 0, [], "s0"), ("r", 1, [2], "s1")], "set"),
            mk(1, "committed", [("a", 0, 1), ("a", 1, 2)])], \
        {0: [1], 1: [2]}


@case("read-only: serialized between writers ordered against real time", set())
def _():
    # T2 commits after T1 in real time but is ordered before it (T2 read
    # key 1 before T1's append): a reader that saw T1 must see T2 too
    return [mk(1, "committed", [("a", 1, 1)]),
            mk(2, "committed", [("r", 1, []), ("a", 0, 2)]),
            ro(3, "committed", [("r", 1, [1], "s0"), ("r", 0, [2], "s1")])], \
        {0: [2], 1: [1]}


@case("read-only: sees the later-ordered writer but not the earlier one (G2)", {"G2"})
def _():
    # T2 -rw(k1)-> T1 -wr(k1)-> T3 -rw(k0)-> T2
    return [mk(1, "committed", [("a", 1, 1)]),
            mk(2, "committed", [("r", 1, []), ("a", 0, 2)]),
            ro(3, "committed", [("r", 1, [1], "s0"), ("r", 0, [], "s1")])], \
        {0: [2], 1: [1]}


@case("read-only: a 40001 is a failure of its own", {"ro-abort"})
def _():
    return [mk(0, "committed", [("a", 0, 1)]),
            ro(1, "aborted", [("r", 0, [1], "s0")], "auto", "40001")], \
        {0: [1]}


@case("read-only: a 40001 with --ro-aborts-ok", set(), RoAbortsOk)
def _():
    return [ro(1, "aborted", [("r", 0, [], "s0")], "begin", "40001")], {0: []}


@case("read-only: an ordinary transaction's 40001 is not one", set())
def _():
    t = mk(1, "aborted", [("r", 0, [])])
    t.sqlstate = "40001"
    return [t], {0: []}


@case("read-only: a statement without one of its rows", {"bad-result"})
def _():
    return [mk(0, "committed", [("a", 0, 1)]),
            ro(1, "committed", [("e", "ro-rows", 0, "range", 3, 2, [0], [], []),
                                ("r", 1, [], "s0"), ("r", 2, [], "s0")])], \
        {0: [1], 1: [], 2: []}


# --------------------------------------------------------------------------
# predicate workload (predicate.py): ops are recorded as the clients record
# them; final = set of (g, k) rows left in the table
# --------------------------------------------------------------------------

PCASES = []


def pcase(name, expect, args=None):
    def deco(fn):
        PCASES.append((name, expect, fn, args))
        return fn
    return deco


def pmk(tid, status, ops, client=0, t=0.0):
    x = pr.PTxn(tid, client)
    x.ops = [list(o) for o in ops]
    x.status = status
    x.t_start = x.t_end = t
    x.scan = "index"
    return x


def I(g, k):
    return ["i", g, k]


def D(g, k):
    return ["d", g, k]


def M(g1, g2, k):
    return ["m", g1, g2, k]


def Rg(g, ks, kmin=None):
    """SELECT k FROM pr WHERE g = $g [AND k > $kmin]"""
    return ["r", "grp", g, g, kmin, None, sorted([g, k] for k in ks)]


def Rr(lo, hi, slots):
    """SELECT g, k FROM pr WHERE g BETWEEN $lo AND $hi"""
    return ["r", "rng", lo, hi, None, None, sorted([g, k] for g, k in slots)]


def Rk(kmin, slots, groups=4):
    """SELECT g, k FROM pr WHERE k > $kmin"""
    return ["r", "kgt", 0, groups - 1, kmin, None, sorted([g, k] for g, k in slots)]


def Rp(g, k, present):
    """SELECT k FROM pr WHERE g = $g AND k = $k"""
    return ["r", "pt", g, g, None, k, [[g, k]] if present else []]


class NoInfer(object):
    infer_window = 0


@pcase("predicate: serializable history", set())
def _():
    return [pmk(0, "committed", [Rg(0, []), I(0, 1), I(1, 2)]),
            pmk(1, "committed", [Rg(0, [1]), Rr(0, 1, [(0, 1), (1, 2)]), D(0, 1), I(0, 3)]),
            pmk(2, "committed", [Rk(1, [(1, 2), (0, 3)]), M(1, 2, 2), Rr(1, 3, [(2, 2)]),
                                 Rp(1, 2, False), Rp(2, 2, True)]),
            pmk(3, "aborted", [Rg(0, [3]), I(0, 4)]),
            pmk(4, "committed", [Rg(0, [3]), Rg(2, [2]), Rp(0, 4, False)]),
            pmk(5, "committed", [Rg(3, []), I(3, 5), Rg(3, [5]), Rr(2, 3, [(2, 2), (3, 5)])]),
            pmk(6, "committed", [Rg(0, [], kmin=3), Rg(0, [3], kmin=2)])], \
        {(0, 3), (2, 2), (3, 5)}


@pcase("predicate: count-then-insert write skew", {"G2"})
def _():
    # both read group 0 empty (count 0 < cap), both insert into it
    return [pmk(0, "committed", [Rg(0, []), I(0, 1)]),
            pmk(1, "committed", [Rg(0, []), I(0, 2)])], \
        {(0, 1), (0, 2)}


@pcase("predicate: cross-group write skew (insert phantoms)", {"G2"})
def _():
    return [pmk(0, "committed", [Rg(0, []), I(1, 1)]),
            pmk(1, "committed", [Rg(1, []), I(0, 2)])], \
        {(1, 1), (0, 2)}


@pcase("predicate: write skew through deletes", {"G2"})
def _():
    # each reads the row the other deletes and deletes from the group the
    # other read
    return [pmk(0, "committed", [I(0, 1), I(1, 2)]),
            pmk(1, "committed", [Rg(0, [1]), D(1, 2)]),
            pmk(2, "committed", [Rg(1, [2]), D(0, 1)])], \
        set()


@pcase("predicate: absent-key lookups write skew", {"G2"})
def _():
    return [pmk(0, "committed", [Rp(0, 7, False), I(1, 8)]),
            pmk(1, "committed", [Rp(1, 8, False), I(0, 7)])], \
        {(0, 7), (1, 8)}


@pcase("predicate: range read skew (G-single)", {"G2"})
def _():
    # T1 moves k=5 from group 0 to group 2; T2's range read of groups 0..1
    # still sees it in group 0, its group read of 2 sees it there too
    return [pmk(0, "committed", [I(0, 5)]),
            pmk(1, "committed", [M(0, 2, 5)]),
            pmk(2, "committed", [Rr(0, 1, [(0, 5)]), Rg(2, [5])])], \
        {(2, 5)}


@pcase("predicate: k > x read misses an insert it depends on", {"G2"})
def _():
    return [pmk(0, "committed", [I(3, 10), Rk(5, [(3, 10)])]),
            pmk(1, "committed", [Rk(5, [(3, 10)]), Rg(1, []), I(0, 11)]),
            pmk(2, "committed", [Rk(10, []), I(1, 12)])], \
        {(3, 10), (0, 11), (1, 12)}


@pcase("predicate: non-repeatable predicate read", {"G2"})
def _():
    return [pmk(0, "committed", [I(0, 1)]),
            pmk(1, "committed", [Rg(0, []), Rg(0, [1])])], \
        {(0, 1)}


@pcase("predicate: moved row missed in both groups (inferred)", {"G2"})
def _():
    # T0 inserts (0,5); T1 sees it and inserts (0,6); T2 moves (0,5) to
    # group 1; T3 reads group 1 before the move and group 0 after it.  The
    # absence of (0,5) alone is ambiguous (before T0 or after T2), but T3 saw
    # T1's row and T1 saw T0's, so it is after T2: T2 -wr-> T3 -rw-> T2.
    return [pmk(0, "committed", [I(0, 5)]),
            pmk(1, "committed", [Rg(0, [5]), I(0, 6)]),
            pmk(2, "committed", [M(0, 1, 5)]),
            pmk(3, "committed", [Rg(1, []), Rg(0, [6])])], \
        {(0, 6), (1, 5)}


@pcase("predicate: same history without inference", set(), NoInfer)
def _():
    return [pmk(0, "committed", [I(0, 5)]),
            pmk(1, "committed", [Rg(0, [5]), I(0, 6)]),
            pmk(2, "committed", [M(0, 1, 5)]),
            pmk(3, "committed", [Rg(1, []), Rg(0, [6])])], \
        {(0, 6), (1, 5)}


@pcase("predicate: ambiguous absence alone is no anomaly", set())
def _():
    # T2 may run before T0 or after T1
    return [pmk(0, "committed", [I(0, 1)]),
            pmk(1, "committed", [D(0, 1)]),
            pmk(2, "committed", [Rg(0, []), Rp(0, 1, False)])], \
        set()


@pcase("predicate: read absent, then delete the row (before its insert)", {"G2"})
def _():
    return [pmk(0, "committed", [I(0, 1)]),
            pmk(1, "committed", [Rg(0, []), D(0, 1)])], \
        set()


@pcase("predicate: own insert not visible", {"internal"})
def _():
    return [pmk(0, "committed", [I(0, 1), Rg(0, [])])], {(0, 1)}


@pcase("predicate: own delete still visible", {"internal"})
def _():
    return [pmk(0, "committed", [I(0, 1)]),
            pmk(1, "committed", [D(0, 1), Rr(0, 1, [(0, 1)])])], \
        set()


@pcase("predicate: own move: old slot visible", {"internal"})
def _():
    return [pmk(0, "committed", [I(0, 1)]),
            pmk(1, "committed", [M(0, 1, 1), Rk(0, [(0, 1), (1, 1)])])], \
        {(1, 1)}


@pcase("predicate: read of an aborted insert", {"G1a"})
def _():
    return [pmk(0, "aborted", [I(0, 1)]),
            pmk(1, "committed", [Rg(0, [1])])], \
        set()


@pcase("predicate: aborted insert in the final table", {"G1a"})
def _():
    return [pmk(0, "aborted", [I(0, 1)])], {(0, 1)}


@pcase("predicate: aborted reader of an aborted insert", set())
def _():
    return [pmk(0, "aborted", [I(0, 1)]),
            pmk(1, "aborted", [Rg(0, [1]), I(0, 2)])], \
        set()


@pcase("predicate: committed insert lost", {"lost-write"})
def _():
    return [pmk(0, "committed", [I(0, 1), I(0, 2)])], {(0, 1)}


@pcase("predicate: committed delete not in effect", {"lost-write"})
def _():
    return [pmk(0, "committed", [I(0, 1)]),
            pmk(1, "committed", [D(0, 1)])], \
        {(0, 1)}


@pcase("predicate: row outside the predicate", {"incompatible"})
def _():
    return [pmk(0, "committed", [I(1, 1)]),
            pmk(1, "committed", [["r", "grp", 0, 0, None, None, [[1, 1]]]])], \
        {(1, 1)}


@pcase("predicate: row nobody inserted", {"incompatible"})
def _():
    return [pmk(0, "committed", [Rg(0, [9])])], set()


@pcase("predicate: unknown outcome resolved from the final table", set())
def _():
    return [pmk(0, "unknown", [I(0, 1)]),
            pmk(1, "committed", [Rg(0, [1])]),
            pmk(2, "unknown", [I(0, 2)]),
            pmk(3, "committed", [Rg(0, [1])])], \
        {(0, 1)}


def pro(tid, status, ops, variant="begin", sqlstate=None):
    x = pmk(tid, status, ops)
    x.ro = variant
    x.ro_info = {"scan": "index", "stmts": len(ops), "rows": 0}
    x.sqlstate = sqlstate
    x.error = "op: could not serialize access" if sqlstate else None
    for i, op in enumerate(x.ops):
        op.append("s%d" % i)
    return x


def C(lo, hi, counts=None, total=None):
    """SELECT g, count(*) ... GROUP BY g (counts {g: n}) or SELECT count(*)"""
    if counts is not None:
        cl = sorted([g, n] for g, n in counts.items() if n)
        return ["c", lo, hi, cl, sum(counts.values())]
    return ["c", lo, hi, None, total]


@pcase("predicate read-only: counts agree with the rows read", set())
def _():
    return [pmk(0, "committed", [I(0, 1), I(1, 2), I(1, 3)]),
            pro(1, "committed", [C(0, 3, {0: 1, 1: 2}), Rr(0, 3, [(0, 1), (1, 2), (1, 3)]),
                                 C(0, 3, total=3), C(1, 2, {1: 2}), Rg(1, [2, 3])]),
            pmk(2, "committed", [D(1, 3), I(2, 4)]),
            pro(3, "committed", [C(0, 3, total=3), Rr(0, 3, [(0, 1), (1, 2), (2, 4)])], "rr")], \
        {(0, 1), (1, 2), (2, 4)}


@pcase("predicate read-only: a count from another state than the rows", {"count-mismatch"})
def _():
    # T1 counts before T2's insert and reads the rows after it
    return [pmk(0, "committed", [I(0, 1)]),
            pro(1, "committed", [C(0, 3, {0: 1}), Rr(0, 3, [(0, 1), (0, 2)])]),
            pmk(2, "committed", [I(0, 2)])], \
        {(0, 1), (0, 2)}


@pcase("predicate read-only: a total count from another state", {"count-mismatch"})
def _():
    return [pmk(0, "committed", [I(0, 1), I(1, 2)]),
            pro(1, "committed", [Rr(0, 3, [(0, 1), (1, 2)]), C(0, 3, total=1)]),
            pmk(2, "committed", [D(1, 2)])], \
        set([(0, 1)])


@pcase("predicate read-only: a row read in one statement, gone in the next (G-single)", {"G2"})
def _():
    return [pmk(0, "committed", [I(0, 1), I(1, 2)]),
            pro(1, "committed", [Rg(1, [2]), Rg(0, [1]), Rg(1, [])]),
            pmk(2, "committed", [D(1, 2)])], \
        set([(0, 1)])


@pcase("predicate read-only: a 40001 is a failure of its own", {"ro-abort"})
def _():
    return [pro(0, "aborted", [Rg(0, [])], "set", "40001")], set()


@pcase("predicate: counts of a transaction that writes are not checked", set())
def _():
    return [pmk(0, "committed", [["c", 0, 3, [], 0], I(0, 1), Rr(0, 3, [(0, 1)])])], \
        {(0, 1)}


# a DELETE or move of a claimed row that found no row is recorded as a read
# of the row's absence (Rp(..., False)): fine if its transaction can be
# ordered before the insert (MVTO: a timestamp older than the inserter's)

@pcase("predicate: a delete that found no row, ordered before the insert", set())
def _():
    return [pmk(0, "committed", [I(0, 1)]),
            pmk(1, "committed", [Rp(0, 1, False), I(2, 2)])], \
        {(0, 1), (2, 2)}


@pcase("predicate: a delete that found no row after seeing the inserter (G-single)", {"G2"})
def _():
    return [pmk(0, "committed", [I(0, 1), I(1, 2)]),
            pmk(1, "committed", [Rg(1, [2]), Rp(0, 1, False)])], \
        {(0, 1), (1, 2)}


@pcase("predicate: unexpected error", {"errors"})
def _():
    t = pmk(0, "error", [I(0, 1)])
    t.sqlstate = "XX000"
    t.error = "op: some internal error"
    return [t], set()


def panalyse(txns, final, args=None):
    an = pr.Analysis(txns, final, args)
    an.run()
    for t in txns:
        pr.describe(t)
    return an


def main():
    npass = nfail = 0
    runs = [(name, expect, fn, args, analyse) for name, expect, fn, args in CASES] + \
           [(name, expect, fn, args, panalyse) for name, expect, fn, args in PCASES]
    for name, expect, fn, args, run in runs:
        txns, final = fn()
        an = run(txns, final, args)
        got = found(an)
        ok = got == expect
        if ok:
            npass += 1
        else:
            nfail += 1
        print("%-4s %-60s expected %s, got %s" % ("ok" if ok else "FAIL", name,
                                                  sorted(expect) or "-", sorted(got) or "-"))
        if not ok:
            for c in sorted(got):
                for m in an.findings[c]:
                    print("       %s: %s" % (c, m))
    print("checker-selftest: %d passed, %d failed" % (npass, nfail))
    return 0 if nfail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
