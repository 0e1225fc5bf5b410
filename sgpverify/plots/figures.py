"""Figures of the verification suite, in one style (matplotlib, Agg backend).

Every function takes the raw results of :mod:`sgpverify.suite` experiments and
writes one PNG: measured curves with their Monte-Carlo spread and the
predicted bound or rate drawn over them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .style import SMALL_SIZE, legend_below, mean_ci, pyplot, save, topology_style

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["render_all", "render", "FIGURES", "NEEDS", "USES"]


#: Xi^k, the consensus distance the figures plot, defined where it is drawn.
XI_DEFINITION = "$\\Xi^k = \\frac{1}{n}\\sum_i \\|z_i^k - \\bar x^k\\|^2$"


def _rate_panels(data, key, predicted, path, title, ylabel, bound_fns=(), max_key=None):
    """Left: the average against K per schedule (95% CI) with bounds; right: the local
    slopes against K^(-1/2) with the extrapolation to K -> oo and the verdict band.

    Each schedule has its topology's colour, marker and line style (hollow markers after the
    first, so that coinciding curves stay visible); each bound is drawn per schedule in the
    schedule's colour and labelled with both, so that the legend names every drawn line."""
    from .. import rates
    from ..suite import RATE_CORRECTION, RATE_DELTA, RATE_OMEGA

    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 5.2))
    for i, (label, sch) in enumerate(data["rates"]["schedules"].items()):
        runs = sch["runs"]
        st = topology_style(label)
        hollow = {"mfc": "none", "ms": 9, "mew": 1.5} if i else {}
        K = np.array([r["K"] for r in runs], float)
        Y = np.array([r[key] for r in runs])
        m, ci = mean_ci(Y)
        short = label.split("(")[0]
        ax.errorbar(K, m, yerr=ci, capsize=3, label=f"{short}: mean (95% CI)", **st, **hollow)
        if max_key is not None:
            ax.plot(
                K,
                [r[max_key] for r in runs],
                ls="none",
                marker=st["marker"],
                color=st["color"],
                alpha=0.6,
                mfc="none",
                ms=11,
                label=f"{short}: $\\max_k E\\,\\Xi^k$ (checked against the bound)",
            )
        for name, fn, style in bound_fns:
            yb = [fn(label, r) for r in runs]
            if np.all(np.isfinite(np.asarray(yb, float))):
                ax.plot(K, yb, style, color=st["color"], lw=1.2, alpha=0.85, label=f"{short}: {name}")
        t = rates.test_exponent(
            K, Y.T, predicted=predicted, delta=RATE_DELTA, omega=RATE_OMEGA, correction=RATE_CORRECTION
        )
        u = np.asarray(t.x_mid) ** -RATE_OMEGA
        ax2.errorbar(
            u,
            t.local_slopes,
            yerr=1.96 * np.asarray(t.local_slopes_se),
            ls="none",
            marker=st["marker"],
            color=st["color"],
            capsize=3,
            label=f"{short}: local slopes (95% CI)",
            **hollow,
        )
        uu = np.linspace(0, u.max() * 1.05, 50)
        ax2.plot(
            uu,
            t.exponent + t.correction * uu,
            st["linestyle"],
            color=st["color"],
            lw=1.2,
            label=f"{short}: extrapolated {t.exponent:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}], {t.verdict}",
        )
        ax2.errorbar(
            [0],
            [t.exponent],
            yerr=[[t.exponent - t.ci_low], [t.ci_high - t.exponent]],
            fmt="s",
            color=st["color"],
            capsize=4,
        )
    ax.plot(K, m[0] * (K / K[0]) ** predicted, color="gray", lw=0.8, label=f"slope {predicted:g} (predicted)")
    ax.set(xscale="log", yscale="log", xlabel="iterations K  ($\\gamma = \\sqrt{n/K}$)", ylabel=ylabel, title=title)
    ax.set_xticks(K, [str(int(k)) for k in K])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    legend_below(ax, ncol=1)
    ax2.axhspan(
        predicted - RATE_DELTA,
        predicted + RATE_DELTA,
        color="gray",
        alpha=0.15,
        label=f"band {predicted:g} $\\pm$ {RATE_DELTA:g}",
    )
    ax2.set(
        xlabel="$K_{mid}^{-1/2}$ (0 = the limit $K \\to \\infty$)",
        ylabel="local slope over a doubling of K",
        title="Asymptotic exponent (verdict)",
    )
    ax2.set_xlim(left=-0.002)
    legend_below(ax2, ncol=1)
    return save(fig, path)


def stationarity_vs_K(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """Stationarity average against K per schedule, with the published and measured-term bounds.

    Parameters
    ----------
    data : mapping
        Suite results with ``"rates"``.
    path : str or path-like
        The PNG to write.

    Returns
    -------
    str
        ``path``.
    """
    from .. import theory

    const = data["rates"]["constants"]
    n = data["rates"]["n"]
    fstar = const.get("f_star")
    base = fstar if fstar is not None else const["f_lower"]

    def published(label, r):
        return theory.evaluate(
            theory.PUBLISHED_BOUND,
            Delta=float(np.mean(r["f0"])) - base,
            L=const["L"],
            sigma2=const["sigma2"],
            n=n,
            K=r["K"],
        )

    def descent(label, r):
        return theory.evaluate(
            theory.DESCENT_RHS_MEASURABLE,
            f0=float(np.mean(r["f0"])),
            fK=float(np.mean(r["fK"])),
            gamma=r["gamma"],
            K=r["K"],
            L=const["L"],
            sigma2=const["sigma2"],
            n=n,
            Xi=float(np.mean(r["consensus"])),
        )

    return _rate_panels(
        data,
        "stationarity",
        -0.5,
        path,
        "Stationarity vs K",
        "$(1/K)\\sum_k \\|\\nabla f(\\bar x^k)\\|^2$",
        (
            ("published Theorem 1 bound (f*; for K past its threshold)", published, "--"),
            ("descent inequality (a), measured terms", descent, ":"),
        ),
    )


def consensus_bound(data: Mapping[str, Any], label: str, run: Mapping[str, Any]) -> float:
    """The consensus bound (b2) ``(gamma S2 G2 / delta)^2`` of one run, as the suite checks it.

    ``S2`` is the schedule's, measured by the mixing experiment; ``G2 = sqrt(G2sq)`` and
    ``delta`` (the smallest push-sum weight) are the run's. NaN where it cannot be evaluated
    (no mixing data for ``label``, the schedule disconnects within the run, or an input is not
    finite and positive).

    Parameters
    ----------
    data : mapping
        Suite results with ``"rates"`` and ``"mixing"``.
    label : str
        The schedule (a key of ``data["rates"]["schedules"]``).
    run : mapping
        One of its runs.

    Returns
    -------
    float

    Examples
    --------
    >>> data = {"mixing": {"schedules": {"s": {"S2": 2.0}}}}
    >>> consensus_bound(data, "s", {"gamma": 0.5, "G2sq": 4.0, "weight_min": 0.5})
    16.0
    """
    from ..suite.claims.bounds import consensus_bound_of

    bound = consensus_bound_of(dict(data), label, dict(run))
    return float("nan") if bound is None else bound


def consensus_vs_K(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """Consensus average against K per schedule, with the bound (b2) and the rate -1.

    Parameters
    ----------
    data : mapping
        Suite results with ``"rates"`` (and ``"mixing"`` for the bound).
    path : str or path-like
        The PNG to write.

    Returns
    -------
    str
        ``path``.
    """
    bounds = ()
    if "mixing" in data:
        bounds = (("bound (b2) $(\\gamma S_2 G_2/\\delta)^2$", lambda label, r: consensus_bound(data, label, r), "--"),)
    return _rate_panels(
        data,
        "consensus",
        -1.0,
        path,
        f"Consensus vs K,  {XI_DEFINITION}",
        "$(1/K)\\sum_k \\Xi^k$  (replica mean)",
        bounds,
        max_key="consensus_max" if bounds else None,
    )


def speedup_vs_n(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """Stationarity average against n per schedule and K, with the slope -1/2 of linear speedup.

    Parameters
    ----------
    data : mapping
        Suite results with ``"speedup"``.
    path : str or path-like
        The PNG to write.

    Returns
    -------
    str
        ``path``.
    """
    plt = pyplot()
    sp_ = data["speedup"]
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    for i, (label, sch) in enumerate(sp_["schedules"].items()):
        st = topology_style(label)
        hollow = {"mfc": "none", "ms": 9, "mew": 1.5} if i else {}
        for j, K in enumerate(sp_["Ks"]):
            runs = [r for r in sch["runs"] if r["K"] == K]
            n = np.array([r["n"] for r in runs], float)
            m, ci = mean_ci([r["stationarity"] for r in runs])
            ax.errorbar(
                n, m, yerr=ci, capsize=3, alpha=0.85, label=label.split("(")[0] if j == 0 else None, **st, **hollow
            )
            if i == 0:
                ax.annotate(
                    f"K={K}",
                    (n[-1], m[-1]),
                    xytext=(8, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=SMALL_SIZE,
                )
    ax.plot(n, m[0] * (n / n[0]) ** -0.5, color="gray", lw=0.8, label="slope -1/2 (linear speedup)")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="nodes n",
        ylabel="$(1/K)\\sum_k \\|\\nabla f(\\bar x^k)\\|^2$",
        title="Linear speedup ($\\gamma = \\sqrt{n/K}$, mean and 95% CI)",
    )
    ns = sorted({int(r["n"]) for sch in sp_["schedules"].values() for r in sch["runs"]})
    ax.set_xticks(ns, [str(v) for v in ns])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.set_xlim(ns[0] / 1.15, ns[-1] * 1.35)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save(fig, path)


def delays(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    plt = pyplot()
    runs = data["delays"]["runs"]
    Ks = sorted({r["K"] for r in runs})
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for K in Ks:
        rs = sorted((r for r in runs if r["K"] == K), key=lambda r: r["tau"])
        tau = [r["tau"] for r in rs]
        base = np.mean(rs[0]["stationarity"])
        ax.plot(tau, [np.mean(r["stationarity"]) / base for r in rs], "o-", label=f"K={K}")
        ax2.plot(tau, [np.mean(r["consensus"]) for r in rs], "o-", label=f"K={K}")
    theory_line = ax.axhline(1.0, color="gray", lw=1.0, ls="--", label="theory: 1 as $K \\to \\infty$")
    ax.set(
        xlabel="maximum delay $\\tau$ (random delays)",
        ylabel="stationarity / ($\\tau = 0$)",
        title="Delays: leading term ratio",
    )
    ax2.set(
        yscale="log",
        xlabel="maximum delay $\\tau$",
        ylabel="consensus average $(1/K)\\sum_k \\Xi^k$",
        title="Delays: consensus",
    )
    ax.legend(handles=[theory_line], loc="upper left")  # the K colours: the legend on the right
    ax2.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save(fig, path)


def topologies(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """Stationarity and consensus ratios to the exponential graph against K (topology and peers)."""
    plt = pyplot()
    tp = data["topologies"]
    ref = {r["K"]: r for r in tp["schedules"][tp["reference"]]["runs"]}
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for label, sch in tp["schedules"].items():
        if label == tp["reference"]:
            continue
        Ks = [r["K"] for r in sch["runs"]]
        st = [np.exp(np.mean(np.log(np.asarray(r["stationarity"]) / ref[r["K"]]["stationarity"]))) for r in sch["runs"]]
        cs = [np.exp(np.mean(np.log(np.asarray(r["consensus"]) / ref[r["K"]]["consensus"]))) for r in sch["runs"]]
        ax.plot(Ks, st, label=label, **topology_style(label))
        ax2.plot(Ks, cs, **topology_style(label), label=f"{label} (S2 {sch.get('S2') or float('nan'):.3g})")
    ax.axhline(1.0, color="gray", lw=0.8)
    for a in (ax, ax2):
        a.set_xscale("log")
        a.set_xticks(Ks, [str(K) for K in Ks])
        a.minorticks_off()
    ax.set(xlabel="K", ylabel="stationarity / exponential", title="Topology: leading term ratio")
    ax2.set(yscale="log", xlabel="K", ylabel="consensus / exponential", title="Topology and peers: consensus ratio")
    ax.legend()
    ax2.legend()
    return save(fig, path)


def iteration_complexity(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """Iterations to reach each stationarity level against n (log-log interpolation per n)."""
    from .. import rates

    plt = pyplot()
    cx = data["complexity"]
    ns, Ts = cx["ns"], cx["budgets"]
    mean = {(r["n"], r["budget"]): float(np.mean(np.log(r["stationarity"]))) for r in cx["runs"]}
    fig, ax = plt.subplots(figsize=(6, 4))
    for j, T in enumerate(Ts):
        lev = float(np.mean([mean[n, T] for n in ns]))
        ks = [
            np.exp(rates.iterations_to(np.log([T2 // n for T2 in Ts]), np.array([mean[n, T2] for T2 in Ts]), lev))
            for n in ns
        ]
        ax.plot(ns, ks, "o-", color=f"C{j}", label=f"eps = {np.exp(lev):.3g}")
        ax.plot(ns, ks[0] * (np.asarray(ns, float) / ns[0]) ** -1.0, color=f"C{j}", lw=0.6, ls=":")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="nodes n",
        ylabel="iterations K_n(eps)",
        title="Iterations to a stationarity level (dotted: slope -1)",
    )
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.minorticks_off()
    ax.legend()
    return save(fig, path)


def graph_families(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    plt = pyplot()
    fam = data["mixing"]["families"]
    names = [r["topology"].split("(")[0] for r in fam]
    q = np.array([r["q"] for r in fam])
    gap_meas = np.log10(np.maximum(1 - q, 1e-300))
    gap_th = np.array([r["q_theory_log10_gap"] if r["q_theory_log10_gap"] is not None else np.nan for r in fam])
    fig, ax = plt.subplots(figsize=(8, 4.2))
    x = np.arange(len(fam))
    ax.bar(x - 0.2, gap_meas, 0.4, label="measured: $\\log_{10}(1 - q)$")
    ax.bar(x + 0.2, np.maximum(gap_th, -40), 0.4, label="theory: $\\log_{10}(1 - q_{theory})$ (clipped at -40)")
    for i, g in enumerate(gap_th):
        if np.isfinite(g) and g < -40:
            ax.text(x[i] + 0.2, -40, f"{g:.0f}", ha="center", va="bottom", fontsize=SMALL_SIZE, rotation=90)
    ax.set_xticks(x, names, rotation=30, ha="right", fontsize=SMALL_SIZE + 1)
    ax.set(
        ylabel="$\\log_{10}(1 - q)$, q per step",
        title=f"Contraction per step, n = {fam[0]['n']}, measured over a horizon of {fam[0]['horizon']} steps",
    )
    ax.legend()
    return save(fig, path)


def pushsum_weights(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """Smallest and largest push-sum weight against k, with the measured weight floor.

    Parameters
    ----------
    data : mapping
        Suite results with ``"weights"``.
    path : str or path-like
        The PNG to write.

    Returns
    -------
    str
        ``path``.
    """
    plt = pyplot()
    w = data["weights"]
    floor = float(np.min(w["weight_min"]))
    fig, ax = plt.subplots()
    ax.plot(w["iterations"], w["weight_min"], color="C0", label="$\\min_i w_i^k$")
    ax.plot(w["iterations"], w["weight_max"], color="C1", label="$\\max_i w_i^k$")
    ax.axhline(1.0, color="gray", lw=0.8, label="1 (the average weight)")
    ax.axhline(
        floor, color="C3", ls="--", lw=1.2, label=f"weight floor $\\delta = \\min_k \\min_i w_i^k$ = {floor:.3g}"
    )
    ax.set(
        yscale="log",
        xlabel="iteration k",
        ylabel="push-sum weight $w_i^k$",
        title="Push-sum weights, random-peer (column-stochastic)",
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save(fig, path)


def mixing_heatmaps(path: str | os.PathLike[str], n: int = 12) -> str:
    """P^(k) of the exponential graph and products over one period (exact iff n is a power of 2)."""
    from .. import graphs, mixing

    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.4))
    t12 = graphs.exponential(n)
    P0 = mixing.push_matrix(t12, 0).toarray()
    Pi = np.eye(n)
    for k in range(t12.period):
        Pi = mixing.push_matrix(t12, k).toarray() @ Pi
    t16 = graphs.exponential(16)
    Pi16 = np.eye(16)
    for k in range(t16.period):
        Pi16 = mixing.push_matrix(t16, k).toarray() @ Pi16
    rp = graphs.random_peer(n, seed=0)
    R = mixing.push_matrix(rp, 0).toarray()
    for ax, M, title in (
        (axes[0], P0, f"$P^{{(0)}}$ exponential n={n}"),
        (axes[1], Pi, f"period product n={n}"),
        (axes[2], Pi16, "period product n=16 (= J/n)"),
        (axes[3], R, f"$P^{{(0)}}$ random-peer n={n}"),
    ):
        im = ax.imshow(M, cmap="viridis", vmin=0, vmax=max(0.5, M.max()))
        ax.set_title(title, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=axes, shrink=0.8)
    fig.savefig(path)
    plt.close(fig)
    return str(path)


def mixing_constants(data: Mapping[str, Any], path: str | os.PathLike[str], floor: float = -6.0) -> str:
    """log10(1 - q) per schedule: exact rate, Lyapunov estimate (95% interval), validated envelope,
    fitted envelope and the Nedic-Olshevsky q, on one axis (values below ``floor`` drawn at the
    floor with their value written)."""
    plt = pyplot()
    rows = data["constants"]["rows"]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(11, 4.6))

    def col(key):
        return np.array([np.nan if r[key] is None else r[key] for r in rows], float)

    exact, lyap, env, fit, th = (col(k) for k in ("gap_exact", "gap_lyapunov", "gap_envelope", "gap_fit", "gap_theory"))
    lo = np.array([r["gap_lyapunov_interval"][0] for r in rows], float)
    hi = np.array([r["gap_lyapunov_interval"][1] for r in rows], float)
    clip = lambda v: np.clip(v, floor, 0.0)  # noqa: E731
    ax.errorbar(
        x - 0.2,
        clip(lyap),
        yerr=[clip(lyap) - clip(lo), clip(hi) - clip(lyap)],
        fmt="o",
        ms=5,
        capsize=3,
        label="Lyapunov estimate (95% interval)",
    )
    ax.plot(x - 0.1, clip(exact), "s", ms=7, mfc="none", label="exact: period product")
    ax.plot(x, clip(env), "v", ms=6, label="validated envelope q")
    ax.plot(x + 0.1, clip(fit), "x", ms=7, label="fitted q (old)")
    ax.plot(x + 0.2, clip(th), "_", ms=14, mew=2, color="k", label="Nedic-Olshevsky q_theory")
    for i, g in enumerate(th):
        if np.isfinite(g) and g < floor:
            ax.text(x[i] + 0.2, floor + 0.1, f"{g:.0f}", ha="center", va="bottom", fontsize=SMALL_SIZE, rotation=90)
    for i, g in enumerate(exact):
        if np.isfinite(g) and g >= -1e-12 and rows[i]["q_exact"] is not None and rows[i]["q_exact"] < 1e-3:
            ax.text(x[i] - 0.1, 0.05, "exact\naverage", ha="center", va="bottom", fontsize=SMALL_SIZE - 1)
    ax.set_xticks(x, [r["family"] for r in rows], rotation=30, ha="right", fontsize=SMALL_SIZE + 1)
    ax.set_ylim(floor - 0.2, 0.6)
    ax.set(
        ylabel="$\\log_{10}(1 - q)$  (lower = slower)",
        title=f"Per-step contraction rates, n = {rows[0]['n']}, measured over a horizon of "
        f"{data['constants'].get('horizon', '?')} steps (theory clipped at {floor:g})",
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save(fig, path)


def tightness(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """Published bound, derived bound (c2), exact worst case and measured average against K, per
    schedule and tau (docs/tightness.md)."""
    plt = pyplot()
    d = data["worstcase"]
    entries = d.get("entries", [])
    groups = sorted({(e["label"], e["tau"]) for e in entries})
    fig, axes = plt.subplots(1, max(1, len(groups)), figsize=(5 * max(1, len(groups)), 4), squeeze=False)
    if not groups:
        axes[0, 0].text(0.5, 0.5, d.get("reason", "no worst case computed"), ha="center", wrap=True)
        axes[0, 0].set_axis_off()
        return save(fig, path)
    for ax, (label, tau) in zip(axes[0], groups):
        es = sorted((e for e in entries if (e["label"], e["tau"]) == (label, tau)), key=lambda e: e["K"])
        Ks = [e["K"] for e in es]
        for key, name, style in (
            ("published", "published (Theorem 1 form)", "s--"),
            ("derived", "derived (c2)", "o-"),
            ("worst_case", "exact worst case (PEP)", "D-"),
            ("measured", "measured (built-in problem)", "x:"),
        ):
            ys = [e.get(key) for e in es]
            if all(y is not None and y > 0 for y in ys):
                ax.plot(Ks, ys, style, label=name)
        # the bounds and the worst case set the range, extended down to a measured value above
        # 1e-12; a measured value below the range (round-off: the default problem's start x0 = 0 is
        # a stationary point of f) is said in the panel, not drawn at a made-up height
        tops = [e[k] for e in es for k in ("published", "derived", "worst_case") if e.get(k)]
        seen = [e["measured"] for e in es if e.get("measured") is not None and e["measured"] > 1e-12]
        if tops:
            ax.set_ylim(min([min(tops) / 1e2] + [m / 3 for m in seen]), max(tops) * 2)
            bottom = ax.get_ylim()[0]
            low = [e["K"] for e in es if e.get("measured") is not None and e["measured"] < bottom]
            if low:
                floor = min(e["measured"] for e in es if e["K"] in low)
                where = "every K" if len(low) == len(es) else "K = " + ", ".join(map(str, low))
                ax.text(
                    0.03,
                    0.45,
                    f"measured: below the axis at {where}\n(down to {floor:.1e}: round-off)",
                    transform=ax.transAxes,
                    fontsize=SMALL_SIZE,
                    color="C3",
                )
        ax.set(
            yscale="log",
            xlabel="K",
            ylabel="$(1/K)\\sum_k \\|\\nabla f(\\bar x^k)\\|^2$",
            title=f"{label}\n$\\tau$ = {tau}, n = {es[0]['n']}",
        )
    legend_below(axes[0, 0], ncol=2)
    return save(fig, path)


def _without_data(fn):
    """A figure that draws no experiment's data (``fn(path)``), as ``f(data, path)``."""

    def draw(data, path):
        return fn(path)

    return draw


#: Every figure, in report order: (name, ``f(data, path)``, the experiments whose data it draws).
#: Adding a figure: its function above and one row here.
_FIGURES = (
    ("stationarity_vs_K", stationarity_vs_K, ("rates",)),
    ("speedup_vs_n", speedup_vs_n, ("speedup",)),
    ("consensus_vs_K", consensus_vs_K, ("rates",)),
    ("delays", delays, ("delays",)),
    ("graph_families", graph_families, ("mixing",)),
    ("pushsum_weights", pushsum_weights, ("weights",)),
    ("mixing_heatmaps", _without_data(mixing_heatmaps), ()),
    ("mixing_constants", mixing_constants, ("constants",)),
    ("topologies", topologies, ("topologies",)),
    ("iteration_complexity", iteration_complexity, ("complexity",)),
    ("tightness", tightness, ("worstcase",)),
)
FIGURES = tuple(name for name, _, _ in _FIGURES)
#: Which experiments each figure needs.
NEEDS = {name: needs for name, _, needs in _FIGURES}
#: Experiments a figure draws more from when they are there: the consensus bound (b2) of
#: ``consensus_vs_K`` needs the schedules' S2, which the mixing experiment measures.
#: ``sgpverify run`` runs them beside the config's own experiment, on the same settings.
USES = {"consensus_vs_K": ("mixing",)}
_DRAW = {name: fn for name, fn, _ in _FIGURES}


def render(name: str, data: dict, path: str | os.PathLike) -> str:
    """Write figure ``name`` (one of :data:`FIGURES`) from experiment ``data`` to ``path``."""
    if name not in _DRAW:
        raise ValueError(f"figure must be one of {', '.join(FIGURES)}, got {name!r}")
    return _DRAW[name](data, path)


def usable(data: dict) -> dict:
    """``data`` without the experiments that have no data to draw: an experiment that diverged or
    does not apply to the setting holds ``{"error": ...}`` (its checks say why), so the figures that
    need it are left out and those that only use it (:data:`USES`) draw without it.

    Examples
    --------
    >>> sorted(usable({"rates": {"error": "diverged"}, "mixing": {"families": []}}))
    ['mixing']
    """
    return {k: v for k, v in data.items() if not (isinstance(v, dict) and "error" in v)}


def render_all(data: dict, outdir: str | os.PathLike) -> dict[str, str]:
    """Write every figure whose experiments have data in ``data`` (:func:`usable`) into ``outdir``;
    return {name: path}."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    data = usable(data)
    return {name: render(name, data, out / f"{name}.png") for name in FIGURES if all(k in data for k in NEEDS[name])}
