"""Push-DIGing's claims (Nedic, Olshevsky and Shi, SIAM J. Optim. 27(4), 2017), checked by
``sgpverify verify --method push-diging``: a claims file of :mod:`sgpverify.declare`, loaded as a
user's ``--claims`` file is.

1. push-diging-exact-stationarity: with exact gradients and a constant step, on a heterogeneous
   problem, gradient tracking reaches an exact stationary point: ||grad f(xbar^K)||^2 falls to
   round-off, K (n eps)^2 (G0 + zeta2) (round-off of n-term sums of gradients of size
   sqrt(G0 + zeta2), accumulating like a random walk over K steps in the tracker). d = 4: at d = 10
   one curvature of the default problem equals the ripple (a_j = alpha), a degenerate minimum that
   every first-order method approaches at a power law. Control: SGP with the same step, which
   stalls at a floor that grows with zeta^2.
2. push-diging-zeta-free: with stochastic gradients at a constant step, the floor of the
   stationarity -- per replica the mean of ||grad f(xbar^k)||^2 over the second half of the run,
   K/2 <= k < K -- does not depend on the heterogeneity: the ladder scales the problem's
   heterogeneity by 1 and 4 (zeta2 by 1 and 16; the default problem's centres are
   b_i = heterogeneity * u_i, so zeta2 = (1/n) sum_i ||A b_i||^2 grows as its square, and the
   average f and its gradient do not change). Prediction: exponent 0 +- 0.1 in the heterogeneity
   (0 +- 0.05 in zeta2), the ratio of the two floors within 4^(+-0.1). On this problem the local
   gradients differ by constants (-A b_i), so the tracker's update g(z^{k+1}) - g(z^k) is free of
   them: zeta2 enters only through y^0, a transient the second half of the run leaves out. The
   noise (sigma = 0.01) is small enough that SGP's heterogeneity term is visible. Control: SGP,
   whose floor grows with zeta2 (an exponent near 2 in the heterogeneity): it must fail.
3. push-diging-consensus-rate: with stochastic gradients and gamma = sqrt(n/K)/4 the consensus
   average (1/K) sum_k Xi^k is O(1/K), on the configuration's ladder of K (which --settle
   extends). Control: a constant step (gamma of K_min at every K), under which it is O(1).
"""

import math
from typing import Any

import numpy as np

from sgpverify import declare

N = 16
GAMMA = 0.05  # constant step of claims 1 and 2
TOPOLOGY = "exponential-irregular"  # push-sum weights vary: SGP's de-biasing matters
#: The control of claims 1 and 2: SGP itself, at the same constant step.
SGP_CONTROL = declare.Control("sgp", "SGP with the same constant step (no gradient tracking)", method="sgp")


def stationarity_floor(trace: Any) -> np.ndarray:
    """Per replica, the mean of ||grad f(xbar^k)||^2 over K/2 <= k < K (the floor at a constant step)."""
    a = np.asarray(trace.grad_norm_sq, dtype=float)
    a = a.reshape(a.shape[0], -1)  # (K + 1, R)
    K = a.shape[0] - 1
    return a[K // 2 : K].mean(axis=0)


CLAIMS = [
    declare.Claim(
        name="push-diging-exact-stationarity",
        statement="Push-DIGing, exact gradients, constant step, heterogeneous nodes: "
        "||grad f(xbar^K)||^2 -> 0 to round-off (SGP stalls at a floor growing with zeta^2)",
        method="push-diging",
        metric="final_stationarity",
        prediction=declare.vanishes("K * (n*eps)**2 * (G0 + zeta2)"),
        ladder=declare.Ladder(
            Ks=(512, 1024, 2048, 4096),
            n=N,
            topology=TOPOLOGY,
            replicas=3,
            step=GAMMA,
            setting={"sigma": 0.0, "x0": 1.0, "d": 4},
        ),
        control=SGP_CONTROL,
    ),
    declare.Claim(
        name="push-diging-zeta-free",
        statement="Push-DIGing, stochastic gradients, constant step: the stationarity floor does not depend "
        "on zeta^2 (SGP's grows with it)",
        method="push-diging",
        metric=stationarity_floor,
        prediction=declare.exponent("heterogeneity", 0.0, band=0.1),
        ladder=declare.Ladder(
            Ks=4096,
            n=N,
            params={"heterogeneity": (1.0, 4.0)},
            topology=TOPOLOGY,
            replicas=16,
            step=GAMMA,
            setting={"sigma": 0.01, "x0": 1.0, "d": 4},
        ),
        control=SGP_CONTROL,
    ),
    declare.Claim(
        name="push-diging-consensus-rate",
        statement="Push-DIGing, stochastic gradients, gamma = sqrt(n/K)/4: (1/K) sum_k Xi^k = O(1/K)",
        method="push-diging",
        metric="consensus",
        prediction=declare.exponent("K", -1.0),
        ladder=declare.Ladder(n=N, topology=TOPOLOGY, step=lambda n, K: 0.25 * math.sqrt(n / K)),
        control=declare.Control("constant-step", "gamma at K_min for every K", step="constant"),
    ),
]
