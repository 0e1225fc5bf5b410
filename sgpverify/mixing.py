"""Mixing matrices: column-stochastic push weights, delays and delay augmentation.

Conventions
-----------
A mixing matrix is a ``scipy.sparse`` CSR array of shape ``(n, n)``;
``P[i, j]`` is the share that node ``j`` sends to node ``i``, so every column
sums to one (column-stochastic) and the push-sum recursion reads
``X^{k+1} = P^(k) (X^k - gamma G^k)``, ``w^{k+1} = P^(k) w^k``
(docs/theory.md section 1b, "Algorithm 1 (SGP)").

Delays: a delay matrix has the sparsity of ``P`` and integer entries in
``0..tau``, the delay of each message (the diagonal, the self share, is never
delayed). :func:`augment` builds the ``n(tau+1)`` matrix of
docs/theory.md section 1b, "Delays and the augmented matrix", whose rows
``r*n + i`` hold node i's mass that is ``r`` steps from arriving.

Examples
--------
>>> import sgpverify as sv
>>> P = sv.mixing.push_matrix(sv.graphs.ring(3), k=0)
>>> P.toarray()
array([[0.5, 0. , 0.5],
       [0.5, 0.5, 0. ],
       [0. , 0.5, 0.5]])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .graphs import Topology, normalize_edges
from .validation import check_choice, check_int, real_matrix, resolve_seed, rng_for

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import networkx as nx
    from numpy.typing import ArrayLike

__all__ = [
    "push_matrix",
    "push_weights",
    "metropolis_matrix",
    "check_column_stochastic",
    "column_sum_tolerance",
    "DelayModel",
    "FixedDelay",
    "RandomDelay",
    "LinkDelay",
    "delay_model",
    "check_delay_shape",
    "delay_matrix",
    "augment",
    "as_topology",
]

EPS = np.finfo(float).eps


def push_weights(n: int, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Uniform push shares for an edge array.

    Returns ``(self_share, edge_share)``: node j keeps ``1/(d_j + 1)`` and sends
    ``1/(d_j + 1)`` along each of its ``d_j`` out-edges.
    """
    deg = np.bincount(edges[:, 0], minlength=n)
    self_share = 1.0 / (deg + 1.0)
    return self_share, self_share[edges[:, 0]]


def _csr(n, rows, cols, vals, shape=None):
    shape = (n, n) if shape is None else shape
    m = sp.csr_array((vals, (rows, cols)), shape=shape)
    m.sum_duplicates()
    m.sort_indices()
    return m


def push_matrix(topo: Topology, k: int) -> sp.csr_array:
    """The column-stochastic push matrix ``P^(k)`` of a topology.

    Each sender splits its mass uniformly over itself and its out-neighbours
    at step k: ``P[i, j] = 1/(outdeg_j(k) + 1)`` for each edge ``j -> i`` and
    for ``i = j``.

    Parameters
    ----------
    topo : Topology
    k : int
        Iteration, >= 0.

    Returns
    -------
    scipy.sparse.csr_array
        Shape ``(n, n)``, column-stochastic, positive diagonal.

    Under message loss (:func:`sgpverify.graphs.with_message_loss`) the
    shares of the messages lost at step k are missing: those columns sum to
    less than one (mass is not conserved).

    Notes
    -----
    docs/theory.md section 1b, "Algorithm 1 (SGP)": each sender chooses only its own outgoing shares
    (the paper: uniform ``1/(out-degree + 1)``).

    Examples
    --------
    >>> import sgpverify as sv
    >>> P = push_matrix(sv.graphs.exponential(4), k=1)
    >>> P.toarray().sum(axis=0).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    if not isinstance(topo, Topology):
        raise TypeError(f"topo must be a Topology, got {type(topo).__name__}")
    n = topo.n
    e = topo.edges(k)
    self_share, edge_share = push_weights(n, e)
    if topo.loses_messages:
        keep = ~topo.lost(k)
        e, edge_share = e[keep], edge_share[keep]
    diag = np.arange(n)
    rows = np.concatenate([diag, e[:, 1]])
    cols = np.concatenate([diag, e[:, 0]])
    vals = np.concatenate([self_share, edge_share])
    return _csr(n, rows, cols, vals)


def metropolis_matrix(topo: Topology, k: int, symmetrize: bool = True) -> sp.csr_array:
    """Metropolis-Hastings weights on the undirected graph of step k.

    ``W[i, j] = 1 / (1 + max(d_i, d_j))`` for each undirected edge, and
    ``W[i, i] = 1 - sum_{j != i} W[i, j]``: symmetric and doubly stochastic.

    Parameters
    ----------
    topo : Topology
    k : int
    symmetrize : bool
        Treat every directed edge as undirected (default). With False a
        non-symmetric edge set raises ValueError.

    Examples
    --------
    >>> import sgpverify as sv
    >>> W = metropolis_matrix(sv.graphs.star(3), 0).toarray()
    >>> W.round(3).tolist()
    [[0.333, 0.333, 0.333], [0.333, 0.667, 0.0], [0.333, 0.0, 0.667]]
    """
    if not isinstance(topo, Topology):
        raise TypeError(f"topo must be a Topology, got {type(topo).__name__}")
    n = topo.n
    e = topo.edges(k)
    und = normalize_edges(np.concatenate([e[:, 0], e[:, 1]]), np.concatenate([e[:, 1], e[:, 0]]), n)
    if not symmetrize and len(und) != len(e):
        raise ValueError(
            f"topology {topo.name} is not symmetric at step {k}: {len(und) - len(e)} reverse edges missing"
        )
    deg = np.bincount(und[:, 0], minlength=n)
    w = 1.0 / (1.0 + np.maximum(deg[und[:, 0]], deg[und[:, 1]]))
    diag = 1.0 - np.bincount(und[:, 0], weights=w, minlength=n)
    idx = np.arange(n)
    return _csr(
        n,
        np.concatenate([idx, und[:, 0]]),
        np.concatenate([idx, und[:, 1]]),
        np.concatenate([diag, w]),
    )


def column_sum_tolerance(P: ArrayLike | sp.sparray | sp.spmatrix) -> float:
    """Default round-off tolerance for the column sums of ``P``.

    ``4 * eps * max(1, largest number of non-zeros in a column)``: summing m
    rounded shares errs by at most about ``m * eps``.
    """
    P = sp.csc_array(P) if sp.issparse(P) else sp.csc_array(np.asarray(P))
    nnz = np.diff(P.indptr)
    return 4.0 * EPS * max(1, int(nnz.max()) if nnz.size else 1)


def check_column_stochastic(
    P: ArrayLike | sp.sparray | sp.spmatrix,
    atol: float | None = None,
    name: str = "P",
    require_positive_diagonal: bool = True,
    allow_negative: bool = False,
) -> sp.csr_array:
    """Validate a user mixing matrix and return it as CSR.

    Checks, in order: real, square, finite, non-negative, column sums 1 within ``atol``, positive diagonal.

    Parameters
    ----------
    P : array_like or sparse matrix
    atol : float, optional
        Tolerance on ``|1 - column sum|``; default :func:`column_sum_tolerance`.
    name : str
        Name used in error messages.

    Raises
    ------
    ValueError
        Naming the first violated property and the measured value.

    Examples
    --------
    >>> check_column_stochastic([[0.5, 1.0], [0.5, 0.0]], require_positive_diagonal=False).shape
    (2, 2)
    >>> check_column_stochastic([[0.5, 1.0], [0.4, 0.0]])
    Traceback (most recent call last):
    ...
    ValueError: column 0 of P sums to 0.9 (|1 - sum| = 1.0e-01 > atol = 1.8e-15)
    """
    P = real_matrix(name, P)
    if sp.issparse(P):
        M = sp.csr_array(P, dtype=float)
    else:
        try:
            arr = np.asarray(P, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be a numeric matrix, got {type(P).__name__}") from exc
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a 2-D square matrix, got shape {arr.shape}")
        M = sp.csr_array(arr)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {M.shape}")
    if M.shape[0] == 0:
        raise ValueError(f"{name} must have at least 1 row, got shape {M.shape}")
    M.sum_duplicates()
    M.sort_indices()
    data = M.data
    if not np.all(np.isfinite(data)):
        i = int(np.flatnonzero(~np.isfinite(data))[0])
        r, c = _entry_position(M, i)
        raise ValueError(f"{name} must be finite, got {name}[{r}, {c}] = {data[i]}")
    if not allow_negative and np.any(data < 0):
        i = int(np.argmin(data))
        r, c = _entry_position(M, i)
        raise ValueError(f"{name} must be non-negative, got {name}[{r}, {c}] = {data[i]:.3g}")
    tol = column_sum_tolerance(M) if atol is None else float(atol)
    colsum = np.asarray(M.sum(axis=0)).ravel()
    err = np.abs(1.0 - colsum)
    j = int(np.argmax(err))
    if err[j] > tol:
        raise ValueError(f"column {j} of {name} sums to {colsum[j]:.15g} (|1 - sum| = {err[j]:.1e} > atol = {tol:.1e})")
    if require_positive_diagonal:
        d = M.diagonal()
        if np.any(d <= 0):
            i = int(np.argmin(d))
            raise ValueError(f"{name} must have a positive diagonal, got {name}[{i}, {i}] = {d[i]:.3g}")
    return M


def _entry_position(M, i):
    row = int(np.searchsorted(M.indptr, i, side="right") - 1)
    return row, int(M.indices[i])


class DelayModel:
    """Base class of per-message delay models.

    ``edge_delays(k, src, dst)`` gives the delay in ``0..tau`` of each
    message sent at step k along the edges ``src -> dst``.
    """

    tau: int
    name: str
    random: bool = False

    @property
    def shape(self) -> tuple[int, int]:
        """``(n, n)``: the shape of the delay matrix (receiver, sender)."""
        return self._D.shape

    def edge_delays(self, k: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


class FixedDelay(DelayModel):
    """Every message is delayed exactly ``tau`` steps."""

    def __init__(self, tau: int) -> None:
        self.tau = check_int("tau", tau, min_value=0)
        self.name = f"fixed(tau={self.tau})"

    def edge_delays(self, k: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        return np.full(len(src), self.tau, dtype=np.int64)


class RandomDelay(DelayModel):
    """Each message delayed uniformly at random in ``0..tau`` (seeded, random access by step).

    The delays of :attr:`BLOCK` consecutive steps come from one stream, as
    :func:`sgpverify.graphs.random_peer` draws its offsets: block ``b = k // BLOCK``
    draws ``rng_for(seed, "delay", b).integers(0, tau + 1, size=(cap, BLOCK))``
    (``uint8`` while ``tau < 256``, else ``int64``); the j-th message of step k (in
    canonical (sender, receiver) order) gets entry ``[j, k % BLOCK]``. ``cap``, the
    most messages of a step asked for so far in the block, only lengthens the same
    stream (numpy draws its integers one after the other): a step's delays never
    depend on the order of the queries. A ``SeedSequence`` per step cost about as
    much as a whole small SGP step.
    """

    random = True
    #: steps whose delays are drawn together from one stream (random access by block, cached)
    BLOCK = 64

    def __init__(self, tau: int, seed: int | np.random.SeedSequence | None = None) -> None:
        self.tau = check_int("tau", tau, min_value=0)
        self.seed = resolve_seed("seed", seed)
        self.name = f"random(tau={self.tau})"
        self._dtype = np.uint8 if self.tau < 256 else np.int64
        self._block = (None, None)  # (b, the block's draws (BLOCK, cap): row r is step b * BLOCK + r)

    def _row(self, k: int, m: int) -> np.ndarray:
        """The first m draws of step k (a view into the cached block)."""
        b, r = divmod(k, self.BLOCK)
        blk, D = self._block
        if blk != b or D.shape[1] < m:
            # a longer prefix of the same stream; by a quarter at least (counts that vary)
            cap = m if blk != b else max(m, D.shape[1] + D.shape[1] // 4)
            draw = rng_for(self.seed, "delay", b).integers(0, self.tau + 1, size=(cap, self.BLOCK), dtype=self._dtype)
            D = np.ascontiguousarray(draw.T)
            self._block = (b, D)
        return D[r, :m]

    def edge_delays(self, k: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Delays drawn in the canonical (sender, receiver) order of the edges, so
        the answer does not depend on the order in which the edges are given."""
        m = len(src)
        if self.tau == 0 or m == 0:
            return np.zeros(m, dtype=np.int64)
        order = np.lexsort((np.asarray(dst), np.asarray(src)))
        out = np.empty(m, dtype=np.int64)
        out[order] = self._row(k, m)
        return out

    def sorted_edge_delays(self, k: int, m: int) -> np.ndarray:
        """:meth:`edge_delays` of m edges given in canonical (sender, receiver) order,
        without looking at them (a topology's edges are: ``Topology.edges``)."""
        if self.tau == 0 or m == 0:
            return np.zeros(m, dtype=np.int64)
        return self._row(k, m).astype(np.int64)


class LinkDelay(DelayModel):
    """Per-link fixed delays: message ``j -> i`` is delayed ``D[i, j]`` steps.

    ``D`` is a dense or sparse integer ``(n, n)`` matrix (receiver, sender),
    like P; entries it leaves out mean delay 0; the diagonal is ignored.
    """

    def __init__(self, D: ArrayLike | sp.sparray | sp.spmatrix, tau: int | None = None) -> None:
        D = sp.csr_array(D) if sp.issparse(D) else sp.csr_array(np.asarray(D))
        if D.ndim != 2 or D.shape[0] != D.shape[1]:
            raise ValueError(f"delays must be a square matrix, got shape {D.shape}")
        data = D.data
        bad = ~np.isfinite(data) | (data != np.round(data)) if data.size else np.zeros(0, bool)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            r, c = _entry_position(D, i)
            raise ValueError(f"delays must hold integers, got delays[{r}, {c}] = {data[i]}")
        self._D = D.astype(np.int64)
        self._D.setdiag(0)
        self._D.eliminate_zeros()
        dmax = int(self._D.data.max()) if self._D.nnz else 0
        dmin = int(self._D.data.min()) if self._D.nnz else 0
        if dmin < 0:
            raise ValueError(f"delays must be >= 0, got {dmin}")
        self.tau = dmax if tau is None else check_int("tau", tau, min_value=0)
        if dmax > self.tau:
            raise ValueError(f"delays must be <= tau = {self.tau}, got {dmax}")
        self.name = f"per-link(tau={self.tau})"

    def edge_delays(self, k: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        if len(src) == 0:
            return np.zeros(0, dtype=np.int64)
        d = self._D[np.asarray(dst), np.asarray(src)]
        d = d.toarray() if sp.issparse(d) else np.asarray(d)
        return d.ravel().astype(np.int64)


def delay_model(
    delay: str | DelayModel | ArrayLike | sp.sparray | sp.spmatrix,
    tau: int,
    seed: int | np.random.SeedSequence | None = None,
) -> DelayModel:
    """Build a :class:`DelayModel` from a name or matrix.

    Parameters
    ----------
    delay : {"fixed", "random"}, DelayModel, or array_like
        ``"fixed"``: every message delayed tau; ``"random"``: uniform in
        ``0..tau``; a matrix: per-link delays (see :class:`LinkDelay`).
    tau : int
        Maximum delay, >= 0.
    seed : int, optional
        Seed of the random model.

    Examples
    --------
    >>> delay_model("random", 2, seed=0).name
    'random(tau=2)'
    """
    tau = check_int("tau", tau, min_value=0)
    if isinstance(delay, DelayModel):
        if delay.tau > tau:
            raise ValueError(f"delay model {delay.name} exceeds tau = {tau}")
        return delay
    if isinstance(delay, str):
        check_choice("delay", delay, ("fixed", "random"))
        return FixedDelay(tau) if delay == "fixed" else RandomDelay(tau, seed)
    return LinkDelay(delay, tau)


def delay_matrix(P: ArrayLike | sp.sparray | sp.spmatrix, model: DelayModel, k: int) -> sp.csr_array:
    """Delays of the messages of ``P`` at step k, as a sparse int matrix shaped like P."""
    P = sp.coo_array(P)
    off = P.row != P.col
    src, dst = P.col[off], P.row[off]
    d = model.edge_delays(k, src, dst)
    return sp.csr_array((d, (dst, src)), shape=P.shape, dtype=np.int64)


def augment(
    P: ArrayLike | sp.sparray | sp.spmatrix, delays: ArrayLike | sp.sparray | sp.spmatrix | None, tau: int
) -> sp.csr_array:
    """The delay-augmented column-stochastic matrix (docs/theory.md section 1b, "Delays and the augmented matrix").

    With ``N = n(tau+1)`` rows, row ``r*n + i`` is "node i, delay r" (r = 0 the
    real node). For each message ``j -> i`` (``i != j``) with delay r:
    ``Pt[r*n + i, j] = P[i, j]``; the self share is never delayed:
    ``Pt[i, i] = P[i, i]``; the buffer chain ``Pt[(r-1)*n + i, r*n + i] = 1``
    for ``r = 1..tau``.

    Parameters
    ----------
    P : sparse or array_like, shape (n, n)
        Column-stochastic mixing matrix.
    delays : sparse or array_like of int, shape (n, n), or None
        Delay of each message in ``0..tau``. Entries that a sparse ``delays``
        leaves out mean delay 0; the diagonal is ignored. None: all zero.
    tau : int
        Maximum delay, >= 0.

    Returns
    -------
    scipy.sparse.csr_array
        Shape ``(n(tau+1), n(tau+1))``, column-stochastic; rows ``0..n-1`` are
        the real nodes.

    Notes
    -----
    Buffer rows start with x = 0, w = 0 and receive no gradient; the mass of
    all N rows obeys the same invariant as SGP without delays.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> D = np.array([[0, 1], [0, 0]])   # message 1 -> 0 delayed one step
    >>> augment(P, D, tau=1).toarray()
    array([[0.5, 0. , 1. , 0. ],
           [0.5, 0.5, 0. , 1. ],
           [0. , 0.5, 0. , 0. ],
           [0. , 0. , 0. , 0. ]])
    """
    tau = check_int("tau", tau, min_value=0)
    P = sp.coo_array(P) if sp.issparse(P) else sp.coo_array(np.asarray(P, dtype=float))
    if P.ndim != 2 or P.shape[0] != P.shape[1]:
        raise ValueError(f"P must be a square matrix, got shape {P.shape}")
    n = P.shape[0]
    rows, cols, vals = P.row.astype(np.int64), P.col.astype(np.int64), P.data.astype(float)
    off = rows != cols
    if delays is None:
        d = np.zeros(int(off.sum()), dtype=np.int64)
    else:
        if sp.issparse(delays):
            D = sp.csr_array(delays)
        else:
            D = np.asarray(delays)
            if D.shape != P.shape:
                raise ValueError(f"delays must have the shape of P {P.shape}, got {D.shape}")
        if D.shape != P.shape:
            raise ValueError(f"delays must have the shape of P {P.shape}, got {D.shape}")
        dv = D[rows[off], cols[off]]
        d = np.asarray(dv.todense() if sp.issparse(dv) else dv).ravel()
        if d.size and (np.any(d != np.round(d)) or d.min() < 0 or d.max() > tau):
            bad = d[(d != np.round(d)) | (d < 0) | (d > tau)][0]
            raise ValueError(f"delays must be integers in [0, {tau}] (tau), got {bad}")
        d = d.astype(np.int64)
    N = n * (tau + 1)
    new_rows = rows.copy()
    new_rows[off] = d * n + rows[off]
    chain_src = np.arange(n, N, dtype=np.int64)
    chain_dst = chain_src - n
    return _csr(
        N,
        np.concatenate([new_rows, chain_dst]),
        np.concatenate([cols, chain_src]),
        np.concatenate([vals, np.ones(N - n)]),
    )


class MixingSchedule:
    """The sequence of mixing matrices ``P^(k)`` (delay-augmented if ``tau > 0``).

    Build it with :func:`mixing_schedule`. ``matrix(k)`` returns the CSR matrix of
    step k, of shape ``(N, N)`` with ``N = n * (tau + 1)``; rows ``0..n-1`` are the
    real nodes. Periodic schedules cache one period of matrices.
    """

    def __init__(
        self,
        n: int,
        period: int | None,
        base: Callable[[int], sp.csr_array],
        tau: int,
        model: DelayModel | None,
        name: str,
    ) -> None:
        self.n = n
        self.tau = tau
        self.N = n * (tau + 1)
        self.model = model
        # cache only delays known not to depend on k (a user DelayModel may)
        static = model is None or tau == 0 or type(model) in (FixedDelay, LinkDelay)
        self.period = period if static else None
        self._base = base
        self.name = name
        self._cache = {}

    def base_matrix(self, k: int) -> sp.csr_array:
        """The un-augmented ``(n, n)`` matrix of step k."""
        k = check_int("k", k, min_value=0)
        return self._base(k)

    def matrix(self, k: int) -> sp.csr_array:
        k = check_int("k", k, min_value=0)
        key = k % self.period if self.period is not None else None
        if key is not None and key in self._cache:
            return self._cache[key]
        P = self._base(k)
        if self.tau > 0:
            P = augment(P, delay_matrix(P, self.model, k), self.tau)
        if key is not None:
            self._cache[key] = P
        return P

    def __repr__(self) -> str:
        return f"<MixingSchedule {self.name}: n={self.n}, tau={self.tau}, period={self.period}>"


def check_delay_shape(model: object, n: int) -> None:
    """Raise ValueError unless a per-link delay model (:class:`LinkDelay`) is ``(n, n)``
    (other models, and None, fit any number of nodes)."""
    if isinstance(model, LinkDelay) and model.shape != (n, n):
        raise ValueError(
            f"delay must be a per-link delay matrix of shape ({n}, {n}) for {n} nodes, got shape {model.shape}"
        )


def mixing_schedule(
    source: Topology | nx.Graph | ArrayLike | sp.sparray | sp.spmatrix | Sequence[object],
    *,
    weights: str = "push",
    tau: int = 0,
    delay: str | DelayModel | ArrayLike | sp.sparray | sp.spmatrix = "fixed",
    seed: int | np.random.SeedSequence | None = None,
    validate: bool = True,
) -> MixingSchedule:
    """A :class:`MixingSchedule` from a topology, a matrix, or a list of matrices.

    Parameters
    ----------
    source : Topology, networkx graph, array_like, sparse matrix, or sequence of them
        A topology gives ``push_matrix`` (or ``metropolis_matrix``) weights; a
        matrix is used at every step; a list of matrices is cycled through, as
        is a list of networkx graphs or of topologies (see :func:`as_topology`).
        User matrices are validated with :func:`check_column_stochastic`.
    weights : {"push", "metropolis"}
        Weights for a topology.
    tau : int
        Maximum message delay; 0 means no delay (no augmentation).
    delay : {"fixed", "random"}, DelayModel or matrix
        Delay model used when ``tau > 0`` (see :func:`delay_model`).
    seed : int, optional
        Seed of a random delay model.
    validate : bool
        Check user matrices fully (column sums, signs, diagonal). With False
        only shape and finiteness are checked, so that
        :func:`sgpverify.check_mixing` can report the violations it measures.

    Examples
    --------
    >>> import sgpverify as sv
    >>> S = mixing_schedule(sv.graphs.ring(4), tau=2)
    >>> S.matrix(0).shape, S.period
    ((12, 12), 1)
    """
    check_choice("weights", weights, ("push", "metropolis"))
    tau = check_int("tau", tau, min_value=0)
    model = delay_model(delay, tau, seed) if tau > 0 else None

    def check_delays(n):
        check_delay_shape(model, n)

    source = as_topology(source)
    if isinstance(source, Topology):
        check_delays(source.n)
        topo = source
        if weights == "push":
            base = lambda k: push_matrix(topo, k)  # noqa: E731
        else:
            base = lambda k: metropolis_matrix(topo, k)  # noqa: E731
        return MixingSchedule(topo.n, topo.period, base, tau, model, topo.name)
    if (
        sp.issparse(source)
        or (isinstance(source, np.ndarray) and source.ndim == 2)
        or (isinstance(source, (list, tuple)) and source and not _is_matrix_like(source[0]))
    ):
        mats = [source]
    elif isinstance(source, (list, tuple)) and source:
        mats = list(source)
    else:
        raise TypeError(f"source must be {SOURCE_KINDS}, got {_kind(source)}")
    names = ["P"] if len(mats) == 1 else [f"P^({i})" for i in range(len(mats))]
    if validate:
        checked = [check_column_stochastic(M, name=nm) for nm, M in zip(names, mats)]
    else:
        checked = [
            check_column_stochastic(M, atol=np.inf, name=nm, require_positive_diagonal=False, allow_negative=True)
            for nm, M in zip(names, mats)
        ]
    ns = {M.shape[0] for M in checked}
    if len(ns) != 1:
        raise ValueError(f"matrices must all have the same shape, got sizes {sorted(ns)}")
    n = ns.pop()
    check_delays(n)
    seq = tuple(checked)
    return MixingSchedule(
        n, len(seq), lambda k: seq[k % len(seq)], tau, model, f"user matrices (n={n}, period={len(seq)})"
    )


def _is_matrix_like(x):
    return sp.issparse(x) or (np.ndim(x) == 2)


#: What :func:`mixing_schedule` (and so :func:`sgpverify.check_mixing`) accepts, in the words of its errors.
SOURCE_KINDS = (
    "a Topology, a networkx graph, a matrix, or a non-empty list of matrices, of networkx graphs or of "
    "topologies (a periodic schedule: item k mod len at step k)"
)


def _kind(source):
    if isinstance(source, (list, tuple)):
        kinds = sorted({type(x).__name__ for x in source})
        return f"a list of {', '.join(kinds)}" if source else "an empty list"
    return type(source).__name__


def as_topology(source: object) -> object:
    """``source`` as a :class:`~sgpverify.graphs.Topology` where it describes one, else unchanged.

    A networkx graph becomes :func:`~sgpverify.graphs.from_networkx`'s static
    topology, a list of networkx graphs its periodic schedule, and a list of
    topologies :func:`~sgpverify.graphs.schedule` (one step each, cycling).
    A list mixing kinds is refused (TypeError saying what is accepted);
    matrices and anything else are returned as they are.

    Examples
    --------
    >>> import networkx as nx
    >>> as_topology([nx.cycle_graph(4, create_using=nx.DiGraph), nx.complete_graph(4)]).period
    2
    """
    import networkx as nx

    from .graphs import from_networkx, schedule

    if isinstance(source, nx.Graph):
        return from_networkx(source)
    if isinstance(source, (list, tuple)) and source:
        graphs = [isinstance(x, nx.Graph) for x in source]
        topos = [isinstance(x, Topology) for x in source]
        if all(graphs):
            return from_networkx(list(source))
        if all(topos):
            return schedule(list(source))
        if any(graphs) or any(topos):
            raise TypeError(
                f"source must be {SOURCE_KINDS}, got {_kind(source)}: build a mixed schedule with "
                "sgpverify.graphs.schedule([...]) of topologies (sgpverify.graphs.from_networkx(g) for a graph)"
            )
    return source
