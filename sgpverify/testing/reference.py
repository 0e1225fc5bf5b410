"""A straightforward per-node, per-message SGP: the independent reference.

This is SGP written the obvious way: a Python object per node, an explicit
list of messages with arrival steps, one loop over nodes and one over edges
each iteration. It is slow on purpose and shares no code with
:mod:`sgpverify.engine` beyond the topology, the delay model and the
problem's gradient oracle, so that agreement between the two is evidence for
both. The benchmarks use it as the speed reference; the tests as the second
computation.

Examples
--------
>>> import numpy as np, sgpverify as sv
>>> prob = sv.problems.QuadraticCosine(n=4, d=2, sigma=0.0, seed=0)
>>> ref = reference_sgp(prob, sv.graphs.ring(4), step_size=0.1, n_iter=5)
>>> tr = sv.simulate(prob, sv.graphs.ring(4), step_size=0.1, n_iter=5)
>>> bool(np.allclose(ref["z"], tr.z, rtol=0, atol=1e-14))
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..mixing import delay_model

if TYPE_CHECKING:
    import scipy.sparse as sp
    from numpy.typing import ArrayLike

    from ..graphs import Topology
    from ..mixing import DelayModel
    from ..problems import ProblemProtocol

__all__ = ["reference_sgp"]


class _Node:
    def __init__(self, x, out_momentum):
        self.x = np.array(x, dtype=float)
        self.w = 1.0
        self.u = np.zeros_like(self.x) if out_momentum else None


def reference_sgp(
    problem: ProblemProtocol,
    topology: Topology,
    *,
    step_size: float,
    n_iter: int,
    x0: ArrayLike | None = None,
    tau: int = 0,
    delay: str | DelayModel | ArrayLike | sp.sparray | sp.spmatrix = "fixed",
    seed: int = 0,
    momentum: float = 0.0,
    nesterov: bool = False,
    send_before_step: bool = False,
    record_every: int | None = None,
) -> dict[str, Any]:
    """Run SGP / tau-OSGP node by node, message by message.

    Gradients come from one call ``problem.grad(Z, rng)`` per iteration with
    the stream ``SeedSequence(seed).spawn(1)[0]``, like the engine with one
    replica, so the two see the same noise. Messages that the topology loses
    in flight (:func:`sgpverify.graphs.with_message_loss`) are dropped.

    With ``record_every``, the metrics are computed node by node at every
    ``record_every``-th iteration and at the end, like ``Trace``'s series:
    ``series`` holds ``iterations``, ``consensus`` ((1/n) sum_i ||z_i -
    xbar||^2 with ``z_i = x_i / w_i`` and xbar counting the mass in flight),
    ``grad_norm_sq``, ``value``, ``weight_min``, ``weight_max``, ``mass``
    (total numerator incl. in flight, (T, d)), ``weight`` (total weight) and
    ``lost`` (numerator mass lost so far, (T, d)).

    Returns
    -------
    dict
        ``x`` (n, d), ``w`` (n,), ``z`` (n, d), ``in_flight`` (total numerator
        in flight, (d,)), ``in_flight_w``, ``applied`` (sum of the applied
        steps over nodes and iterations, (d,)), ``lost`` (numerator lost in
        flight, (d,)), ``lost_w``, and ``series`` (None without ``record_every``).
    """
    n, d = problem.n_nodes, problem.dim
    gamma = float(step_size)
    start = np.zeros(d) if x0 is None else np.asarray(x0, dtype=float)
    nodes = [_Node(start if start.ndim == 1 else start[i], momentum > 0) for i in range(n)]
    model = delay_model(delay, tau, seed) if tau > 0 else None
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    in_flight = []  # (arrival step, receiver, numerator share, weight share)
    applied = np.zeros(d)
    lost_x, lost_w = np.zeros(d), 0.0
    names = ("iterations", "consensus", "grad_norm_sq", "value", "weight_min", "weight_max", "mass", "weight", "lost")
    series = {key: [] for key in names} if record_every else None

    def record(k):
        mass = np.zeros(d)
        weight = 0.0
        for node in nodes:
            mass = mass + node.x
            weight += node.w
        for m in in_flight:
            mass = mass + m[2]
            weight += m[3]
        xbar = mass / n
        cons = 0.0
        for node in nodes:
            diff = node.x / node.w - xbar
            cons += float(diff @ diff)
        g = np.asarray(problem.full_grad(xbar), dtype=float)
        for key, v in zip(
            names,
            (
                k,
                cons / n,
                float(g @ g),
                float(problem.value(xbar)),
                min(node.w for node in nodes),
                max(node.w for node in nodes),
                mass,
                weight,
                lost_x.copy(),
            ),
        ):
            series[key].append(v)

    for k in range(n_iter):
        if series is not None and k % record_every == 0:
            record(k)
        Z = np.array([node.x / node.w for node in nodes])
        G = np.asarray(problem.grad(Z, rng), dtype=float)
        steps = []
        for i, node in enumerate(nodes):
            g = G[i]
            if node.u is not None:
                node.u = momentum * node.u + g
                g = g + momentum * node.u if nesterov else node.u
            steps.append(g)
            applied += g
        if not send_before_step:
            for i, node in enumerate(nodes):
                node.x = node.x - gamma * steps[i]
        # who sends to whom, with uniform shares 1/(out-degree + 1)
        edges = topology.edges(k)
        out = [[] for _ in range(n)]
        for s, r in edges.tolist():
            out[s].append(r)
        if model is not None and len(edges):
            delays = model.edge_delays(k, edges[:, 0], edges[:, 1])
        else:
            delays = np.zeros(len(edges), dtype=np.int64)
        delay_of = {(s, r): int(dl) for (s, r), dl in zip(edges.tolist(), delays)}
        lost_edges = {tuple(e) for e, gone in zip(edges.tolist(), topology.lost(k)) if gone}
        kept = []
        for j, node in enumerate(nodes):
            share = 1.0 / (len(out[j]) + 1)
            for i in out[j]:
                if (j, i) in lost_edges:  # sent, then lost in flight
                    lost_x = lost_x + share * node.x
                    lost_w += share * node.w
                    continue
                in_flight.append((k + 1 + delay_of[(j, i)], i, share * node.x, share * node.w))
            kept.append((share * node.x, share * node.w))
        for j, node in enumerate(nodes):
            node.x, node.w = kept[j]
        # deliver what arrives at step k+1
        remaining = []
        for arrive, i, xs, ws in in_flight:
            if arrive == k + 1:
                nodes[i].x = nodes[i].x + xs
                nodes[i].w = nodes[i].w + ws
            else:
                remaining.append((arrive, i, xs, ws))
        in_flight = remaining
        if send_before_step:
            for i, node in enumerate(nodes):
                node.x = node.x - gamma * steps[i]
    if series is not None:
        record(n_iter)
        series = {key: np.array(v) for key, v in series.items()}
    x = np.array([node.x for node in nodes])
    w = np.array([node.w for node in nodes])
    return {
        "x": x,
        "w": w,
        "z": x / w[:, None],
        "in_flight": sum((m[2] for m in in_flight), np.zeros(d)),
        "in_flight_w": float(sum(m[3] for m in in_flight)),
        "applied": applied,
        "lost": lost_x,
        "lost_w": lost_w,
        "series": series,
    }
