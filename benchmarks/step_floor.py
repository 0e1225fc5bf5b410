"""The engine's step against its floor and against a straightforward numpy step, in one run.

Every figure is a CPU time per step beyond the gradient (the problem is
``bench_engine.FreeGradient``: its gradient is a fixed array, returned as is),
in units of one full-array copy (``np.copyto`` of an (n, d) float64 array)
timed in the same run, between the measurements. Each engine figure is a whole
``simulate`` call of ``--steps`` steps (20 by default; also 5 with the fixed
cost per call) divided by its steps, on the compiled path
(``SGPVERIFY_KERNELS=numba``, the ``fast`` extra) and on the numpy path
(``SGPVERIFY_KERNELS=numpy``); the two paths give the same bits, so only the
time differs. Other processes only ever add time: each figure keeps its least
disturbed round (the smallest), with ``--rounds`` rounds interleaved.

1. **Random peer at n = 10^6, d = 4, against the floor** (:func:`floor_step`):
   the step's irreducible work written in bare numpy, beside the engine. One
   pass that reads X and G and writes ``X - gamma G``; the kept halves (one
   pass); the sent halves of the state and of the weights scattered to the
   step's random receivers, by the fastest of ``np.bincount`` per column and a
   stable sort with ``np.add.reduceat``; one de-biasing pass that writes
   ``Z = X (1/w)``. Targets: compiled <= 1.3 x the floor, numpy <= 1.6 x.
2. **Copy targets.** The compiled path's absolute targets: memory-bound
   n = 1024, d = 20000 random peer <= 5 copies, exponential <= 4; n = 10^6,
   d = 4 exponential <= 10. The numpy path against a straightforward numpy
   step measured in the same run, at most 1.0 x at every size: for the
   exponential graph (:func:`straightforward_exponential`) ``Y = X - gamma G``,
   the halves kept and rolled, the weights likewise, one de-biasing pass; for
   random peer (:func:`straightforward_random_peer`) the same with scipy's
   sparse product for the mixing.

Usage::

    python benchmarks/step_floor.py            # about 2-3 minutes on 2 cores
    python benchmarks/step_floor.py --quick    # n = 10^5 and d = 4000: well under a minute
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
from bench_engine import FreeGradient

import sgpverify as sv

GAMMA = 0.1
#: CPU time of this process (everything measured here runs on one thread): on a machine shared
#: with other jobs, wall time charges their slices to whichever measurement was running
_clock = time.process_time


def _copy_time(A, B, reps=5):
    ts = []
    for _ in range(reps):
        t = _clock()
        np.copyto(B, A)
        ts.append(_clock() - t)
    return min(ts)


def floor_step(X, mG, w, Y, Z, dst, scatter):
    """One random-peer step's irreducible work, in place: ``Y = X - gamma G`` (``mG`` is
    ``-gamma G``, scaled once outside the clock: one pass reading two arrays and writing one),
    ``X = Y / 2`` plus the sent halves scattered to ``dst``, the weights likewise, ``Z = X / w``."""
    np.add(X, mG, out=Y)
    np.multiply(Y, 0.5, out=X)  # the kept halves (the sent halves are the same numbers)
    scatter(X, dst)
    w *= 0.5
    w += np.bincount(dst, weights=w, minlength=w.size)
    np.multiply(X, (1.0 / w)[:, None], out=Z)


def _scatter_bincount(X, dst):
    for c in range(X.shape[1]):  # the whole bincount is formed before the += reads it back
        X[:, c] += np.bincount(dst, weights=X[:, c], minlength=X.shape[0])


def _scatter_sort(X, dst):
    order = np.argsort(dst, kind="stable")
    s = dst[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    X[s[starts]] += np.add.reduceat(X[order], starts, axis=0)


SCATTERS = {"bincount by column": _scatter_bincount, "sort + reduceat": _scatter_sort}


def straightforward_exponential(X, G, w, shift):
    """The straightforward numpy step on the exponential graph (one peer at ``shift``)."""
    Y = X - GAMMA * G
    H = 0.5 * Y
    X = H + np.roll(H, shift, axis=0)
    h = 0.5 * w
    w = h + np.roll(h, shift)
    return X, w, X / w[:, None]


def straightforward_random_peer(X, G, w, P):
    """The straightforward numpy step on random peer, ``P`` the step's sparse matrix."""
    Y = X - GAMMA * G
    X = P @ Y
    w = P @ w
    return X, w, X / w[:, None]


def _engine_per_step(prob, topo, steps, kernels):
    os.environ["SGPVERIFY_KERNELS"] = kernels
    t = _clock()
    sv.simulate(prob, topo, step_size=GAMMA, n_iter=steps, record_every=10**9)
    return (_clock() - t) / steps


def _paths():
    return ["numba", "numpy"] if sv.engine.kernels.available() else ["numpy"]


def random_peer_vs_floor(n, d, steps, rounds):
    prob = FreeGradient(n, d)
    topo = sv.graphs.random_peer(n, seed=0)
    rng = np.random.default_rng(0)
    A, B = rng.random((n, d)), np.empty((n, d))
    X, Y, Z, mG = A.copy(), np.empty_like(A), np.empty_like(A), -GAMMA * prob.G
    dsts = [np.ascontiguousarray(np.asarray(topo.edges(k))[:, 1]) for k in range(3)]
    copy, floor, engine = [], {k: [] for k in SCATTERS}, {p: [] for p in _paths()}
    for p in engine:  # warm-up: the compiled kernels load (or compile) once
        _engine_per_step(prob, topo, 2, p)
    for _ in range(rounds):
        copy.append(_copy_time(A, B))
        for name, scatter in SCATTERS.items():
            w = np.ones(n)
            for dst in dsts:
                t = _clock()
                floor_step(X, mG, w, Y, Z, dst, scatter)
                floor[name].append(_clock() - t)
        for p in engine:
            engine[p].append(_engine_per_step(prob, topo, steps, p))
    c = min(copy)
    floors = {k: min(v) / c for k, v in floor.items()}
    best = min(floors, key=floors.get)
    out = {"n": n, "d": d, "steps_per_call": steps, "floor_copies": floors[best], "floor_scatter": best}
    out["floor_candidates_copies"] = floors
    for p, ts in engine.items():
        out[f"engine_{p}_copies"] = min(ts) / c
        out[f"engine_{p}_over_floor"] = min(ts) / c / floors[best]
    return out


def copies(topology, n, d, steps, rounds, short=None):
    """The engine's copies per step on both paths, and the straightforward numpy step's."""
    prob = FreeGradient(n, d)
    topo = sv.graphs.by_name(topology, n, seed=0)
    rng = np.random.default_rng(0)
    A, B = rng.random((n, d)), np.empty((n, d))
    calls = [steps] + ([short] if short else [])
    copy, plain, engine = [], [], {(p, s): [] for p in _paths() for s in calls}
    for p in _paths():
        _engine_per_step(prob, topo, 2, p)
    for _ in range(rounds):
        copy.append(_copy_time(A, B))
        X, w = A, np.ones(n)
        for k in range(3):
            t = _clock()
            if topology == "exponential":
                X, w, _ = straightforward_exponential(X, prob.G, w, topo.offsets[k % topo.period][0])
            else:
                X, w, _ = straightforward_random_peer(X, prob.G, w, sv.mixing.push_matrix(topo, k))
            plain.append(_clock() - t)
        for key in engine:
            engine[key].append(_engine_per_step(prob, topo, key[1], key[0]))
    c = min(copy)
    out = {"topology": topology, "n": n, "d": d, "straightforward_copies": min(plain) / c}
    for (p, s), ts in engine.items():
        out[f"engine_{p}_{s}_steps_copies"] = min(ts) / c
        out[f"engine_{p}_{s}_steps_over_straightforward"] = min(ts) / min(plain)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n = 10^5 and d = 4000 instead of 10^6 and 20000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.rounds < 1 or a.steps < 2:
        ap.error(f"--rounds must be >= 1 and --steps >= 2, got {a.rounds} and {a.steps}")
    big, wide = (10**5, 4000) if a.quick else (10**6, 20000)
    run = {"conditions": {"cpus": os.cpu_count(), "load_average": os.getloadavg(), "paths": _paths()}}
    run["conditions"].update(numpy=np.__version__, time_utc=time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()))
    run["random_peer_floor"] = random_peer_vs_floor(big, 4, a.steps, a.rounds)
    run["copies"] = [
        copies("random-peer", 1024, wide, a.steps, a.rounds),
        copies("exponential", 1024, wide, a.steps, a.rounds),
        copies("exponential", big, 4, a.steps, a.rounds, short=5),
    ]
    run["conditions"]["load_average_end"] = os.getloadavg()
    if a.json:
        print(json.dumps(run, indent=1))
        return 0
    rp = run["random_peer_floor"]
    print(f"random peer n = {rp['n']}, d = {rp['d']}, calls of {rp['steps_per_call']} steps (copies per step):")
    print(f"  floor {rp['floor_copies']:.2f} ({rp['floor_scatter']}; {rp['floor_candidates_copies']})")
    for p, limit in (("numba", 1.3), ("numpy", 1.6)):
        if f"engine_{p}_copies" in rp:
            r = rp[f"engine_{p}_over_floor"]
            print(f"  {p}: {rp[f'engine_{p}_copies']:.2f}, {r:.2f} x the floor (target <= {limit}: {r <= limit})")
    for m in run["copies"]:
        print(f"{m['topology']} n = {m['n']}, d = {m['d']}: straightforward numpy {m['straightforward_copies']:.2f}")
        for key in sorted(k for k in m if k.endswith("_copies") and k.startswith("engine_")):
            ratio = m[key.replace("_copies", "_over_straightforward")]
            print(f"  {key[7:-7].replace('_', ' ')}: {m[key]:.2f} copies, {ratio:.2f} x straightforward")
    print(f"conditions: {run['conditions']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
