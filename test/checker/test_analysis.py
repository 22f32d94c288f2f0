#!/usr/bin/python3
"""
Self-test of la_checker's analysis: hand-made histories, one per anomaly
class, must be flagged in exactly that class (plus the classes the anomaly
necessarily implies), and a serializable history must pass.  No database.
Prints `checker-selftest: N passed, M failed`; exit 0 if all passed.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import la_checker as lc  # noqa: E402


def mk(tid, status, ops, client=0):
    """ops: ("a", key, elem) or ("r", key, list read); reads are recorded
    through Chains.observe in the order the transactions are listed, as the
    clients would."""
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
            else:
                s = lc.elems_str(op[2])
                recorded.append(["r", op[1]] + chains.observe(op[1], s, own.get(op[1], [])))
        t.ops = recorded
    an = lc.Analysis(txns, final, chains.chain, args)
    an.run()
    for t in txns:
        t.describe(an.chain_lists)
        t.describe()
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


def main():
    npass = nfail = 0
    for name, expect, fn, args in CASES:
        txns, final = fn()
        an = analyse(txns, final, args)
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
