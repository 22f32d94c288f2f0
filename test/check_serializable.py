#!/usr/bin/env python3
"""Check that the outcomes of an isolation spec's output are serializable.

    test/check_serializable.py [options] SPEC OUT [SPEC OUT ...]

For every permutation in OUT (an isolationtester output of SPEC, e.g.
results/NAME.out or expected/NAME.out), the committed sessions are those
none of whose steps printed an ERROR.  The committed sessions' steps are
re-run serially, one session after the other, in every order, on tables
created USING heap (no concurrency: any correct engine gives the same
results), and the permutation passes if some order reproduces

  * the output of every committed step (result sets, and no ERROR), and
  * the output of the permutation's last step, whatever session it belongs
    to: the final check SELECT, and any session teardown output, which
    isolationtester prints after the last step.

That is view serializability of the committed transactions, read-only ones
included; aborted transactions are required to have had no effect.  A
session is run as one unit (its steps are meant to form one transaction;
autocommit steps such as EXPLAIN or a final SELECT are harmless).

Needs a running server (the isolation_regression database of the suite, or
any database with the fpsketch extension if the spec calls its functions)
and the isolationtester binary from PGXS.

    test/check_serializable.py [options] --suite [DIR]

checks every specs/NAME.spec that is not a heap control against DIR/NAME.out
(default expected/) and, for information, counts the non-serializable
permutations of each heap control (DIR/NAME-heap.out).  Exit status 1 if an
fpsketch outcome is not serializable.

A spec can carry options for its own check in a comment line
    # check_serializable: --ignore STEP ...

Options:
  --conn CONNSTR   libpq connection string
                   (default: dbname=isolation_regression, PG* environment)
  --engine AM      table access method for the serial runs (default heap)
  --ignore STEP    do not compare the output of STEP (e.g. a statistics
                   query whose counters depend on concurrency); repeatable
  --unordered STEP compare the rows STEP prints as a multiset: an unordered
                   scan returns the same rows in another physical order
                   when the serial run placed a new version elsewhere
                   (repeatable)
  -v               print the matching serial order of every permutation

Exit status 0 if every permutation is serializable, 1 otherwise.
"""
import itertools
import os
import re
import subprocess
import sys
import tempfile


def isolationtester_path():
    pgxs = subprocess.run(["pg_config", "--pgxs"], capture_output=True,
                          text=True, check=True).stdout.strip()
    return os.path.join(os.path.dirname(os.path.dirname(pgxs)),
                        "test", "isolation", "isolationtester")


# ---- spec -----------------------------------------------------------------

SERIAL_COMMIT = "__serial_commit"
SERIAL_NOOP = "__serial_noop"
SERIAL_NOOP_SQL = "DO $$BEGIN END$$;"


def unserial_name(step):
    for suffix in (SERIAL_COMMIT, SERIAL_NOOP):
        if step.endswith(suffix):
            return step[:-len(suffix)]
    return step


class Spec:
    def __init__(self, path):
        self.path = path
        self.text = open(path).read()
        self.step_session = {}      # step name -> session name
        self.step_sql = {}          # step name -> sql as isolationtester prints it
        self.sessions = []          # session names in order
        self.permutations = []      # explicit permutations (lists of step names)
        self.session_begin = {}     # session -> its setup, if that opens a transaction
        self.options = []           # from "# check_serializable: ..." comment lines
        for line in self.text.splitlines():
            m = re.match(r"#\s*check_serializable:\s*(.*)", line)
            if m:
                self.options += m.group(1).split()
        self._parse()
        for sess, sql in self.session_begin.items():
            self.step_session[self.begin_step(sess)] = sess
            self.step_sql[self.begin_step(sess)] = sql
        # two-phase commit: PREPARE TRANSACTION 'g' steps, and the COMMIT or
        # ROLLBACK PREPARED 'g' steps (of any session) that end them
        self.prepare_gid = {}       # step -> gid
        self.finish = {}            # step -> ("COMMIT" | "ROLLBACK", gid)
        for name, sql in list(self.step_sql.items()):
            m = re.match(r"(?is)^\s*PREPARE\s+TRANSACTION\s+'([^']*)'\s*;?\s*$", sql)
            if m:
                self.prepare_gid[name] = m.group(1)
                self.step_session[name + SERIAL_COMMIT] = self.step_session[name]
                self.step_sql[name + SERIAL_COMMIT] = "COMMIT;"
            m = re.match(r"(?is)^\s*(COMMIT|ROLLBACK)\s+PREPARED\s+'([^']*)'\s*;?\s*$", sql)
            if m:
                self.finish[name] = (m.group(1).upper(), m.group(2))
                self.step_session[name + SERIAL_NOOP] = self.step_session[name]
                self.step_sql[name + SERIAL_NOOP] = SERIAL_NOOP_SQL

    def serial_name(self, step):
        """A prepared session's serial run commits where it prepared; the
        COMMIT or ROLLBACK PREPARED step that ended it then does nothing."""
        if step in self.prepare_gid:
            return step + SERIAL_COMMIT
        if step in self.finish:
            return step + SERIAL_NOOP
        return step

    def _parse(self):
        # strip comments (a '#' outside braces starts one)
        out, depth = [], 0
        for line in self.text.splitlines():
            buf = ""
            for ch in line:
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                elif ch == "#" and depth == 0:
                    break
                buf += ch
            out.append(buf)
        text = "\n".join(out)
        session = None
        pos = 0
        token = re.compile(r"\s*(session|step|setup|teardown|permutation)\b")
        while True:
            m = token.match(text, pos)
            if not m:
                break
            kw = m.group(1)
            pos = m.end()
            if kw == "session":
                m = re.compile(r"\s*(\S+)").match(text, pos)
                session = m.group(1)
                self.sessions.append(session)
                pos = m.end()
            elif kw in ("setup", "teardown", "step"):
                name = None
                if kw == "step":
                    m = re.compile(r"\s*(\S+)").match(text, pos)
                    name = m.group(1)
                    pos = m.end()
                m = re.compile(r"\s*\{\s*(.*?)\s*\}", re.S).match(text, pos)
                if not m:
                    raise ValueError("%s: cannot parse near %r" % (self.path, text[pos:pos + 40]))
                pos = m.end()
                if name:
                    self.step_session[name] = session
                    self.step_sql[name] = m.group(1)
                elif kw == "setup" and session is not None and \
                        re.match(r"(?i)begin\b", m.group(1)):
                    self.session_begin[session] = m.group(1)
            else:
                m = re.compile(r"[ \t]*([^\n]*)").match(text, pos)
                self.permutations.append(m.group(1).split())
                pos = m.end()
        rest = text[pos:].strip()
        if rest:
            raise ValueError("%s: cannot parse near %r" % (self.path, rest[:40]))

    @staticmethod
    def begin_step(session):
        return "serial_begin_" + session

    def serial_spec(self, permutations, engine):
        """The spec's text, tables USING engine, with these permutations.

        A session setup that opens a transaction (the SSI specs' BEGIN)
        becomes the session's first step instead, so that sessions left out
        of a serial run hold no transaction open (their teardown would then
        keep its locks and block the spec's DROP TABLE)."""
        text = re.sub(r"USING\s+fpsketch", "USING " + engine, self.text)
        out = []
        session = None
        for l in text.splitlines():
            if re.match(r"\s*permutation\b", l):
                continue
            m = re.match(r"\s*session\s+(\S+)", l)
            if m:
                session = m.group(1)
            m = re.match(r"\s*setup\s*\{\s*(.*?)\s*\}\s*$", l)
            if m and session in self.session_begin:
                l = "step %s { %s }" % (self.begin_step(session), m.group(1))
            out.append(l)
            m = re.match(r"\s*step\s+(\S+)\s*\{.*\}\s*$", l)
            if m and m.group(1) in self.prepare_gid:
                out.append("step %s { COMMIT; }" % (m.group(1) + SERIAL_COMMIT))
            elif m and m.group(1) in self.finish:
                out.append("step %s { %s }" % (m.group(1) + SERIAL_NOOP, SERIAL_NOOP_SQL))
        for p in permutations:
            steps = []
            for s in p:
                sess = self.step_session[s]
                if sess in self.session_begin and self.begin_step(sess) not in steps:
                    steps.append(self.begin_step(sess))
                steps.append(self.serial_name(s))
            out.append("permutation " + " ".join(steps))
        return "\n".join(out) + "\n"


# ---- output ---------------------------------------------------------------

class Permutation:
    def __init__(self, steps):
        self.steps = steps          # step names in order
        self.output = {}            # step name -> output text (results, errors)

    def errored(self, step):
        return any(l.startswith("ERROR:") for l in self.output.get(step, "").splitlines())


def parse_output(path_or_text, spec, is_text=False):
    text = path_or_text if is_text else open(path_or_text).read()
    perms = []
    cur = None
    step = None
    lines = text.split("\n")
    i = 0
    header = re.compile(r"step (\S+): ")
    while i < len(lines):
        line = lines[i]
        if line.startswith("starting permutation: "):
            cur = Permutation(line[len("starting permutation: "):].split())
            perms.append(cur)
            step = None
            i += 1
            continue
        m = header.match(line)
        if cur is not None and m and m.group(1) in spec.step_sql:
            step = m.group(1)
            rest = "\n".join(lines[i:])[m.end():]
            if rest.startswith("<... completed>"):
                i += 1
                continue
            sql = spec.step_sql[step]
            if not rest.startswith(sql):
                raise ValueError("step %s: SQL does not match the spec" % step)
            i += 1 + sql.count("\n")
            cur.output.setdefault(step, "")
            continue
        if cur is not None and step is not None:
            cur.output[step] += line + "\n"
        i += 1
    for p in perms:
        for s in p.output:
            p.output[s] = p.output[s].strip("\n")
    return perms


def committed_sessions(perm, spec):
    sessions = []
    for s in perm.steps:
        sess = spec.step_session[s]
        if sess not in sessions:
            sessions.append(sess)
    aborted = {spec.step_session[s] for s in perm.steps if perm.errored(s)}
    # a prepared transaction counts as committed once COMMIT PREPARED ran
    ended = {spec.finish[s][1]: spec.finish[s][0] for s in perm.steps
             if s in spec.finish and not perm.errored(s)}
    for s in perm.steps:
        if s in spec.prepare_gid and ended.get(spec.prepare_gid[s]) != "COMMIT":
            aborted.add(spec.step_session[s])
    return [s for s in sessions if s not in aborted], sorted(aborted)


def serial_orders(perm, spec):
    committed, _ = committed_sessions(perm, spec)
    for order in itertools.permutations(committed):
        yield tuple(s for sess in order for s in perm.steps
                    if spec.step_session[s] == sess)


UNORDERED = set()


def step_output(perm, step):
    out = perm.output.get(step, "")
    if step in UNORDERED:
        return sorted(out.splitlines())
    return out


def matches(obs, ser, committed_steps, ignore):
    o_last, s_last = obs.steps[-1], ser.steps[-1]
    for s in committed_steps:
        if s in (o_last, s_last) or s in ignore:
            continue
        if step_output(obs, s) != step_output(ser, s):
            return False
    if any(ser.errored(s) for s in ser.steps):
        return False
    if o_last in ignore:
        return True
    # the last step's own ERROR (an aborted COMMIT) is not part of the state
    return final_output(obs, o_last) == final_output(ser, s_last)


def final_output(perm, step):
    return "\n".join(l for l in perm.output.get(step, "").splitlines()
                     if not l.startswith("ERROR:")).strip("\n")


def check(spec_path, out_path, conn, engine, ignore, verbose):
    spec = Spec(spec_path)
    ignore = set(ignore)
    UNORDERED.clear()           # a spec's own option
    it = iter(spec.options)
    for a in it:
        if a == "--ignore":
            ignore.add(next(it))
        elif a == "--unordered":
            UNORDERED.add(next(it))
        elif a == "--engine":
            engine = next(it)
        else:
            raise ValueError("%s: unknown check_serializable option %s" % (spec_path, a))
    observed = parse_output(out_path, spec)
    wanted = []
    for p in observed:
        for order in serial_orders(p, spec):
            if order and list(order) not in wanted:
                wanted.append(list(order))
    serial = {}
    if wanted:
        with tempfile.NamedTemporaryFile("w", suffix=".spec") as f:
            f.write(spec.serial_spec(wanted, engine))
            f.flush()
            # the session settings pg_regress gives the suite's own runs
            env = dict(os.environ, PGTZ="America/Los_Angeles",
                       PGDATESTYLE="Postgres, MDY", LC_MESSAGES="C")
            res = subprocess.run([isolationtester_path(), conn], stdin=open(f.name),
                                 capture_output=True, text=True, env=env)
        if res.returncode != 0:
            sys.stderr.write(res.stdout[-2000:] + res.stderr)
            raise RuntimeError("isolationtester failed on the serial runs of %s" % spec_path)
        for p in parse_output(res.stdout, spec, is_text=True):
            p.steps = [unserial_name(x) for x in p.steps if not x.startswith("serial_begin_")]
            p.output = {unserial_name(x): o for x, o in p.output.items()}
            serial[tuple(p.steps)] = p

    bad = 0
    name = os.path.basename(spec_path)
    for p in observed:
        committed, aborted = committed_sessions(p, spec)
        csteps = [s for s in p.steps if spec.step_session[s] in committed]
        found = None
        for order in serial_orders(p, spec):
            if not order:
                found = ()
                break
            if matches(p, serial[order], csteps, ignore):
                found = order
                break
        if found is None:
            bad += 1
            print("%s: NOT SERIALIZABLE: permutation %s (committed: %s, aborted: %s)"
                  % (name, " ".join(p.steps), " ".join(committed), " ".join(aborted) or "-"))
        elif verbose:
            order = []
            for s in found:
                if spec.step_session[s] not in order:
                    order.append(spec.step_session[s])
            print("%s: ok: %s  ==  serial %s (aborted: %s)"
                  % (name, " ".join(p.steps), " ".join(order), " ".join(aborted) or "-"))
    print("%s: %d permutations, %d not serializable" % (name, len(observed), bad))
    return bad


def run_suite(outdir, conn, engine, ignore, verbose):
    import glob
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    outdir = outdir or os.path.join(root, "expected")
    bad = 0
    for spec_path in sorted(glob.glob(os.path.join(root, "specs", "*.spec"))):
        name = os.path.basename(spec_path)[:-len(".spec")]
        out_path = os.path.join(outdir, name + ".out")
        if not os.path.exists(out_path):
            print("%s: no %s" % (name, out_path))
            bad += 1
            continue
        if name.endswith("-heap"):
            import io
            import contextlib
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                n = check(spec_path, out_path, conn, engine, ignore, False)
            print("%s: heap control, %d non-serializable permutations" % (name + ".spec", n))
        else:
            bad += check(spec_path, out_path, conn, engine, ignore, verbose)
    return 1 if bad else 0


def main(argv):
    conn = "dbname=isolation_regression"
    engine = "heap"
    ignore = set()
    verbose = False
    suite = None
    files = []
    it = iter(argv)
    for a in it:
        if a == "--suite":
            suite = ""
        elif a == "--conn":
            conn = next(it)
        elif a == "--engine":
            engine = next(it)
        elif a == "--ignore":
            ignore.add(next(it))
        elif a == "-v":
            verbose = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif suite == "":
            suite = a
        else:
            files.append(a)
    if suite is not None:
        return run_suite(suite, conn, engine, ignore, verbose)
    if not files or len(files) % 2:
        sys.stderr.write(__doc__)
        return 2
    bad = 0
    for spec_path, out_path in zip(files[0::2], files[1::2]):
        bad += check(spec_path, out_path, conn, engine, ignore, verbose)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
