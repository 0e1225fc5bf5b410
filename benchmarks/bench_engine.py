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
4. **suite sizes** (n = 16, d = 10, R = 8 and 64 replicas,
   QuadraticCosine, metrics recorded every step as the suite does): the engine
   against a plain dense numpy SGP loop doing the same work per step (de-bias,
   per-replica gradients from the same streams, ``Y = X - gamma G``,
   ``X = P @ Y``, ``w = P @ w``, ``||grad f(xbar)||^2`` and the consensus),
   interleaved in one run, best of several, CPU time of this process. The
   reference keeps the replicas in the leading axis (each replica's gradient
   sees a contiguous array) and builds each step's dense (augmented) matrix
   inside its clock, from the topology's edges and the delay model's draws
   (:class:`DenseMatrices`: the engine does the same work; a periodic
   schedule without random delays keeps its period's matrices, as the
   engine does). Target: ratio engine / reference <= 1.
5. **large n** (item 3; n = 10^6, d = 4): time per iteration in full-array
   copies (as in 2.), exponential (after its period of cached matrices is
   built, and over the whole run; target <= 10 copies) and random peer
   against a floor measured in the same run (:func:`random_peer_floor`: a
   bare numpy step of the irreducible work, the fastest of three ways;
   target engine / floor <= 1.3); with ``--mixing``, the peak memory (RSS)
   of ``check_mixing`` at that size in a subprocess (target <= 2 GB).
6. **user problems** (n = 16, d = 10, R = 8 and 64, the Cauchy problem of
   ``docs/examples/mymod.py``: no ``grad_replicas``, a ``grad`` that takes
   leading replica axes): the engine against the dense loop of 4. making one
   stacked ``grad(Z, rng)`` call per step with one generator, as a user
   would write it, and evaluating ``f(xbar)`` every step as the engine's
   records do (also printed: against that loop without ``f(xbar)``, against
   the loop with one call per replica, and the engine without mass tracking,
   which the loop does not do); interleaved, best of several, CPU
   time. Target: <= 1. The loop does less than the engine must: no mass
   tracking (a node sum of the gradients every step and the mass error per
   record), no ``step_sq``, no weights' records, no ``state_max``, no
   finiteness tests.

Parts 2, 4, 5 and 6 are run ``--runs`` times (default 3), one after the other;
the summary gives each target's median and its smallest and largest value
over the runs, and whether it held in every run. The machine's cores, load
average (start and end) and versions are printed with it.

Usage: ``python benchmarks/bench_engine.py [--quick] [--runs N] [--json] [--mixing] [--only PART]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings

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
    for label, prob in (
        ("machinery", FreeGradient(n, d)),
        ("quadratic_cosine", sv.problems.QuadraticCosine(n, d, sigma=0.1, seed=0)),
    ):
        t_ref = _time(lambda: reference_sgp(prob, topo, step_size=0.05, n_iter=k_ref)) / k_ref
        run = lambda rec: sv.simulate(prob, topo, step_size=0.05, n_iter=k_engine, record_every=rec)  # noqa: E731
        run(k_engine)
        t_eng = _time(lambda: run(k_engine)) / k_engine
        t_rec = _time(lambda: run(1)) / k_engine
        out[label] = {
            "reference_s_per_iter": t_ref,
            "engine_s_per_iter": t_eng,
            "engine_recording_every_step_s_per_iter": t_rec,
            "speedup": t_ref / t_eng,
            "speedup_recording_every_step": t_ref / t_rec,
        }
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
            sv.simulate(
                prob,
                topo,
                step_size=0.1,
                n_iter=iters,
                record_every=10**9,
                track_mass=track,
                progress=lambda k: stamps.append(time.perf_counter()),
            )
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
        "n": n,
        "d": d,
        "topology": topo.name,
        "copy_s": c,
        "engine_copies_per_iter": statistics.median(per_iter[True]) / c,
        "engine_copies_per_iter_no_mass_tracking": statistics.median(per_iter[False]) / c,
        "naive_numpy_copies_per_iter": statistics.median(naive) / c,
        "rounds": rounds,
        "iters_per_round": iters,
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
        t = _time(lambda: sv.simulate(prob, topo, step_size=0.1, n_iter=K, tau=tau, delay="random", record_every=K)) / K
        rows.append({"vary": "tau", "n": 1024, "d": 1000, "tau": tau, "s_per_iter": t})
    return rows


class DenseMatrices:
    """Step k's dense (augmented) push matrix, built when the loop asks for it, inside its clock:
    the topology's edges, the push weights ``1 / (outdeg + 1)``, the delays of the delay model (as
    the engine draws them) and the ``n (tau + 1)`` augmented matrix of
    :func:`sgpverify.mixing.augment`, by numpy fancy indexing. A periodic schedule without random
    delays keeps its period's matrices (as the engine's mixer does)."""

    def __init__(self, topo, tau, delay, seed=0):
        self.topo, self.tau, self.n = topo, tau, topo.n
        self.model = sv.mixing.delay_model(delay, tau, seed) if tau else None
        n, N = self.n, self.n * (tau + 1)
        self.blank = np.zeros((N, N))
        self.blank[np.arange(N - n), np.arange(n, N)] = 1.0  # the buffer chain
        self.idx = np.arange(n)
        self.period = topo.period if self.model is None or not self.model.random else None
        self.cache = {}

    def __call__(self, k):
        key = k % self.period if self.period is not None else None
        M = self.cache.get(key) if key is not None else None
        if M is not None:
            return M
        n = self.n
        e = self.topo.edges(k)
        src, dst = e[:, 0], e[:, 1]
        diag = 1.0 / (np.bincount(src, minlength=n) + 1.0)
        M = self.blank.copy()
        M[self.idx, self.idx] = diag
        rows = dst if self.model is None else self.model.edge_delays(k, src, dst) * n + dst
        M[rows, src] = diag[src]
        if key is not None:
            self.cache[key] = M
        return M


def reference_loop(prob, mats, n_real, gamma, K, R, seed=0, metrics=True, stacked=False, shared=False, value=False):
    """The plain dense SGP loop of item 1: replicas first, the dense (augmented) matrix of step
    k from ``mats(k)`` (a :class:`DenseMatrices`, fresh for each run, so that the matrices are
    built inside the clock), metrics every step. ``stacked``: the gradients of all replicas in
    one ``grad_replicas`` call (as the engine makes it for the built-in problems); ``shared``:
    in one ``grad(Z, rng)`` call on the stacked ``(R, n, d)`` points with one generator (what a
    user writes for a problem whose ``grad`` takes leading replica axes); else one ``grad``
    call per replica. ``value``: the metrics also hold ``f(xbar)`` (the engine records it)."""
    n, d = n_real, prob.dim
    N = mats(0).shape[0]
    X = np.zeros((R, N, d))
    w = np.zeros((R, N, 1))
    w[:, :n] = 1.0
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(R)]
    G = np.zeros((R, N, d))
    Gt = np.empty((R, n, d))
    gn = np.empty((K, R))
    cons = np.empty((K, R))
    vals = np.empty((K, R))
    for k in range(K):
        P = mats(k)
        Z = X[:, :n] * (1.0 / w[:, :n])
        if stacked:
            G[:, :n] = prob.grad_replicas(Z, rngs, Gt)
        elif shared:
            G[:, :n] = prob.grad(Z, rngs[0])
        else:
            for r in range(R):
                G[r, :n] = prob.grad(Z[r], rngs[r])
        if metrics:
            xbar = X.sum(axis=1) / n  # mass in flight included
            gn[k] = np.sum(prob.full_grad(xbar) ** 2, axis=-1)
            cons[k] = np.sum((Z - xbar[:, None, :]) ** 2, axis=(1, 2)) / n
            if value:
                vals[k] = prob.value(xbar)
        X = P @ (X - gamma * G)
        w = P @ w
    return X, gn, cons


def suite_sizes(quick=False):
    """Item 1: engine vs the dense loop, interleaved, best of several (CPU time)."""
    n, d = 16, 10
    prob = sv.problems.QuadraticCosine(n, d, sigma=0.1, seed=0)
    K = 150 if quick else 400
    reps = 3 if quick else 5
    rows = []
    cases = [
        ("exponential", sv.graphs.exponential(n), 0, "fixed"),
        ("random-peer", sv.graphs.random_peer(n, seed=0), 2, "random"),
    ]
    for label, topo, tau, delay in cases:
        S = sv.mixing.mixing_schedule(topo, tau=tau, delay=delay, seed=0)
        check = DenseMatrices(topo, tau, delay)
        for k in (0, 1, 63, 64, 100):  # the loop's matrices are the library's
            if not np.array_equal(check(k), S.matrix(k).toarray()):
                raise AssertionError(f"DenseMatrices({label}) differs from mixing_schedule at step {k}")

        def mats(topo=topo, tau=tau, delay=delay):
            return DenseMatrices(topo, tau, delay)

        for R in (8, 64):
            kw = dict(step_size=0.05, n_iter=K, replicas=R, tau=tau, delay=delay, seed=0)
            runs = {
                "reference": lambda: reference_loop(prob, mats(), n, 0.05, K, R),
                "reference_no_metrics": lambda: reference_loop(prob, mats(), n, 0.05, K, R, metrics=False),
                # the loop with the engine's one gradient call per step: the machinery alone compared
                "reference_stacked": lambda: reference_loop(prob, mats(), n, 0.05, K, R, stacked=True),
                "engine": lambda: sv.simulate(prob, topo, record_every=1, **kw),
                "engine_record_at_end": lambda: sv.simulate(prob, topo, record_every=K, **kw),
                # the reference tracks no mass: the engine without it does its work exactly
                "engine_no_mass": lambda: sv.simulate(prob, topo, record_every=1, track_mass=False, **kw),
            }
            best = {}
            for _ in range(reps):
                for name, f in runs.items():
                    t0 = time.process_time()
                    f()
                    best[name] = min(best.get(name, np.inf), (time.process_time() - t0) / K)
            rows.append(
                {
                    "topology": label,
                    "tau": tau,
                    "delay": delay,
                    "R": R,
                    "n": n,
                    "d": d,
                    "K": K,
                    "us_per_step": {k: v * 1e6 for k, v in best.items()},
                    "ratio": best["engine"] / best["reference"],
                    "ratio_record_at_end": best["engine_record_at_end"] / best["reference_no_metrics"],
                    "ratio_no_mass": best["engine_no_mass"] / best["reference"],
                    "ratio_stacked_reference": best["engine"] / best["reference_stacked"],
                }
            )
    return rows


def user_problem(n, d):
    """The Cauchy problem of ``docs/examples/mymod.py``: a problem written outside sgpverify,
    without ``grad_replicas``, whose ``grad(z, rng)`` takes ``z`` shaped ``(..., n, d)``."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "examples", "mymod.py")
    spec = importlib.util.spec_from_file_location("mymod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.make(n, d, 0)


def user_sizes(quick=False):
    """Part 6: a user problem without ``grad_replicas`` (:func:`user_problem`) at the suite's
    sizes, engine vs the plain dense loop making one stacked ``grad(Z, rng)`` call per step,
    interleaved, best of several (CPU time), metrics every step."""
    n, d = 16, 10
    prob = user_problem(n, d)
    K = 150 if quick else 400
    reps = 3 if quick else 5
    rows = []
    cases = [
        ("exponential", sv.graphs.exponential(n), 0, "fixed"),
        ("random-peer", sv.graphs.random_peer(n, seed=0), 2, "random"),
    ]
    for label, topo, tau, delay in cases:

        def mats(topo=topo, tau=tau, delay=delay):
            return DenseMatrices(topo, tau, delay)

        for R in (8, 64):
            kw = dict(step_size=0.05, n_iter=K, replicas=R, tau=tau, delay=delay, seed=0)
            runs = {
                "reference": lambda: reference_loop(prob, mats(), n, 0.05, K, R, shared=True, value=True),
                "reference_no_value": lambda: reference_loop(prob, mats(), n, 0.05, K, R, shared=True),
                "reference_per_replica": lambda: reference_loop(prob, mats(), n, 0.05, K, R, value=True),
                "engine": lambda: sv.simulate(prob, topo, record_every=1, **kw),
                "engine_record_at_end": lambda: sv.simulate(prob, topo, record_every=K, **kw),
                "reference_no_metrics": lambda: reference_loop(prob, mats(), n, 0.05, K, R, shared=True, metrics=False),
                # the loop tracks no mass: the engine's share of that work, shown beside the target
                "engine_no_mass": lambda: sv.simulate(prob, topo, record_every=1, track_mass=False, **kw),
            }
            best = {}
            with warnings.catch_warnings():  # random peer: step_size / w_min > 1/L, said once per run
                warnings.simplefilter("ignore", sv.EffectiveStepWarning)
                for _ in range(reps):
                    for name, f in runs.items():
                        t0 = time.process_time()
                        f()
                        best[name] = min(best.get(name, np.inf), (time.process_time() - t0) / K)
            rows.append(
                {
                    "topology": label,
                    "tau": tau,
                    "R": R,
                    "n": n,
                    "d": d,
                    "K": K,
                    "us_per_step": {k: v * 1e6 for k, v in best.items()},
                    "ratio": best["engine"] / best["reference"],
                    "ratio_no_value_reference": best["engine"] / best["reference_no_value"],
                    "ratio_per_replica_reference": best["engine"] / best["reference_per_replica"],
                    "ratio_record_at_end": best["engine_record_at_end"] / best["reference_no_metrics"],
                    "ratio_no_mass": best["engine_no_mass"] / best["reference"],
                }
            )
    return rows


def _step_times(prob, topo, iters):
    """Wall time of each engine iteration (metrics recorded once): the differences of the
    progress callback's time stamps."""
    stamps = [time.perf_counter()]
    sv.simulate(
        prob,
        topo,
        step_size=0.1,
        n_iter=iters,
        record_every=10**9,
        progress=lambda k: stamps.append(time.perf_counter()),
    )
    return np.diff(stamps)


def _copies_per_iter(prob, topo, iters, skip, A, B, rounds=2):
    """Median iteration time (iterations ``skip..``) over the median copy time."""
    copy_times, per_iter = [], []
    for _ in range(rounds):
        for _ in range(3):
            copy_times.append(_time(lambda: np.copyto(B, A)))
        per_iter += list(_step_times(prob, topo, iters)[skip:])
    return statistics.median(per_iter) / statistics.median(copy_times)


def _floor_candidates(X, Y, dst):
    """Bare numpy implementations of a random-peer step's irreducible work on the state X (n, d):
    the streaming pass (read X, write Y: the self shares ``Y = X / 2``) and one scatter of the
    rows of X to the random receivers ``dst`` (``Y[dst[j]] += X[j]``, repeated receivers
    included). Each a function of no argument; the fastest is the floor."""
    n, d = X.shape

    def add_at_by_column():
        np.multiply(X, 0.5, out=Y)
        for c in range(d):  # numpy's 1-D unbuffered scatter (np.add.at on rows is ~10x slower here)
            np.add.at(Y[:, c], dst, X[:, c])

    def bincount_by_column():
        np.multiply(X, 0.5, out=Y)
        for c in range(d):
            Y[:, c] += np.bincount(dst, weights=X[:, c], minlength=n)

    def sort_reduceat():
        order = np.argsort(dst, kind="stable")
        s = dst[order]
        starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
        sums = np.add.reduceat(X[order], starts, axis=0)
        np.multiply(X, 0.5, out=Y)
        Y[s[starts]] += sums

    return {
        "add.at by column": add_at_by_column,
        "bincount by column": bincount_by_column,
        "sort + reduceat": sort_reduceat,
    }


def random_peer_floor(n=10**6, d=4, iters=40, rounds=3):
    """Item 3's random-peer target: the engine's time per iteration (FreeGradient, as in part 2)
    over the floor (:func:`_floor_candidates`, the fastest, on the receivers of random_peer's own
    steps), both in full-array copies. Copies, floor candidates and engine runs interleaved,
    ``rounds`` times; other processes only ever add time, so each side keeps its least disturbed
    measurement: the floor the fastest call of its fastest candidate, the engine the round with
    the smallest median iteration, the copy the round with the smallest median copy."""
    prob = FreeGradient(n, d)
    topo = sv.graphs.random_peer(n, seed=0)
    A = np.random.default_rng(0).random((n, d))
    B, Y = np.empty_like(A), np.empty_like(A)
    dsts = [np.asarray(topo.edges(k)[:, 1]) for k in range(3)]
    copy_rounds, engine_rounds, cand = [], [], {}
    for _ in range(rounds):
        copy_rounds.append(statistics.median(_time(lambda: np.copyto(B, A)) for _ in range(3)))
        for dst in dsts:
            for name, f in _floor_candidates(A, Y, dst).items():
                cand.setdefault(name, []).append(_time(f))
        engine_rounds.append(statistics.median(_step_times(prob, topo, iters)[1:]))
    c = min(copy_rounds)
    floors = {name: min(t) / c for name, t in cand.items()}
    best = min(floors, key=floors.get)
    engine = min(engine_rounds) / c
    return {
        "n": n,
        "d": d,
        "floor_copies": floors[best],
        "floor_method": best,
        "floor_candidates_copies": floors,
        "engine_copies": engine,
        "ratio": engine / floors[best],
        "rounds": rounds,
        "engine_round_medians_copies": [t / c for t in engine_rounds],
    }


def large_n(n=10**6, d=4, quick=False):
    """Item 3: copies per iteration at large n, small d (FreeGradient); random peer against its floor."""
    prob = FreeGradient(n, d)
    A = np.random.default_rng(0).random((n, d))
    B = np.empty_like(A)
    out = {"n": n, "d": d}
    topo = sv.graphs.exponential(n)
    P = topo.period
    out["exponential_period"] = P
    out["exponential_copies_after_first_period"] = _copies_per_iter(prob, topo, P + (5 if quick else 15), P + 1, A, B)
    out["exponential_copies_whole_run"] = _copies_per_iter(prob, topo, P + 5, 1, A, B, rounds=1)
    del A, B
    out["random_peer"] = random_peer_floor(n, d, iters=12 if quick else 20, rounds=3 if quick else 5)
    out["random_peer_copies"] = out["random_peer"]["engine_copies"]
    return out


def mixing_memory(n=10**6, horizon=100, topology="exponential", columns=None):
    """Peak RSS of check_mixing at size n, in a fresh subprocess."""
    import subprocess

    code = (
        "import resource, time, sgpverify as sv; t = time.perf_counter(); "
        f"r = sv.check_mixing(sv.graphs.by_name({topology!r}, {n}, seed=0), horizon={horizon}, columns={columns}); "
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, r.contraction_columns)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    secs, kb, cols = r.stdout.split()
    return {
        "n": n,
        "topology": topology,
        "horizon": horizon,
        "columns": int(cols),
        "seconds": float(secs),
        "peak_rss_mb": int(kb) / 1024,
    }


#: The engine's targets: (key, what, limit). Each is a ratio against a reference
#: measured in the same run (the dense loop, a full-array copy, the bare numpy floor, 2 GB).
TARGETS = [
    ("suite/exponential/R=8", "suite sizes, exponential, R = 8: engine / dense loop", 1.0),
    ("suite/exponential/R=64", "suite sizes, exponential, R = 64: engine / dense loop", 1.0),
    ("suite/random-peer/R=8", "suite sizes, random peer, tau = 2 random, R = 8: engine / dense loop", 1.0),
    ("suite/random-peer/R=64", "suite sizes, random peer, tau = 2 random, R = 64: engine / dense loop", 1.0),
    ("user/exponential/R=8", "user problem, exponential, R = 8: engine / stacked loop with f(xbar)", 1.0),
    ("user/exponential/R=64", "user problem, exponential, R = 64: engine / stacked loop with f(xbar)", 1.0),
    ("user/random-peer/R=8", "user problem, random peer tau = 2, R = 8: engine / stacked loop with f(xbar)", 1.0),
    ("user/random-peer/R=64", "user problem, random peer tau = 2, R = 64: engine / stacked loop with f(xbar)", 1.0),
    ("memory/random-peer", "memory-bound random peer, mass tracking: copies per iteration", 5.0),
    ("memory/exponential", "memory-bound exponential, mass tracking: copies per iteration", 4.0),
    ("large-n/exponential", "large n (10^6; --quick 10^5) exponential after its period: copies", 10.0),
    ("large-n/random-peer", "large n (10^6; --quick 10^5) random peer: engine / bare numpy floor", 1.3),
    ("mixing/exponential", "check_mixing(exponential(10^6)) peak RSS / 2 GB", 1.0),
    ("mixing/random-peer", "check_mixing(random_peer(10^6)) peak RSS / 2 GB", 1.0),
]


def target_values(run):
    """The target ratios of one run (those it measured)."""
    out = {}
    for r in run.get("suite_sizes", []):
        out[f"suite/{r['topology']}/R={r['R']}"] = r["ratio"]
    for r in run.get("user_sizes", []):
        out[f"user/{r['topology']}/R={r['R']}"] = r["ratio"]
    for m in run.get("memory_bound", []):
        key = "random-peer" if m["topology"].startswith("random-peer") else "exponential"
        out[f"memory/{key}"] = m["engine_copies_per_iter"]
    if "large_n" in run:
        out["large-n/exponential"] = run["large_n"]["exponential_copies_after_first_period"]
        out["large-n/random-peer"] = run["large_n"]["random_peer"]["ratio"]
    for m in run.get("mixing_memory", []):
        out[f"mixing/{m['topology']}"] = m["peak_rss_mb"] / 2048
    return out


def summary(runs):
    """Per target: the median, smallest and largest ratio over the runs, and whether it holds."""
    vals = [target_values(r) for r in runs]
    out = []
    for key, what, limit in TARGETS:
        xs = [v[key] for v in vals if key in v]
        if xs:
            out.append(
                {
                    "target": key,
                    "what": what,
                    "limit": limit,
                    "runs": len(xs),
                    "median": statistics.median(xs),
                    "min": min(xs),
                    "max": max(xs),
                    "held_in_every_run": max(xs) <= limit,
                    "held_by_the_median": statistics.median(xs) <= limit,
                }
            )
    return out


def conditions():
    """The machine's state: cores, load average, versions, the kernel setting."""
    import platform

    return {
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "kernels": os.environ["SGPVERIFY_KERNELS"],
        "time_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (n = 10^5 for part 5), fewer repetitions")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--runs", type=int, default=3, help="runs of the target parts (suite, memory, large-n); default 3")
    ap.add_argument("--mixing", action="store_true", help="also the peak memory of check_mixing at n = 10^6 (minutes)")
    ap.add_argument(
        "--only",
        choices=("reference", "memory", "growth", "suite", "user", "large-n", "mixing"),
        action="append",
        help="run only these parts (repeatable; 'mixing' as --mixing)",
    )
    a = ap.parse_args(argv)
    if a.runs < 1:
        ap.error(f"--runs must be >= 1, got {a.runs}")
    want = set(a.only or ("reference", "memory", "growth", "suite", "user", "large-n"))
    a.mixing = a.mixing or "mixing" in want
    # the path measured: the compiled step when numba is installed, for every run whatever its size
    # (auto would keep small runs on numpy until numba is loaded); SGPVERIFY_KERNELS=numpy measures numpy
    from sgpverify.engine import kernels

    os.environ.setdefault("SGPVERIFY_KERNELS", "numba" if kernels.available() else "numpy")
    res = {"kernels": os.environ["SGPVERIFY_KERNELS"], "conditions_start": conditions()}
    if "reference" in want:
        res["vs_reference"] = vs_reference(k_ref=2 if a.quick else 5)
    if "growth" in want:
        res["growth"] = growth(a.quick)
    runs = []
    for i in range(a.runs):  # the target parts, run after run (each run interleaves its own references)
        run = {"run": i + 1, "load_average": os.getloadavg()}
        if "suite" in want:
            run["suite_sizes"] = suite_sizes(a.quick)
        if "user" in want:
            run["user_sizes"] = user_sizes(a.quick)
        if "memory" in want:
            run["memory_bound"] = [
                memory_bound(topology=t, rounds=2 if a.quick else 3) for t in ("random-peer", "exponential")
            ]
        if "large-n" in want:
            run["large_n"] = large_n(10**5 if a.quick else 10**6, quick=a.quick)
        runs.append(run)
        if not a.json:
            _print_run(run)
    if a.mixing:
        # both on check_mixing's defaults (horizon 100; at n = 10^6 the tracked columns are cut to
        # fit assumptions.CONTRACTION_BLOCK_BYTES: 33 instead of 256); once (minutes, memory is not noisy)
        mix = {"run": "mixing", "mixing_memory": [mixing_memory(10**6, 100, t) for t in ("exponential", "random-peer")]}
        runs.append(mix)
        if not a.json:
            _print_run(mix)
    res["runs"] = runs
    res["summary"] = summary(runs)
    res["conditions_end"] = conditions()
    if a.json:
        print(json.dumps(res, indent=1))
        return 0
    print(
        "\nsgpverify engine benchmark (ratios measured in one run; seconds are noisy on shared machines); "
        f"SGPVERIFY_KERNELS={res['kernels']}"
    )
    c0, c1 = res["conditions_start"], res["conditions_end"]
    print(
        f"   {c0['cpus']} CPUs, load average {c0['load_average'][0]:.2f} at the start, "
        f"{c1['load_average'][0]:.2f} at the end; numpy {c0['numpy']}, Python {c0['python']}"
    )
    if "vs_reference" in res:
        _print_reference(res)
    if "growth" in res:
        _print_growth(res)
    if res["summary"]:
        print(f"\ntargets over {a.runs} run(s): median [smallest, largest] (limit)")
        for t in res["summary"]:
            verdict = (
                "holds in every run"
                if t["held_in_every_run"]
                else ("holds by the median" if t["held_by_the_median"] else "NOT MET")
            )
            print(
                f"   {t['what']:<78} {t['median']:6.2f} [{t['min']:.2f}, {t['max']:.2f}] (<= {t['limit']:g}): {verdict}"
            )
    return 0


def _print_run(run):
    res = run
    print(f"\n== run {run['run']} (load average {run.get('load_average', (0,))[0]:.2f})")
    if "memory_bound" in res:
        _print_memory(res)
    if "suite_sizes" in res:
        print("\n4. suite sizes (n=16, d=10, QuadraticCosine), us/step, CPU time, best of several, interleaved:")
        for r in res["suite_sizes"]:
            u = r["us_per_step"]
            print(
                f"   {r['topology']:<12} tau={r['tau']} R={r['R']:<3} engine {u['engine']:7.0f} vs dense loop "
                f"{u['reference']:7.0f}: ratio {r['ratio']:.2f} (metrics every step); without metrics "
                f"{u['engine_record_at_end']:.0f} vs {u['reference_no_metrics']:.0f}: {r['ratio_record_at_end']:.2f}; "
                f"no mass tracking (as the loop) {u['engine_no_mass']:.0f}: {r['ratio_no_mass']:.2f}; "
                f"against the loop with one gradient call per step {u['reference_stacked']:.0f}: "
                f"{r['ratio_stacked_reference']:.2f}"
            )
    if "user_sizes" in res:
        print("\n6. user problem without grad_replicas (docs/examples/mymod.py, n=16, d=10), us/step, CPU time:")
        for r in res["user_sizes"]:
            u = r["us_per_step"]
            print(
                f"   {r['topology']:<12} tau={r['tau']} R={r['R']:<3} engine {u['engine']:7.0f} vs stacked loop "
                f"{u['reference']:7.0f}: ratio {r['ratio']:.2f}; vs that loop without f(xbar) "
                f"{u['reference_no_value']:.0f}: {r['ratio_no_value_reference']:.2f}; vs the loop with one grad "
                f"call per replica {u['reference_per_replica']:.0f}: {r['ratio_per_replica_reference']:.2f}; "
                f"without metrics {u['engine_record_at_end']:.0f} vs {u['reference_no_metrics']:.0f}: "
                f"{r['ratio_record_at_end']:.2f}; engine without mass tracking {u['engine_no_mass']:.0f}: "
                f"{r['ratio_no_mass']:.2f}"
            )
    if "large_n" in res:
        m = res["large_n"]
        rp = m["random_peer"]
        cands = ", ".join(f"{k} {v:.1f}" for k, v in rp["floor_candidates_copies"].items())
        print(
            f"\n5. large n (n={m['n']}, d={m['d']}), full-array copies per iteration: exponential "
            f"{m['exponential_copies_after_first_period']:.1f} after its period of {m['exponential_period']} "
            f"(cached), {m['exponential_copies_whole_run']:.1f} over the first period"
        )
        print(
            f"   random peer: floor {rp['floor_copies']:.1f} ({rp['floor_method']}; candidates: {cands}), "
            f"engine {rp['engine_copies']:.1f}, ratio engine / floor {rp['ratio']:.2f}"
        )
    for m in res.get("mixing_memory", []):
        print(
            f"   check_mixing({m['topology']}, n={m['n']}, horizon={m['horizon']}, columns={m['columns']}): peak RSS "
            f"{m['peak_rss_mb']:.0f} MB, {m['seconds']:.0f} s"
        )


def _print_reference(res):
    r = res["vs_reference"]
    print(f"\n1. vs per-node message loop (sgpverify.testing.reference), n={r['n']}, d={r['d']}, random-peer:")
    for label in ("machinery", "quadratic_cosine"):
        x = r[label]
        print(
            f"   {label:<17} engine {x['speedup']:5.0f}x faster (metrics recorded once), "
            f"{x['speedup_recording_every_step']:4.0f}x with metrics every step"
        )


def _print_memory(res):
    print("\n2. memory-bound iteration cost, excluding the gradient, in full-array copies:")
    for m in res["memory_bound"]:
        print(
            f"   {m['topology']:<28} n={m['n']} d={m['d']}: engine {m['engine_copies_per_iter']:.2f} "
            f"(no mass tracking {m['engine_copies_per_iter_no_mass_tracking']:.2f}), "
            f"straightforward numpy {m['naive_numpy_copies_per_iter']:.2f}"
        )


def _print_growth(res):
    print("\n3. time per iteration (FreeGradient, random-peer, metrics recorded once):")
    prev = {}
    for g in res["growth"]:
        key = g["vary"]
        ratio = f"x{g['s_per_iter'] / prev[key]:.2f}" if key in prev else ""
        prev[key] = g["s_per_iter"]
        print(f"   vary {key:<4} n={g['n']:<6} d={g['d']:<6} tau={g['tau']}: {g['s_per_iter'] * 1e3:8.3f} ms {ratio}")


if __name__ == "__main__":
    sys.exit(main())
