"""
Mixing constants of a random-peer schedule
==========================================

:func:`sgpverify.check_mixing` measures what the theory assumes of a schedule: B, the
window over which the union of the graphs is strongly connected, and the contraction
constants C and q of the products of the mixing matrices. Each node sends to one
random peer per step, so the in-degrees are unequal and the push-sum weights spread:
the figure draws their range over a short SGP run.
"""

import matplotlib.pyplot as plt

import sgpverify as sv
from sgpverify.plots import plot_trace

n = 8
topology = sv.graphs.random_peer(n, seed=0)
report = sv.check_mixing(topology, horizon=60, seed=0)
print(f"B = {report.B}, q = {report.q:.4f}, C = {report.C:.4f}")
print(f"smallest push-sum weight over the horizon: {report.weight_min:.3g}")

problem = sv.problems.QuadraticCosine(n, 5, seed=0)
trace = sv.simulate(problem, topology, step_size=0.005, n_iter=200, replicas=4, seed=0)
fig, ax = plt.subplots(figsize=(6, 4))
plot_trace(trace, series=("weights",), ax=ax)
ax.set_title("push-sum weights, random peer, n = 8")
plt.tight_layout()
plt.show()
