"""The gossip of the engine: each step's mixing matrices, and their product with the state.

:class:`Mixer` turns a schedule into the matrices of each step, split by
message delay (:class:`Split` without delays: diagonal and messages;
:class:`DelayedParts` from a topology with delays), in bare compressed arrays
(:class:`CSR`) for scipy's in-place kernels. :class:`State` holds the
numerators, the push-sum weights and the inbox ring of messages in flight;
:func:`gossip` and :func:`gossip_weights` mix it in place. When a weight
falls low, :func:`check_connected` asks whether the schedule is to blame.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import scipy.sparse as sp

from ..errors import MixingAssumptionError
from ..graphs import PeriodicTopology, Topology, is_strongly_connected, normalize_edges
from ..mixing import DelayModel, FixedDelay, LinkDelay, MixingSchedule, RandomDelay
from .kernels import Edges

try:  # in-place Y += A @ X for CSR / CSC A (no temporary): scipy's own kernels
    from scipy.sparse._sparsetools import csc_matvecs, csr_matvecs
except ImportError:  # pragma: no cover - very old or future scipy
    csr_matvecs = csc_matvecs = None


class CSR:
    """Bare compressed sparse arrays (CSR, or CSC with ``by_column``) for the
    in-place kernels, without scipy object overhead per step."""

    __slots__ = ("indptr", "indices", "data", "shape", "nnz", "by_column")

    def __init__(
        self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, shape: tuple[int, int], by_column: bool = False
    ) -> None:
        self.indptr, self.indices, self.data, self.shape = indptr, indices, data, shape
        self.nnz = int(data.size)
        self.by_column = by_column

    @classmethod
    def from_rows(cls, n: int, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> CSR:
        """CSR from entries in any order (a stable sort by row)."""
        order = np.argsort(rows, kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        return cls(indptr, cols[order].astype(np.int32), np.ascontiguousarray(vals[order], dtype=float), (n, n))

    @classmethod
    def from_sorted_cols(cls, n: int, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> CSR:
        """CSC from entries already sorted by column (edges sorted by sender): no sort."""
        indptr = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(np.bincount(cols, minlength=n), out=indptr[1:])
        return cls(indptr, rows.astype(np.int32), np.ascontiguousarray(vals, dtype=float), (n, n), True)

    def to_scipy(self) -> sp.csr_array | sp.csc_array:
        """The same matrix as a scipy sparse array."""
        fmt = sp.csc_array if self.by_column else sp.csr_array
        return fmt((self.data, self.indices, self.indptr), shape=self.shape)


class Split:
    """The gossip of one step without delays: diagonal ``diag`` (n,) and the
    off-diagonal messages ``off`` (CSR/CSC). ``keeps_ones``: whether the
    weight gossip maps an all-ones weight array to exactly 1 again (None until
    measured; cached with the step, so a periodic doubly stochastic schedule
    measures it once per step of the period and then skips the weight gossip).

    From a topology the messages are kept as ``edges`` = (src, dst, vals),
    sorted by sender, and ``off`` (CSC) is built from them when first asked
    for: the compiled step (:mod:`sgpverify.engine.kernels`) reads the edges
    directly, and ``rows`` caches their regrouping by receiver.

    A circulant step with one peer (``shift`` = o: every node i sends half of its
    state to ``i + o mod n`` and keeps half, :func:`sgpverify.graphs.exponential`)
    holds no matrix: the numpy path adds the shifted halves (:func:`gossip_shift`,
    the same products and sums as the sparse product), its ``edges`` are made only
    when read (the compiled and the small-state steps), and it maps 1 to exactly
    1 (``0.5 + 0.5``), so ``keeps_ones`` is known without measuring.

    ``peer``: a random-peer step (every node i keeps half and sends half to
    ``edges[1][i]``; senders 0..n-1, every share 1/2), for the compiled step's own kernel."""

    __slots__ = ("diag", "diag2", "diag3", "_off", "keeps_ones", "_edges", "rows", "csr", "shift", "peer")

    def __init__(
        self,
        diag: np.ndarray,
        off: CSR | None,
        edges: Edges | None = None,
        uniform: float | None = None,
        shift: int | None = None,
        peer: bool = False,
    ) -> None:
        self.diag, self._off, self.keeps_ones, self.peer = diag, off, None, peer
        # the diagonal broadcast over the weights (n, R) and the state (n, R, d); ``uniform``: the one
        # value of every diagonal entry (random peer: 1/2), a scalar factor then (the same products)
        self.diag2 = diag[:, None] if uniform is None else uniform
        self.diag3 = diag[:, None, None] if uniform is None else uniform
        self._edges = edges
        self.rows = None
        self.csr = None if off is None or off.by_column else (off.indptr, off.indices, off.data)
        self.shift = shift
        if shift is not None:
            self.keeps_ones = True  # 0.5 * 1 + 0.5 * 1 == 1 exactly, at every node

    @property
    def edges(self) -> Edges | None:
        """The messages (src, dst, vals) sorted by sender (None for a step given by matrices)."""
        if self._edges is None and self.shift is not None:
            n = self.diag.shape[0]
            src = np.arange(n, dtype=np.int64)
            dst = src + self.shift  # (i + o) mod n for 0 < o < n
            dst[n - self.shift :] -= n
            self._edges = (src, dst, self.diag)
        return self._edges

    @property
    def off(self) -> CSR:
        """The off-diagonal messages (CSR, or CSC built from ``edges``)."""
        if self._off is None:
            src, dst, vals = self.edges
            self._off = CSR.from_sorted_cols(self.diag.shape[0], dst, src, vals)
        return self._off


class Mixer:
    """The gossip matrices of each iteration, split by message delay.

    ``step(k)`` returns ``(parts, split, lost)``. With delays, ``parts[r]`` is
    the CSR matrix of the messages of delay r (``parts[0]`` also holds the
    diagonal, the self share). Without delays ``split`` (a :class:`Split`:
    diagonal and off-diagonal CSR) lets the gossip write ``diag * Y`` and add
    the messages, with no zeroing pass. A topology with push weights is turned
    into CSR arrays straight from its edges (``P[i, j] = 1/(outdeg_j + 1)``,
    the same matrix as :func:`sgpverify.mixing.push_matrix`); other schedules
    go through their scipy matrices. Periodic schedules whose delays cannot
    depend on k (none, :class:`~sgpverify.mixing.FixedDelay`,
    :class:`~sgpverify.mixing.LinkDelay`) and that lose no messages are
    cached per period; the cache never changes a result (the tests compare
    every run with its aperiodic twin, bit for bit).
    """

    def __init__(
        self, schedule: MixingSchedule, tau: int, model: DelayModel | None, topology: Topology | None = None
    ) -> None:
        self.S = schedule
        self.topo = topology
        self.tau = tau
        self.model = model
        # only delays known not to depend on k may be cached (a user DelayModel
        # or a random one is asked every step): the cache never changes a result
        static = model is None or type(model) in (FixedDelay, LinkDelay)
        lossy = topology is not None and topology.loses_messages
        self.cacheable = schedule.period is not None and static and not lossy
        self._cache = {}
        self._eye = None  # (indptr, indices) of the diagonal part, made once
        # random peer: one message per node, so every push weight is 1/2 and the senders are 0..n-1;
        # its receivers come without the edge array (the same values as from edges(k))
        self._one_peer = None
        if topology is not None and topology.one_peer and topology.n > 1:
            n = topology.n
            half = np.full(n, 0.5)  # 1 / (out-degree 1 + 1), exactly
            half.setflags(write=False)
            src = np.arange(n, dtype=np.int64)
            src.setflags(write=False)
            self._one_peer = (src, half, np.arange(n + 1, dtype=np.int32) if n <= 2**30 else None)
        # a circulant schedule (its documented ``offsets``): its one-offset steps without delays are
        # shifts of the state, built without edges or matrix (:class:`Split` with ``shift``)
        self._shifts = None
        if (
            type(topology) is PeriodicTopology
            and topology.offsets is not None
            and topology.n > 1
            and len(topology.offsets) == topology.period
            and tau == 0
        ):
            half = np.full(topology.n, 0.5)
            half.setflags(write=False)
            self._shifts = (topology.offsets, half)

    def step(self, k: int) -> tuple[Parts | None, Split | None, np.ndarray | None]:
        """``(parts, split, lost)``: the gossip of step k (see the class doc) and,
        under message loss, each node's total share lost in flight (else None)."""
        key = k % self.S.period if self.cacheable else None
        if key is not None and key in self._cache:
            return self._cache[key]
        build = CSR.from_rows
        by_sender = False  # edges sorted by sender (a topology's)
        lost_share = keep = None
        if self._one_peer is not None:
            return self._peer_step(k)
        if self._shifts is not None:
            out = self._shift_step(k)
            if out is not None:
                if key is not None:
                    self._cache[key] = out
                return out
        if self.topo is not None:
            n = self.topo.n
            e = self.topo.edges(k)  # validated and sorted by sender
            src, dst = e[:, 0], e[:, 1]
            diag = 1.0 / (np.bincount(src, minlength=n) + 1.0)
            vals = diag[src]
            build = CSR.from_sorted_cols  # edges come sorted by sender
            by_sender = True
            if self.topo.loses_messages:
                lost = self.topo.lost(k)
                if lost.any():
                    lost_share = np.bincount(src[lost], weights=vals[lost], minlength=n)
                    keep = ~lost
        else:
            P = self.S.base_matrix(k)
            n = P.shape[0]
            C = sp.coo_array(P)
            off = C.row != C.col
            src, dst, vals = C.col[off].astype(np.int64), C.row[off].astype(np.int64), C.data[off]
            diag = np.ascontiguousarray(P.diagonal(), dtype=float)
        # delays are drawn for every message sent, lost ones included
        if not self.tau:
            d = None
        elif by_sender and type(self.model) is RandomDelay:  # a topology's edges are in canonical order
            d = self.model.sorted_edge_delays(k, src.size)
        else:
            d = self.model.edge_delays(k, src, dst)
        if keep is not None:  # lost messages never arrive
            src, dst, vals = src[keep], dst[keep], vals[keep]
            d = d[keep] if d is not None else None
        if self.tau == 0:
            if by_sender:  # the CSC is built when the numpy path asks for it
                edges = (np.ascontiguousarray(src), np.ascontiguousarray(dst), np.ascontiguousarray(vals, dtype=float))
                out = (None, Split(diag, None, edges), lost_share)
            else:
                out = (None, Split(diag, build(n, dst, src, vals)), lost_share)
        elif by_sender:
            if self._eye is None or self._eye[1].size != n:
                self._eye = (np.arange(n + 1, dtype=np.int32), np.arange(n, dtype=np.int32))
            parts = DelayedParts(
                self.tau + 1,
                self._eye,
                np.ascontiguousarray(diag, dtype=float),
                np.ascontiguousarray(src),
                np.ascontiguousarray(dst),
                np.ascontiguousarray(vals, dtype=float),
                np.ascontiguousarray(d),
            )
            out = (parts, None, lost_share)
        else:
            idx = np.arange(n)
            # the self share (never delayed) arrives with the delay-0 messages
            parts = [[CSR.from_sorted_cols(n, idx, idx, diag)]]
            for r in range(self.tau + 1):
                m = d == r
                A = build(n, dst[m], src[m], vals[m])
                if r == 0:
                    parts[0].append(A)
                else:
                    parts.append([A])
            out = (parts, None, lost_share)
        if key is not None:
            self._cache[key] = out
        return out

    def _shift_step(self, k: int) -> tuple[None, Split, None] | None:
        """:meth:`step` on a circulant step with one offset o (``i -> i + o mod n``, push
        weights 1/2), without delays: a :class:`Split` with ``shift`` = o, or None when
        the step is not one (several offsets, or its edges do not end as the offset says)."""
        offsets, half = self._shifts
        offs = offsets[k % len(offsets)]
        n = half.size
        if len(offs) != 1 or int(offs[0]) % n == 0:
            return None
        o = int(offs[0]) % n
        e = self.topo.edges(k)  # the stored array: a check of the contract in O(1)
        if e.shape[0] != n or int(e[0, 1]) != o or int(e[-1, 0]) != n - 1 or int(e[-1, 1]) != (n - 1 + o) % n:
            return None
        return None, Split(half, None, uniform=0.5, shift=o), None

    def _peer_step(self, k: int) -> tuple[Parts | None, Split | None, None]:
        """:meth:`step` on random peer (never cached, never lossy): the same arrays as
        the general path computes from ``edges(k)``, without it (the diagonal and the
        shares are 1/2, the senders 0..n-1 in order, one message each)."""
        src, half, indptr = self._one_peer
        n = src.size
        dst = self.topo.peers(k)
        if self.tau == 0:
            # the CSC of the numpy path, by sender: one entry per column
            off = CSR(indptr, dst, half, (n, n), True) if indptr is not None else None
            return None, Split(half, off, (src, dst, half), uniform=0.5, peer=True), None
        if type(self.model) is RandomDelay:
            d = self.model.sorted_edge_delays(k, n)
        else:
            d = np.ascontiguousarray(self.model.edge_delays(k, src, dst))
        if self._eye is None:
            self._eye = (np.arange(n + 1, dtype=np.int32), np.arange(n, dtype=np.int32))
        return DelayedParts(self.tau + 1, self._eye, half, src, dst, half, d), None, None


class DelayedParts:
    """The parts of a delayed step from a topology (see :class:`Mixer`), built
    when first read. The compiled step (:mod:`sgpverify.engine.kernels`) reads the
    edges (sorted by sender) and their delays instead, and never builds them."""

    __slots__ = ("slots", "eye", "diag", "src", "dst", "vals", "delays", "_parts")

    def __init__(
        self,
        slots: int,
        eye: tuple[np.ndarray, np.ndarray],
        diag: np.ndarray,
        src: np.ndarray,
        dst: np.ndarray,
        vals: np.ndarray,
        delays: np.ndarray,
    ) -> None:
        self.slots, self.eye, self.diag = slots, eye, diag
        self.src, self.dst, self.vals, self.delays = src, dst, vals, delays
        self._parts = None

    def _build(self):
        # one stable sort by delay (senders stay in order within a delay) and
        # one count per (delay, sender)
        slots, n = self.slots, self.diag.shape[0]
        src, dst, vals, d = self.src, self.dst, self.vals, self.delays
        parts = [[CSR(self.eye[0], self.eye[1], self.diag, (n, n), True)]]
        order = np.argsort(d, kind="stable")
        indptr = np.zeros((slots, n + 1), dtype=np.int32)
        np.cumsum(np.bincount(d * n + src, minlength=slots * n).reshape(slots, n), axis=1, out=indptr[:, 1:])
        rows = dst[order].astype(np.int32)
        v = np.ascontiguousarray(vals[order], dtype=float)
        a = 0
        for r in range(slots):
            b = a + int(indptr[r, -1])
            A = CSR(indptr[r], rows[a:b], v[a:b], (n, n), True)
            if r == 0:
                parts[0].append(A)
            else:
                parts.append([A])
            a = b
        self._parts = parts
        return parts

    def __iter__(self) -> Iterator[list[CSR]]:
        return iter(self._parts if self._parts is not None else self._build())

    def __len__(self) -> int:
        return self.slots

    def __getitem__(self, r: int) -> list[CSR]:
        return (self._parts if self._parts is not None else self._build())[r]


#: The parts of a step with delays: ``parts[r]`` the matrices of the messages
#: of delay r (``parts[0]`` with the self shares first).
Parts = list[list[CSR]] | DelayedParts


def spmm_add(A: CSR, X2: np.ndarray, Y2: np.ndarray) -> None:
    """Y2 += A @ X2 in place (2-D C-contiguous float64 arrays)."""
    if A.nnz == 0:
        return
    if csr_matvecs is not None and X2.flags.c_contiguous and Y2.flags.c_contiguous:
        n_row, n_col = A.shape
        kernel = csc_matvecs if A.by_column else csr_matvecs
        kernel(n_row, n_col, X2.shape[1], A.indptr, A.indices, A.data, X2.ravel(), Y2.ravel())
    else:  # pragma: no cover - scipy without the kernel
        Y2 += A.to_scipy() @ X2


class State:
    """Numerators X (n, R, d), weights w (n, R) and the inbox ring of messages in flight."""

    def __init__(self, X: np.ndarray, n_slots: int) -> None:
        n, R, d = X.shape
        self.X = X
        self.w = np.ones((n, R))
        self.inbox = [np.zeros(X.shape, X.dtype) for _ in range(n_slots)]  # fresh zero pages: no pass
        self.inbox_w = [np.zeros((n, R)) for _ in range(n_slots)]
        self.w_ones = True  # every weight exactly 1 (tracked by the weight gossip)
        # the inbox slot that :func:`rotate` has just zeroed (values and weights): nothing arrives
        # in it before the next step's gossip; None when not known
        self.empty = None

    @classmethod
    def of(cls, X: np.ndarray, w: np.ndarray) -> State:
        """A view of a state (X, w) without an inbox (for the finiteness checks)."""
        st = cls.__new__(cls)
        st.X, st.w, st.inbox, st.inbox_w, st.w_ones, st.empty = X, w, [], [], False, None
        return st


def gossip(k: int, st: State, parts: Parts | None, mix_weights: bool = True, split: Split | None = None) -> None:
    """Send the shares of st.X (and st.w) along each delay part; take in step k+1's arrivals.

    Slot ``(k + 1 + r) mod (tau + 1)`` receives the messages of delay r. The
    slot of arrival step k+1 becomes the new state, and the old state array,
    zeroed, becomes that slot: no copy of the state is made. Without delays
    (``split`` = diagonal and off-diagonal of P) the receiving array is written
    as ``diag * X`` first and the messages added, with no zeroing pass.
    """
    n, R, d = st.X.shape
    slots = len(st.inbox)
    X2 = st.X.reshape(n, R * d)
    if split is not None and slots == 1:
        out = st.inbox[0]
        if split.shift is not None and R * d <= SHIFT_ROW_MAX:
            gossip_shift(X2, split.shift, out.reshape(n, R * d))
        else:
            np.multiply(st.X, split.diag3, out=out)
            spmm_add(split.off, X2, out.reshape(n, R * d))
        st.X, st.inbox[0] = out, st.X
        if mix_weights:
            gossip_weights(st, split)
        return
    for r, mats in enumerate(parts):
        s = (k + 1 + r) % slots
        for A in mats:
            spmm_add(A, X2, st.inbox[s].reshape(n, R * d))
            if mix_weights:
                spmm_add(A, st.w, st.inbox_w[s])
    rotate(st, (k + 1) % slots, mix_weights)


#: Block of :func:`gossip_shift` (elements): two 512 KB temporaries, cache-resident.
SHIFT_BLOCK = 1 << 16
#: Rows longer than this gossip a shift step through the sparse product (as fast there: its
#: cost per row is paid once per long row), shorter ones through :func:`gossip_shift`
#: (n = 10^6, R d = 4: 2.3 against 3.3 full-array copies).
SHIFT_ROW_MAX = 64


def gossip_shift(X2: np.ndarray, o: int, out: np.ndarray) -> None:
    """``out[i] = X2[i] / 2 + X2[(i - o) mod n] / 2``: the gossip of a circulant step with one
    offset ``0 < o < n`` (the kept half, then the half received from node ``i - o``), by blocks
    of rows that stay in cache. The same products and sum as the sparse product
    (``out = diag * x``, then ``out[i] += p * x[j]``): the same bits."""
    n, m = X2.shape
    rows = max(1, SHIFT_BLOCK // max(m, 1))
    buf = np.empty((min(rows, n), m))
    # receivers o..n-1 hear from senders 0..n-o-1; receivers 0..o-1 from senders n-o..n-1
    for r0, r1, s0 in ((o, n, 0), (0, o, n - o)):
        for a in range(r0, r1, rows):
            b = min(a + rows, r1)
            t = buf[: b - a]
            np.multiply(X2[s0 + a - r0 : s0 + b - r0], 0.5, out=t)
            ob = out[a:b]
            np.multiply(X2[a:b], 0.5, out=ob)
            np.add(ob, t, out=ob)


def rotate(st: State, s: int, weights: bool = True) -> None:
    """Slot s (the arrivals of the next step) becomes the state; the old state,
    zeroed, becomes slot s: no copy of the state is made."""
    old = st.X
    st.X, st.inbox[s] = st.inbox[s], old
    old.fill(0.0)
    if weights:
        old_w = st.w
        st.w, st.inbox_w[s] = st.inbox_w[s], old_w
        old_w.fill(0.0)
    st.empty = s if weights else None


def gossip_weights(st: State, split: Split, mix: Callable[[np.ndarray, np.ndarray], object] | None = None) -> None:
    """``w <- P w`` without delays (``split``: see :class:`Split`); ``mix(w, out)``
    writes ``P w`` (default: numpy and scipy's kernel; the compiled step passes its own).

    While every weight is exactly 1 and this step's matrix is known to map 1
    to exactly 1 (measured the first time, with the same kernels), the gossip
    is skipped: its result would be the same array of ones, bit for bit.
    ``st.w_ones`` records whether the weights are still exactly 1."""
    if st.w_ones and split.keeps_ones:
        return
    out_w = st.inbox_w[0]
    if mix is None:
        np.multiply(st.w, split.diag2, out=out_w)
        edges = split.edges
        if edges is not None and edges[0].size >= ADD_AT_MIN:
            # many messages by sender: numpy's unbuffered scatter, in edge order (each receiver's
            # senders ascending, as scipy's kernel adds them), the same products p * w_j
            src, dst, vals = edges
            for r in range(st.w.shape[1]):
                np.add.at(out_w[:, r], dst, vals * st.w[src, r])
        else:
            spmm_add(split.off, st.w, out_w)
    else:
        mix(st.w, out_w)
    if st.w_ones:  # the input was all ones: so is the output iff P 1 = 1 exactly
        split.keeps_ones = st.w_ones = bool(np.all(out_w == 1.0))
    st.w, st.inbox_w[0] = out_w, st.w


#: Messages (by sender) from which the numpy path's weight gossip scatters them with
#: ``np.add.at`` (one random stream per replica) instead of scipy's sparse product:
#: 5.7 against 13.5 full-array copies of the state at n = 10^6, d = 4 on random peer.
ADD_AT_MIN = 1 << 16

#: Push-sum weight below which the engine checks that the schedule is strongly
#: connected (then again at each further factor ``_WEIGHT_ALARM_STEP``).
WEIGHT_ALARM = 1e-8
_WEIGHT_ALARM_STEP = 1e-4


def _window_edges(mixer: Mixer, a: int, b: int) -> np.ndarray:
    """Union of the communication edges of steps ``a <= k < b``."""
    if mixer.topo is not None:
        return mixer.topo.union(a, b)
    S = mixer.S
    ks = range(a, b) if S.period is None or b - a <= S.period else range(a, a + S.period)
    src, dst = [], []
    for k in ks:
        C = sp.coo_array(S.base_matrix(k))
        off = (C.row != C.col) & (C.data != 0)
        src.append(C.col[off])
        dst.append(C.row[off])
    return normalize_edges(np.concatenate(src), np.concatenate(dst), S.n)


def check_connected(mixer: Mixer, w: np.ndarray, k: int, alarm: float) -> float:
    """A weight fell below ``alarm`` at iteration k: is the schedule to blame?

    Raises MixingAssumptionError if the union graph over one period (periodic
    schedules) or over the second half of the run so far (aperiodic ones) is
    not strongly connected; otherwise returns the next alarm level.
    """
    n = w.shape[0]
    period = mixer.S.period if mixer.topo is None else mixer.topo.period
    if period is not None:  # one period decides for the whole run
        a, b = 0, period
        span = f"over its period ({period} step{'s' if period > 1 else ''}, so over the whole run)"
    else:
        a, b = k // 2, max(k, k // 2 + 1)
        span = f"over iterations {a}..{b - 1}"
    e = _window_edges(mixer, a, b)
    if not is_strongly_connected(n, e):
        indeg = np.bincount(e[:, 1], minlength=n) if len(e) else np.zeros(n, dtype=np.int64)
        deaf = np.flatnonzero(indeg == 0)
        i = int(np.argmin(w.min(axis=1)))
        who = (
            f"node(s) {deaf[:8].tolist()}{' ...' if deaf.size > 8 else ''} receive nothing"
            if deaf.size
            else "some nodes cannot be reached from others"
        )
        raise MixingAssumptionError(
            f"schedule is not strongly connected {span}: {who}; "
            f"the push-sum weight of node {i} fell to {float(w.min()):.3g} at iteration {k}, so z = x / w "
            f"grows without bound (the SGP analysis assumes B-strong connectivity: docs/theory.md section 1b, "
            f"'Connectivity and products of mixing matrices')"
        )
    return float(w.min()) * _WEIGHT_ALARM_STEP
