"""The report of :func:`~sgpverify.assumptions.check_mixing`: what it measured, and its table.

:class:`MixingReport` holds every measured quantity (nothing is assumed);
:func:`format_report` prints it as a readable two-column table.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..serialize import jsonable


@dataclasses.dataclass(frozen=True)
class MixingReport:
    """What :func:`check_mixing` measured (every value is measured, not assumed).

    Attributes
    ----------
    topology : str
        Name of the schedule.
    n, tau, rows, horizon : int
        Real nodes, maximum delay, rows of the (augmented) matrices
        ``n * (tau + 1)``, and the number of steps examined.
    delay : str or None
        Delay model (None when tau = 0).
    column_stochastic : bool
        Every column of every ``P^(k)`` sums to 1 within ``atol``.
    column_sum_error : float
        Largest ``|1 - column sum|`` seen.
    atol : float
        Tolerance used for the column sums.
    nonnegative : bool
        No negative entry.
    positive_self_weights : bool
        Every real node keeps a positive share of its own mass at every step.
    min_self_weight : float
        Smallest real-node self weight ``P^(k)[i, i]``.
    min_positive_entry : float
        Smallest positive entry of any ``P^(k)``.
    doubly_stochastic : bool
        Every ``P^(k)`` is also row-stochastic (push-sum weights then stay 1).
    B : int or None
        Smallest window length such that every window ``[lB, (l+1)B)`` inside
        the horizon has a strongly connected union graph; None if none.
    diameter : int or None
        Largest diameter of those window unions (exact up to 2048 rows or for
        circulant schedules; above, an upper bound, see ``diameter_exact``).
    diameter_exact : bool
        Whether ``diameter`` is exact or an upper bound.
    run_steps, run_B, run_window_disconnected : int, int, (int, int) or None
        With ``check_mixing(..., run_steps=K)``: the steps of the longest run;
        the smallest window length B (at least the horizon's, at most the
        horizon) for which every window ``[lB, (l+1)B)`` of the real, undelayed
        schedule inside ``[0, K)`` has a strongly connected union (None if none);
        and, when there is none, the first failing window at the horizon's B.
        None without ``run_steps``.
    q, C : float or None
        The validated envelope ``max_ij |P^(s+t:s) - phi 1^T| <= C q^t``.
        CHANGED MEANING (see CHANGELOG.md): q is no longer fitted. ``q >= q_exact`` for
        periodic schedules, else ``q >= `` the upper end of the Lyapunov
        interval (an estimate, see ``q_source``); among such q the one with the
        smallest ``C / (1 - q)`` is taken, and C is the smallest constant for
        which ``C q^t`` bounds the deviation at every t of ``envelope_horizon``
        (points below the round-off floor are not judged). The old fitted
        pair is ``C_fit``, ``q_fit``.
    q_source : str or None
        ``"exact"`` (q >= q_exact) or ``"lyapunov-upper"`` (q >= upper end of
        ``q_lyapunov_interval``: an estimate, not a certificate).
    q_fit, C_fit : float
        The former fitted pair: q from a log-linear upper-envelope fit of the
        second half of the deviations clear of round-off within ``horizon``
        (clipped to [0, 1]), C the tightest constant within ``horizon``.
    q_fit_window : list of int or None
        The range ``[t0, t1]`` of product lengths used to fit ``q_fit``.
    q_exact : float or None
        Periodic schedules (with or without fixed delays): spectral radius of
        the period product on the disagreement subspace, to the power
        1/period (:func:`exact_rate`). None for aperiodic schedules.
    q_exact_method : str or None
        How ``q_exact`` was computed (circulant-fft, dense or arpack), or
        closed-classes where it is 1 exactly (two classes that never mix).
    q_lyapunov, q_lyapunov_interval : float, list of float
        Top Lyapunov exponent of the products on the disagreement subspace as
        a per-step rate, and its 95% interval from independent segments
        (:func:`lyapunov_rate`, ``lyapunov_steps`` steps).
    envelope_horizon : int
        Product lengths measured for the envelope: the deviation is followed
        past ``horizon`` until it reaches the round-off floor (or a cap).
    envelope_reaches_floor : bool
        The deviation of every start reached the round-off floor.
    envelope_horizon_over_fit : float or None
        ``envelope_horizon / (t1 + 1)``, t1 the end of the fit window.
    envelope_horizon_ok : bool
        ``envelope_reaches_floor`` or ``envelope_horizon_over_fit >= 10``.
    envelope_worst_ratio : float
        ``max_t dev[t] / (C q^t)`` over the envelope horizon (<= 1 + round-off).
    fit_envelope_worst_ratio : float
        The same for ``(C_fit, q_fit)``: > 1 shows the fit failing beyond its
        window (where the envelope horizon is long enough to see it).
    q_fit_below_true : bool
        ``q_fit < q_exact`` (periodic) or ``q_fit <`` the lower end of the
        Lyapunov interval: the fitted envelope must fail for large t, even
        where that happens below round-off and no measurement sees it.
    one_over_one_minus_q, one_over_one_minus_q_fit : float
        ``1 / (1 - q)`` for the envelope and the fit (inf when q >= 1).
    threshold_log10, threshold_fit_log10, threshold_theory_log10 : float or None
        log10 of the known part of Theorem 1's threshold
        (:func:`theorem1_threshold`) at ``L = 1`` (it scales as ``L^4``) from
        the envelope, the fitted pair and the Nedic-Olshevsky constants.
    contraction_starts, contraction_columns : int
        Number of start steps s and of columns of the products tracked.
    q_theory, C_theory, delta_theory : float or None
        Nedic-Olshevsky constants for this n (rows) and B: in general
        ``q = (1 - N^(-N B))^(1/B)``, ``delta = N^(-N B)``; for doubly stochastic
        schedules ``q = min((1 - 1/(4 N^3))^(1/B), max_k sigma_2(P^(k)))``,
        ``delta = 1``; ``C = 4``.
    q_theory_log10_gap : float or None
        ``log10(1 - q_theory)``, exact where ``q_theory`` rounds to 1.0.
    q_true_log10_gap : float or None
        ``log10(1 - q_exact)`` (else of ``q_lyapunov``), exact in log space.
    q_theory_valid : bool or None
        ``log10(1 - q_theory) <= log10(1 - q_true)``: the theory's q is at least
        the true rate (compared in log space, so exact when q_theory rounds
        to 1). None when q_theory is undefined.
    nedic_olshevsky_outside : list of str
        Hypotheses of the Nedic-Olshevsky lemma that the (augmented) matrices
        break (:func:`nedic_olshevsky_hypotheses`); with tau > 0 the buffer
        rows have a zero diagonal, so ``q_theory`` etc. are outside the lemma.
    weight_min : float
        Smallest push-sum weight of a real node over the horizon, from w = 1.
    weight_floor_ok : bool or None
        ``weight_min >= delta_theory`` (up to round-off).
    period : int or None
        Period of the schedule (None if random or aperiodic).
    period_product_error : float or None
        ``max_ij |Pi - phi 1^T|`` for the product Pi over one period,
        ``phi`` the mean column of Pi.
    period_product_lambda2 : float or None
        Second largest eigenvalue modulus of Pi (computed when rows <= 1024).
    violations : list of str
        Each broken assumption, with the measured value.
    """

    topology: str
    n: int
    tau: int
    rows: int
    horizon: int
    delay: str | None
    column_stochastic: bool
    column_sum_error: float
    atol: float
    nonnegative: bool
    positive_self_weights: bool
    min_self_weight: float
    min_positive_entry: float
    doubly_stochastic: bool
    B: int | None
    diameter: int | None
    diameter_exact: bool
    q: float | None
    C: float | None
    q_source: str | None
    q_fit: float | None
    C_fit: float | None
    q_fit_window: list | None
    q_exact: float | None
    q_exact_method: str | None
    q_lyapunov: float
    q_lyapunov_interval: list
    envelope_horizon: int
    envelope_reaches_floor: bool
    envelope_horizon_over_fit: float | None
    envelope_horizon_ok: bool
    envelope_worst_ratio: float
    fit_envelope_worst_ratio: float
    q_fit_below_true: bool
    one_over_one_minus_q: float
    one_over_one_minus_q_fit: float
    threshold_log10: float | None
    threshold_fit_log10: float | None
    threshold_theory_log10: float | None
    contraction_starts: int
    contraction_columns: int
    q_theory: float | None
    C_theory: float | None
    delta_theory: float | None
    q_theory_log10_gap: float | None
    q_true_log10_gap: float | None
    q_theory_valid: bool | None
    nedic_olshevsky_outside: list
    weight_min: float
    weight_floor_ok: bool | None
    period: int | None
    period_product_error: float | None
    period_product_lambda2: float | None
    violations: tuple = ()
    run_steps: int | None = None
    run_B: int | None = None
    run_window_disconnected: tuple | None = None

    @property
    def passed(self) -> bool:
        """True when no assumption is violated."""
        return not self.violations

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = jsonable(v)
        out["passed"] = self.passed
        return out

    def __str__(self) -> str:
        return format_report(self)


def _fmt(v):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return str(v)


def format_report(r: MixingReport) -> str:
    """A readable two-column table of a MixingReport."""
    rows = [
        ("topology", r.topology),
        ("n (rows)", f"{r.n} ({r.rows})"),
        ("tau, delay", f"{r.tau}, {r.delay or '-'}"),
        ("horizon", r.horizon),
        (
            "column_stochastic",
            f"{_fmt(r.column_stochastic)} (max |1 - sum| = {r.column_sum_error:.1e}, atol = {r.atol:.1e})",
        ),
        ("nonnegative", r.nonnegative),
        ("positive_self_weights", f"{_fmt(r.positive_self_weights)} (min {r.min_self_weight:.6g})"),
        ("min_positive_entry", r.min_positive_entry),
        ("doubly_stochastic", r.doubly_stochastic),
        ("B", r.B),
        ("diameter", r.diameter if r.diameter_exact or r.diameter is None else f"<= {r.diameter} (upper bound)"),
    ]
    if r.run_steps is not None:
        w = r.run_window_disconnected
        rows.append(
            (
                "connected over the run",
                f"yes: every window of B = {r.run_B} steps in the {r.run_steps} steps of the longest run"
                if w is None and r.run_B is not None
                else (
                    f"NO: no B <= horizon; steps [{w[0]}, {w[1]}) (B = {w[1] - w[0]}) are not"
                    if w is not None
                    else "no B over the horizon"
                ),
            )
        )
    rows += [
        ("q_exact", r.q_exact if r.q_exact is None else f"{r.q_exact:.6g} ({r.q_exact_method})"),
        ("q_lyapunov", f"{r.q_lyapunov:.6g} [{r.q_lyapunov_interval[0]:.6g}, {r.q_lyapunov_interval[1]:.6g}]"),
        (
            "q (envelope)",
            f"{_fmt(r.q)} (q >= {'q_exact' if r.q_source == 'exact' else 'Lyapunov upper end: an estimate'})",
        ),
        ("C (envelope)", f"{_fmt(r.C)} (worst dev/(C q^t) = {r.envelope_worst_ratio:.6g})"),
        ("products tracked", f"{r.contraction_columns} of {r.rows} columns from {r.contraction_starts} starts"),
        (
            "envelope horizon",
            f"{r.envelope_horizon} ({'reaches round-off floor' if r.envelope_reaches_floor else 'cap'}"
            f"{'' if r.envelope_horizon_over_fit is None else f', {r.envelope_horizon_over_fit:.3g} x fit window'})"
            f"{'' if r.envelope_horizon_ok else ' TOO SHORT'}",
        ),
        (
            "q_fit, C_fit",
            f"{_fmt(r.q_fit)}, {_fmt(r.C_fit)} (window {_fmt(r.q_fit_window)}, "
            f"worst dev/(C q^t) = {r.fit_envelope_worst_ratio:.6g}"
            f"{'; BELOW the true rate: fails for large t' if r.q_fit_below_true else ''})",
        ),
        ("1/(1-q): envelope, fit", f"{_fmt(r.one_over_one_minus_q)}, {_fmt(r.one_over_one_minus_q_fit)}"),
        (
            "log10 threshold (L=1)",
            f"envelope {_fmt(r.threshold_log10)}, fit {_fmt(r.threshold_fit_log10)}, "
            f"theory {_fmt(r.threshold_theory_log10)}",
        ),
        ("q_theory", r.q_theory),
        ("log10(1 - q_theory)", r.q_theory_log10_gap),
        ("log10(1 - q_true)", r.q_true_log10_gap),
        ("q_theory >= q_true", r.q_theory_valid),
        (
            "Nedic-Olshevsky lemma",
            "hypotheses hold" if not r.nedic_olshevsky_outside else "OUTSIDE: " + "; ".join(r.nedic_olshevsky_outside),
        ),
        ("C_theory", r.C_theory),
        ("delta_theory", r.delta_theory),
        ("weight_min", f"{r.weight_min:.6g} (>= delta_theory: {_fmt(r.weight_floor_ok)})"),
        ("period", r.period),
        ("period_product_error", r.period_product_error),
        ("period_product_lambda2", r.period_product_lambda2),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v if isinstance(v, str) else _fmt(v)}" for k, v in rows]
    if r.violations:
        lines.append("violations:")
        lines += [f"  - {v}" for v in r.violations]
    else:
        lines.append("all mixing assumptions hold over the horizon")
    return "\n".join(lines)
