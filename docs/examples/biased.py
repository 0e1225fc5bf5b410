"""The guide's problem (mymod.py) with a biased stochastic gradient: every sample carries the same
offset b, of norm BIAS * sigma (0.3 by default), in the direction (1, ..., 1). The declared
constants are mymod's and hold for the noise around the offset; the offset breaks (A2)'s
unbiasedness, so SGP converges to points where the gradient is -b, not 0, and stationarity keeps a
floor ||b||^2 = 0.09 sigma^2 that the theory's bounds do not have. ``declared-constants`` finds the
offset (its ``bias`` entry: the draws' mean against ``full_grad``) and fails, and the checks built on
unbiased noise are inconclusive, with no round to run.

Use: ``cd docs/examples && sgpverify verify --quick --topology erdos-renyi --nodes 16 --edge-prob 0.3
--problem biased:make --only stationarity-rate theorem1-bound --settle``.
"""

import numpy as np
from mymod import Cauchy

BIAS = 0.3


class Biased(Cauchy):
    def __init__(self, n, d, seed, bias=BIAS):
        super().__init__(n, d, seed)
        self.b = np.full(d, bias * np.sqrt(self.sigma2 / d))

    def grad(self, z, rng):
        return super().grad(z, rng) + self.b


def make(n, d, seed):
    return Biased(n, d, seed)
