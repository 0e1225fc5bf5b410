"""A problem written outside sgpverify: sigmoid-loss linear classification, one data shard of 48 rows
per node with labels skewed by node; the stochastic gradient is a minibatch of 4 rows drawn with
replacement (finite-sum noise).

f_i(x) = (1/m) sum_j s(-y_ij a_ij . x), s the logistic function: nonconvex, bounded below by 0.
|s''| <= 1/(6 sqrt 3), so L = max_i lambda_max(C_i) / (6 sqrt 3), C_i = (1/m) sum_j a_ij a_ij^T.
sigma2 <= (1/B) (1/16) max_i mean_j ||a_ij||^2 (a row's gradient has norm <= ||a_ij|| / 4, and the
variance of a mean of B draws is at most their second moment over B); zeta2 <= max_i ((1/4) mean_j ||a_ij||)^2
(the spread of the node gradients is at most their mean square). f_lower = 0.

Use: ``cd docs/examples && sgpverify verify --quick --problem sigmoid:make`` (with any schedule options).
"""

import numpy as np

M, B = 48, 4


class Sigmoid:
    def __init__(self, n, d, seed):
        rng = np.random.default_rng(seed)
        w = rng.standard_normal(d)
        mu = 0.8 * rng.standard_normal((n, 1, d)) / np.sqrt(d)
        self.A = rng.standard_normal((n, M, d)) / np.sqrt(d) * 1.5 + mu
        margin = self.A @ w + 0.5 * rng.standard_normal((n, M))
        self.y = np.where(margin > 0, 1.0, -1.0)
        self.n_nodes, self.dim = n, d
        cov = np.einsum("imk,iml->ikl", self.A, self.A) / M
        self.L = float(max(np.linalg.eigvalsh(c)[-1] for c in cov)) / (6 * np.sqrt(3))
        norms = np.linalg.norm(self.A, axis=-1)
        self.sigma2 = float((norms**2).mean(axis=1).max() / 16 / B)
        self.zeta2 = float((norms.mean(axis=1).max() / 4) ** 2)
        self.f_lower = 0.0

    def _g(self, a, y, z):
        t = -y * np.sum(a * z[..., None, :], axis=-1)
        s = 1 / (1 + np.exp(-t))
        return (-(y * s * (1 - s))[..., None] * a).mean(axis=-2)

    def grad(self, z, rng):
        z = np.asarray(z)
        idx = rng.integers(M, size=z.shape[:-1] + (B,))
        nodes = np.arange(self.n_nodes)[:, None]
        return self._g(self.A[nodes, idx], self.y[nodes, idx], z)

    def full_grad(self, x):
        x = np.asarray(x)
        t = -self.y * np.einsum("imk,...k->...im", self.A, x)
        s = 1 / (1 + np.exp(-t))
        return np.mean(np.mean(-(self.y * s * (1 - s))[..., None] * self.A, axis=-2), axis=-2)

    def value(self, x):
        t = -self.y * np.einsum("imk,...k->...im", self.A, np.asarray(x))
        return np.mean(np.mean(1 / (1 + np.exp(-t)), axis=-1), axis=-1)


def make(n, d, seed):
    return Sigmoid(n, d, seed)
