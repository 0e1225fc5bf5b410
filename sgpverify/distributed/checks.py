"""A distributed run held against the simulator on the same problem, seeds and schedule."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .runner import DistributedResult

__all__ = ["check_against_simulator"]


def check_against_simulator(res: DistributedResult) -> dict[str, float | None]:
    """Compare a distributed run with :func:`sgpverify.simulate` on the same problem,
    seeds and schedule: ``max_deviation`` of z, ``mass_error``, consensus."""
    from ..engine import simulate

    cfg = res.config
    prob, topo = cfg.build()
    alg = {"sgp": "sgp", "osgp": "sgp", "dpsgd": "dpsgd", "allreduce": "allreduce"}[cfg.algorithm]
    # "fixed" delays are reproducible: the simulator runs the same delayed schedule
    exact = cfg.tau == 0 or cfg.delay == "fixed"
    tr = simulate(
        prob,
        topo,
        step_size=cfg.step_size,
        n_iter=cfg.iters,
        x0=cfg.start(),
        algorithm=alg,
        tau=cfg.tau if exact else 0,
        delay="fixed",
        seed=cfg.seed,
        record_every=cfg.record_every,
        record_states=True,
    )
    x0_sum = cfg.start().sum(axis=0)
    expected = x0_sum - cfg.step_size * np.asarray(res.totals["applied_sum"])
    mass_error = float(np.max(np.abs(np.asarray(res.totals["x_sum"]) - expected)))
    out = {
        "mass_error": mass_error,
        "weight_error": abs(res.totals["w_sum"] - cfg.nproc),
        "in_flight_at_end": float(np.max(np.abs(np.asarray(res.totals["sent"]) - np.asarray(res.totals["consumed"])))),
        "initial_consensus": float(res.consensus()[0]),
        "final_consensus": float(res.consensus()[-1]),
        "simulator_final_consensus": float(tr.consensus[-1]),
    }
    if exact:
        # z of every node at every recorded iteration, distributed vs simulated
        sim = {int(k): tr.z_history[i] for i, k in enumerate(tr.iterations.tolist())}
        # with delays the last record follows the final flush (messages in flight folded in),
        # which the simulator's real nodes do not have: compare the records before it
        last = cfg.iters if cfg.tau == 0 else cfg.iters - 1
        devs = [
            float(np.max(np.abs(sim[int(k)] - res.z[i]))) for i, k in enumerate(res.iterations.tolist()) if k <= last
        ]
        out["max_deviation"] = max(devs)
    else:
        out["max_deviation"] = None  # "asap" delays: real asynchrony: no single simulated trajectory to compare
    return out
