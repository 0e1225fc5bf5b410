"""Tails of squared gradient deviations: is the noise variance infinite, or only heavy-looking?

Hill's estimator (:func:`hill_tail_index`) assumes a regularly varying
tail. Two rules, fixed in advance, keep it from calling finite-variance noise infinite:
:func:`atoms_in_tail` (noise drawn from a finite set, a data set's rows, repeats its values
exactly: a tail of a few atoms is a finite support, and the test does not apply to it) and
:func:`variance_settles` (an infinite variance keeps the largest draw a fixed share of the sum
as the sample doubles; a finite one makes that share fall like 1/N). docs/theory.md, "Infinite
variance", states both and how they were validated.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np
import scipy.stats

if TYPE_CHECKING:
    from collections.abc import Callable

    from numpy.typing import ArrayLike

__all__ = [
    "ATOM_FRACTION",
    "SETTLE_SHARE",
    "TAIL_FRACTION",
    "MIN_TAIL",
    "atoms_in_tail",
    "variance_settles",
    "prefix_means",
    "RESAMPLE",
    "by_median",
    "hill_tail_index",
    "tail_test",
]

#: Hill's estimator uses the largest ``TAIL_FRACTION`` of the positive squared deviations (fixed in advance).
TAIL_FRACTION = 0.1
#: Fewest order statistics for a tail test (below it the test is not run and says so).
MIN_TAIL = 16
#: A tail of atoms: at most this fraction of distinct values among the ``k + 1`` largest (fixed in advance).
#: Noise drawn from a finite set (a data set: finite-sum noise) repeats its values exactly, a continuous
#: distribution never, a heavy-tailed discrete one (Zipf) hardly in its tail. A finite support has a
#: finite variance, and Hill's estimator (for a regularly varying tail) does not apply to it.
ATOM_FRACTION = 0.25
#: Infinite variance needs the largest deviation to keep this share of the sum at every doubling size.
SETTLE_SHARE = 0.02
#: A flag stands only if a fresh sample this many times larger does not settle either: a bounded law shows
#: its bound (the largest value's share of the sum falls like 1/N), a tail index below 1 looks the same at
#: every size (added after a false alarm, docs/theory.md).
RESAMPLE = 8


def atoms_in_tail(values: ArrayLike) -> bool:
    """Whether the ``k + 1`` largest positive values (Hill's tail, ``k = floor(TAIL_FRACTION N)``)
    are a few atoms: at most ``ATOM_FRACTION`` of them distinct.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> atoms_in_tail(rng.choice(rng.pareto(0.5, 64), 4096)), atoms_in_tail(rng.pareto(0.5, 4096))
    (True, False)
    """
    x = np.asarray(values, dtype=float).ravel()
    x = x[np.isfinite(x) & (x > 0)]
    k = int(TAIL_FRACTION * x.size)
    if k < MIN_TAIL:
        return False
    top = np.partition(x, x.size - k - 1)[x.size - k - 1 :]
    return np.unique(top).size <= ATOM_FRACTION * (k + 1)


def by_median(D: np.ndarray) -> np.ndarray:
    """Squared deviations (S, m, n) divided by the median of each (point, node) group's positive values
    (a scale changes neither a tail index nor a share; a group without positive values keeps scale 1)."""
    pos = np.where(D > 0, D, np.nan)
    with warnings.catch_warnings():  # a group without positive values has no median (nan): scale 1
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(pos, axis=0)
    return np.where(D > 0, D / np.where(np.isfinite(med) & (med > 0), med, 1.0), 0.0)


def prefix_means(group: np.ndarray) -> list[float]:
    """The means of squared deviations (S, ...) over the prefixes of ``S/4``, ``S/2`` and ``S`` draws."""
    S = group.shape[0]
    x = group.reshape(S, -1)
    return [float(np.mean(x[: max(1, S >> s)])) for s in (2, 1, 0)]


def variance_settles(group: np.ndarray) -> bool:
    """Whether squared deviations (S, ...) give no evidence of infinite variance (rules in docs/theory.md).

    Infinite variance needs, beyond Hill's index (on a tail that is not a few atoms,
    :func:`atoms_in_tail`), a mean that does not settle over doubling sizes ``S/8, S/4,
    S/2, S`` (prefixes over the draws): the largest value keeps a share >=
    ``SETTLE_SHARE`` of the sum at every size (a finite mean makes it fall like 1/N).
    """
    S = group.shape[0]
    if S < 16:
        return True
    x = group.reshape(S, -1)
    for size in (S // 8, S // 4, S // 2, S):
        part = x[:size]
        total = float(np.sum(part))
        if not total > 0 or float(np.max(part)) / total < SETTLE_SHARE:
            return True
    return False


def hill_tail_index(values: ArrayLike, alpha: float) -> tuple[float, float, int, int] | None:
    """Hill's estimate of the tail index of positive values, with an upper confidence bound.

    The largest ``k = floor(TAIL_FRACTION * N)`` of the ``N`` positive values
    give ``gamma = mean_j log(X_(j) / X_(k+1))`` and the tail index
    ``a = 1 / gamma``. For a Pareto tail ``k gamma / gamma_true`` follows
    Gamma(k, 1) exactly (Renyi's representation), so
    ``a * Gamma(k).ppf(1 - alpha) / k`` is an upper bound of the true index
    at level ``1 - alpha``.

    Parameters
    ----------
    values : array_like
        Samples (zeros and negatives are dropped).
    alpha : float
        Error probability of the upper bound, in (0, 1).

    Returns
    -------
    (index, upper, k, N) or None
        None when ``k < MIN_TAIL``.

    Examples
    --------
    >>> x = np.random.default_rng(0).pareto(0.5, 20000) + 1.0  # tail index 0.5
    >>> index, upper, k, N = hill_tail_index(x, 0.01)
    >>> bool(0.45 < index < 0.55 and upper < 1), k, N
    (True, 2000, 20000)
    """
    x = np.asarray(values, dtype=float).ravel()
    x = x[(x > 0) & np.isfinite(x)]
    N = len(x)
    k = int(TAIL_FRACTION * N)
    if k < MIN_TAIL:
        return None
    top = np.sort(np.partition(x, N - k - 1)[N - k - 1 :])  # X_(k+1) first, then the k largest
    gamma = float(np.mean(np.log(top[1:] / top[0])))
    index = math.inf if gamma <= 0 else 1.0 / gamma
    upper = index * float(scipy.stats.gamma.ppf(1.0 - alpha, k)) / k
    return index, upper, k, N


def tail_test(D: np.ndarray, alpha: float, fresh: Callable[[], np.ndarray] | None = None) -> tuple | None:
    """Hill tests of the squared deviations D (S, m, n): pooled (alpha/2; alpha for one node) and per node.

    Each (point, node) group is divided by the median of its positive values
    (a scale does not change a tail index). Returns (flag, index, upper, k, N,
    node, level, (means, size)) of the test with the smallest upper bound (node None: pooled; the means
    of its group over the prefixes and the group's size, those of the fresh sample ``fresh()`` where one
    was drawn), or None when no test had enough data.
    """
    S, m, n = D.shape
    Dn = by_median(D)
    pooled = alpha / 2 if n > 1 else alpha  # one node: the pooled test is the per-node test
    groups = [(Dn, pooled, None)] + ([(Dn[:, :, i], alpha / (2 * n), i) for i in range(n)] if n > 1 else [])
    atoms = [atoms_in_tail(x) for x, _, _ in groups]
    tests = [(hill_tail_index(x, a), i) for (x, a, i), atom in zip(groups, atoms) if not atom]
    tests = [(r, i) for r, i in tests if r is not None]
    if not tests:
        # every tail a few atoms (finite-sum noise): no heavy-tail finding, and none to make
        return (False, None, None, 0, 0, None, None, None) if any(atoms) else None
    # a flag: a tail index below 1 in a group whose sample variance does not settle (each group its own test),
    # nor that of a fresh sample RESAMPLE times larger (drawn only here)
    flagged = [t for t in tests if t[0][1] < 1.0 and not variance_settles(Dn if t[1] is None else Dn[:, :, t[1]])]
    if flagged and fresh is not None:
        Dn = by_median(fresh())
        flagged = [t for t in flagged if not variance_settles(Dn if t[1] is None else Dn[:, :, t[1]])]
    (index, upper, k, N), node = min(flagged or tests, key=lambda t: t[0][1])
    level = 1 - (pooled if node is None else alpha / (2 * n))
    group = Dn if node is None else Dn[:, :, node]
    return bool(flagged), index, upper, k, N, node, level, (prefix_means(group), group.size)
