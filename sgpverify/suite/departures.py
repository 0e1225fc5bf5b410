"""The departures of the negative controls: :class:`Variant` and what applies it.

A control reruns an experiment under a :class:`Variant`: a problem whose
gradients depart from the declared model (:class:`Perturbed`), a schedule that
loses messages (:func:`wrap_topology`) or never reaches node 0
(:func:`disconnected`), push-sum without de-biasing, a constant step.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import graphs
from ..problems import replica_grads
from .criteria import pep_tolerance

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..problems import ProblemProtocol

__all__ = ["Variant", "NONE", "Perturbed", "Declared", "per_replica", "wrap_topology", "disconnected", "vacuous"]


@dataclasses.dataclass(frozen=True)
class Variant:
    """A departure from the theory's assumptions (the identity by default).

    step : "sqrt" (gamma = sqrt(n/K), the claim) or "constant" (gamma =
    sqrt(n/K_min) at every K); extra_noise : added independent gradient noise,
    in multiples of the declared sigma^2 (99: the true variance is 100 sigma^2);
    shared_noise : add noise of the declared variance common to all nodes (every
    worker seeded alike), which no averaging removes; bias : a constant gradient
    bias of norm ``bias * sqrt(sigma^2)`` (or ``bias`` when sigma^2 = 0); debias :
    False runs push-sum without de-biasing (z = x); loss : probability that a
    message is lost in flight (mass is not conserved); disconnect : the mixing
    check runs on a schedule in which node 0 never receives; declare_L : the
    problem declares ``declare_L`` times its smoothness constant (0.5: L/2, a
    constant that its gradients refute); drop_term : the name of a term the
    worst-case check drops from the derived bound (``"consensus"``: (c2)
    without its consensus term), a derivation error it must detect.
    """

    name: str = "none"
    step: str = "sqrt"
    extra_noise: float = 0.0
    shared_noise: bool = False
    bias: float = 0.0
    debias: bool = True
    loss: float = 0.0
    disconnect: bool = False
    declare_L: float = 1.0
    drop_term: str = ""


NONE = Variant()


def vacuous(variant: Variant, main: dict[str, Any]) -> str | None:
    """Why ``variant`` departs from nothing on this setting, judged on the main (undeparted) data
    of the experiments it reruns, or None.

    No de-biasing (``debias=False``) is push-sum itself where every push-sum weight of every run
    stays 1 (a doubly stochastic schedule: the hypercube's or the one-peer exponential graph's pairs,
    AllReduce): z = x / w = x. Equal to 1 means within the round-off of K sums of n halves
    (``4 eps K n``, with each run's K and n where it records them).

    A term dropped from the derived bound (``drop_term``) departs from nothing where the bound without it
    still lies above the exact worst case of every entry, beyond the solve's accuracy
    (:func:`~sgpverify.suite.criteria.pep_tolerance`): the worst case is the largest value over the whole
    class, so that bound is then true at these sizes, and the term is not needed there. The other departures
    always act.
    """
    if variant.drop_term:
        return _term_not_needed(variant.drop_term, main.get("worstcase"))
    if variant.debias:
        return None
    runs = [r for d in main.values() if isinstance(d, dict) and "error" not in d for r in _records(d)]
    if not runs:
        return None
    tol = 4 * float(np.finfo(float).eps) * max(int(r.get("K", 1)) * int(r.get("n", 1)) for r in runs)
    ok = all(
        isinstance(w, (int, float)) and abs(w - 1) <= tol for r in runs for w in (r["weight_min"], r["weight_max"])
    )
    if not ok:
        return None
    return (
        f"every push-sum weight of the {len(runs)} runs stays 1 (within {tol:.1g}): the schedule is doubly "
        "stochastic, so push-sum without de-biasing is push-sum itself (z = x / w = x) and departs from nothing"
    )


def _term_not_needed(term: str, wc: Any) -> str | None:
    """Why dropping ``term`` from the derived bound departs from nothing on the worst-case data ``wc``, or
    None (some entry's worst case lies above the bound without it, or is not known exactly)."""
    entries = wc.get("entries", []) if isinstance(wc, dict) and wc.get("available") else []
    if term != "consensus" or not entries:
        return None
    ratios = []
    for e in entries:
        vals = (e.get("worst_case"), e.get("optimization_terms"))
        if e.get("status") != "optimal" or not all(isinstance(v, float) and math.isfinite(v) for v in vals):
            return None
        if not vals[0] > 0 or vals[1] < vals[0] * (1 + pep_tolerance(e)):
            return None
        ratios.append(vals[1] / vals[0])
    return (
        f"without its {term} term the derived bound still lies {min(ratios):.3g} times or more above the exact "
        f"worst case of each of the {len(entries)} solves: the worst case is the largest value over the class, so "
        f"that bound is true at these sizes, and dropping the term departs from nothing here"
    )


def _records(obj: Any) -> list[dict]:
    """The run records (dicts with a ``weight_min`` and a ``weight_max``) under ``obj``."""
    out: list[dict] = []

    def walk(o):
        if isinstance(o, dict):
            if "weight_min" in o and "weight_max" in o:
                out.append(o)
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(obj)
    return out


def per_replica(
    grad: Callable[[np.ndarray, np.random.Generator], np.ndarray],
    Z: np.ndarray,
    rngs: Sequence[np.random.Generator],
    out: np.ndarray,
) -> np.ndarray:
    """``out[r] = grad(Z[r], rngs[r])`` for every replica: a wrapper's ``grad_replicas``
    when its inner problem has none."""
    for r, rng in enumerate(rngs):
        out[r] = grad(Z[r], rng)
    return out


class Perturbed:
    """A problem whose stochastic gradients depart from the declared model."""

    def __init__(self, inner: ProblemProtocol, v: Variant) -> None:
        self._inner = inner
        self._v = v
        s2 = float(inner.sigma2)
        self._scale = math.sqrt(s2 / inner.dim) if s2 > 0 else 1.0 / math.sqrt(inner.dim)
        if v.bias:
            self._b = np.full(inner.dim, v.bias * (math.sqrt(s2) if s2 > 0 else 1.0) / math.sqrt(inner.dim))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def grad(self, z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        g = np.array(self._inner.grad(z, rng), dtype=float)
        v = self._v
        if v.extra_noise:
            g += rng.standard_normal(g.shape) * (self._scale * math.sqrt(v.extra_noise))
        if v.shared_noise:
            g += rng.standard_normal(g.shape[:-2] + (1, g.shape[-1])) * self._scale
        if v.bias:
            g += self._b
        return g

    def grad_replicas(self, Z: np.ndarray, rngs: Sequence[np.random.Generator], out: np.ndarray) -> np.ndarray:
        """``grad(Z[r], rngs[r])`` for every replica r, into ``out`` (R, n, d): the inner
        problem's ``grad_replicas`` when it has one, then each replica's departures drawn
        from its own stream in ``grad``'s order (the same bits and draws); else one
        ``grad`` call per replica."""
        inner = replica_grads(self._inner)
        if inner is None:
            return per_replica(self.grad, Z, rngs, out)
        inner(Z, rngs, out)
        v = self._v
        if v.extra_noise:
            c = self._scale * math.sqrt(v.extra_noise)
            for g, rng in zip(out, rngs):
                g += rng.standard_normal(g.shape) * c
        if v.shared_noise:
            for g, rng in zip(out, rngs):
                g += rng.standard_normal((1, g.shape[-1])) * self._scale
        if v.bias:
            out += self._b
        return out


def wrap_topology(
    topo: graphs.Topology, variant: Variant, seed: int | np.random.SeedSequence | None
) -> graphs.Topology:
    if variant.loss:
        if not hasattr(graphs, "with_message_loss"):  # pragma: no cover - older graphs module
            raise RuntimeError("message-loss control needs graphs.with_message_loss")
        return graphs.with_message_loss(topo, variant.loss, seed=seed)
    return topo


def disconnected(topo: graphs.Topology) -> graphs.Topology:
    """The same schedule with every message to node 0 removed: node 0 never receives."""

    class _NoInto0(graphs.Topology):
        def __init__(self, base):
            self.n, self.period, self.name, self._base = base.n, base.period, f"{base.name} minus edges into 0", base

        def _edges(self, k):
            e = self._base.edges(k)
            return e[e[:, 1] != 0]

    return _NoInto0(topo)


class Declared:
    """A problem that declares other constants than its own (``L`` times ``L_factor``): the
    departure of the declared-constants control. Everything else is the inner problem's."""

    def __init__(self, inner: ProblemProtocol, L_factor: float) -> None:
        self._inner = inner
        self.L = float(inner.L) * float(L_factor)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __repr__(self) -> str:
        return f"<{self._inner!r} declaring L = {self.L:.4g}>"
