"""A problem written outside sgpverify with finite-sum noise: each node holds 64 data rows, and its
stochastic gradient is the gradient at one row drawn uniformly per step (the noise of every real data set).

f_i(x) = (1/64) sum_j phi(a_ij . x - b_ij), phi(t) = log(1 + t^2) / 2: nonconvex, with phi'(t) = t / (1 + t^2)
in [-1/2, 1/2] and phi''(t) = (1 - t^2) / (1 + t^2)^2 in [-1/8, 1]. So, with A_i the node's rows:

- L: the Hessian (1/64) sum_j phi''(.) a_ij a_ij^T lies between -(1/8) C_i and C_i, C_i = (1/64) sum_j a_ij a_ij^T,
  so L = max_i lambda_max(C_i);
- sigma2: E ||g_i - grad f_i||^2 <= E ||g_i||^2 <= (1/4) (1/64) sum_j ||a_ij||^2, the largest over nodes;
- zeta2: ||grad f_i|| <= (1/2) mean_j ||a_ij|| =: r_i, so (1/n) sum_i ||grad f_i - grad f||^2 <= (2 max_i r_i)^2;
- f_lower = 0 (phi >= 0).

Use: ``cd docs/examples && sgpverify verify --quick --problem finitesum:make`` (with any schedule options).
"""

import numpy as np

ROWS = 64


class FiniteSum:
    def __init__(self, n, d, seed):
        rng = np.random.default_rng(seed)
        self.A = rng.standard_normal((n, ROWS, d)) / np.sqrt(d) + 0.3 * rng.standard_normal((n, 1, d)) / np.sqrt(d)
        self.b = rng.standard_normal((n, ROWS)) + rng.standard_normal((n, 1))
        self.n_nodes, self.dim = n, d
        cov = np.einsum("imk,iml->ikl", self.A, self.A) / ROWS
        self.L = float(max(np.linalg.eigvalsh(c)[-1] for c in cov))
        norms = np.linalg.norm(self.A, axis=-1)
        self.sigma2 = float((0.25 * (norms**2).mean(axis=1)).max())
        self.zeta2 = float(norms.mean(axis=1).max() ** 2)
        self.f_lower = 0.0

    def grad(self, z, rng):
        """One row per node (and per replica: ``z`` may carry leading replica axes)."""
        z = np.asarray(z)
        idx = rng.integers(ROWS, size=z.shape[:-1])
        nodes = np.arange(self.n_nodes)
        a = self.A[nodes, idx]
        t = np.sum(a * z, axis=-1) - self.b[nodes, idx]
        return (t / (1 + t**2))[..., None] * a

    def full_grad(self, x):
        t = np.einsum("imk,...k->...im", self.A, np.asarray(x)) - self.b
        return np.mean(np.mean((t / (1 + t**2))[..., None] * self.A, axis=-2), axis=-2)

    def value(self, x):
        t = np.einsum("imk,...k->...im", self.A, np.asarray(x)) - self.b
        return np.mean(np.mean(0.5 * np.log1p(t**2), axis=-1), axis=-1)


def make(n, d, seed):
    return FiniteSum(n, d, seed)
