"""Validation of the unbiasedness test of ``check_constants`` (the ``bias`` entry).

For honest problems (the built-in ones, the documented examples, and variants a user might write:
exact gradients (float64 and float32), float32 draws, Student-t noise with 3 degrees of freedom, a minibatch without
replacement) it counts, over many seeds, how often the test refutes unbiasedness: each refutation
is a false alarm, and the rule promises at most 1 - confidence = 1% per problem. For biased
problems (the guide's problem with an offset of 0.3, 0.1 and 0.03 sigma) it counts detections. Any
other constant refuted on an honest problem (a false "the noise variance does not exist", say) is
noted beside its line.

    .venv/bin/python benchmarks/bias_test.py              # 40 seeds (about 30 s on 2 cores)
    .venv/bin/python benchmarks/bias_test.py --seeds 200  # about 3 minutes
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "docs", "examples"))

from sgpverify.problems import by_name, check_constants  # noqa: E402


def _examples():
    import biased
    import finitesum
    import mymod
    import sigmoid

    return mymod, finitesum, sigmoid, biased


class _Wrap:
    """A problem with a changed stochastic gradient; every other attribute is the inner one's."""

    def __init__(self, inner, grad):
        self._inner, self._grad = inner, grad

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def grad(self, z, rng):
        return self._grad(self._inner, z, rng)


def _exact(p, z, rng):
    return np.asarray(p.full_grad_nodes(z)) if hasattr(p, "full_grad_nodes") else p.local_grad(z)


def _exact32(p, z, rng):
    return np.asarray(_exact(p, z, rng), dtype=np.float32)


def _float32(p, z, rng):
    return np.asarray(p.grad(z, rng), dtype=np.float32)


def _student3(p, z, rng):
    # unbiased noise with finite variance and heavy-ish tails: t with 3 degrees of freedom, variance 3
    g = p.local_grad(z)
    return g + np.sqrt(p.sigma2 / (3 * p.dim)) * rng.standard_t(3, size=np.shape(g))


def cases():
    mymod, finitesum, sigmoid, biased = _examples()
    honest = [
        ("quadratic-cosine", lambda s: by_name("quadratic-cosine", 16, 10, seed=s)),
        ("nonconvex-logistic", lambda s: by_name("nonconvex-logistic", 16, 10, seed=s)),
        ("double-well", lambda s: by_name("double-well", 16, 10, seed=s)),
        ("mymod", lambda s: mymod.make(16, 10, s)),
        ("finitesum (one row of 64)", lambda s: finitesum.make(16, 10, s)),
        ("sigmoid (minibatch 4 of 48)", lambda s: sigmoid.make(16, 10, s)),
        ("quadratic-cosine, exact gradients", lambda s: _Wrap(by_name("quadratic-cosine", 16, 10, seed=s), _exact)),
        ("quadratic-cosine, float32 gradients", lambda s: _Wrap(by_name("quadratic-cosine", 16, 10, seed=s), _float32)),
        ("quadratic-cosine, exact float32", lambda s: _Wrap(by_name("quadratic-cosine", 16, 10, seed=s), _exact32)),
        ("mymod, float32 gradients", lambda s: _Wrap(mymod.make(16, 10, s), _float32)),
        ("quadratic-cosine, Student t3 noise", lambda s: _Wrap(by_name("quadratic-cosine", 16, 10, seed=s), _student3)),
        ("quadratic-cosine, n = 4, d = 3", lambda s: by_name("quadratic-cosine", 4, 3, seed=s)),
    ]
    off = [
        (f"mymod, offset {b:g} sigma", (lambda b: lambda s: biased.Biased(16, 10, s, bias=b))(b))
        for b in (0.3, 0.1, 0.03)
    ]
    return honest, off


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=40)
    args = ap.parse_args(argv)
    honest, off = cases()
    t0 = time.time()
    print(f"{'problem':40s} {'refuted':>8s} {'of':>4s}  largest bound / median estimate")
    worst = 0
    for kind, group in (("honest (false alarms)", honest), ("biased (detections)", off)):
        print(f"-- {kind}")
        for name, make in group:
            hits, lows, ests, untested, other = 0, [0.0], [], 0, 0
            for s in range(args.seeds):
                r = check_constants(make(s), seed=s)
                hits += r.bias.refuted
                other += any(name != "bias" for name in r.refuted)
                if r.bias.method == "not tested":  # no variance: the mean's bound is not taken
                    untested += 1
                    continue
                lows.append(r.bias.estimate)
                ests.append(float(r.bias.detail.split("(estimate ")[1].split(";")[0]))
            if group is honest:
                worst = max(worst, hits)
            note = f"  ({untested} not tested: variance refuted)" if untested else ""
            note += f"  (another constant refuted in {other})" if other and group is honest else ""
            print(f"{name:40s} {hits:8d} {args.seeds:4d}  {max(lows):.3g} / {np.median(ests):.3g}{note}")
    print(f"{time.time() - t0:.0f} s; largest false-alarm count {worst} of {args.seeds} (1% promised per problem)")


if __name__ == "__main__":
    main()
