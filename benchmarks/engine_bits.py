"""Bit-identity check of :func:`sgpverify.simulate` between two checkouts.

Runs a fixed set of configurations and writes every field of every Trace to
an ``.npz`` file; ``compare`` then checks two such files with
``np.array_equal`` (NaN equal to NaN) and prints the first differences.

Usage (one dump per checkout, then the comparison)::

    PYTHONPATH=/work/main   python benchmarks/engine_bits.py dump /tmp/main.npz
    PYTHONPATH=$PWD         python benchmarks/engine_bits.py dump /tmp/branch.npz
    python benchmarks/engine_bits.py compare /tmp/main.npz /tmp/branch.npz

The compiled step (numba, the ``fast`` extra) against the numpy path, in one checkout::

    SGPVERIFY_KERNELS=numpy python benchmarks/engine_bits.py dump /tmp/numpy.npz
    SGPVERIFY_KERNELS=numba python benchmarks/engine_bits.py dump /tmp/numba.npz
    python benchmarks/engine_bits.py compare /tmp/numpy.npz /tmp/numba.npz

Set the variable explicitly: with the default ``auto`` these short runs stay on
numpy until numba is loaded, and the comparison would test nothing. ``dump``
prints the setting it ran with.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np


def configs():
    import sgpverify as sv

    g = sv.graphs
    out = []

    def add(name, n, d, topo, **kw):
        out.append((name, n, d, topo, kw))

    for n, d in ((16, 10), (12, 3), (1, 4)):
        for R in (1, 8):
            base = dict(replicas=R, step_size=0.05, n_iter=60)
            add(f"exp-n{n}-d{d}-R{R}", n, d, g.exponential(n), **base)
            if n > 1:
                add(f"exp2-n{n}-d{d}-R{R}", n, d, g.exponential(n, peers=2), **base)
                add(f"rp-n{n}-d{d}-R{R}", n, d, g.random_peer(n, seed=1), **base)
                add(f"er-n{n}-d{d}-R{R}", n, d, g.erdos_renyi(n, 0.3, seed=2), **base)
                add(f"ring-n{n}-d{d}-R{R}", n, d, g.ring(n), **base)
                add(f"ringbi-n{n}-d{d}-R{R}", n, d, g.ring(n, bidirectional=True), **base)
                for tau in (1, 2, 4):
                    for delay in ("fixed", "random"):
                        add(
                            f"rp-tau{tau}-{delay}-n{n}-R{R}",
                            n,
                            d,
                            g.random_peer(n, seed=1),
                            tau=tau,
                            delay=delay,
                            **base,
                        )
                        add(f"exp-tau{tau}-{delay}-n{n}-R{R}", n, d, g.exponential(n), tau=tau, delay=delay, **base)
                add(f"rp-tau0-random-n{n}-R{R}", n, d, g.random_peer(n, seed=1), tau=0, delay="random", **base)
                for algo in ("dpsgd", "allreduce", "local-sgd"):
                    add(f"{algo}-exp-n{n}-R{R}", n, d, g.exponential(n), algorithm=algo, **base)
                add(f"dpsgd-rp-n{n}-R{R}", n, d, g.random_peer(n, seed=1), algorithm="dpsgd", **base)
                add(f"mom-rp-n{n}-R{R}", n, d, g.random_peer(n, seed=1), momentum=0.9, **base)
                add(
                    f"nest-exp-tau1-n{n}-R{R}",
                    n,
                    d,
                    g.exponential(n),
                    momentum=0.9,
                    nesterov=True,
                    tau=1,
                    delay="random",
                    **base,
                )
                add(f"states-rp-n{n}-R{R}", n, d, g.random_peer(n, seed=1), record_states=True, **base)
                add(f"states3-exp-n{n}-R{R}", n, d, g.exponential(n), record_states=3, record_every=7, **base)
                add(f"nomass-rp-n{n}-R{R}", n, d, g.random_peer(n, seed=1), track_mass=False, **base)
                add(f"nomass-exp-n{n}-R{R}", n, d, g.exponential(n), track_mass=False, **base)
                add(f"nodebias-rp-n{n}-R{R}", n, d, g.random_peer(n, seed=1), debias=False, **base)
                add(
                    f"nodebias-rp-tau2-n{n}-R{R}",
                    n,
                    d,
                    g.random_peer(n, seed=1),
                    debias=False,
                    tau=2,
                    delay="random",
                    **base,
                )
                add(f"loss-rp-n{n}-R{R}", n, d, g.with_message_loss(g.random_peer(n, seed=1), 0.2, seed=3), **base)
                add(
                    f"loss-exp-tau2-n{n}-R{R}",
                    n,
                    d,
                    g.with_message_loss(g.exponential(n), 0.2, seed=3),
                    tau=2,
                    delay="random",
                    **base,
                )
                add(f"sbs-rp-tau1-n{n}-R{R}", n, d, g.random_peer(n, seed=1), send_before_step=True, tau=1, **base)
                add(f"sbs-exp-n{n}-R{R}", n, d, g.exponential(n), send_before_step=True, **base)
                add(f"strag-exp-n{n}-R{R}", n, d, g.with_stragglers(g.exponential(n), [0], 3), **base)
                add(f"rec5-rp-n{n}-R{R}", n, d, g.random_peer(n, seed=1), record_every=5, **base)
                add(f"x0-exp-n{n}-R{R}", n, d, g.exponential(n), x0=np.linspace(-1, 1, d), **base)
                add(f"matrices-n{n}-R{R}", n, d, sv.mixing.mixing_schedule(g.random_peer(n, seed=4)), **base)
    # every built-in problem (the problem sees the engine's layout)
    for pname in ("double-well", "nonconvex-logistic"):
        for R in (1, 3, 8):
            base = dict(replicas=R, step_size=0.05, n_iter=40, problem=pname)
            add(f"{pname}-exp-R{R}", 16, 10, g.exponential(16), **base)
            add(f"{pname}-rp-tau2-R{R}", 16, 10, g.random_peer(16, seed=1), tau=2, delay="random", **base)
            add(f"{pname}-rp-mom-R{R}", 12, 5, g.random_peer(12, seed=1), momentum=0.9, **base)
    # large arrays (the blocked, memory-bound branch): n R d >= 2**18
    for R in (1, 2):
        base = dict(replicas=R, step_size=0.05, n_iter=6)
        n, d = 64, 4200
        add(f"big-rp-R{R}", n, d, g.random_peer(n, seed=1), **base)
        add(f"big-exp-R{R}", n, d, g.exponential(n), **base)
        add(f"big-exp2-R{R}", n, d, g.exponential(n, peers=2), **base)
        add(f"big-rp-nomass-R{R}", n, d, g.random_peer(n, seed=1), track_mass=False, **base)
        add(f"big-rp-tau2-R{R}", n, d, g.random_peer(n, seed=1), tau=2, delay="random", **base)
        add(f"big-loss-R{R}", n, d, g.with_message_loss(g.random_peer(n, seed=1), 0.2, seed=3), **base)
        add(f"big-mom-R{R}", n, d, g.random_peer(n, seed=1), momentum=0.9, nesterov=True, **base)
        add(f"big-nodebias-R{R}", n, d, g.random_peer(n, seed=1), debias=False, **base)
    # large n, small d
    base = dict(step_size=0.05, n_iter=5)
    n, d = 70000, 4
    add("largen-rp", n, d, g.random_peer(n, seed=1), **base)
    add("largen-exp", n, d, g.exponential(n), **base)
    add("largen-rp-tau1", n, d, g.random_peer(n, seed=1), tau=1, delay="random", **base)
    return out


def dump(path):
    import sgpverify as sv

    res = {}
    for name, n, d, topo, kw in configs():
        pname = kw.pop("problem", "quadratic-cosine")
        prob = sv.problems.by_name(pname, n, d, seed=0, **({"sigma": 0.1} if pname != "nonconvex-logistic" else {}))
        if name.startswith("nodebias"):
            kw = dict(kw, step_size=0.01)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tr = sv.simulate(prob, topo, seed=5, **kw)
        for f in dataclasses.fields(tr):
            v = getattr(tr, f.name)
            if isinstance(v, np.ndarray):
                res[f"{name}/{f.name}"] = v
            elif v is not None and not isinstance(v, str):
                res[f"{name}/{f.name}"] = np.asarray(v)
    np.savez(path, **res)
    import os

    print(
        f"{len(res)} arrays from {len(configs())} configurations -> {path} "
        f"(SGPVERIFY_KERNELS={os.environ.get('SGPVERIFY_KERNELS', 'auto')})"
    )


def compare(a, b):
    A, B = np.load(a), np.load(b)
    bad = []
    for k in sorted(set(A.files) | set(B.files)):
        if k not in A.files or k not in B.files:
            bad.append((k, "missing"))
            continue
        x, y = A[k], B[k]
        if x.shape != y.shape or not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            with np.errstate(all="ignore"):
                rel = float(np.nanmax(np.abs(x - y) / np.maximum(np.abs(x), 1e-300))) if x.shape == y.shape else None
            bad.append((k, f"differs (max rel {rel})"))
    print(f"{len(A.files)} arrays compared: {len(bad)} differ")
    for k, why in bad[:40]:
        print("  ", k, why)
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(sys.argv[2])
    else:
        sys.exit(compare(sys.argv[2], sys.argv[3]))
