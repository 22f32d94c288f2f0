#!/usr/bin/env python3
"""Median goodput and median ratios over several runs of bench/run.py.

    bench/median.py DIR [DIR ...]

Each DIR holds a results.csv.  A ratio is taken within each run (the rows of
one run shared a server and a machine state), then the median over runs is
printed with the range, so that one noisy run does not decide a claim.
"""
import csv
import os
import statistics
import sys


def load(d):
    with open(os.path.join(d, "results.csv")) as f:
        return list(csv.DictReader(f))


def main(dirs):
    runs = [load(d) for d in dirs]
    workloads = []
    configs = []
    for rows in runs:
        for r in rows:
            if r["workload"] not in workloads:
                workloads.append(r["workload"])
            if r["config"] not in configs:
                configs.append(r["config"])
    good = {}
    for i, rows in enumerate(runs):
        for r in rows:
            good[(i, r["workload"], r["config"])] = float(r["goodput_tps"])

    def fmt(vals, digits):
        if not vals:
            return "—"
        m = statistics.median(vals)
        if len(vals) == 1:
            return f"{m:.{digits}f}"
        return f"{m:.{digits}f} ({min(vals):.{digits}f}–{max(vals):.{digits}f})"

    print(f"runs: {len(runs)} ({', '.join(dirs)})\n")
    print("| workload | " + " | ".join(configs) + " |")
    print("|---|" + "---:|" * len(configs))
    for w in workloads:
        cells = [fmt([good[(i, w, c)] for i in range(len(runs)) if (i, w, c) in good], 0)
                 for c in configs]
        print(f"| {w} | " + " | ".join(cells) + " |")

    fps = [c for c in configs if c.startswith("fpsketch")]
    bases = [c for c in configs if c.startswith("heap")] + \
        [c for c in fps if c.endswith(" exact")]
    print("\nRatios within each run, median (min–max):\n")
    print("| workload | fpsketch configuration | " + " | ".join("/ " + b for b in bases) + " |")
    print("|---|---|" + "---:|" * len(bases))
    for w in workloads:
        for c in fps:
            cells = []
            for b in bases:
                vals = [good[(i, w, c)] / good[(i, w, b)] for i in range(len(runs))
                        if (i, w, c) in good and good.get((i, w, b))]
                cells.append(fmt(vals, 2) if b != c else "—")
            print(f"| {w} | {c} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
