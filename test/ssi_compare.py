#!/usr/bin/env python3
"""Compare fpsketch's outcomes on PostgreSQL's SSI specs with SSI's own.

    test/ssi_compare.py [--pgsrc DIR] [--results DIR] [--check [--conn C]] [NAME ...]

For every adapted spec specs/ssi-NAME.spec (default: all of them), reads

  * PostgreSQL's expected output of the original spec at SERIALIZABLE,
    DIR/src/test/isolation/expected/NAME.out (--pgsrc, default
    /tmp/pgsrc/postgresql-15-15.18 or $PGSRC), and
  * fpsketch's output, results/ssi-NAME.out if --results is given, else
    expected/ssi-NAME.out,

and prints one Markdown table row per spec: the number of permutations,
how many commit every transaction under SSI (no ERROR in the permutation)
and under fpsketch, how many commit everything on fpsketch but not under
SSI and vice versa, and how many abort exactly the same sessions.

A permutation that fpsketch commits entirely while SSI aborts something is
not necessarily an anomaly (SSI has false positives, and it also orders
transactions by their snapshots, which serializability does not require):
--check runs test/check_serializable.py on every fpsketch outcome and on
the heap READ COMMITTED control (expected/ssi-NAME-heap.out, or results/
with --results), and adds the number of non-serializable outcomes of each
(needs a server: --conn, default dbname=isolation_regression and the PG*
environment).

Exit status 1 if --check found a non-serializable fpsketch outcome.
"""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_serializable as cs  # noqa: E402


def outcomes(spec, out_path):
    """permutation (tuple of steps) -> sorted tuple of aborted sessions"""
    res = {}
    for p in cs.parse_output(out_path, spec):
        _, aborted = cs.committed_sessions(p, spec)
        res[tuple(p.steps)] = tuple(aborted)
    return res


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    pgsrc = os.environ.get("PGSRC", "/tmp/pgsrc/postgresql-15-15.18")
    results = None
    check = False
    conn = "dbname=isolation_regression"
    names = []
    it = iter(argv)
    for a in it:
        if a == "--pgsrc":
            pgsrc = next(it)
        elif a == "--results":
            results = next(it)
        elif a == "--check":
            check = True
        elif a == "--conn":
            conn = next(it)
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            names.append(a)
    if not names:
        names = sorted(os.path.basename(p)[len("ssi-"):-len(".spec")]
                       for p in glob.glob(os.path.join(root, "specs", "ssi-*.spec"))
                       if not p.endswith("-heap.spec"))

    def out_of(n):
        d = results if results else os.path.join(root, "expected")
        return os.path.join(d, n + ".out")

    cols = ["spec", "permutations", "all commit: SSI", "all commit: fpsketch",
            "fpsketch all, SSI not", "SSI all, fpsketch not", "same sessions abort"]
    if check:
        cols += ["non-serializable: fpsketch", "non-serializable: heap RC"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "|".join("---" for _ in cols) + "|")
    totals = [0] * (len(cols) - 1)
    status = 0
    for n in names:
        spec_path = os.path.join(root, "specs", "ssi-%s.spec" % n)
        spec = cs.Spec(spec_path)
        ssi = outcomes(spec, os.path.join(pgsrc, "src/test/isolation/expected/%s.out" % n))
        fps = outcomes(spec, out_of("ssi-" + n))
        if set(ssi) != set(fps):
            raise SystemExit("%s: the two outputs have different permutations" % n)
        row = [len(ssi),
               sum(1 for p in ssi if not ssi[p]),
               sum(1 for p in fps if not fps[p]),
               sum(1 for p in ssi if not fps[p] and ssi[p]),
               sum(1 for p in ssi if fps[p] and not ssi[p]),
               sum(1 for p in ssi if fps[p] == ssi[p])]
        if check:
            import io
            import contextlib
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                bad = cs.check(spec_path, out_of("ssi-" + n), conn, "heap", set(), False)
                bad_heap = cs.check(os.path.join(root, "specs", "ssi-%s-heap.spec" % n),
                                    out_of("ssi-%s-heap" % n), conn, "heap", set(), False)
            row += [bad, bad_heap]
            if bad:
                status = 1
                sys.stderr.write(buf.getvalue())
        totals = [t + r for t, r in zip(totals, row)]
        print("| " + " | ".join([n] + [str(x) for x in row]) + " |")
    print("| " + " | ".join(["total"] + [str(x) for x in totals]) + " |")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
