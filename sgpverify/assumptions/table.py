"""The rates and constants of several schedules side by side: the table of docs/constants.md.

:func:`constants_table` runs :func:`~sgpverify.assumptions.check_mixing` on
each of :data:`CONSTANTS_FAMILIES` and :func:`format_constants_table` prints
the rows as markdown; ``python -m sgpverify.assumptions`` (:func:`main`)
prints the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .check import check_mixing
from .rates import log10_gap

#: Schedules of the constants table: (label, topology name, by_name keywords, tau).
CONSTANTS_FAMILIES: tuple[tuple[str, str, dict[str, Any], int], ...] = (
    ("exponential", "exponential", {}, 0),
    ("exponential tau=1", "exponential", {}, 1),
    ("exponential tau=2", "exponential", {}, 2),
    ("exponential-bidir", "exponential-bidir", {}, 0),
    ("ring-bidir", "ring-bidir", {}, 0),
    ("torus", "torus", {}, 0),
    ("hypercube", "hypercube", {}, 0),
    ("random-peer", "random-peer", {}, 0),
    ("erdos-renyi p=0.3", "erdos-renyi", {"p": 0.3}, 0),
)


def constants_table(
    n: int = 16,
    horizon: int = 100,
    seed: int | None = 0,
    families: Sequence[tuple[str, str, dict[str, Any], int]] = CONSTANTS_FAMILIES,
    lyapunov_steps: int = 4000,
) -> list[dict[str, Any]]:
    """The rates and constants of several schedules side by side (fixed delays where tau > 0).

    One row per family: the exact rate (periodic only), the Lyapunov rate
    and interval, the validated envelope, the fitted pair and the
    Nedic-Olshevsky q, each also as ``log10(1 - q)``, the worst ratios of
    both envelopes over the envelope horizon and the log10 Theorem 1
    thresholds at ``L = 1``. This is the experiment ``"constants"`` of
    ``sgpverify run`` (``experiments/constants.toml``) and the table of
    ``docs/constants.md``.

    Examples
    --------
    >>> rows = constants_table(8, horizon=30, lyapunov_steps=200, families=CONSTANTS_FAMILIES[:2])
    >>> [r["family"] for r in rows], rows[0]["q_source"], rows[1]["q"] >= rows[1]["q_exact"]
    (['exponential', 'exponential tau=1'], 'exact', True)
    """
    from .. import graphs

    rows = []
    for label, name, kw, tau in families:
        topo = graphs.by_name(name, n, seed=seed, **kw)
        r = check_mixing(topo, tau=tau, horizon=horizon, seed=seed, lyapunov_steps=lyapunov_steps)
        ly = r.q_lyapunov_interval
        rows.append(
            {
                "family": label,
                "topology": r.topology,
                "n": r.n,
                "tau": r.tau,
                "period": r.period,
                "q_exact": r.q_exact,
                "q_lyapunov": r.q_lyapunov,
                "q_lyapunov_interval": list(ly),
                "q": r.q,
                "C": r.C,
                "q_source": r.q_source,
                "q_fit": r.q_fit,
                "C_fit": r.C_fit,
                "q_fit_window": r.q_fit_window,
                "q_theory": r.q_theory,
                "gap_exact": None if r.q_exact is None else r.q_true_log10_gap,
                "gap_lyapunov": log10_gap(r.q_lyapunov),
                "gap_lyapunov_interval": [log10_gap(ly[1]), log10_gap(ly[0])],
                "gap_envelope": log10_gap(r.q),
                "gap_fit": log10_gap(r.q_fit),
                "gap_theory": r.q_theory_log10_gap,
                "envelope_worst_ratio": r.envelope_worst_ratio,
                "fit_envelope_worst_ratio": r.fit_envelope_worst_ratio,
                "envelope_horizon": r.envelope_horizon,
                "envelope_horizon_ok": r.envelope_horizon_ok,
                "q_fit_below_true": r.q_fit_below_true,
                "one_over_one_minus_q": r.one_over_one_minus_q,
                "one_over_one_minus_q_fit": r.one_over_one_minus_q_fit,
                "threshold_log10": r.threshold_log10,
                "threshold_fit_log10": r.threshold_fit_log10,
                "threshold_theory_log10": r.threshold_theory_log10,
                "q_theory_valid": r.q_theory_valid,
                "weight_min": r.weight_min,
                "nedic_olshevsky_outside": r.nedic_olshevsky_outside,
            }
        )
    return rows


def format_constants_table(rows: Iterable[Mapping[str, Any]]) -> str:
    """Markdown table of :func:`constants_table` rows."""

    def f(v, spec=".4f"):
        return "-" if v is None else format(v, spec)

    out = [
        "| schedule | q_exact | q_lyapunov [95%] | envelope q, C | fit q, C (window) | fit worst ratio "
        "| 1/(1-q): env / fit | log10 threshold: env / fit / N-O | log10(1-q_theory) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lo, hi = r["q_lyapunov_interval"]
        w = r["q_fit_window"]
        out.append(
            f"| {r['family']} | {f(r['q_exact'])} | {r['q_lyapunov']:.4f} [{lo:.4f}, {hi:.4f}] "
            f"| {r['q']:.4f}, {r['C']:.3g} | {r['q_fit']:.4f}, {r['C_fit']:.3g} "
            f"({'-' if w is None else f'{w[0]}-{w[1]}'}) "
            f"| {r['fit_envelope_worst_ratio']:.3g} "
            f"| {r['one_over_one_minus_q']:.3f} / {r['one_over_one_minus_q_fit']:.3f} "
            f"| {f(r['threshold_log10'], '.2f')} / {f(r['threshold_fit_log10'], '.2f')} / "
            f"{f(r['threshold_theory_log10'], '.1f')} | {f(r['gap_theory'], '.1f')} |"
        )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sgpverify.assumptions``: print the constants table (markdown); returns the exit status."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m sgpverify.assumptions", description="Print the constants table of docs/constants.md (markdown)."
    )
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--horizon", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lyapunov-steps", type=int, default=4000)
    a = ap.parse_args(argv)
    print(format_constants_table(constants_table(a.nodes, a.horizon, a.seed, lyapunov_steps=a.lyapunov_steps)))
    return 0
