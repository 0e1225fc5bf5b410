"""A problem written outside sgpverify: robust (Cauchy) regression, nonconvex and 2-smooth."""

import numpy as np


class Cauchy:
    """f_i(x) = sum_j log(1 + (x_j - c_ij)^2); |d^2/dt^2 log(1 + t^2)| <= 2, so L = 2."""

    def __init__(self, n, d, seed):
        rng = np.random.default_rng(seed)
        self.c = rng.standard_normal((n, d))
        self.n_nodes, self.dim = n, d
        self.L, self.sigma2, self.f_lower = 2.0, 0.25, 0.0
        self.zeta2 = float(4 * d)

    def grad(self, z, rng):
        t = z - self.c
        return 2 * t / (1 + t**2) + rng.standard_normal(z.shape) * np.sqrt(self.sigma2 / self.dim)

    def full_grad(self, x):
        t = np.asarray(x)[..., None, :] - self.c
        return np.mean(2 * t / (1 + t**2), axis=-2)

    def value(self, x):
        t = np.asarray(x)[..., None, :] - self.c
        return np.mean(np.sum(np.log1p(t**2), axis=-1), axis=-1)


def make(n, d, seed):
    return Cauchy(n, d, seed)
