"""Symbolic bounds of Stochastic Gradient Push, lambdified for evaluation.

Two kinds of bound live here, and every expression says which it is:

* **published** -- the headline of Theorem 1 of Assran, Loizou, Ballas and
  Rabbat (ICML 2019), ``12 (f(xbar^0) - f_* + L sigma^2/2) / sqrt(n K)`` for
  ``gamma = sqrt(n/K)`` and ``K`` above a threshold that is only partly known
  (``PUBLISHED_THRESHOLD_KNOWN_PART`` is a *lower* estimate of it);
* **sgpverify** -- the toolkit's own explicit bound chain, derived step by step
  in ``docs/theory.md``: a descent inequality for ``xbar`` whose every term is
  measurable in simulation, a consensus bound from the product bound
  ``|P^(s+t:s)_ij - phi_i| <= C q^t`` measured by
  :func:`sgpverify.check_mixing`, and their combination for a general step and
  for ``gamma = sqrt(n/K)``.

The sympy expressions are the single source: numbers come from them through
:func:`evaluate` (``sympy.lambdify``, cached), rate exponents through
:func:`rate_exponent` (``sympy.limit``), and the LaTeX of ``docs/theory.md``
through :func:`latex` / :func:`write_theory_tables`. Regenerate the docs block
with ``python -m sgpverify.theory --write docs/theory.md`` (or print it with
``python -m sgpverify.theory``).

Examples
--------
>>> from sgpverify import theory as th
>>> th.rate_exponent(th.COMBINED_BOUND_SQRT, th.K)
-1/2
>>> th.rate_exponent(th.LEADING_TERM_SQRT, "n")   # linear speedup
-1/2
>>> round(th.evaluate(th.LEADING_TERM_SQRT, Delta=1.0, L=1.0, sigma2=2.0,
...                   n=4, K=100), 6)
0.2
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from numbers import Real
from typing import TYPE_CHECKING

import numpy as np
import sympy as sp

if TYPE_CHECKING:
    import os

    from numpy.typing import ArrayLike

__all__ = [
    # symbols
    "K",
    "n",
    "L",
    "sigma2",
    "Delta",
    "C",
    "q",
    "delta",
    "G",
    "S2",
    "G2",
    "gamma",
    "Xi",
    "f0",
    "fK",
    "SYMBOLS",
    # expressions
    "PUBLISHED_BOUND",
    "PUBLISHED_THRESHOLD_KNOWN_PART",
    "OPTIMIZATION_TERMS",
    "DESCENT_RHS_MEASURABLE",
    "DESCENT_RHS",
    "CONSENSUS_BOUND",
    "CONSENSUS_BOUND_L2",
    "CONSENSUS_BOUND_L2_SQRT",
    "COMBINED_BOUND_L2",
    "COMBINED_BOUND",
    "COMBINED_BOUND_SQRT",
    "CONSENSUS_BOUND_SQRT",
    "LEADING_TERM_SQRT",
    "CONSENSUS_TERM_SQRT",
    "SPEEDUP_CROSSOVER_K",
    "STEP_SIZE_MAX",
    "SQRT_STEP_K_MIN",
    "EXPRESSIONS",
    "CONDITIONS",
    "PUBLISHED",
    "DERIVED",
    # functions
    "rate_exponent",
    "evaluate",
    "latex",
    "write_theory_tables",
    "RATE_TABLE",
    "update_generated_block",
    "GENERATED_START",
    "GENERATED_END",
]

# --------------------------------------------------------------------------
# Symbols
# --------------------------------------------------------------------------

#: Number of iterations (the bounds average over k = 0..K-1).
K = sp.Symbol("K", positive=True)
#: Number of (real) nodes.
n = sp.Symbol("n", positive=True)
#: Smoothness constant: every f_i is L-smooth.
L = sp.Symbol("L", positive=True)
#: Variance bound: E||g_i - grad f_i(z_i)||^2 <= sigma2 (0 for exact gradients).
sigma2 = sp.Symbol("sigma2", nonnegative=True)
#: Initial gap f(xbar^0) - f_* (any upper bound on it, e.g. f(xbar^0) - f_lower).
Delta = sp.Symbol("Delta", nonnegative=True)
#: Constant of the product bound ``|P^(s+t:s)_ij - phi_i^(s+t)| <= C q^t``.
C = sp.Symbol("C", positive=True)
#: Rate of the product bound, 0 <= q < 1.
q = sp.Symbol("q", nonnegative=True)
#: Smallest push-sum weight of a real node, min_{i,k} w_i^k > 0.
delta = sp.Symbol("delta", positive=True)
#: Gradient-size bound: E[((1/n) sum_j ||g_j^s||)^2] <= G^2 for every s < K.
G = sp.Symbol("G", positive=True)
#: Sum over lags t >= 1 of the largest spectral norm of
#: M^(k,s) = [P^(k-1:s)]_{real} - (1/n) w^k 1^T with k - s = t (<= C_2 / (1 - q_2)).
S2 = sp.Symbol("S2", positive=True)
#: Step-size bound: max_s E (1/n) sum_j ||g_j^s||^2 <= G2^2 (measured along the run).
G2 = sp.Symbol("G2", positive=True)
#: Step size.
gamma = sp.Symbol("gamma", positive=True)
#: Average consensus error (1/K) sum_k E Xi^k, Xi^k = (1/n) sum_i ||xbar^k - z_i^k||^2.
Xi = sp.Symbol("Xi", nonnegative=True)
#: f(xbar^0), the objective at the (common) starting point.
f0 = sp.Symbol("f0", real=True)
#: E f(xbar^K), the expected objective at the average after K steps.
fK = sp.Symbol("fK", real=True)

#: name -> (symbol, meaning); every symbol the expressions may contain.
SYMBOLS = {
    "K": (K, "number of iterations; averages run over k = 0..K-1"),
    "n": (n, "number of (real) nodes"),
    "L": (L, "smoothness constant of every f_i"),
    "sigma2": (sigma2, "variance bound E||g_i - grad f_i(z_i)||^2 <= sigma2"),
    "Delta": (Delta, "initial gap f(xbar^0) - f_* (or any upper bound, e.g. f(xbar^0) - f_lower)"),
    "C": (C, "constant of the product bound |P^(s+t:s)_ij - phi_i^(s+t)| <= C q^t"),
    "q": (q, "rate of the product bound, 0 <= q < 1"),
    "delta": (delta, "smallest push-sum weight min_{i,k} w_i^k of a real node"),
    "G": (G, "gradient-size bound E[((1/n) sum_j ||g_j^s||)^2] <= G^2 for all s < K (an extra assumption)"),
    "S2": (S2, "sum over lags of the largest spectral norm of P^(k-1:s) - w^k 1^T / n (real rows and columns)"),
    "G2": (G2, "root of max_s E (1/n) sum_j ||g_j^s||^2, the mean squared step direction along the run"),
    "gamma": (gamma, "step size"),
    "Xi": (Xi, "average consensus error (1/K) sum_k E (1/n) sum_i ||xbar^k - z_i^k||^2"),
    "f0": (f0, "f(xbar^0), objective at the common starting point"),
    "fK": (fK, "E f(xbar^K), expected objective at the average after K steps"),
}

_BY_SYMBOL = {sym: name for name, (sym, _) in SYMBOLS.items()}

_LATEX_NAMES = {
    sigma2: r"\sigma^{2}",
    Xi: r"\overline{\Xi}",
    f0: r"f(\bar{x}^{0})",
    S2: r"S_{2}",
    G2: r"G_{2}",
    fK: r"\mathbb{E} f(\bar{x}^{K})",
}

PUBLISHED = "published (unsure threshold)"
DERIVED = "sgpverify (derived in docs/theory.md)"

# --------------------------------------------------------------------------
# Expressions
# --------------------------------------------------------------------------

_sqrt_step = {gamma: sp.sqrt(n / K)}

#: Theorem 1 headline (published form, [likely]): bound on
#: (1/K) sum_k E||grad f(xbar^k)||^2 for gamma = sqrt(n/K), K above a threshold.
PUBLISHED_BOUND = 12 * (Delta + L * sigma2 / 2) / sp.sqrt(n * K)

#: The known part of the threshold of Theorem 1: a LOWER estimate of the true,
#: uncertain threshold max{n L^4 C^4 60^2/(1-q)^4, ..., n} (terms missing).
PUBLISHED_THRESHOLD_KNOWN_PART = sp.Max(n * L**4 * C**4 * 60**2 / (1 - q) ** 4, n)

#: The two optimisation terms of the descent inequality (gap and noise).
OPTIMIZATION_TERMS = 2 * Delta / (gamma * K) + L * gamma * sigma2 / n

#: Descent inequality (a), valid for gamma <= 1/L: bound on
#: (1/K) sum_k E||grad f(xbar^k)||^2 with the initial gap Delta.
DESCENT_RHS = OPTIMIZATION_TERMS + L**2 * Xi

#: Descent inequality (a), measurable form: Delta replaced by f(xbar^0) - E f(xbar^K);
#: every term is observed in simulation.
DESCENT_RHS_MEASURABLE = DESCENT_RHS.subs(Delta, f0 - fK)

#: Consensus bound (b): E Xi^k <= this for every k (hence also Xi <= this),
#: for a general step gamma; assumes the gradient-size bound G.
CONSENSUS_BOUND = (gamma * C * n * G / (delta * (1 - q))) ** 2

#: Consensus bound (b2), spectral-norm form: E Xi^k <= this for every k; no
#: factor n and no extra assumption (G2 is measured). Proof in docs/theory.md.
CONSENSUS_BOUND_L2 = (gamma * S2 * G2 / delta) ** 2

#: Combination (c2): DESCENT_RHS with Xi replaced by CONSENSUS_BOUND_L2, gamma <= 1/L.
COMBINED_BOUND_L2 = DESCENT_RHS.subs(Xi, CONSENSUS_BOUND_L2)

#: CONSENSUS_BOUND_L2 for gamma = sqrt(n/K): O(n/K).
CONSENSUS_BOUND_L2_SQRT = CONSENSUS_BOUND_L2.subs(_sqrt_step)

#: Combination (c): DESCENT_RHS with Xi replaced by CONSENSUS_BOUND, gamma <= 1/L.
COMBINED_BOUND = DESCENT_RHS.subs(Xi, CONSENSUS_BOUND)

#: COMBINED_BOUND for gamma = sqrt(n/K) (needs K >= n L^2).
COMBINED_BOUND_SQRT = COMBINED_BOUND.subs(_sqrt_step)

#: CONSENSUS_BOUND for gamma = sqrt(n/K): O(1/K).
CONSENSUS_BOUND_SQRT = CONSENSUS_BOUND.subs(_sqrt_step)

#: Leading term of COMBINED_BOUND_SQRT: (2 Delta + L sigma2)/sqrt(n K).
LEADING_TERM_SQRT = sp.factor(OPTIMIZATION_TERMS.subs(_sqrt_step))

#: Consensus term of COMBINED_BOUND_SQRT: L^2 CONSENSUS_BOUND_SQRT.
CONSENSUS_TERM_SQRT = L**2 * CONSENSUS_BOUND_SQRT


def _crossover():
    # check=False skips sympy's slow check of each root (seconds at import);
    # it then also returns K = 0, outside the domain K > 0: drop it. The
    # tests substitute the solution back into the equation.
    eq = sp.Eq(LEADING_TERM_SQRT, CONSENSUS_TERM_SQRT)
    sols = [s for s in sp.solve(eq, K, check=False, simplify=False) if s != 0]
    if len(sols) != 1:  # pragma: no cover - guards a sympy behaviour change
        raise RuntimeError(f"expected one crossover solution for K, got {sols}")
    # sympy writes (q - 1)^4; show the equal (1 - q)^4 of the derivation.
    return sp.factor(sols[0]).xreplace({q - 1: 1 - q})


#: K* where the leading term (2 Delta + L sigma2)/sqrt(nK) equals the consensus
#: term L^2 n^3 C^2 G^2/(K delta^2 (1-q)^2): the consensus term is smaller
#: exactly for K > K* (~ n^7), where linear speedup shows.
SPEEDUP_CROSSOVER_K = _crossover()

#: Largest step the descent inequality allows: gamma <= 1/L.
STEP_SIZE_MAX = 1 / L

#: Smallest K for which gamma = sqrt(n/K) <= 1/L: K >= n L^2.
SQRT_STEP_K_MIN = n * L**2

#: name -> (expression, one-line description, label).
EXPRESSIONS = {
    "published_bound": (
        PUBLISHED_BOUND,
        "Theorem 1 headline: (1/K) sum E||grad f(xbar^k)||^2 <= 12 (Delta + L sigma2/2)/sqrt(nK), gamma = sqrt(n/K)",
        PUBLISHED,
    ),
    "published_threshold_known_part": (
        PUBLISHED_THRESHOLD_KNOWN_PART,
        "known part of the K threshold of Theorem 1: a LOWER estimate of the true (uncertain) threshold",
        PUBLISHED,
    ),
    "optimization_terms": (
        OPTIMIZATION_TERMS,
        "gap and noise terms of the descent inequality, 2 Delta/(gamma K) + L gamma sigma2/n",
        DERIVED,
    ),
    "descent_rhs_measurable": (
        DESCENT_RHS_MEASURABLE,
        "descent inequality, measurable form: bound on (1/K) sum E||grad f(xbar^k)||^2 (gamma <= 1/L)",
        DERIVED,
    ),
    "descent_rhs": (
        DESCENT_RHS,
        "descent inequality with the initial gap Delta >= f(xbar^0) - f_* (gamma <= 1/L)",
        DERIVED,
    ),
    "consensus_bound": (
        CONSENSUS_BOUND,
        "bound on E (1/n) sum_i ||xbar^k - z_i^k||^2 for every k (product bound C, q; weights >= delta; G)",
        DERIVED,
    ),
    "consensus_bound_l2": (
        CONSENSUS_BOUND_L2,
        "spectral-norm consensus bound: E (1/n) sum_i ||xbar^k - z_i^k||^2 <= (gamma S2 G2 / delta)^2 for every k",
        DERIVED,
    ),
    "consensus_bound_l2_sqrt": (
        CONSENSUS_BOUND_L2_SQRT,
        "spectral-norm consensus bound for gamma = sqrt(n/K): O(n/K)",
        DERIVED,
    ),
    "combined_bound_l2": (
        COMBINED_BOUND_L2,
        "descent inequality with the spectral-norm consensus bound substituted (gamma <= 1/L)",
        DERIVED,
    ),
    "combined_bound": (
        COMBINED_BOUND,
        "descent inequality with the consensus bound substituted, general gamma <= 1/L",
        DERIVED,
    ),
    "combined_bound_sqrt": (
        COMBINED_BOUND_SQRT,
        "combined bound for gamma = sqrt(n/K) (needs K >= n L^2)",
        DERIVED,
    ),
    "leading_term_sqrt": (
        LEADING_TERM_SQRT,
        "leading term of the combined bound for gamma = sqrt(n/K): rate K^(-1/2), linear speedup n^(-1/2)",
        DERIVED,
    ),
    "consensus_bound_sqrt": (
        CONSENSUS_BOUND_SQRT,
        "consensus bound for gamma = sqrt(n/K): O(1/K)",
        DERIVED,
    ),
    "consensus_term_sqrt": (
        CONSENSUS_TERM_SQRT,
        "consensus term L^2 * consensus_bound_sqrt of the combined bound for gamma = sqrt(n/K)",
        DERIVED,
    ),
    "speedup_crossover_k": (
        SPEEDUP_CROSSOVER_K,
        "K* at which leading and consensus terms are equal (sympy.solve); linear speedup needs K >> K* ~ n^7",
        DERIVED,
    ),
    "step_size_max": (STEP_SIZE_MAX, "largest step allowed by the descent inequality, gamma <= 1/L", DERIVED),
    "sqrt_step_k_min": (SQRT_STEP_K_MIN, "smallest K with sqrt(n/K) <= 1/L, i.e. K >= n L^2", DERIVED),
}

#: name -> validity condition: a sympy relational, a note where it is not a
#: formula, or None for definitions that need none.
CONDITIONS = {
    "published_bound": "K above the published threshold (only a lower estimate is known: "
    "published_threshold_known_part)",
    "published_threshold_known_part": "lower estimate only: further terms of the threshold are unknown",
    "optimization_terms": sp.Le(gamma, STEP_SIZE_MAX),
    "descent_rhs_measurable": sp.Le(gamma, STEP_SIZE_MAX),
    "descent_rhs": sp.Le(gamma, STEP_SIZE_MAX),
    "consensus_bound": "C, q, delta valid for every product up to K; gradient-size bound G along the run",
    "consensus_bound_l2": "weights >= delta along the run; S2 measured on the run's schedule; X^0 = 1 x0^T",
    "consensus_bound_l2_sqrt": "as consensus_bound_l2",
    "combined_bound_l2": sp.Le(gamma, STEP_SIZE_MAX),
    "combined_bound": sp.Le(gamma, STEP_SIZE_MAX),
    "combined_bound_sqrt": sp.Ge(K, SQRT_STEP_K_MIN),
    "leading_term_sqrt": sp.Ge(K, SQRT_STEP_K_MIN),
    "consensus_bound_sqrt": "as consensus_bound",
    "consensus_term_sqrt": "as consensus_bound",
    "speedup_crossover_k": None,
    "step_size_max": None,
    "sqrt_step_k_min": None,
}

# --------------------------------------------------------------------------
# Functions
# --------------------------------------------------------------------------


def _lookup(name):
    key = str(name).lower()
    if key not in EXPRESSIONS:
        raise ValueError(f"name must be one of {', '.join(EXPRESSIONS)}, got {name!r}")
    return EXPRESSIONS[key][0]


def _as_expr(expr):
    return _lookup(expr) if isinstance(expr, str) else sp.sympify(expr)


def _as_symbol(var):
    if isinstance(var, sp.Symbol):
        return var
    if isinstance(var, str) and var in SYMBOLS:
        return SYMBOLS[var][0]
    raise ValueError(f"var must be a symbol or one of {', '.join(SYMBOLS)}, got {var!r}")


def _subs_map(subs):
    unknown = sorted(k for k in subs if k not in SYMBOLS)
    if unknown:
        raise ValueError(f"unknown symbol names: {', '.join(unknown)} (known: {', '.join(SYMBOLS)})")
    return {SYMBOLS[k][0]: sp.sympify(v) for k, v in subs.items()}


def rate_exponent(expr: sp.Expr | str, var: sp.Symbol | str, **subs: float | sp.Expr) -> sp.Expr:
    """Exponent ``p`` such that ``expr ~ var**p`` as ``var -> oo``.

    Computed as ``sympy.limit(log(expr) / log(var), var, oo)`` after
    substituting ``subs``; the other symbols stay symbolic (positive).

    Parameters
    ----------
    expr : sympy.Expr or str
        An expression, or a name from :data:`EXPRESSIONS`.
    var : sympy.Symbol or str
        The variable sent to infinity (``K``, ``n``, ...).
    **subs
        Values for other symbols, by name (``gamma=...``, ``n=8``).

    Returns
    -------
    sympy.Rational or sympy.Number
        The exponent (``-1/2`` for a ``1/sqrt(var)`` rate). Factors that vary
        slower than any power (logarithms) do not change it.

    Raises
    ------
    ValueError
        If the limit is not a finite number (no power law, or it depends on
        other symbols), or sympy cannot compute it.

    Notes
    -----
    A top-level ``Max``/``Min`` of positive terms is handled as the max/min
    of the exponents of its arguments (sympy's limit does not support it).

    Examples
    --------
    >>> rate_exponent(COMBINED_BOUND_SQRT, K)
    -1/2
    >>> rate_exponent(CONSENSUS_BOUND_SQRT, K)
    -1
    >>> rate_exponent(COMBINED_BOUND_SQRT, n)   # the consensus term dominates in n
    3
    >>> rate_exponent(COMBINED_BOUND, K, gamma=1)   # constant step: no decay
    0
    """
    x = _as_symbol(var)
    e = _as_expr(expr).subs(_subs_map(subs))
    if isinstance(e, (sp.Max, sp.Min)):
        ps = [rate_exponent(a, x) for a in e.args]
        return max(ps) if isinstance(e, sp.Max) else min(ps)
    try:
        p = sp.limit(sp.log(e) / sp.log(x), x, sp.oo)
    except (NotImplementedError, ValueError, TypeError) as exc:
        raise ValueError(f"sympy cannot find the rate of {e} in {x}: {exc}") from exc
    if not (p.is_number and p.is_finite and p.is_real):
        raise ValueError(f"{e} has no power-law rate in {x}: limit of log(expr)/log({x}) is {p}")
    return sp.nsimplify(p) if p.is_Float else p


@functools.lru_cache(maxsize=256)
def _lambdified(expr):
    args = tuple(sorted(expr.free_symbols, key=lambda s: s.name))
    return args, sp.lambdify(args, expr, modules="numpy")


def evaluate(expr: sp.Expr | str, **values: ArrayLike) -> float | np.ndarray:
    """Numerical value of an expression, through a cached ``sympy.lambdify``.

    Parameters
    ----------
    expr : sympy.Expr or str
        An expression, or a name from :data:`EXPRESSIONS`.
    **values
        A value for every free symbol of ``expr``, by name; values of other
        known symbols are ignored, so one dictionary serves every expression.
        Arrays broadcast (numpy).

    Returns
    -------
    float, or ndarray when a value is an array.

    Raises
    ------
    ValueError
        ``missing values for symbols: ...`` naming the symbols without a
        value, or naming unknown keyword names.

    Notes
    -----
    Evaluating a bound does not check its validity condition (see
    :data:`CONDITIONS`, e.g. ``gamma <= 1/L``); the caller does.

    Examples
    --------
    >>> evaluate(PUBLISHED_BOUND, Delta=1.0, L=2.0, sigma2=0.5, n=4, K=9)
    3.0
    >>> evaluate("consensus_bound_sqrt", n=2, K=8, C=1, G=1, delta=1, q=0.5)
    4.0
    >>> evaluate(CONSENSUS_BOUND, gamma=0.1, n=2)
    Traceback (most recent call last):
    ...
    ValueError: missing values for symbols: C, G, delta, q
    """
    e = _as_expr(expr)
    unknown = sorted(k for k in values if k not in SYMBOLS)
    if unknown:
        raise ValueError(f"unknown symbol names: {', '.join(unknown)} (known: {', '.join(SYMBOLS)})")
    args, fn = _lambdified(e)
    missing = [s.name for s in args if s.name not in values]
    if missing:
        raise ValueError(f"missing values for symbols: {', '.join(missing)}")
    inputs = [values[s.name] for s in args]
    scalar = all(isinstance(v, Real) or np.ndim(v) == 0 for v in inputs)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = fn(*[float(v) if scalar else np.asarray(v, dtype=float) for v in inputs])
    return float(out) if scalar else np.asarray(out, dtype=float)


def latex(name: str) -> str:
    """LaTeX of a named expression (a key of :data:`EXPRESSIONS`, any case).

    Examples
    --------
    >>> latex("published_bound")
    '\\\\frac{12 \\\\Delta + 6 L \\\\sigma^{2}}{\\\\sqrt{K} \\\\sqrt{n}}'
    >>> latex("CONSENSUS_BOUND_SQRT")
    '\\\\frac{C^{2} G^{2} n^{3}}{K \\\\delta^{2} \\\\left(1 - q\\\\right)^{2}}'
    """
    return _latex(_lookup(name))


def _latex(expr):
    return sp.latex(expr, symbol_names=_LATEX_NAMES)


def _condition_md(cond):
    return f"${_latex(cond)}$" if isinstance(cond, sp.Basic) else cond


#: Markers of the generated block in docs/theory.md.
GENERATED_START = "<!-- generated:start -->"
GENERATED_END = "<!-- generated:end -->"


#: (expression name, variable) pairs whose rate exponents the docs list.
RATE_TABLE = (
    ("combined_bound_sqrt", "K"),
    ("leading_term_sqrt", "K"),
    ("leading_term_sqrt", "n"),
    ("consensus_bound_sqrt", "K"),
    ("consensus_bound_l2_sqrt", "K"),
    ("consensus_term_sqrt", "n"),
    ("combined_bound_sqrt", "n"),
    ("speedup_crossover_k", "n"),
    ("published_bound", "K"),
    ("published_bound", "n"),
    ("published_threshold_known_part", "n"),
)


def write_theory_tables() -> str:
    """Markdown snippet with the symbols, the LaTeX of every expression and rates.

    This is the text between the ``<!-- generated:start -->`` and
    ``<!-- generated:end -->`` markers of ``docs/theory.md``; regenerate it with
    ``python -m sgpverify.theory --write docs/theory.md``.

    Examples
    --------
    >>> md = write_theory_tables()
    >>> md.splitlines()[0]
    '### Symbols'
    >>> "COMBINED_BOUND_SQRT" in md and "published (unsure threshold)" in md
    True
    """
    return _theory_tables()


@functools.lru_cache(maxsize=1)
def _theory_tables():
    out = [
        "### Symbols",
        "",
        "| name | symbol | meaning | assumption |",
        "|---|---|---|---|",
    ]
    for name, (sym, meaning) in SYMBOLS.items():
        assumption = "positive" if sym.is_positive else "nonnegative" if sym.is_nonnegative else "real"
        cell = meaning.replace("|", "\\|")  # a bare | would end the table cell
        out.append(f"| `{name}` | ${_latex(sym)}$ | {cell} | {assumption} |")
    out += ["", "### Expressions", ""]
    for name, (expr, desc, label) in EXPRESSIONS.items():
        out += [
            f"#### `{name.upper()}` ({label})",
            "",
            f"{desc}." + (f" Valid when: {_condition_md(CONDITIONS[name])}." if CONDITIONS[name] is not None else ""),
            "",
            "$$",
            _latex(expr),
            "$$",
            "",
        ]
    out += [
        "### Rate exponents",
        "",
        "`rate_exponent(expr, var)` = limit of log(expr)/log(var) as var -> oo, other symbols fixed.",
        "",
        "| expression | variable | exponent |",
        "|---|---|---|",
    ]
    for name, var in RATE_TABLE:
        out.append(f"| `{name.upper()}` | ${var}$ | ${_latex(rate_exponent(name, var))}$ |")
    return "\n".join(out).rstrip() + "\n"


def update_generated_block(path: str | os.PathLike[str]) -> bool:
    """Replace the generated block of a Markdown file by :func:`write_theory_tables`.

    Returns True if the file changed. Raises ValueError if the markers are
    missing.
    """
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    pattern = re.compile(re.escape(GENERATED_START) + r".*?" + re.escape(GENERATED_END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{path} must contain the markers {GENERATED_START} and {GENERATED_END}")
    block = f"{GENERATED_START}\n{write_theory_tables()}{GENERATED_END}"
    new = pattern.sub(lambda _m: block, text, count=1)
    if new != text:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
    return new != text


def _main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m sgpverify.theory",
        description="Print the generated LaTeX block of docs/theory.md, or write it in place.",
    )
    parser.add_argument("--write", metavar="PATH", help="replace the generated block of PATH (e.g. docs/theory.md)")
    args = parser.parse_args(argv)
    if args.write:
        changed = update_generated_block(args.write)
        print(f"{args.write}: {'updated' if changed else 'already up to date'}")
    else:
        sys.stdout.write(write_theory_tables())
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main())
