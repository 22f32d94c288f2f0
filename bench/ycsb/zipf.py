"""YCSB's Zipfian generator (Gray et al., SIGMOD 1994): the constants the
pgbench scripts need, and the exact probability of each rank under the
generator (for bench/test_zipf.py).

pgbench's random_zipfian() only accepts theta >= 1.001 (and is a different
algorithm), so the YCSB-like scripts implement YCSB's ZipfianGenerator in
pgbench expressions (see bench/gen.py, zipf_key()):

    u  = uniform [0, 1)
    uz = u * zetan
    rank = 0                                     if uz < 1
           1                                     if uz < 1 + 0.5^theta
           floor(n * (eta * u - eta + 1)^alpha)  otherwise

with zetan = zeta(n, theta), alpha = 1 / (1 - theta),
eta = (1 - (2/n)^(1 - theta)) / (1 - zeta(2, theta) / zetan).
Ranks 0 and 1 get exactly the Zipf probabilities 1/zetan and
2^-theta/zetan; larger ranks follow the continuous approximation.
"""
import math


def zeta(n, theta):
    """sum_{i=1..n} 1 / i^theta, summed from the small terms up."""
    s = 0.0
    for i in range(n, 0, -1):
        s += i ** -theta
    return s


_zeta_cache = {}


def constants(records, theta, seed=5381):
    """pgbench -D variables for the YCSB scripts."""
    if not 0 < theta < 1:
        raise ValueError("theta must be in (0, 1)")
    key = (records, theta)
    if key not in _zeta_cache:
        _zeta_cache[key] = zeta(records, theta)
    zetan = _zeta_cache[key]
    zeta2 = 1 + 0.5 ** theta
    return {
        "records": records,
        "zetan": repr(zetan),
        "eta": repr((1 - (2.0 / records) ** (1 - theta)) / (1 - zeta2 / zetan)),
        "alpha": repr(1.0 / (1 - theta)),
        "half_pow_theta": repr(zeta2),
        "seed": seed,
    }


def zipf_pmf(records, theta, ranks):
    """True Zipf probability of ranks 0..ranks-1 over `records` items."""
    zetan = zeta(records, theta)
    return [(i + 1) ** -theta / zetan for i in range(ranks)]


def generator_pmf(records, theta, ranks):
    """Exact probability that the generator returns each rank 0..ranks-1
    (the measure of the u that map to it), for comparing samples with."""
    c = constants(records, theta)
    zetan, eta, alpha = float(c["zetan"]), float(c["eta"]), float(c["alpha"])
    zeta2 = float(c["half_pow_theta"])
    p = [1 / zetan, (zeta2 - 1) / zetan]
    # rank k >= 2 <=> k <= n * (eta*u - eta + 1)^alpha < k + 1
    #             <=> u in [u(k), u(k+1)), u(x) = ((x/n)^(1/alpha) - 1 + eta) / eta
    # (rank 2 also takes everything in [zeta2/zetan, u(3)) that is not 0 or 1)
    def u_of(x):
        return ((x / records) ** (1 / alpha) - 1 + eta) / eta
    lo = zeta2 / zetan
    for k in range(2, ranks):
        hi = min(1.0, u_of(k + 1))
        p.append(max(0.0, hi - max(lo, u_of(k) if k > 2 else lo)))
        lo = max(lo, hi)
    return p[:ranks]


if __name__ == "__main__":
    import sys
    n, th = int(sys.argv[1]), float(sys.argv[2])
    print(constants(n, th))
    for i, (g, z) in enumerate(zip(generator_pmf(n, th, 10), zipf_pmf(n, th, 10))):
        print(i, f"{g:.6f} {z:.6f} {g / z:.4f}")
