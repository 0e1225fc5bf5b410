"""
A short SGP run and its trace
=============================

Run Stochastic Gradient Push on a small quadratic-plus-cosine problem over a
time-varying exponential graph with irregular out-degrees (so that the push-sum
weights move away from 1), from a start away from any stationary point, and draw
what the trace records: the consensus distance, the squared gradient norm at the
average, the objective at the average and the range of the push-sum weights, each
as the mean over replicas with the min-max band.
"""

import matplotlib.pyplot as plt
import numpy as np

import sgpverify as sv
from sgpverify.plots import plot_trace

problem = sv.problems.QuadraticCosine(8, 5, seed=0)
topology = sv.graphs.irregular_exponential(8)
trace = sv.simulate(problem, topology, step_size=0.05, n_iter=300, x0=np.ones(5), replicas=4, seed=0)
print(f"n = {trace.n}, d = {trace.d}, K = {trace.n_iter}, replicas = {trace.replicas}")
print(f"squared gradient norm at the average: {trace.grad_norm_sq[0].mean():.3g} at k = 0, ", end="")
print(f"{trace.grad_norm_sq[-1].mean():.3g} at k = {trace.n_iter - 1} (mean over replicas)")
print(f"push-sum weights at the end: {trace.weight_min[-1].min():.3f} to {trace.weight_max[-1].max():.3f}")

axes = plot_trace(trace)
plt.tight_layout()
plt.show()
