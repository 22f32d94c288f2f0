#!/usr/bin/env python3
"""Derive the explicit STO permutation list of a spec that runs all
interleavings implicitly (the adapted SSI specs).

    test/sto/derive_permutations.py SPEC OUT [RECHECK] > permutation-lines

OUT is the spec's isolationtester output on an STO cluster with every
interleaving (the spec as it is, run with PGISOLATIONTIMEOUT=3 so that a
stuck step is cancelled after 3 s).  Under STO a younger transaction's
access to a row or predicate that an older transaction is writing waits
until that transaction ends, so some interleavings are not possible
schedules; this prints the permutation lines of the others, in the
original order:

  * a step cancelled while isolationtester saw it waiting on a lock
    (XactLockTableWait) is blocked and its session was asked for its next
    step before the blocker ended: not a possible schedule, dropped;
  * a step cancelled without being seen waiting waits outside the lock
    manager (an in-flight inserter's predicate key, a dirty bit the heap did
    not order): if the next step is another session's COMMIT or ROLLBACK it
    is the releasing one, and the step is marked (*) so that isolationtester
    launches it; otherwise dropped (the waiting step has done nothing yet,
    so the schedule equals the one that launches it right after the commit
    that releases it, which is in the list).

Then run the spec with these permutations (PGISOLATIONTIMEOUT=3 again) and
pass that output as RECHECK: a permutation with a step still cancelled there
is dropped too (a (*) step whose next COMMIT is not the one that releases it
would otherwise stall until fpsketch.lock_wait_timeout; as above, the
schedule that launches it right after its releaser is in the list).
"""
import importlib.util
import os
import re
import sys


def load_tool():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "check_serializable.py")
    spec = importlib.util.spec_from_file_location("check_serializable", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def blocks(path):
    return open(path).read().split("\nstarting permutation: ")[1:]


def main(spec_path, out_path, recheck_path=None):
    spec = load_tool().Spec(spec_path)
    stuck = set()
    if recheck_path:
        for block in blocks(recheck_path):
            if "isolationtester: canceling step" in block:
                stuck.add(block.split("\n", 1)[0])
    kept = dropped = starred = 0
    for block in blocks(out_path):
        steps = block.split("\n", 1)[0].split()
        waiting = set()
        for m in re.finditer(r"<waiting \.\.\.>", block):
            waiting.add(re.findall(r"^step (\S+): ", block[:m.start()], re.M)[-1])
        names = list(steps)
        ok = True
        for c in re.findall(r"isolationtester: canceling step (\S+) after", block):
            i = steps.index(c)
            nxt = steps[i + 1] if i + 1 < len(steps) else None
            if (c in waiting or nxt is None
                    or spec.step_session[nxt] == spec.step_session[c]
                    or not re.match(r"(?i)(commit|rollback)\b", spec.step_sql[nxt])):
                ok = False
            else:
                names[i] = c + "(*)"
        if not ok or " ".join(steps) in stuck:
            dropped += 1
            continue
        kept += 1
        starred += names != steps
        print("permutation " + " ".join(names))
    sys.stderr.write("%s: %d interleavings, %d kept (%d with a (*) step), %d dropped\n"
                     % (os.path.basename(spec_path), kept + dropped, kept, starred, dropped))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.stderr.write(__doc__)
        sys.exit(2)
    main(*sys.argv[1:])
