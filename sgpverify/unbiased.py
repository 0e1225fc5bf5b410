"""Are the stochastic gradients unbiased? A test of Assumption 2's ``E g_i(x) = grad f_i(x)``.

The theory's descent analysis assumes every stochastic gradient is unbiased. An offset ``b`` breaks
every claim built on it (the iterates go where ``grad f = -b``, or, where no such point exists, off
to a flat region), and no sampled bound on L, sigma^2 or zeta^2 can see it: those measure the
spread of the draws, not their mean. The problem's own ``full_grad`` can: the draws averaged over
the nodes have mean ``grad f(x)`` when every node's are unbiased (f is the nodes' average), and
with ``local_grad`` each node's draws have mean ``grad f_i(x)``.

The statistic is the U-statistic ``mean_{s != t} <e^s, e^t>`` of the draws' deviations
``e^s`` from the exact gradient: an unbiased estimate of ``||E e||^2`` (the squared offset) whatever
the noise, with a one-sided Student t lower confidence bound (the same construction as the
heterogeneity's). The offset is refuted where the square root of that bound exceeds the round-off
allowance ``2 ROUNDOFF eps sqrt(d)`` times the largest gradient component, with ``eps`` of the coarser of the
problem's own gradient dtypes (a float32 problem rounds at 1e-7, not 1e-16). docs/theory.md,
"Unbiased gradients", states the rule and its validation.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.stats

__all__ = ["offset_bound", "draws_offset", "dtype_eps", "roundoff_allowance", "describe_offset"]


def dtype_eps(*arrays: object) -> float:
    """The machine epsilon of the coarsest floating dtype among ``arrays`` (float64's for none)."""
    eps = float(np.finfo(float).eps)
    for a in arrays:
        dt = getattr(a, "dtype", None)
        if dt is not None and np.issubdtype(dt, np.floating):
            eps = max(eps, float(np.finfo(dt).eps))
    return eps


def roundoff_allowance(roundoff: float, eps: float, d: int, scale: object) -> object:
    """``2 roundoff eps sqrt(d)`` times ``scale`` (a number or an array): how far round-off can move a
    norm of a difference of d-vectors whose components are computed to within ``roundoff eps`` of
    ``scale`` each. The one allowance of every sampled constant and of the offset."""
    return 2.0 * roundoff * eps * math.sqrt(d) * scale


def offset_bound(E: np.ndarray, alpha: float, tol: float) -> tuple[float, float, float]:
    """``(low, estimate, tol)`` for the offset ``||E e||`` of draws ``E`` (S, k) of deviations from the
    exact gradient (``k`` = d for the node average, n d with every node's): ``low`` the square root of
    the one-sided ``1 - alpha`` lower confidence bound of ``||E e||^2``, less ``tol`` (0 where it does not
    exceed it: no offset beyond sampling error and round-off), ``estimate`` the square root of the
    U-statistic itself (0 where negative). Non-finite draws are left out."""
    E = np.asarray(E, dtype=float)
    E = E[np.all(np.isfinite(E), axis=1)]
    S = len(E)
    if S < 2:
        return 0.0, 0.0, tol
    total = E.sum(axis=0)
    h = (E @ total - np.einsum("sk,sk->s", E, E)) / (S - 1)  # mean h = the U-statistic
    u = float(h.mean())
    se = 2.0 * float(h.std(ddof=1)) / math.sqrt(S)
    lo = u - float(scipy.stats.t.ppf(1.0 - alpha, S - 1)) * se
    # the computed offset is within tol of the true one: the true one is at least sqrt(lo) - tol
    low = max(math.sqrt(lo) - tol, 0.0) if lo > 0 else 0.0
    return low, math.sqrt(max(u, 0.0)), tol


def draws_offset(
    problem: object, x: np.ndarray, G: np.ndarray, local: np.ndarray | None, eps: float, alpha: float, roundoff: float
) -> tuple[float, float, float]:
    """:func:`offset_bound` of the stochastic gradients ``G`` (S, n, d) drawn at ``x``: every node's
    deviation from its ``local`` gradient (n, d) where known (the root mean square offset over the
    nodes), else the node average's from the problem's ``full_grad``. ``eps``: the draws' dtype
    epsilon; the allowance is ``2 roundoff eps sqrt(d)`` times the largest gradient component."""
    S, n, d = G.shape
    if local is not None:
        ref = np.asarray(local, dtype=float)
        E = (G - ref).reshape(S, n * d) / math.sqrt(n)
    else:
        raw = problem.full_grad(x)  # type: ignore[attr-defined]
        ref = np.asarray(raw, dtype=float)
        E, eps = G.mean(axis=1) - ref, max(eps, dtype_eps(raw))
    with np.errstate(invalid="ignore"):
        scale = max(float(np.nanmax(np.abs(G), initial=0.0)), float(np.nanmax(np.abs(ref), initial=0.0)))
    tol = roundoff_allowance(roundoff, eps, d, scale)
    return offset_bound(E, alpha, tol if math.isfinite(tol) else math.inf)


def describe_offset(
    low: float, est: float, tol: float, points: int, S: int, confidence: float, exact: bool, infinite: bool
) -> tuple[bool, str, str]:
    """``(refuted, method, detail)`` of the ``bias`` entry of the declared-constants check: the largest
    lower bound ``low`` over ``points`` (``S`` draws each), or not tested where the variance does not
    exist (``infinite``: a confidence bound on the mean needs one)."""
    if infinite:
        return (
            False,
            "not tested",
            ("unbiasedness not tested: the noise variance does not exist (the mean's confidence bound needs it)"),
        )
    what = (
        "every node's draws from local_grad (rms over the nodes)" if exact else "the node-averaged draws from full_grad"
    )
    word = "refuted" if low > 0.0 else "not refuted"
    return (
        low > 0.0,
        "mean offset (U-statistic)",
        (
            f"unbiased gradients (bias 0) {word}: the mean of {what} is offset by >= {low:.4g} (estimate "
            f"{est:.4g}; {confidence:.4g} lower confidence bound over {points} points, {S} draws each, beyond the "
            f"round-off allowance {tol:.4g})"
        ),
    )
