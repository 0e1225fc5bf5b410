"""
Stationarity against the number of iterations
=============================================

Theorem 1 of the paper says that, with step size :math:`\\gamma = \\sqrt{n/K}`, the
average squared gradient norm :math:`\\frac{1}{K}\\sum_k \\|\\nabla f(\\bar x^k)\\|^2`
decays like :math:`K^{-1/2}`. Measure it at a few K on a small problem (8 replicas
each) and draw it with :func:`sgpverify.plots.plot_rate`: the measured means with
their 95% intervals, the fitted and the predicted power laws, and the local slopes.
This is a quick look at small K, not the suite's check (``sgpverify verify``).
"""

import matplotlib.pyplot as plt
import numpy as np

import sgpverify as sv
from sgpverify.plots import plot_rate

n, d = 8, 5
problem = sv.problems.QuadraticCosine(n, d, seed=0)
topology = sv.graphs.exponential(n)
Ks = np.array([128, 256, 512, 1024])

stationarity = []
for K in Ks:
    trace = sv.simulate(problem, topology, step_size=float(np.sqrt(n / K)), n_iter=int(K), replicas=8, seed=1)
    # average over the iterations 0..K-1 of ||grad f(x_bar^k)||^2, one value per replica
    stationarity.append(trace.grad_norm_sq[:-1].mean(axis=0))
y = np.array(stationarity).T  # shape (replicas, len(Ks))
for K, m in zip(Ks, y.mean(axis=0)):
    print(f"K = {K:5d}: mean stationarity {m:.3g}")

values_ax, slopes_ax = plot_rate(Ks, y, predicted=-0.5, label="stationarity average")
values_ax.set_xlabel("K")
plt.tight_layout()
plt.show()
