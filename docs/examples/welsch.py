"""A problem written outside sgpverify with finite-sum noise and a bounded loss: Welsch (robust)
regression, 64 data rows per node, the stochastic gradient at one row drawn uniformly per step.

f_i(x) = (1/64) sum_j phi(a_ij . x - b_ij), phi(t) = 1 - exp(-t^2 / 2): nonconvex and bounded, with
phi'(t) = t exp(-t^2 / 2) in [-exp(-1/2), exp(-1/2)] and phi''(t) = (1 - t^2) exp(-t^2 / 2) in
[-2 exp(-3/2), 1]. So, with C_i = (1/64) sum_j a_ij a_ij^T:

- L: the Hessian (1/64) sum_j phi''(.) a_ij a_ij^T lies between -2 exp(-3/2) C_i and C_i, and
  2 exp(-3/2) < 1, so L = max_i lambda_max(C_i);
- sigma2: E ||g_i - grad f_i||^2 <= E ||g_i||^2 <= exp(-1) (1/64) sum_j ||a_ij||^2, the largest over nodes;
- zeta2: ||grad f_i|| <= exp(-1/2) mean_j ||a_ij|| =: r_i, so (1/n) sum_i ||grad f_i - grad f||^2 <=
  (2 max_i r_i)^2;
- f_lower = 0 (phi >= 0).

Each node's rows share a node offset (``shift``), so the shards differ. The rows are drawn from the
seed plus 1000, apart from the streams the suite draws from the seed itself.

Use: ``cd docs/examples && sgpverify verify --quick --problem welsch:make`` (with any schedule options).
"""

import numpy as np

ROWS = 64


class Welsch:
    def __init__(self, n, d, seed, shift=1.0):
        rng = np.random.default_rng(seed + 1000)
        self.A = rng.standard_normal((n, ROWS, d)) / np.sqrt(d) + shift * rng.standard_normal((n, 1, d)) / np.sqrt(d)
        self.b = 2.0 * rng.standard_normal((n, ROWS)) + shift * rng.standard_normal((n, 1))
        self.n_nodes, self.dim = n, d
        cov = np.einsum("imk,iml->ikl", self.A, self.A) / ROWS
        self.L = float(max(np.linalg.eigvalsh(c)[-1] for c in cov))
        norms = np.linalg.norm(self.A, axis=-1)
        self.sigma2 = float((np.exp(-1.0) * (norms**2).mean(axis=1)).max())
        self.zeta2 = float((2 * np.exp(-0.5) * norms.mean(axis=1).max()) ** 2)
        self.f_lower = 0.0

    @staticmethod
    def _dphi(t):
        return t * np.exp(-0.5 * t**2)

    def grad(self, z, rng):
        """One row per node (and per replica: ``z`` may carry leading replica axes)."""
        z = np.asarray(z)
        idx = rng.integers(ROWS, size=z.shape[:-1])
        nodes = np.arange(self.n_nodes)
        a = self.A[nodes, idx]
        t = np.sum(a * z, axis=-1) - self.b[nodes, idx]
        return self._dphi(t)[..., None] * a

    def full_grad(self, x):
        t = np.einsum("imk,...k->...im", self.A, np.asarray(x)) - self.b
        return np.mean(np.mean(self._dphi(t)[..., None] * self.A, axis=-2), axis=-2)

    def value(self, x):
        t = np.einsum("imk,...k->...im", self.A, np.asarray(x)) - self.b
        return np.mean(np.mean(1.0 - np.exp(-0.5 * t**2), axis=-1), axis=-1)


def make(n, d, seed):
    return Welsch(n, d, seed)
