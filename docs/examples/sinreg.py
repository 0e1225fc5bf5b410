"""A problem written outside sgpverify: sine-loss regression with a ridge term, one shard of 32 data rows
per node; the stochastic gradient is a minibatch of 2 rows drawn with replacement (finite-sum noise).

f_i(x) = (1/m) sum_j (1 - cos(a_ij . x - b_ij)) + (lam/2) ||x||^2: nonconvex (many stationary points), its
gradient unbounded (the ridge) while the nodes' gradients differ by a bounded amount. With t = a . x - b:

- L: the Hessian (1/m) sum_j cos(t_j) a_ij a_ij^T + lam I lies between -C_i + lam I and C_i + lam I,
  C_i = (1/m) sum_j a_ij a_ij^T, so L = max_i lambda_max(C_i) + lam;
- sigma2: a row's gradient minus its mean has second moment at most E ||sin(t) a||^2 <= mean_j ||a_ij||^2 (the
  ridge is the same for every row), and a mean of B draws with replacement divides it by B;
- zeta2: grad f_i - grad f = (1/m) sum_j sin(t_j) a_ij - (the node average of the same): the ridge cancels,
  each term has norm <= r_i = mean_j ||a_ij||, so (1/n) sum_i ||grad f_i - grad f||^2 <= (2 max_i r_i)^2;
- f_lower = 0.

``make``: every node its own shard, drawn for each n (the problem changes with n). ``shared``: every node
holds the same 32 rows, drawn from the seed alone: f_i = f, zeta2 = 0, and f and every constant are the
same at every n, the problem shape for which the claims in n (linear speedup, iteration complexity) apply.

Use: ``cd docs/examples && sgpverify verify --quick --problem sinreg:make`` (or ``sinreg:shared``), with any
schedule options.
"""

import numpy as np

M, B, LAM = 32, 2, 0.05


class SinReg:
    def __init__(self, n, d, seed, shared=False):
        rng = np.random.default_rng(seed)
        if shared:
            A = rng.standard_normal((M, d)) / np.sqrt(d) * 1.5
            self.A = np.broadcast_to(A, (n, M, d)).copy()
            self.b = np.broadcast_to(rng.uniform(-2, 2, M), (n, M)).copy()
        else:
            rows = rng.standard_normal((n, M, d)) / np.sqrt(d) * 1.5
            self.A = rows + 0.5 * rng.standard_normal((n, 1, d)) / np.sqrt(d)  # a shift per node
            self.b = rng.uniform(-2, 2, (n, M))
        self.n_nodes, self.dim = n, d
        cov = np.einsum("imk,iml->ikl", self.A, self.A) / M
        self.L = float(max(np.linalg.eigvalsh(c)[-1] for c in cov)) + LAM
        norms = np.linalg.norm(self.A, axis=-1)
        self.sigma2 = float((norms**2).mean(axis=1).max() / B)
        self.zeta2 = 0.0 if shared else float((2 * norms.mean(axis=1).max()) ** 2)
        self.f_lower = 0.0

    def grad(self, z, rng):
        """B rows per node (and per replica: ``z`` is (..., n, d), leading replica axes)."""
        z = np.asarray(z)
        idx = rng.integers(M, size=z.shape[:-1] + (B,))
        nodes = np.arange(self.n_nodes)[:, None]
        a = self.A[nodes, idx]  # (..., n, B, d)
        t = np.einsum("...bd,...d->...b", a, z) - self.b[nodes, idx]
        return np.mean(np.sin(t)[..., None] * a, axis=-2) + LAM * z

    def full_grad(self, x):
        x = np.asarray(x)
        t = np.einsum("imk,...k->...im", self.A, x) - self.b
        return np.mean(np.mean(np.sin(t)[..., None] * self.A, axis=-2), axis=-2) + LAM * x

    def value(self, x):
        x = np.asarray(x)
        t = np.einsum("imk,...k->...im", self.A, x) - self.b
        return np.mean(np.mean(1 - np.cos(t), axis=-1), axis=-1) + 0.5 * LAM * np.sum(x**2, axis=-1)


def make(n, d, seed):
    return SinReg(n, d, seed)


def shared(n, d, seed):
    return SinReg(n, d, seed, shared=True)
