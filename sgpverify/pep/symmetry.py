"""Node symmetries of a schedule: the groups the PEP knows, their exact detection, and the real
character basis that block-diagonalises an invariant Gram matrix.

A group here is a product of cyclic groups ``Z_{n_1} x ... x Z_{n_r}`` with ``prod n_l = n``,
acting regularly on the nodes: node ``i`` has mixed-radix digits ``(d_1, ..., d_r)`` (``d_r``
the fastest), and the element ``s`` sends it to the node of digits ``d + s`` (mod ``n_l`` each).
``(n,)`` is the cyclic group (circulant schedules: exponential graph, ring, complete graph),
``(2,) * k`` is Z_2^k (the hypercube: ``i -> i XOR s``), ``(r, c)`` the torus's Z_r x Z_c.

A schedule is invariant when every matrix of a period (delay-augmented for ``tau > 0``, a
buffer row ``r n + i`` moving with its node ``i``) satisfies ``P[g(i), g(j)] = P[i, j]`` for each
generator ``g``: an exact comparison of the stored entries (a permutation moves floats, it never
rounds them), never a tolerance.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import scipy.sparse as sp

from ..mixing import MixingSchedule

__all__ = ["NodeGroup", "candidate_groups", "detect_symmetry", "is_invariant"]


@dataclasses.dataclass(frozen=True)
class NodeGroup:
    """A product of cyclic groups acting regularly on ``n = prod(orders)`` nodes.

    Examples
    --------
    >>> NodeGroup((4,)).name, NodeGroup((2, 2, 2)).name, NodeGroup((2, 3)).name
    ('Z_4', 'Z_2^3', 'Z_2 x Z_3')
    >>> NodeGroup((2, 2)).generators().tolist()  # XOR with 2 and with 1
    [[2, 3, 0, 1], [1, 0, 3, 2]]
    """

    orders: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.orders or any(int(o) != o or o < 2 for o in self.orders):
            raise ValueError(f"orders must be integers >= 2, at least one, got {self.orders!r}")

    @property
    def n(self) -> int:
        return math.prod(self.orders)

    @property
    def name(self) -> str:
        if len(self.orders) > 1 and len(set(self.orders)) == 1:
            return f"Z_{self.orders[0]}^{len(self.orders)}"
        return " x ".join(f"Z_{o}" for o in self.orders)

    def digits(self) -> np.ndarray:
        """(n, r) digits of every node."""
        return np.array(list(itertools.product(*[range(o) for o in self.orders])), dtype=np.int64).reshape(self.n, -1)

    def _index(self, d: np.ndarray) -> np.ndarray:
        out = np.zeros(d.shape[0], dtype=np.int64)
        for col, o in enumerate(self.orders):
            out = out * o + d[:, col]
        return out

    def generators(self) -> np.ndarray:
        """(r, n): row l is the node permutation of the unit step in factor l."""
        d = self.digits()
        rows = []
        for col, o in enumerate(self.orders):
            e = d.copy()
            e[:, col] = (e[:, col] + 1) % o
            rows.append(self._index(e))
        return np.array(rows)

    def real_characters(self) -> tuple[np.ndarray, list[tuple[str, tuple[int, ...]]]]:
        """An orthogonal (n, n) matrix V of real character vectors and its blocks.

        Each character ``chi_s(d) = exp(2 pi i sum_l s_l d_l / n_l)``; a real one (``2s = 0``)
        gives one column ``chi_s / sqrt(n)``; a conjugate pair ``{s, -s}`` gives two,
        ``sqrt(2/n) cos`` and ``sqrt(2/n) sin`` of its phase. Blocks are ``("real", (c,))`` or
        ``("pair", (c, c'))``, the trivial character first."""
        d = self.digits()
        cols, blocks, seen = [], [], set()
        for s in itertools.product(*[range(o) for o in self.orders]):
            if s in seen:
                continue
            neg = tuple((-a) % o for a, o in zip(s, self.orders))
            seen.update({s, neg})
            theta = 2 * np.pi * sum(d[:, col] * a / o for col, (a, o) in enumerate(zip(s, self.orders)))
            theta = np.asarray(theta, dtype=float) * np.ones(self.n)
            if neg == s:
                blocks.append(("real", (len(cols),)))
                cols.append(np.round(np.cos(theta)) / math.sqrt(self.n))  # +-1 exactly
            else:
                blocks.append(("pair", (len(cols), len(cols) + 1)))
                cols += [math.sqrt(2 / self.n) * np.cos(theta), math.sqrt(2 / self.n) * np.sin(theta)]
        return np.array(cols).T, blocks


def candidate_groups(n: int) -> list[NodeGroup]:
    """The groups tried on n nodes, most real characters first (real blocks are half the side
    of a conjugate pair's, and an SDP block costs the fourth power of its side): Z_2^k,
    products of two cyclic groups, then Z_n."""
    if n < 2:
        return []
    out = []
    k = n.bit_length() - 1
    if n == 1 << k and k > 1:
        out.append(NodeGroup((2,) * k))
    out += [NodeGroup((r, n // r)) for r in range(2, n // 2 + 1) if n % r == 0]
    out.append(NodeGroup((n,)))

    def n_real(g):
        return sum(kind == "real" for kind, _ in g.real_characters()[1])

    return sorted(out, key=n_real, reverse=True)


def _canon(P: sp.sparray) -> sp.csr_array:
    A = sp.csr_array(P, copy=True)
    A.eliminate_zeros()
    A.sum_duplicates()
    A.sort_indices()
    return A


def is_invariant(P: sp.sparray | np.ndarray, perm: np.ndarray) -> bool:
    """Whether ``P[perm[i], perm[j]] == P[i, j]`` for all i, j: exact equality of the entries."""
    A = _canon(sp.csr_array(P))
    perm = np.asarray(perm, dtype=np.int64)
    if A.shape != (perm.size, perm.size):
        raise ValueError(f"perm must have length {A.shape[0]} (the side of P), got {perm.size}")
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size)
    B = _canon(A[inv][:, inv])  # B[i, j] = A[inv[i], inv[j]]: B == A iff A[perm i, perm j] == A[i, j]
    return (
        np.array_equal(A.indptr, B.indptr) and np.array_equal(A.indices, B.indices) and np.array_equal(A.data, B.data)
    )


def detect_symmetry(schedule: MixingSchedule, n_steps: int) -> NodeGroup | None:
    """The first group of :func:`candidate_groups` under which every matrix of the schedule's
    first ``n_steps`` steps (one period where the schedule has one) is invariant; None if none.

    Examples
    --------
    >>> import sgpverify as sv
    >>> from sgpverify.mixing import mixing_schedule
    >>> detect_symmetry(mixing_schedule(sv.graphs.exponential(8)), 10).name
    'Z_8'
    >>> detect_symmetry(mixing_schedule(sv.graphs.hypercube(8)), 10).name
    'Z_2^3'
    >>> detect_symmetry(mixing_schedule(sv.graphs.star(4)), 10) is None
    True
    """
    n, N = schedule.n, schedule.N
    steps = n_steps if schedule.period is None else min(n_steps, schedule.period)
    mats = [schedule.matrix(k) for k in range(steps)]
    for g in candidate_groups(n):
        perms = [np.concatenate([r * n + p for r in range(N // n)]) for p in g.generators()]
        if all(is_invariant(P, p) for P in mats for p in perms):
            return g
    return None
