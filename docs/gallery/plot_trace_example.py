"""
A short SGP run and its trace
=============================

Run Stochastic Gradient Push on a small quadratic-plus-cosine problem over the
time-varying exponential graph and draw what the trace records: the consensus
distance, the squared gradient norm at the average, the objective at the average and
the range of the push-sum weights, each over replicas (median and min-max band).
"""

import matplotlib.pyplot as plt

import sgpverify as sv
from sgpverify.plots import plot_trace

problem = sv.problems.QuadraticCosine(8, 5, seed=0)
topology = sv.graphs.exponential(8)
trace = sv.simulate(problem, topology, step_size=0.05, n_iter=300, replicas=4, seed=0)
print(f"n = {trace.n}, d = {trace.d}, K = {trace.n_iter}, replicas = {trace.replicas}")
print(f"final consensus distance (median over replicas): {sorted(trace.consensus[-1])[2]:.3g}")

axes = plot_trace(trace)
plt.tight_layout()
plt.show()
