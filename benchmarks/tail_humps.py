"""Wrong decisive verdicts of the limit test on corrections of the allowed form with both signs (humps).

Local slopes ``S = p + a x^-1/2 + b x^-1`` with ``a b < 0`` (a hump: the estimates move one way, turn and
come back), 17 values of ``a`` in [-40, 40], ``|b|`` in {300, 1000, 3000}, noise s.d. 0.001, 0.004 and 0.02
per replica (32 replicas), ladders of 5 and 7 doublings from K = 512, the truth (p = -1/2) and a tenth away,
6 trials per case: 5184 trials. A pass away from the truth, or a fail at it, is wrong; the script counts them
by verdict and rule. docs/theory.md ("A step back within its noise") quotes it at seeds 1 and 2, on this
commit and on the one before the change of ``rates.limits._tail``.

    .venv/bin/python benchmarks/tail_humps.py --seed 1      # about 20 s
"""

from __future__ import annotations

import argparse
import collections

import numpy as np

from sgpverify.rates import test_limit


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    trials = decisive = 0
    wrong = collections.Counter()
    for ladder in (2.0 ** np.arange(9, 14), 2.0 ** np.arange(9, 16)):
        x = np.sqrt(ladder[1:] * ladder[:-1])
        for p in (-0.6, -0.4, -0.5):
            for ca in np.linspace(-40, 40, 17):
                for cb in (-3000, -1000, -300, 300, 1000, 3000):
                    if ca * cb >= 0:
                        continue
                    for sd in (0.001, 0.004, 0.02):
                        for _ in range(6):
                            S = p + ca * x**-0.5 + cb / x + sd * rng.standard_normal((32, x.size))
                            t = test_limit(x, S, predicted=-0.5, omega=0.5)
                            trials += 1
                            if t.verdict != "inconclusive":
                                decisive += 1
                                if (t.verdict == "pass") != (p == -0.5):
                                    wrong[t.verdict, t.rule] += 1
    parts = ", ".join(f"{v} by {r}: {k}" for (v, r), k in sorted(wrong.items()))
    print(f"seed {a.seed}: {trials} trials, {decisive} decisive, {sum(wrong.values())} wrong ({parts or 'none'})")


if __name__ == "__main__":
    main()
