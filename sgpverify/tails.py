"""Tails of squared gradient deviations: is the noise variance infinite, or only heavy-looking?

Hill's estimator (:func:`sgpverify.constants_check.hill_tail_index`) assumes a regularly varying
tail. Two rules, fixed in advance, keep it from calling finite-variance noise infinite:
:func:`atoms_in_tail` (noise drawn from a finite set, a data set's rows, repeats its values
exactly: a tail of a few atoms is a finite support, and the test does not apply to it) and
:func:`variance_settles` (an infinite variance keeps the largest draw a fixed share of the sum
as the sample doubles; a finite one makes that share fall like 1/N). docs/theory.md, "Infinite
variance", states both and how they were validated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["ATOM_FRACTION", "SETTLE_SHARE", "TAIL_FRACTION", "MIN_TAIL", "atoms_in_tail", "variance_settles"]

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
