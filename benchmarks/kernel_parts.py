"""Where the compiled SGP step spends its time, in full-array copies (needs numba).

Times each part of the fused step (``sgpverify.engine.kernels``) on fixed arrays, as
the median of several calls divided by the median time of one ``np.copyto``
of the state, measured in the same run:

1. n = 1024, d = 20000 (the memory-bound size), random peer: the by-receiver
   kernel for the values alone, with the node sum, with the de-biased output
   z; numpy's divide of the full array; a numba loop of divisions on
   in-cache data (the arithmetic floor of z = x / w).
2. n = 10^6, d = 4 (item 3): the by-sender kernel with the step's random
   edges and with the same edges sent to the sender's own row (dst = src:
   sequential), the weights' own kernel, the values with the node sum and z,
   random peer's own kernel (the weights and all of that in one call);
   the step's graph (``Mixer.step``) and its parts: the peers' draw
   (per step, drawn 64 steps at once), ``(i + offset) % n`` and a
   conditional subtraction instead.
3. First use: three small runs in a fresh process, compiling the kernels into
   an empty numba cache, then loading them from it, then on the numpy path.

    python benchmarks/kernel_parts.py            # about 1 minute
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

import sgpverify as sv
from sgpverify.engine import kernels, mixers
from sgpverify.validation import rng_for


def _t(f, reps=9):
    f()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def _split(n, topo):
    mixer = mixers.Mixer(sv.mixing.mixing_schedule(topo), 0, None, topology=topo)
    return mixer, mixer.step(0)[1]


def memory_bound(n=1024, d=20000):
    rng = np.random.default_rng(0)
    X, G = rng.random((n, d)), rng.random((n, d))
    B, out, Z = np.empty_like(X), np.empty_like(X), np.empty_like(X)
    w = rng.random((n, 1)) + 0.5
    msum = np.empty(d)
    c = _t(lambda: np.copyto(B, X))
    _, sp = _split(n, sv.graphs.random_peer(n, seed=0))
    K = kernels.Step(n)
    rows = K.rows(n, sp.edges)
    rows = tuple(r.copy() for r in rows)
    run = lambda **kw: K.run(X, G, -0.1, sp.diag, sp.edges, None, out, rows=rows, **kw)  # noqa: E731
    small = rng.random((8, 1024))
    sout = np.empty_like(small)
    import numba

    @numba.njit(boundscheck=False)
    def divide_rows(O, A, v, reps):
        for _ in range(reps):
            for i in range(A.shape[0]):
                o, a, vi = O[i], A[i], v[i]
                for j in range(a.shape[0]):
                    o[j] = a[j] / vi

    reps = X.size // small.size
    return {
        "values": _t(lambda: run()) / c,
        "values + node sum": _t(lambda: run(msum=msum)) / c,
        "values + node sum + z": _t(lambda: run(msum=msum, Z2=Z, w=w, d=d)) / c,
        "numpy divide of the state": _t(lambda: np.divide(X, w, out=Z)) / c,
        "in-cache divisions, as many as the state has entries": _t(lambda: divide_rows(sout, small, w[:, 0], reps)) / c,
    }


def large_n(n=10**6, d=4):
    rng = np.random.default_rng(0)
    X, G = rng.random((n, d)), rng.random((n, d))
    B, out, Z = np.empty_like(X), np.empty_like(X), np.empty_like(X)
    w = rng.random((n, 1)) + 0.5
    ow = np.empty_like(w)
    msum = np.empty(d)
    c = _t(lambda: np.copyto(B, X))
    topo = sv.graphs.random_peer(n, seed=0)
    mixer, sp = _split(n, topo)
    K = kernels.Step(n)
    seq = (np.arange(n), np.arange(n), sp.edges[2])
    run = lambda edges, **kw: K.run(X, G, -0.1, sp.diag, edges, None, out, **kw)  # noqa: E731
    k = [0]

    def step():
        k[0] += 1
        mixer.step(k[0])

    src = np.arange(n)
    offs = rng_for(0, "random-peer", 1).integers(1, n, size=(64, n))

    def cond_sub():
        t = src + offs[3]
        np.subtract(t, n, out=t, where=t >= n)

    return {
        "by sender, values, the step's random edges": _t(lambda: run(sp.edges)) / c,
        "by sender, values, dst = src (sequential)": _t(lambda: run(seq)) / c,
        "weights (their own kernel, by sender)": _t(lambda: kernels.Step.weights(w, sp.diag, sp.edges, None, ow)) / c,
        "values + node sum + z": _t(lambda: run(sp.edges, msum=msum, Z2=Z, w=ow, d=d)) / c,
        "random peer's own kernel: weights + values + node sum + z": _t(
            lambda: kernels.Step.peer(X, G, -0.1, sp.edges[1], out, w, ow, msum, Z, d)
        )
        / c,
        "the step's graph (Mixer.step)": _t(step) / c,
        "peers' draw per step (64 steps at once / 64)": _t(
            lambda: rng_for(0, "random-peer", 1).integers(1, n, size=(64, n)), reps=3
        )
        / c
        / 64,
        "(i + offset) % n": _t(lambda: (src + offs[3]) % n) / c,
        "conditional subtraction instead": _t(cond_sub) / c,
    }


_FIRST = """
import os, time, warnings
warnings.simplefilter("ignore")
import sgpverify as sv
p = sv.problems.QuadraticCosine(16, 10, seed=0)
out = []
for topo, kw in ((sv.graphs.exponential(16), {}), (sv.graphs.random_peer(16, seed=0), dict(tau=2, delay="random")),
                 (sv.graphs.random_peer(16, seed=0), {})):
    t = time.perf_counter()
    sv.simulate(p, topo, step_size=0.05, n_iter=3, **kw)
    out.append(time.perf_counter() - t)
print(sum(out))
"""


def first_use():
    """Seconds of the first three runs of a fresh process with SGPVERIFY_KERNELS=numba
    (numba imported, kernels compiled into an empty cache, then loaded from it) and
    with numpy; the same small runs, so the difference is the kernels' first use."""
    import subprocess
    import tempfile

    out = {}
    with tempfile.TemporaryDirectory() as cache:
        for label, mode in (
            ("compiled into an empty cache", "numba"),
            ("loaded from the cache", "numba"),
            ("numpy path", "numpy"),
        ):
            env = dict(os.environ, SGPVERIFY_KERNELS=mode, NUMBA_CACHE_DIR=cache)
            r = subprocess.run([sys.executable, "-c", _FIRST], env=env, capture_output=True, text=True, check=True)
            out[label] = float(r.stdout.split()[-1])
    return out


def main():
    if not kernels.available():
        print("needs numba: pip install -e '.[fast]'", file=sys.stderr)
        return 2
    for title, f in (
        ("n = 1024, d = 20000, random peer, by receiver", memory_bound),
        ("n = 10^6, d = 4, random peer, by sender", large_n),
    ):
        print(f"{title} (full-array copies):")
        for name, v in f().items():
            print(f"   {name:<55} {v:6.2f}")
    print("first use in a fresh process: three small runs (exponential, random peer tau 2, random peer), seconds:")
    for name, v in first_use().items():
        print(f"   {name:<55} {v:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
