#!/usr/bin/python3
"""Test that the YCSB-like scripts' Zipfian generator, as pgbench evaluates
it, follows Zipf's law with the requested theta.

For theta = 0.99 and 0.6 over 1,000,000 keys it runs the exact generator
lines of the scripts (bench/gen.py zipf_key(), checked to be what
bench/ycsb/r8w8.sql contains) through pgbench with debug() and checks:

  1. every rank is in [0, n) and every key in [1, n];
  2. ranks 0 and 1 occur with the Zipf probabilities 1/zeta(n) and
     2^-theta/zeta(n) (within 5 standard deviations);
  3. each of the 20 most frequent ranks occurs as often as the generator's
     exact probability says (Gray et al.'s approximation, which gives ranks
     >= 2 slightly more than 1/k^theta; shown next to the Zipf value);
  4. the mass of log-spaced rank bins [2^j, 2^j+1) falls as 2^(j(1-theta)):
     the fitted exponent gives theta within 0.03;
  5. scrambling: the most frequent keys occur exactly as often as the most
     frequent ranks (permute() is a bijection) and the hottest key is not 1.

Needs pgbench and a server: uses PGHOST/PGPORT if one answers there, else
starts a throwaway cluster with scripts/cluster.sh (FPS_PGPORT, default
55447; FPS_PGDATA, default /tmp/fpsketch-zipf-pgdata).  Prints a table
and "zipf test: ok", exits 1 on failure.  About 20 seconds.
"""
import math
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "ycsb"))
import gen  # noqa: E402
import zipf  # noqa: E402

RECORDS = 1000000
SAMPLES = int(os.environ.get("ZIPF_SAMPLES", 200000))


def server_env():
    env = dict(os.environ)
    env["PATH"] = "/usr/lib/postgresql/15/bin:" + env.get("PATH", "")
    env.setdefault("PGUSER", "postgres")
    env.setdefault("PGHOST", "/tmp")
    if "PGPORT" in env:
        r = subprocess.run(["psql", "-X", "-At", "-d", "postgres", "-c", "SELECT 1"], env=env,
                           capture_output=True, text=True)
        if r.stdout.strip() == "1":
            return env, None
    env["FPS_PGPORT"] = env.get("FPS_PGPORT", "55447")
    env["FPS_PGDATA"] = env.get("FPS_PGDATA", "/tmp/fpsketch-zipf-pgdata")
    env["PGPORT"] = env["FPS_PGPORT"]
    subprocess.run([os.path.join(ROOT, "scripts/cluster.sh"), "start"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return env, lambda: subprocess.run([os.path.join(ROOT, "scripts/cluster.sh"), "stop"], env=env)


def sample(env, theta):
    """(ranks, keys) drawn by pgbench from the scripts' generator lines."""
    script = gen.zipf_key("k") + "\\set d debug(:z)\n\\set d debug(:k)\n"
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    cmd = ["pgbench", "-n", "-c", "1", "-t", str(SAMPLES), "--random-seed=12345", "-f", f.name]
    for k, v in zipf.constants(RECORDS, theta).items():
        cmd += ["-D", f"{k}={v}"]
    r = subprocess.run(cmd + ["postgres"], env=env, capture_output=True, text=True)
    os.unlink(f.name)
    if r.returncode != 0:
        raise SystemExit("pgbench failed:\n" + r.stderr[-2000:])
    vals = [(int(m.group(1)), int(m.group(2)))
            for m in re.finditer(r"debug\(script=0,command=(\d+)\): int (-?\d+)", r.stderr)]
    ranks = [v for c, v in vals if c == 4]
    keys = [v for c, v in vals if c == 5]
    return ranks, keys


def check_theta(env, theta):
    failures = []
    ranks, keys = sample(env, theta)
    n = len(ranks)
    print(f"\ntheta = {theta}, {RECORDS} keys, {n} samples")
    if n != SAMPLES or len(keys) != SAMPLES:
        return [f"expected {SAMPLES} samples, got {n} ranks / {len(keys)} keys"]
    if min(ranks) < 0 or max(ranks) >= RECORDS:
        failures.append(f"rank out of range: {min(ranks)} .. {max(ranks)}")
    if min(keys) < 1 or max(keys) > RECORDS:
        failures.append(f"key out of range: {min(keys)} .. {max(keys)}")
    rc = Counter(ranks)
    gp = zipf.generator_pmf(RECORDS, theta, 20)
    zp = zipf.zipf_pmf(RECORDS, theta, 20)
    print(" rank  observed   generator   zipf 1/k^theta/zeta   obs/zipf   z-score")
    for k in range(20):
        exp = n * gp[k]
        sd = math.sqrt(n * gp[k] * (1 - gp[k]))
        z = (rc[k] - exp) / sd
        print(f" {k:4d}  {rc[k] / n:.6f}   {gp[k]:.6f}    {zp[k]:.6f}             {rc[k] / n / zp[k]:.3f}"
              f"    {z:+.2f}")
        if abs(z) > 5:
            failures.append(f"rank {k}: {rc[k]} observed, {exp:.0f} expected (z = {z:.1f})")
        if k < 2 and abs(gp[k] - zp[k]) > 1e-12:
            failures.append(f"rank {k}: generator probability {gp[k]} is not Zipf's {zp[k]}")
    # log-spaced bins: mass of ranks [2^j, 2^(j+1)) ~ 2^(j (1 - theta)) for a power law
    xs, ys = [], []
    for j in range(3, 17):
        lo, hi = 2 ** j, 2 ** (j + 1)
        mass = sum(c for r, c in rc.items() if lo <= r < hi)
        if mass > 0:
            xs.append(j * math.log(2))
            ys.append(math.log(mass / n))
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    theta_hat = 1 - slope
    print(f" fitted theta over rank bins 8 .. 131071: {theta_hat:.4f} (want {theta})")
    if abs(theta_hat - theta) > 0.03:
        failures.append(f"fitted theta {theta_hat:.4f} is not {theta}")
    kc = sorted(Counter(keys).values(), reverse=True)[:20]
    top_ranks = sorted(rc.values(), reverse=True)[:20]
    hottest = Counter(keys).most_common(1)[0][0]
    print(f" hottest key {hottest} (rank 0 scrambled by permute), {kc[0]} draws")
    if kc != top_ranks:
        failures.append("the most frequent keys do not occur as often as the most frequent ranks")
    if hottest == 1:
        failures.append("keys are not scrambled (hottest key is 1)")
    return failures


def main():
    script = open(os.path.join(HERE, "ycsb/r8w8.sql")).read()
    failures = []
    if gen.zipf_key("k1") not in script:
        failures.append("bench/ycsb/r8w8.sql does not contain gen.zipf_key(); rerun bench/gen.py")
    env, stop = server_env()
    try:
        for theta in (0.99, 0.6):
            failures += check_theta(env, theta)
    finally:
        if stop:
            stop()
    print()
    for f in failures:
        print("FAIL:", f)
    print("zipf test: ok" if not failures else f"zipf test: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
