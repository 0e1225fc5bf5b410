"""Claims of other papers, declared for ``sgpverify verify --claims docs/examples/my_claims.py``.

1. Push-DIGing (Nedic, Olshevsky, Shi 2017): with exact gradients and a constant step, gradient
   tracking reaches an exact stationary point, so sum_k ||grad f(xbar^k)||^2 stays finite and its
   average falls like 1/K. Control: SGP with the same step, whose heterogeneous fixed point is not
   stationary (the average stays at a floor).
2. A consensus rate for Push-DIGing with noisy gradients and gamma ~ K^-1/2: O(1/K).
   Control: a constant step (the consensus does not decay).
3. Koloskova et al. 2020 (ICML), Theorem 2: the consensus term of the rate grows like
   gamma^2 (tau/p)^2 zeta^2 where heterogeneity dominates the noise
   (sigma = 0.1 here, zeta ~ 1). On the one-peer exponential graph (doubly stochastic:
   push-sum weights stay 1) gossiping every H steps, a block of tau = H log2(n) steps averages
   exactly: p = 1 - ||W_{k,tau} - J||^2 = 1, checked below. So at a fixed step the consensus grows
   like H^2. Control: gamma = gamma_0 / H, which removes the growth.
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


for H in (1, 2, 4, 8):  # the premise of claim 3: p = 1 over tau = H log2(n) steps
    assert abs(p_of_block(EveryH(N, H), H * int(math.log2(N))) - 1.0) < 1e-12

GAMMA = 0.01

CLAIMS = [
    declare.Claim(
        name="push-diging-exact",
        statement="Push-DIGing, exact gradients, constant step: sum_k ||grad f(xbar^k)||^2 < oo, "
        "so its average is O(1/K)",
        method="push-diging",
        metric="stationarity",
        prediction=declare.exponent("K", -1.0, band=0.05),
        ladder=declare.Ladder(
            Ks=(256, 512, 1024, 2048),
            n=N,
            topology="exponential-irregular",
            replicas=4,
            step=0.05,
            setting={"sigma": 0.0, "x0": 1.0},
        ),
        control=declare.Control("sgp", "SGP with the same constant step (no gradient tracking)", method="sgp"),
    ),
    declare.Claim(
        name="push-diging-consensus",
        statement="Push-DIGing, noisy gradients, gamma = sqrt(n/K)/4: (1/K) sum_k Xi^k = O(1/K)",
        method="push-diging",
        metric="consensus",
        prediction=declare.exponent("K", -1.0),
        ladder=declare.Ladder(
            Ks=(256, 512, 1024, 2048, 4096),
            n=N,
            topology="exponential-irregular",
            replicas=16,
            step=lambda n, K: 0.25 * math.sqrt(n / K),
        ),
        control=declare.Control("constant-step", "gamma at K_min for every K", step="constant"),
    ),
    declare.Claim(
        name="koloskova-tau-over-p",
        statement="Koloskova et al. 2020, Theorem 2: consensus term gamma^2 (tau/p)^2 zeta^2 without noise; "
        "one-peer exponential graph gossiping every H steps: tau = H log2 n, p = 1",
        method="sgp",
        metric="consensus",
        prediction=declare.exponent("H", 2.0, band=0.1, omega=1.0),
        ladder=declare.Ladder(
            Ks=2048,
            n=N,
            params={"H": (1, 2, 4, 8, 16)},
            topology=every_h,
            replicas=8,
            step=GAMMA,
            setting={"sigma": 0.1, "x0": 1.0},
        ),
        control=declare.Control("step-over-H", "gamma = gamma_0 / H", step=lambda n, K, H: GAMMA / H),
    ),
]
