"""Figures of the verification suite, in one style (matplotlib, Agg backend).

Every function takes the raw results of :mod:`sgpverify.suite` experiments and
writes one PNG: measured curves with their Monte-Carlo spread and the
predicted bound or rate drawn over them.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import ModuleType

__all__ = ["render_all", "render", "pyplot", "FIGURES", "NEEDS"]


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend, with the figures' house style applied."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "figure.figsize": (6.4, 4.2),
            "figure.dpi": 110,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "font.size": 10,
            "legend.frameon": False,
        }
    )
    return plt


def _mean_band(values):
    v = np.asarray(values, dtype=float)
    m = v.mean(axis=-1)
    se = v.std(axis=-1, ddof=1) / math.sqrt(v.shape[-1]) if v.shape[-1] > 1 else np.zeros_like(m)
    return m, 1.96 * se


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return str(path)


def _rate_panels(data, key, predicted, path, title, ylabel, bound_fns=()):
    """Left: the average against K per schedule (95% CI) with bounds; right: the local
    slopes against K^(-1/2) with the extrapolation to K -> oo and the verdict band."""
    from . import rates
    from .suite import RATE_CORRECTION, RATE_DELTA, RATE_OMEGA

    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, (label, sch) in enumerate(data["rates"]["schedules"].items()):
        runs = sch["runs"]
        K = np.array([r["K"] for r in runs], float)
        Y = np.array([r[key] for r in runs])
        m, ci = _mean_band(Y)
        short = label.split("(")[0]
        ax.errorbar(K, m, yerr=ci, fmt="o-", color=f"C{i}", capsize=3, label=f"{short} (95% CI)")
        for name, fn, style in bound_fns:
            ax.plot(
                K, [fn(r) for r in runs], style, color=f"C{i}", lw=1, alpha=0.8, label=f"{name}" if i == 0 else None
            )
        t = rates.test_exponent(
            K, Y.T, predicted=predicted, delta=RATE_DELTA, omega=RATE_OMEGA, correction=RATE_CORRECTION
        )
        u = np.asarray(t.x_mid) ** -RATE_OMEGA
        ax2.errorbar(
            u,
            t.local_slopes,
            yerr=1.96 * np.asarray(t.local_slopes_se),
            fmt="o",
            color=f"C{i}",
            capsize=3,
            label=f"{short}: local slopes",
        )
        uu = np.linspace(0, u.max() * 1.05, 50)
        ax2.plot(
            uu,
            t.exponent + t.correction * uu,
            "-",
            color=f"C{i}",
            lw=1,
            label=f"extrapolated {t.exponent:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]: {t.verdict}",
        )
        ax2.errorbar(
            [0],
            [t.exponent],
            yerr=[[t.exponent - t.ci_low], [t.ci_high - t.exponent]],
            fmt="s",
            color=f"C{i}",
            capsize=4,
        )
    ax.plot(K, m[0] * (K / K[0]) ** predicted, color="gray", lw=0.8, label=f"slope {predicted:g} (predicted)")
    ax.set(xscale="log", yscale="log", xlabel="iterations K  ($\\gamma = \\sqrt{n/K}$)", ylabel=ylabel, title=title)
    ax.set_xticks(K, [str(int(k)) for k in K])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.legend(fontsize=7, loc="lower left")
    ax2.axhspan(
        predicted - RATE_DELTA,
        predicted + RATE_DELTA,
        color="gray",
        alpha=0.15,
        label=f"band {predicted:g} +- {RATE_DELTA:g}",
    )
    ax2.set(
        xlabel="$K_{mid}^{-1/2}$ (0 = the limit K -> oo)",
        ylabel="local slope over a doubling of K",
        title="Asymptotic exponent (verdict)",
    )
    ax2.set_xlim(left=-0.002)
    ax2.legend(fontsize=7)
    return _save(fig, path)


def stationarity_vs_K(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    from . import theory

    const = data["rates"]["constants"]
    n = data["rates"]["n"]
    fstar = const.get("f_star")
    base = fstar if fstar is not None else const["f_lower"]

    def published(r):
        return theory.evaluate(
            theory.PUBLISHED_BOUND,
            Delta=float(np.mean(r["f0"])) - base,
            L=const["L"],
            sigma2=const["sigma2"],
            n=n,
            K=r["K"],
        )

    def descent(r):
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
        (("published Theorem 1 bound (f*)", published, "--"), ("descent inequality (a), measured terms", descent, ":")),
    )


def consensus_vs_K(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    return _rate_panels(data, "consensus", -1.0, path, "Consensus vs K", "$(1/K)\\sum_k \\Xi^k$")


def speedup_vs_n(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    plt = pyplot()
    sp_ = data["speedup"]
    fig, ax = plt.subplots()
    for i, (label, sch) in enumerate(sp_["schedules"].items()):
        for j, K in enumerate(sp_["Ks"]):
            runs = [r for r in sch["runs"] if r["K"] == K]
            n = np.array([r["n"] for r in runs], float)
            m, ci = _mean_band([r["stationarity"] for r in runs])
            ax.errorbar(
                n,
                m,
                yerr=ci,
                fmt="o-" if i == 0 else "s--",
                color=f"C{j}",
                capsize=3,
                alpha=0.8,
                label=f"{label.split('(')[0]} K={K}",
            )
    ax.plot(n, m[0] * (n / n[0]) ** -0.5, color="gray", lw=0.8, label="slope -1/2 (linear speedup)")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="nodes n",
        ylabel="stationarity average",
        title="Linear speedup ($\\gamma = \\sqrt{n/K}$)",
    )
    ax.legend(fontsize=7)
    return _save(fig, path)


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
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set(
        xlabel="maximum delay tau (random delays)",
        ylabel="stationarity / (tau = 0)",
        title="Delays: leading term ratio",
    )
    ax2.set(yscale="log", xlabel="maximum delay tau", ylabel="consensus average", title="Delays: consensus")
    ax.legend(fontsize=8)
    ax2.legend(fontsize=8)
    return _save(fig, path)


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
        ax.plot(Ks, st, "o-", label=label)
        ax2.plot(Ks, cs, "o-", label=f"{label} (S2 {sch.get('S2') or float('nan'):.3g})")
    ax.axhline(1.0, color="gray", lw=0.8)
    for a in (ax, ax2):
        a.set_xscale("log")
        a.set_xticks(Ks, [str(K) for K in Ks])
        a.minorticks_off()
    ax.set(xlabel="K", ylabel="stationarity / exponential", title="Topology: leading term ratio")
    ax2.set(yscale="log", xlabel="K", ylabel="consensus / exponential", title="Topology and peers: consensus ratio")
    ax.legend(fontsize=8)
    ax2.legend(fontsize=7)
    return _save(fig, path)


def iteration_complexity(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """Iterations to reach each stationarity level against n (log-log interpolation per n)."""
    from . import rates

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
    ax.legend(fontsize=7)
    return _save(fig, path)


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
            ax.text(x[i] + 0.2, -40, f"{g:.0f}", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    ax.set(ylabel="log10 of the spectral-type gap", title=f"Contraction per step, n = {fam[0]['n']}")
    ax.legend(fontsize=8)
    return _save(fig, path)


def pushsum_weights(data: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    plt = pyplot()
    w = data["weights"]
    fig, ax = plt.subplots()
    ax.plot(w["iterations"], w["weight_min"], label="min_i w_i")
    ax.plot(w["iterations"], w["weight_max"], label="max_i w_i")
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set(
        yscale="log",
        xlabel="iteration k",
        ylabel="push-sum weight",
        title="Push-sum weights, random-peer (column-stochastic)",
    )
    ax.legend(fontsize=8)
    return _save(fig, path)


def mixing_heatmaps(path: str | os.PathLike[str], n: int = 12) -> str:
    """P^(k) of the exponential graph and products over one period (exact iff n is a power of 2)."""
    from . import graphs, mixing

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
            ax.text(x[i] + 0.2, floor + 0.1, f"{g:.0f}", ha="center", va="bottom", fontsize=7, rotation=90)
    for i, g in enumerate(exact):
        if np.isfinite(g) and g >= -1e-12 and rows[i]["q_exact"] is not None and rows[i]["q_exact"] < 1e-3:
            ax.text(x[i] - 0.1, 0.05, "exact\naverage", ha="center", va="bottom", fontsize=6)
    ax.set_xticks(x, [r["family"] for r in rows], rotation=30, ha="right", fontsize=8)
    ax.set_ylim(floor - 0.2, 0.6)
    ax.set(
        ylabel="$\\log_{10}(1 - q)$  (lower = slower)",
        title=f"Per-step contraction rates, n = {rows[0]['n']} (theory clipped at {floor:g})",
    )
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, path)


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
)
FIGURES = tuple(name for name, _, _ in _FIGURES)
#: Which experiments each figure needs.
NEEDS = {name: needs for name, _, needs in _FIGURES}
_DRAW = {name: fn for name, fn, _ in _FIGURES}


def render(name: str, data: dict, path: str | os.PathLike) -> str:
    """Write figure ``name`` (one of :data:`FIGURES`) from experiment ``data`` to ``path``."""
    if name not in _DRAW:
        raise ValueError(f"figure must be one of {', '.join(FIGURES)}, got {name!r}")
    return _DRAW[name](data, path)


def render_all(data: dict, outdir: str | os.PathLike) -> dict[str, str]:
    """Write every figure whose experiments are in ``data`` into ``outdir``; return {name: path}."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    return {name: render(name, data, out / f"{name}.png") for name in FIGURES if all(k in data for k in NEEDS[name])}
