"""A problem written outside sgpverify: finite-sum tanh regression, 64 rows per node, one row per node and step.

f_i(x) = (1/m) sum_j phi(a_ij . x; b_ij), phi(u; b) = (tanh u - b)^2 / 2, |b| < 1.
phi'' = (1 - t^2)(1 - 3t^2 + 2tb), t = tanh u: |phi''| <= 1 + 2|b| max t(1-t^2) = 1 + 0.7698|b|,
so -c M_i <= Hess f_i <= c M_i with M_i = (1/m) sum_j a a^T: L = c max_i lambda_max(M_i).
|phi'| = |t - b|(1 - t^2) <= 1 + |b|: sigma2 <= max_i mean_j (1+|b|)^2 ||a||^2 (second moment of one row),
zeta2 <= max_i (mean_j (1+|b|) ||a||)^2; f >= 0. The declared L and sigma2 are proved bounds, not
attained (the gradients show about 12% and 8% of them).

Use: ``cd docs/examples && sgpverify verify --quick --problem tanhreg:make`` (with any schedule options).
"""

import numpy as np

M = 64


class TanhReg:
    def __init__(self, n, d, seed):
        rng = np.random.default_rng(seed)
        w = rng.standard_normal(d) / np.sqrt(d) * 2
        mu = rng.standard_normal((n, 1, d)) / np.sqrt(d)
        self.A = rng.standard_normal((n, M, d)) / np.sqrt(d) + mu
        self.b = np.tanh(self.A @ w + 0.3 * rng.standard_normal((n, M))) * 0.95
        self.n_nodes, self.dim = n, d
        cov = np.einsum("imk,iml->ikl", self.A, self.A) / M
        c = 1 + 2 * 2 / (3 * np.sqrt(3)) * np.abs(self.b).max()
        self.L = float(c * max(np.linalg.eigvalsh(x)[-1] for x in cov))
        nr = np.linalg.norm(self.A, axis=-1)
        gb = (1 + np.abs(self.b)) * nr
        self.sigma2 = float((gb**2).mean(axis=1).max())
        self.zeta2 = float(gb.mean(axis=1).max() ** 2)
        self.f_lower = 0.0

    def _rowgrad(self, a, b, z):
        t = np.tanh(np.sum(a * z[..., None, :], axis=-1))
        return (((t - b) * (1 - t**2))[..., None] * a).mean(axis=-2)

    def grad(self, z, rng):
        z = np.asarray(z)
        idx = rng.integers(M, size=z.shape[:-1] + (1,))
        nodes = np.arange(self.n_nodes)[:, None]
        return self._rowgrad(self.A[nodes, idx], self.b[nodes, idx], z)

    def full_grad(self, x):
        x = np.asarray(x)
        t = np.tanh(np.einsum("imk,...k->...im", self.A, x))
        return np.mean(np.mean(((t - self.b) * (1 - t**2))[..., None] * self.A, axis=-2), axis=-2)

    def value(self, x):
        t = np.tanh(np.einsum("imk,...k->...im", self.A, np.asarray(x)))
        return np.mean(np.mean(0.5 * (t - self.b) ** 2, axis=-1), axis=-1)


def make(n, d, seed):
    return TanhReg(n, d, seed)
