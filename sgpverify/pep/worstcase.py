"""The entry point :func:`worst_case` and its record :class:`WorstCase`."""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np

from ..mixing import MixingSchedule, mixing_schedule
from ..validation import check_choice, check_float, check_int
from .extra import require_pep
from .formulation import build, build_structured, gbar, pad
from .lowrank import LOWRANK, check_options, solve_lowrank
from .readback import WorstCaseProblem
from .reduced import solve_reduced
from .solve import solve_direct, solve_pepit
from .symmetry import detect_symmetry

MEASURES = ("average", "min")
FSTAR_MODELS = ("stationary", "last")
ENGINES = ("direct", "pepit")
SYMMETRIES = ("auto", None)


@dataclasses.dataclass(frozen=True)
class WorstCase:
    """The worst case of SGP on a schedule, and the SDP that gave it.

    Attributes
    ----------
    value : float
        The worst-case measure (the solver's primal objective): the largest
        ``(1/K) sum_{k<K} ||grad f(xbar^k)||^2`` (or the minimum over k) over
        the class.
    dual_value : float or None
        The solver's dual objective (an upper bound up to its feasibility
        tolerance), where the solver reports it; with ``solver="SCS"``, the bound
        certified by :mod:`sgpverify.pep.posterior` (None where none is).
    duality_gap : float or None
        ``|dual_value - value|``.
    status : str
        The solver's status (``"optimal"``, ``"optimal_inaccurate"``, ...).
    solver, engine : str
    gram_size : int
        Side of the Gram matrix (the number of vectors: x0, the gradient
        evaluations, x_*).
    n_constraints : int
        Scalar constraints (interpolation, initial condition, heterogeneity,
        gradient size).
    seconds : float
        Wall time of building and solving.
    gram : ndarray
        The solution's Gram matrix (read-only).
    grad_norm_sq, consensus, value_gap : ndarray
        Per step k < K of the worst case: ``||grad f(xbar^k)||^2``,
        ``Xi^k = (1/n) sum_i ||xbar^k - z_i^k||^2`` and ``f(xbar^k) - f_*``
        (``f_*`` of the model; read from ``gram``).
    step_sq : ndarray
        ``(1/n) sum_i ||g_i^k||^2`` per step (the G_2^2 of (b2)).
    settings : dict
        n, K, tau, delay, L, step_size, delta, zeta2, G2sq, measure, fstar, schedule.
    bounds : dict or None
        ``solver="lowrank"`` only: the lower and upper bounds, whether they close to the stated
        tolerance (``exact``), the largest constraint violation relative to the scale, the dual
        slack's smallest relative eigenvalue, the ranks, the interpolation pairs kept, and the
        time (:class:`sgpverify.pep.lowrank.Bounds`).
    check : dict or None
        ``solver="SCS"`` (``engine="direct"``) only: the a-posteriori check of the first-order
        solution (:class:`sgpverify.pep.posterior.Check`): the largest constraint violation relative
        to the scale (of the solved SDP, and of every node's constraints of the full SDP), the PSD
        blocks' smallest relative eigenvalue, the dual bound certified from SCS's multipliers (None
        without a certificate), the relative gap, the tolerance and whether it ``passed``.
    symmetry : str or None
        The group whose reduced SDP was solved (``"Z_8"``, ``"Z_2^3"``, ``"Z_2 x Z_4"``), or None
        for the full SDP.
    block_sizes : tuple of int
        Sides of the SDP's PSD blocks: ``(gram_size,)`` for the full SDP; for the reduced one the
        trivial character's block, then one per real character (T, the number of gradient
        families) or conjugate pair of characters (2T).
    """

    value: float
    dual_value: float | None
    duality_gap: float | None
    status: str
    solver: str
    engine: str
    gram_size: int
    n_constraints: int
    seconds: float
    gram: np.ndarray
    grad_norm_sq: np.ndarray
    consensus: np.ndarray
    value_gap: np.ndarray
    step_sq: np.ndarray
    settings: dict
    symmetry: str | None = None
    block_sizes: tuple = ()
    bounds: dict | None = None
    check: dict | None = None
    _model: Any = dataclasses.field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values (the Gram matrix as nested lists)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if not f.name.startswith("_")}
        for k in ("gram", "grad_norm_sq", "consensus", "value_gap", "step_sq"):
            out[k] = np.asarray(out[k]).tolist()
        return out

    def problem(self, rtol: float = 1e-7) -> WorstCaseProblem:
        """The worst-case functions read back from the solution, as a Problem-protocol object
        (:class:`WorstCaseProblem`) that :func:`sgpverify.simulate` can run."""
        return WorstCaseProblem(self, rtol=rtol)


def worst_case(
    topology: Any,
    n_iter: int,
    *,
    L: float,
    step_size: float,
    tau: int = 0,
    delay: Any = "fixed",
    delta: float = 1.0,
    zeta2: float | None = None,
    G2sq: float | None = None,
    sigma2: float = 0.0,
    measure: str = "average",
    fstar: str = "stationary",
    seed: int | None = 0,
    engine: str = "direct",
    solver: str = "CLARABEL",
    solver_options: dict | None = None,
    symmetry: str | None = "auto",
) -> WorstCase:
    """The exact worst case of SGP (tau-OSGP for ``tau > 0``) on a schedule.

    Parameters
    ----------
    topology : Topology, MixingSchedule, matrix or list of matrices
        The schedule; its actual matrices ``P^(k)`` (push weights for a
        topology; delay-augmented for ``tau > 0``) enter the SDP.
    n_iter : int
        K >= 1, the number of iterations.
    L : float
        Smoothness constant of every f_i, > 0.
    step_size : float
        gamma > 0.
    tau : int
        Maximum delay (0: SGP).
    delay : {"fixed", "random"}, DelayModel or matrix
        The delay model for ``tau > 0`` (see :func:`sgpverify.mixing.delay_model`).
    delta : float
        ``f(xbar^0) - f_* <= delta`` (> 0; the worst case scales linearly in it only where
        ``zeta2`` and ``G2sq`` are None).
    zeta2 : float, optional
        Heterogeneity bound at the points where every f_i is evaluated; None: unconstrained.
    G2sq : float, optional
        Bound on ``(1/n) sum_i ||g_i^k||^2`` at every step; None: unconstrained.
    sigma2 : float
        Must be 0: the stochastic case is not modelled (see the module notes).
    measure : {"average", "min"}
        ``(1/K) sum_{k<K} ||grad f(xbar^k)||^2`` (what Theorem 1 bounds) or its minimum over k < K.
    fstar : {"stationary", "last"}
        The model of ``f_*`` (module notes).
    seed : int, optional
        Seed of a random schedule or random delays.
    engine : {"direct", "pepit"}
        Build the SDP from the coefficient vectors (one vectorised constraint block) or
        through PEPit's API.
    solver : str
        A cvxpy solver name ("CLARABEL", "SCS"), or ``"lowrank"``: the same reduced SDP solved by
        factors with constraint generation (:mod:`sgpverify.pep.lowrank`; symmetric schedules and
        ``measure="average"`` only). Its ``value`` is then a LOWER bound, ``dual_value`` a
        certified upper bound (None where the dual slack is not PSD to tolerance), ``status``
        ``"exact"`` only where the two agree to ``rtol`` (default 1e-4), else ``"lower_bound"``.
        With ``"SCS"`` (first order: accurate only to its residuals; pass ``eps_abs``, ``eps_rel``
        and ``max_iters`` in ``solver_options``), the solution is checked a posteriori
        (``WorstCase.check``, :mod:`sgpverify.pep.posterior`): ``status`` is ``"optimal"`` only where
        SCS said solved AND the violations, the blocks' negative eigenvalues and the gap to a
        certified dual bound are all within ``max(1e-6, 1e-7 * gram_size)`` relative (the suite's
        tolerance); else ``"optimal_inaccurate"``. ``dual_value`` is that certified bound, or None.
    solver_options : dict, optional
        Passed to the solver (for ``"lowrank"``: the keys of ``sgpverify.pep.lowrank.DEFAULTS``).
        With Clarabel (``engine="direct"``), a solve that ends ``"optimal_inaccurate"`` is solved once
        more with ``sgpverify.pep.solve.RETRY_OPTIONS`` (no equilibration, iterative refinement to
        round-off; yours win where you set the same keys), kept where it ends optimal;
        setting ``equilibrate_enable`` yourself switches that retry off.
    symmetry : {"auto", None}
        ``"auto"``: where every matrix of the schedule (delay-augmented) is invariant under a
        group of node permutations the package knows (:func:`sgpverify.pep.detect_symmetry`:
        cyclic, Z_2^k, products of two cyclic groups; exact comparisons of the entries), solve
        the symmetry-reduced SDP, which has the same value (module notes of
        :mod:`sgpverify.pep.reduced`); otherwise the full one. None: always the full SDP.
        ``engine="pepit"`` always solves the full SDP.

    Returns
    -------
    WorstCase

    Raises
    ------
    ImportError
        Without the ``pep`` extra (the message names it).

    Notes
    -----
    The recursion is that of docs/theory.md section 1b: ``X^{k+1} = P^(k)(X^k - gamma G^k)``,
    ``w^{k+1} = P^(k) w^k``, gradients at ``z_i = x_i / w_i``, buffers included in xbar.
    The interpolation conditions are PEPit's for ``SmoothFunction``. docs/tightness.md
    states the class and the validation.

    Examples
    --------
    >>> import sgpverify as sv
    >>> from sgpverify.pep import worst_case
    >>> wc = worst_case(sv.graphs.complete(1), 3, L=1.0, step_size=1.0, fstar="last", measure="min")
    >>> round(wc.value, 4)  # gradient descent: min_{k<3} ||g_k||^2 with f(x_0) - f(x_2) <= 1 is 4/(3*2)
    0.6667
    """
    K = check_int("n_iter", n_iter, min_value=1)
    L = check_float("L", L, low=0.0, low_open=True)
    gamma = check_float("step_size", step_size, low=0.0, low_open=True)
    tau = check_int("tau", tau, min_value=0)
    delta = check_float("delta", delta, low=0.0, low_open=True)
    if zeta2 is not None:
        zeta2 = check_float("zeta2", zeta2, low=0.0)
    if G2sq is not None:
        G2sq = check_float("G2sq", G2sq, low=0.0)
    sigma2 = check_float("sigma2", sigma2, low=0.0)
    if sigma2 > 0:
        raise ValueError(
            f"sigma2 must be 0 (the PEP models a deterministic run; stochastic noise has no faithful Gram model "
            f"here), got {sigma2!r}"
        )
    check_choice("measure", measure, MEASURES)
    check_choice("fstar", fstar, FSTAR_MODELS)
    check_choice("engine", engine, ENGINES)
    if symmetry not in SYMMETRIES:
        raise ValueError(f"symmetry must be 'auto' or None, got {symmetry!r}")
    if fstar == "last" and K < 2:
        raise ValueError(f"n_iter must be >= 2 with fstar='last' (f(xbar^0) - f(xbar^(K-1)) is 0 at K = 1), got {K}")
    if not isinstance(solver, str) or not solver:
        raise ValueError(f"solver must be a cvxpy solver name, got {solver!r}")
    lowrank = solver == LOWRANK
    if lowrank and (engine != "direct" or symmetry != "auto" or measure != "average"):
        raise ValueError(
            f"solver='lowrank' needs engine='direct', symmetry='auto' and measure='average', got engine={engine!r}, "
            f"symmetry={symmetry!r}, measure={measure!r}"
        )
    if lowrank:
        check_options(dict(solver_options or {}))
    else:
        require_pep(engine)
    schedule = (
        topology if isinstance(topology, MixingSchedule) else mixing_schedule(topology, tau=tau, delay=delay, seed=seed)
    )
    if isinstance(topology, MixingSchedule) and topology.tau != tau:
        raise ValueError(f"tau must match the schedule's tau = {topology.tau}, got {tau}")
    t0 = time.perf_counter()
    group = detect_symmetry(schedule, K) if symmetry == "auto" and engine == "direct" and schedule.n > 1 else None
    if lowrank and group is None:
        raise ValueError(
            f"solver='lowrank' needs a schedule symmetric under a known group (detect_symmetry), got {schedule.name!r}"
        )
    bounds = check = None
    opts = dict(solver_options or {})
    if group is not None:
        md, rec = build_structured(schedule, K, L, gamma, delta, zeta2, G2sq, fstar)
        if lowrank:
            primal, dual, status, Gv, Fv, ncons, sides, bd = solve_lowrank(md, rec, group, L, K, opts)
            bounds = dataclasses.asdict(bd)
        else:
            primal, dual, status, Gv, Fv, ncons, sides, chk = solve_reduced(md, rec, group, L, K, measure, solver, opts)
            check = None if chk is None else chk.to_dict()
    else:
        md, rec = build(schedule, K, L, gamma, delta, zeta2, G2sq, fstar)
        run = solve_direct if engine == "direct" else solve_pepit
        primal, dual, status, Gv, Fv, ncons, chk = run(md, rec, L, K, measure, solver, opts)
        check = None if chk is None else chk.to_dict()
        sides = (md.m,)
    seconds = time.perf_counter() - t0
    if primal is None or Gv is None or not math.isfinite(primal):
        raise ArithmeticError(f"the PEP solver ({solver}) returned no solution: status {status}")
    Gv = 0.5 * (Gv + Gv.T)
    md.G, md.F = Gv, Fv
    m, n = md.m, md.n

    def sq(v):
        v = pad(v, m)
        return float(v @ Gv @ v)

    gns = np.array([sq(gbar(g, m, n)) for g in rec["gbar"][:K]])
    cons = np.array([np.mean([sq(rec["xbar"][k] - z) for z in rec["z"][k]]) for k in range(K)])
    step = np.array([np.mean([sq(g) for g in rec["g"][k]]) for k in range(K)])
    flow = sum(c * Fv[j] for j, c in rec["lower"].items())
    gap = np.array([np.mean([Fv[f] for f in rec["fbar"][k]]) - flow for k in range(K)])
    G_ro = Gv.copy()
    for a in (G_ro, gns, cons, step, gap):
        a.setflags(write=False)
    return WorstCase(
        value=float(primal),
        dual_value=dual,
        duality_gap=None if dual is None else abs(dual - float(primal)),
        status=status,
        solver=solver,
        engine=engine,
        gram_size=m,
        n_constraints=int(ncons),
        seconds=seconds,
        gram=G_ro,
        grad_norm_sq=gns,
        consensus=cons,
        value_gap=gap,
        step_sq=step,
        settings=dict(
            n=n,
            K=K,
            tau=tau,
            delay=delay if isinstance(delay, str) else type(delay).__name__,
            L=L,
            step_size=gamma,
            delta=delta,
            zeta2=zeta2,
            G2sq=G2sq,
            measure=measure,
            fstar=fstar,
            schedule=schedule.name,
        ),
        symmetry=None if group is None else group.name,
        block_sizes=tuple(int(r) for r in sides),
        bounds=bounds,
        check=check,
        _model=(md, rec),
    )
