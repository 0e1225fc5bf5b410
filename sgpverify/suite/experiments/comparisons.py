"""Experiments that compare: other topologies, more peers, scaled noise, the baselines."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from ...assumptions import check_mixing
from ...problems import replica_grads
from ..departures import NONE, Variant, per_replica
from ..products import product_constants
from ..records import NotApplicable
from ..runs import run_one
from ..setting import control_schedules, label_of, resolve_problem, resolve_topology, setting_schedules

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Protocol

    from ...problems import ProblemProtocol
    from ..config import SuiteConfig
    from ..setting import TopologyFactory

    class _LocalGradProblem(ProblemProtocol, Protocol):
        """A problem with ``local_grad(z)``: the exact gradient of every f_i at z (..., n, d)."""

        def local_grad(self, z: np.ndarray) -> np.ndarray: ...


__all__ = ["exp_topologies", "exp_scaling", "exp_baselines", "Scaled", "SCALINGS", "complete_topologies_control"]


def _compared_schedules(cfg):
    """(label, factory) of the topology comparison: the reference (the paper's exponential graph
    with the setting's peers), the same graph with one more peer, and ``compare_topologies``."""
    ref = resolve_topology("exponential", cfg)
    more = dataclasses.replace(cfg, peers=cfg.peers + 1)
    out = [("exponential", ref), (f"exponential, {cfg.peers + 1} peers", resolve_topology("exponential", more))]
    return out + [(label_of(t), resolve_topology(t, cfg)) for t in cfg.compare_topologies]


def exp_topologies(
    cfg: SuiteConfig,
    seed: int,
    variant: Variant = NONE,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Stationarity and consensus averages on the exponential graph (reference), with one more
    peer, and on ``compare_topologies``, same problem and seeds, at every K of ``topology_Ks``; the
    product constants of each schedule. A control's departure concerns the compared schedules
    only (the reference stays intact)."""
    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    out = {}
    for i, (label, make) in enumerate(_compared_schedules(cfg)):
        if i == 0 and variant != NONE:
            continue  # the reference of a control comes from the main run (see _control_data)
        topo = make(cfg.n, seed)
        runs = []
        for K in cfg.topology_Ks:
            runs.append(run_one(cfg, prob, topo, K, seed, variant, replicas=cfg.topology_replicas))
            if progress:
                progress(f"topologies {label} K={K}")
        out[label] = {"topology": topo.name, "runs": runs}
        if variant == NONE:  # the schedule's constants (a control's departure does not change them)
            rep = check_mixing(topo, tau=cfg.tau, delay=cfg.delay, horizon=cfg.mixing_horizon, seed=seed).to_dict()
            pc = product_constants(topo, cfg.tau, cfg.delay, seed, cfg.bound_horizon)
            out[label].update(
                S2=pc.get("S2"),
                **{k: rep.get(k) for k in ("q_exact", "q_lyapunov", "q_lyapunov_interval", "q", "q_source")},
            )
    return {"reference": "exponential", "more_peers": f"exponential, {cfg.peers + 1} peers", "schedules": out}


def complete_topologies_control(main: dict, ctl: dict) -> dict:
    """A control's topology data with the main run's reference schedule and every schedule's
    constants (the departure concerns the compared schedules' runs only)."""
    sch = {
        lab: {**{k: v for k, v in m.items() if k != "runs"}, **ctl["schedules"].get(lab, {"runs": m["runs"]})}
        for lab, m in main["schedules"].items()
    }
    return {**ctl, "schedules": sch}


class Scaled:
    """The problem with noise and heterogeneity scaled: ``f_i' = f + s_h (f_i - f)`` and the
    noise times ``s_n``, from the same random draws. So ``zeta^2' = s_h^2 zeta^2``,
    ``sigma^2' = s_n^2 sigma^2``, ``grad f`` (hence ``f*``) unchanged; needs ``local_grad``
    (the exact gradient of every f_i)."""

    def __init__(self, inner: _LocalGradProblem, s_h: float, s_n: float) -> None:
        self._inner, self._sh, self._sn = inner, float(s_h), float(s_n)
        self.sigma2 = float(inner.sigma2) * self._sn**2
        self.zeta2 = float(inner.zeta2) * self._sh**2
        # grad f_i' = s_h grad f_i + (1 - s_h) grad f: Lipschitz with (|s_h| + |1 - s_h|) L
        self.L = float(inner.L) * (abs(self._sh) + abs(1 - self._sh))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def grad(self, z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        g = np.asarray(self._inner.grad(z, rng), dtype=float)
        lg = np.asarray(self._inner.local_grad(z), dtype=float)
        fg = np.asarray(self._inner.full_grad(z), dtype=float)
        return fg + self._sh * (lg - fg) + self._sn * (g - lg)

    def grad_replicas(self, Z: np.ndarray, rngs: Sequence[np.random.Generator], out: np.ndarray) -> np.ndarray:
        """``grad(Z[r], rngs[r])`` for every replica r, into ``out`` (R, n, d): the inner
        problem's ``grad_replicas`` when it has one (``local_grad`` and ``full_grad`` still
        per replica, as ``grad`` calls them; the elementwise combination stacked), else one
        ``grad`` call per replica: the same bits and draws."""
        inner = replica_grads(self._inner)
        if inner is None:
            return per_replica(self.grad, Z, rngs, out)
        g = inner(Z, rngs, out)
        lg = np.stack([np.asarray(self._inner.local_grad(z), dtype=float) for z in Z])
        fg = np.stack([np.asarray(self._inner.full_grad(z), dtype=float) for z in Z])
        np.copyto(out, fg + self._sh * (lg - fg) + self._sn * (g - lg))
        return out


SCALINGS = (("base", 1, 1), ("noise", 1, 2), ("heterogeneity", 2, 1), ("both", 2, 2))


def exp_scaling(
    cfg: SuiteConfig,
    seed: int,
    variant: Variant = NONE,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Consensus averages with the gradient noise and the heterogeneity scaled by
    ``scaling_factor`` (separately and together), same draws, at every K of ``scaling_Ks``, on the
    first schedule whose push-sum weights move (so that de-biasing matters)."""
    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    try:
        prob.local_grad(np.zeros((1, prob.n_nodes, prob.dim)))
    except (NotImplementedError, AttributeError):
        raise NotApplicable(
            f"the problem {type(prob).__name__} has no local_grad (the exact gradient of every f_i at "
            "(..., n, d)), which scaling its noise and heterogeneity needs; a problem that defines "
            "local_grad(x) (x of shape (..., n, d), returning node i's exact gradient in row i) makes it apply"
        ) from None
    label, make = control_schedules(cfg, Variant(debias=False))[0]
    topo = make(cfg.n, seed)
    s = cfg.scaling_factor
    out = {}
    for name, sh, sn in SCALINGS:
        p = Scaled(prob, s if sh == 2 else 1.0, s if sn == 2 else 1.0)
        runs = []
        for K in cfg.scaling_Ks:
            # the step-size regime is judged on the unscaled problem (the scaled ones' L is an upper bound)
            runs.append(run_one(cfg, p, topo, K, seed, variant, replicas=cfg.scaling_replicas, regime=name == "base"))
            if progress:
                progress(f"scaling {name} K={K}")
        out[name] = {"runs": runs, "sigma2": p.sigma2, "zeta2": p.zeta2}
    return {"schedule": label, "factor": s, "settings": out}


def exp_baselines(
    cfg: SuiteConfig,
    seed: int,
    variant: Variant = NONE,
    progress: Callable[[str], None] | None = None,
    schedules: list[tuple[str, TopologyFactory]] | None = None,
) -> dict[str, Any]:
    """SGP, D-PSGD and AllReduce SGD on the same problem and seeds, at two K."""
    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    out = {}
    for label, make in schedules or setting_schedules(cfg):
        topo = make(cfg.n, seed)
        runs = []
        for K in cfg.baseline_Ks:
            for alg in ("sgp", "dpsgd", "allreduce"):
                if alg == "dpsgd" and variant != NONE:
                    continue  # the departures concern push-sum only
                r = run_one(
                    cfg,
                    prob,
                    topo,
                    K,
                    seed,
                    variant if alg == "sgp" else NONE,
                    algorithm=alg,
                    tau=0 if alg != "sgp" else None,
                    regime=alg == "sgp",
                )
                r["algorithm"] = alg
                runs.append(r)
                if progress:
                    progress(f"baselines {label} K={K} {alg}")
        out[label] = {"runs": runs}
    return {"schedules": out}
