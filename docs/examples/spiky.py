"""A stiff problem written outside sgpverify with spiky finite-sum noise: 64 data rows per node whose
norms are lognormal (a few rows dominate ||g||^2 and L), the stochastic gradient at one row drawn
uniformly per step, and a smooth nonconvex regulariser common to all nodes.

f_i(x) = (1/64) sum_j phi(a_ij . x - b_ij) + r(x), phi(t) = log(1 + t^2) / 2 (|phi'| <= 1/2, phi'' in
[-1/8, 1]), r(x) = 0.1 sum_k x_k^2 / (1 + x_k^2) (r'' per coordinate 0.2 (1 - 3 x^2) / (1 + x^2)^3, in
[-0.05, 0.2]). With C_i = (1/64) sum_j a_ij a_ij^T:

- L = max_i lambda_max(C_i) + 0.2 (here about 24: the regime of the step needs long runs);
- sigma2: the regulariser is exact, so E ||g_i - grad f_i||^2 <= E ||phi'(.) a||^2 <= (1/4) mean_j ||a_ij||^2,
  the largest over nodes;
- zeta2: r is common to all nodes, ||grad f_i - grad r|| <= (1/2) mean_j ||a_ij|| =: r_i, so the
  heterogeneity is at most (2 max_i r_i)^2;
- f_lower = 0.

Use: ``cd docs/examples && sgpverify verify --quick --problem spiky:make`` (with any schedule options).
"""

import numpy as np

ROWS = 64


class Spiky:
    def __init__(self, n, d, seed):
        rng = np.random.default_rng(seed + 77)
        scale = np.exp(1.0 * rng.standard_normal((n, ROWS, 1)))
        self.A = scale * rng.standard_normal((n, ROWS, d)) / np.sqrt(d)
        self.b = rng.standard_normal((n, ROWS)) + 0.5 * rng.standard_normal((n, 1))
        self.n_nodes, self.dim = n, d
        cov = np.einsum("imk,iml->ikl", self.A, self.A) / ROWS
        self.L = float(max(np.linalg.eigvalsh(c)[-1] for c in cov)) + 0.2
        norms = np.linalg.norm(self.A, axis=-1)
        self.sigma2 = float((0.25 * (norms**2).mean(axis=1)).max())
        self.zeta2 = float(norms.mean(axis=1).max() ** 2)
        self.f_lower = 0.0

    @staticmethod
    def _reg_grad(x):
        return 0.2 * x / (1 + x**2) ** 2

    def grad(self, z, rng):
        """One row per node (and per replica: ``z`` may carry leading replica axes)."""
        z = np.asarray(z)
        idx = rng.integers(ROWS, size=z.shape[:-1])
        nodes = np.arange(self.n_nodes)
        a = self.A[nodes, idx]
        t = np.sum(a * z, axis=-1) - self.b[nodes, idx]
        return (t / (1 + t**2))[..., None] * a + self._reg_grad(z)

    def full_grad(self, x):
        x = np.asarray(x)
        t = np.einsum("imk,...k->...im", self.A, x) - self.b
        return np.mean(np.mean((t / (1 + t**2))[..., None] * self.A, axis=-2), axis=-2) + self._reg_grad(x)

    def value(self, x):
        x = np.asarray(x)
        t = np.einsum("imk,...k->...im", self.A, x) - self.b
        return np.mean(np.mean(0.5 * np.log1p(t**2), axis=-1), axis=-1) + 0.1 * np.sum(x**2 / (1 + x**2), axis=-1)


def make(n, d, seed):
    return Spiky(n, d, seed)
