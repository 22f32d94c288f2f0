#!/usr/bin/python3
"""Test of bench/run.py's abort attribution from the server log (log_aborts):
a synthetic server.log in PostgreSQL's stderr format, with the real scripts
of the -client, -sp and tuned TPC-C mixes, must give exactly the expected
(count, transaction, statement, reason, relation) rows.  No server needed;
prints `log_aborts test: ok` (exit 0) or the differences (exit 1)."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402

P = "2026-11-24 19:05:44.111 UTC [{pid}] {level}:  {msg}"
VC = 'A row of relation "warehouse" read by this transaction was overwritten before it could commit.'


def entry(pid, error, detail=None, statement=None, context=None):
    lines = [P.format(pid=pid, level="ERROR", msg=error)]
    if detail is not None:
        lines.append(P.format(pid=pid, level="DETAIL", msg=detail))
    lines.append(P.format(pid=pid, level="HINT", msg="The transaction might succeed if retried."))
    if context is not None:
        first, *rest = context.split("\n")
        lines.append(P.format(pid=pid, level="CONTEXT", msg=first))
        lines += ["\t" + r for r in rest]
    if statement is not None:
        first, *rest = statement.split("\n")
        lines.append(P.format(pid=pid, level="STATEMENT", msg=first))
        lines += ["\t" + r for r in rest]       # continuation lines, as elog.c writes them
    return lines


SER = "could not serialize access due to concurrent update"
LOG = [
    P.format(pid=1, level="LOG", msg="database system is ready to accept connections"),
    # 1-2: New-Order's tagged COMMIT, twice
    *entry(10, SER, VC, "COMMIT /* new_order */;"),
    *entry(11, SER, VC, "COMMIT /* new_order */;"),
    # 3: an early abort before a multi-line statement, interleaved with another backend
    P.format(pid=12, level="ERROR", msg=SER),
    P.format(pid=13, level="LOG", msg="checkpoint starting: time"),
    P.format(pid=12, level="DETAIL", msg=VC),
    P.format(pid=12, level="STATEMENT", msg="UPDATE district SET d_next_o_id = d_next_o_id + 1"),
    "\t WHERE d_w_id = $1 AND d_id = $2;",
    # 4: heap SSI in Payment
    *entry(14, "could not serialize access due to read/write dependencies among transactions",
           "Reason code: Canceled on identification as a pivot, during write.",
           "UPDATE district SET d_ytd = d_ytd + $1 / 100.0 WHERE d_w_id = $2 AND d_id = $3;"),
    # 5: a PL/pgSQL line
    *entry(15, SER, 'A row of relation "district" was read after a concurrent transaction had committed a '
           'newer version of it.', "SELECT tpcc_sp_payment($1, $2, $3, $4, $5, $6, $7, $8);",
           "SQL statement \"UPDATE district SET d_ytd = d_ytd + v_amount\"\n"
           "PL/pgSQL function tpcc_sp_payment(integer,integer,integer,integer,integer,integer,integer,"
           "integer) line 12 at SQL statement"),
    # 6: the tuned scripts' untagged COMMIT belongs to both
    *entry(16, SER, 'A concurrent transaction inserted into a range or predicate of relation "new_order" '
           'read by this transaction.', "COMMIT;"),
    # 7: a deadlock without a STATEMENT line (flushed at the end)
    *entry(17, "deadlock detected", "Process 17 waits for ShareLock on transaction 5; blocked by process 18."),
]

EXPECTED = sorted([
    (2, "client_new_order", "COMMIT /* new_order */", "validate_changed", "warehouse"),
    # statements are cut to 70 characters
    (1, "client_new_order", "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? ...",
     "validate_changed", "warehouse"),
    (1, "client_payment", "UPDATE district SET d_ytd = d_ytd + ? / 100.0 WHERE d_w_id = ? AND ...",
     "ssi", ""),
    (1, "sp_payment", "SELECT tpcc_sp_payment(?, ?, ?, ?, ?, ?, ?, ?) [tpcc_sp_payment line 12 at SQL statement]",
     "stale_read", "district"),
    (1, "new_order/payment", "COMMIT", "phantom", "new_order"),
    (1, "", "", "deadlock", ""),
])


def main():
    scripts = run.TPCC_MIXES["client"] + run.TPCC_MIXES["sp"] + run.TPCC_MIXES["np"]
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write("old contents before the row\n" + "\n".join(LOG) + "\n")
        path = f.name
    try:
        got = sorted(run.log_aborts(path, len("old contents before the row\n"), scripts))
    finally:
        os.remove(path)
    if got != EXPECTED:
        print("log_aborts test: FAILED")
        for e in EXPECTED:
            if e not in got:
                print("  missing:   ", e)
        for g in got:
            if g not in EXPECTED:
                print("  unexpected:", g)
        return 1
    print(f"log_aborts test: ok ({len(got)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
