"""Speed of sgpverify.simulate, as ratios measured in one run.

Three measurements (machines here are shared and noisy: compare the ratios,
not the seconds):

1. **vs a per-node message loop** (n = 1024, d = 10): the engine against
   :func:`sgpverify.testing.reference.reference_sgp`, the straightforward SGP
   with a Python loop over nodes and messages. Target: >= 50x.
2. **memory-bound regime** (n = 1024, d = 20000: each state array is 164 MB,
   far beyond the caches): the cost of one iteration, excluding the problem's
   own gradient (the problem returns a precomputed array), in units of one
   full-array copy (``np.copyto`` of an (n, d) float64 array) timed in the same
   run, interleaved. Also a straightforward numpy step as the reference. Target:
   <= 5 copies.
3. **growth** of the time per iteration with n, d and tau.

Usage: ``python benchmarks/bench_engine.py [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

import sgpverify as sv
from sgpverify.testing.reference import reference_sgp


class FreeGradient:
    """A problem whose gradient costs nothing: a fixed array, returned as is."""

    name = "FreeGradient"

    def __init__(self, n, d):
        self.n_nodes, self.dim = n, d
        self.L, self.sigma2, self.zeta2, self.f_lower = 1.0, 0.0, 0.0, 0.0
        self.G = np.full((n, d), 1e-3)

    def grad(self, z, rng):
        return self.G

    def full_grad(self, x):
        return np.zeros_like(x)

    def value(self, x):
        return np.zeros(np.shape(x)[:-1])


def _time(f, reps=1):
    t = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t) / reps


def vs_reference(n=1024, d=10, k_ref=5, k_engine=200):
    """Engine vs the per-node loop, with a free gradient (the SGP machinery
    alone) and with QuadraticCosine (end to end, gradient cost included in both)."""
    out = {"n": n, "d": d}
    topo = sv.graphs.random_peer(n, seed=0)
    for label, prob in (("machinery", FreeGradient(n, d)),
                        ("quadratic_cosine", sv.problems.QuadraticCosine(n, d, sigma=0.1, seed=0))):
        t_ref = _time(lambda: reference_sgp(prob, topo, step_size=0.05, n_iter=k_ref)) / k_ref
        run = lambda rec: sv.simulate(prob, topo, step_size=0.05, n_iter=k_engine, record_every=rec)  # noqa: E731
        run(k_engine)
        t_eng = _time(lambda: run(k_engine)) / k_engine
        t_rec = _time(lambda: run(1)) / k_engine
        out[label] = {"reference_s_per_iter": t_ref, "engine_s_per_iter": t_eng,
                      "engine_recording_every_step_s_per_iter": t_rec,
                      "speedup": t_ref / t_eng, "speedup_recording_every_step": t_ref / t_rec}
    return out


def naive_numpy_step(X, w, G, P, gamma):
    """The straightforward numpy SGP step (the reference for the copy count)."""
    Z = X / w[:, None]  # de-bias (the gradient would be taken here)
    Y = X - gamma * G
    X = P @ Y
    w = P @ w
    return X, w, Z


def memory_bound(n=1024, d=20000, iters=24, rounds=3, topology="random-peer"):
    """Median time of one iteration (time stamps between iterations, the first
    3 dropped as warm-up) over the median time of one full-array copy, the
    copies timed in the same run between the simulations."""
    prob = FreeGradient(n, d)
    topo = sv.graphs.by_name(topology, n, seed=0)
    A = np.random.default_rng(0).random((n, d))
    B = np.empty_like(A)
    copy_times = []
    per_iter = {True: [], False: []}
    naive = []
    P = sv.mixing.push_matrix(topo, 0)
    X, w = A.copy(), np.ones(n)

    def copies():
        for _ in range(3):
            copy_times.append(_time(lambda: np.copyto(B, A)))

    for _ in range(rounds):
        for track in (False, True):
            copies()
            stamps = []
            sv.simulate(prob, topo, step_size=0.1, n_iter=iters, record_every=10**9, track_mass=track,
                        progress=lambda k: stamps.append(time.perf_counter()))
            per_iter[track] += list(np.diff(stamps)[3:])
        copies()
        t = []
        for _ in range(6):
            t0 = time.perf_counter()
            X, w, _ = naive_numpy_step(X, w, prob.G, P, 0.1)
            t.append(time.perf_counter() - t0)
        naive += t[1:]
    c = statistics.median(copy_times)
    return {
        "n": n, "d": d, "topology": topo.name,
        "copy_s": c,
        "engine_copies_per_iter": statistics.median(per_iter[True]) / c,
        "engine_copies_per_iter_no_mass_tracking": statistics.median(per_iter[False]) / c,
        "naive_numpy_copies_per_iter": statistics.median(naive) / c,
        "rounds": rounds, "iters_per_round": iters,
    }


def growth(quick=False):
    rows = []
    ns = [256, 1024, 4096] if quick else [256, 1024, 4096, 16384]
    for n in ns:
        prob = FreeGradient(n, 10)
        topo = sv.graphs.random_peer(n, seed=0)
        K = 50
        t = _time(lambda: sv.simulate(prob, topo, step_size=0.1, n_iter=K, record_every=K)) / K
        rows.append({"vary": "n", "n": n, "d": 10, "tau": 0, "s_per_iter": t})
    ds = [10, 100, 1000] if quick else [10, 100, 1000, 10000]
    for d in ds:
        prob = FreeGradient(256, d)
        topo = sv.graphs.random_peer(256, seed=0)
        K = 30
        t = _time(lambda: sv.simulate(prob, topo, step_size=0.1, n_iter=K, record_every=K)) / K
        rows.append({"vary": "d", "n": 256, "d": d, "tau": 0, "s_per_iter": t})
    for tau in [0, 1, 2, 4]:
        prob = FreeGradient(1024, 1000)
        topo = sv.graphs.random_peer(1024, seed=0)
        K = 20
        t = _time(lambda: sv.simulate(prob, topo, step_size=0.1, n_iter=K, tau=tau, delay="random",
                                      record_every=K)) / K
        rows.append({"vary": "tau", "n": 1024, "d": 1000, "tau": tau, "s_per_iter": t})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    res = {
        "vs_reference": vs_reference(k_ref=2 if a.quick else 5),
        "memory_bound": [memory_bound(topology=t, rounds=2 if a.quick else 3)
                         for t in ("random-peer", "exponential")],
        "growth": growth(a.quick),
    }
    if a.json:
        print(json.dumps(res, indent=1))
        return 0
    print("sgpverify engine benchmark (ratios measured in one run; seconds are noisy on shared machines)")
    r = res["vs_reference"]
    print(f"\n1. vs per-node message loop (sgpverify.testing.reference), n={r['n']}, d={r['d']}, random-peer:")
    for label in ("machinery", "quadratic_cosine"):
        x = r[label]
        print(f"   {label:<17} engine {x['speedup']:5.0f}x faster (metrics recorded once), "
              f"{x['speedup_recording_every_step']:4.0f}x with metrics every step")
    print("\n2. memory-bound iteration cost, excluding the gradient, in full-array copies:")
    for m in res["memory_bound"]:
        print(f"   {m['topology']:<28} n={m['n']} d={m['d']}: engine {m['engine_copies_per_iter']:.2f} "
              f"(no mass tracking {m['engine_copies_per_iter_no_mass_tracking']:.2f}), "
              f"straightforward numpy {m['naive_numpy_copies_per_iter']:.2f}")
    print("\n3. time per iteration (FreeGradient, random-peer, metrics recorded once):")
    prev = {}
    for g in res["growth"]:
        key = g["vary"]
        ratio = f"x{g['s_per_iter'] / prev[key]:.2f}" if key in prev else ""
        prev[key] = g["s_per_iter"]
        print(f"   vary {key:<4} n={g['n']:<6} d={g['d']:<6} tau={g['tau']}: {g['s_per_iter'] * 1e3:8.3f} ms {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
