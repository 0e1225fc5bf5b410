"""Claims of other papers, declared for ``sgpverify verify --claims docs/examples/my_claims.py``.

1. Push-DIGing (Nedic, Olshevsky, Shi 2017): with exact gradients and a constant step, gradient
   tracking reaches an exact stationary point: ||grad f(xbar^K)||^2 falls to round-off. The
   tolerance is K (n eps)^2 (G0 + zeta2): round-off of n-term sums of gradients of size
   sqrt(G0 + zeta2), accumulating like a random walk over K steps in the tracker. d = 4: in the
   suite's d = 10 one curvature equals the ripple (a_j = alpha = 0.5), a degenerate (quartic)
   minimum that every first-order method approaches at a power law, never to round-off in K steps.
   Control: SGP with the same step, which stalls at a floor growing with zeta^2.
2. A consensus rate for Push-DIGing with noisy gradients and gamma = sqrt(n/K)/4: O(1/K), on the
   configuration's ladder of K (which --settle extends). Control: a constant step.
3. Koloskova et al. 2020 (ICML): local steps between gossip rounds. On the one-peer exponential
   graph (doubly stochastic: push-sum weights stay 1) gossiping every H steps, a block of
   tau = H log2(n) steps averages exactly: p = 1 - ||W_{k,tau} - J||^2 = 1, checked below. The
   nodes drift apart by about gamma H zeta between rounds, so at a fixed step inside the step
   range (gamma tau L <= 0.1 at the largest H) the consensus average grows like
   gamma^2 (tau/p)^2 zeta^2 ~ H^2, where heterogeneity dominates the noise (sigma = 0.1, zeta2 ~ 4.5).
   Sums over the H steps of a period make it a polynomial in H: local slopes 2 + O(1/H) + O(1/H^2),
   hence omega = (1, 2). Control: gamma = gamma_0 / H, which removes the growth.
"""

import math

import numpy as np

from sgpverify import declare, graphs, mixing

N = 16


class EveryH(graphs.Topology):
    """The one-peer exponential graph, one gossip round every H steps (local steps in between)."""

    def __init__(self, n, H):
        self.n, self.H, self.period = n, H, H * int(math.log2(n))
        self.name = f"exponential every {H}"
        self._base = graphs.exponential(n, peers=1)

    def _edges(self, k):
        if k % self.H != self.H - 1:
            return np.zeros((0, 2), dtype=np.int64)
        return self._base.edges(k // self.H)


def every_h(n, seed, H):
    return EveryH(n, H)


def p_of_block(topo, tau):
    """Koloskova's p over a block of tau steps: 1 - ||W_tau ... W_1 - J||_2^2."""
    W = np.eye(topo.n)
    for k in range(tau):
        W = mixing.push_matrix(topo, k).toarray() @ W
    return 1.0 - np.linalg.norm(W - np.full((topo.n, topo.n), 1.0 / topo.n), 2) ** 2


for H in (1, 2, 4, 8, 16, 32):  # the premise of claim 3: p = 1 over tau = H log2(n) steps
    assert abs(p_of_block(EveryH(N, H), H * int(math.log2(N))) - 1.0) < 1e-12

GAMMA = 0.0005  # gamma tau L = 0.0005 * 32 * 4 * 1.5 = 0.096 at H = 32

CLAIMS = [
    declare.Claim(
        name="push-diging-exact",
        statement="Push-DIGing, exact gradients, constant step: ||grad f(xbar^K)||^2 -> 0 to round-off",
        method="push-diging",
        metric="final_stationarity",
        prediction=declare.vanishes("K * (n*eps)**2 * (G0 + zeta2)"),
        ladder=declare.Ladder(
            Ks=(512, 1024, 2048, 4096),
            n=N,
            topology="exponential-irregular",
            replicas=3,
            step=0.05,
            setting={"sigma": 0.0, "x0": 1.0, "d": 4},
        ),
        control=declare.Control("sgp", "SGP with the same constant step (no gradient tracking)", method="sgp"),
    ),
    declare.Claim(
        name="push-diging-consensus",
        statement="Push-DIGing, noisy gradients, gamma = sqrt(n/K)/4: (1/K) sum_k Xi^k = O(1/K)",
        method="push-diging",
        metric="consensus",
        prediction=declare.exponent("K", -1.0),
        ladder=declare.Ladder(n=N, topology="exponential-irregular", step=lambda n, K: 0.25 * math.sqrt(n / K)),
        control=declare.Control("constant-step", "gamma at K_min for every K", step="constant"),
    ),
    declare.Claim(
        name="koloskova-tau-over-p",
        statement="Koloskova et al. 2020: at a fixed step in its range, the consensus term grows like "
        "gamma^2 (tau/p)^2 zeta^2; one-peer exponential graph gossiping every H steps: tau = H log2 n, p = 1",
        method="sgp",
        metric="consensus",
        prediction=declare.exponent("H", 2.0, band=0.1, omega=(1.0, 2.0)),
        ladder=declare.Ladder(
            Ks=4096,
            n=N,
            params={"H": (1, 2, 4, 8, 16, 32)},
            topology=every_h,
            replicas=8,
            step=GAMMA,
            setting={"sigma": 0.1, "x0": 1.0},
        ),
        control=declare.Control("step-over-H", "gamma = gamma_0 / H", step=lambda n, K, H: GAMMA / H),
    ),
]
