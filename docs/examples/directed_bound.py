"""The directed-graph lower bound of Liang, Huang, Xin and Yuan beside what SGP and Push-DIGing need.

For each schedule at n = 16: the equilibrium skewness kappa_pi and beta_pi of one window's product
(sgpverify.assumptions.skewness), whether the bound's conditions hold, the bound's scale (without its
absolute constant) and the iterations SGP and Push-DIGing measurably need until the running average
(1/K) sum_k ||grad f(xbar^k)||^2 (8 replicas) falls below eps.
"""

import warnings

import numpy as np

import sgpverify as sv
from sgpverify.assumptions.skewness import directed_lower_bound, window_equilibrium

warnings.simplefilter("ignore", sv.EffectiveStepWarning)
n, d, eps, gamma, K = 16, 10, 0.05, 0.05, 6000
prob = sv.problems.QuadraticCosine(n, d, seed=0)
x0 = np.ones(d)
delta_f = float(prob.value(x0)) - prob.f_lower


def needed(alg, topo):
    tr = sv.simulate(prob, topo, step_size=gamma, n_iter=K, algorithm=alg, x0=x0, replicas=8, seed=1)
    avg = np.cumsum(tr.grad_norm_sq.mean(axis=1)[:-1]) / np.arange(1, K + 1)
    hit = np.flatnonzero(avg <= eps)
    return f"{hit[0] + 1}" if hit.size else f"> {K}"


print(f"n = {n}, d = {d}, eps = {eps}, gamma = {gamma}, L = {prob.L}, sigma2 = {prob.sigma2:.3g}, ", end="")
print(f"Delta = {delta_f:.3g}")
head = ("schedule", "window", "kappa_pi", "beta_pi", "bound scale", "SGP", "Push-DIGing")
print("{:22s} {:>6s} {:>9s} {:>8s} {:>11s} {:>6s} {:>11s}  conditions".format(*head))
for name in ("exponential", "exponential-irregular", "random-peer", "ring", "erdos-renyi"):
    topo = sv.graphs.by_name(name, n, seed=0)
    e = window_equilibrium(topo)
    lb = directed_lower_bound(L=prob.L, delta_f=delta_f, sigma2=prob.sigma2, n=n, eps=eps, eq=e)
    print(
        f"{name:22s} {e.window:6d} {e.kappa_pi:9.3g} {e.beta_pi:8.3g} {lb:11.3g} {needed('sgp', topo):>6s} "
        f"{needed('push-diging', topo):>11s}  {'hold' if e.conditions else 'fail: ' + e.why}"
    )
