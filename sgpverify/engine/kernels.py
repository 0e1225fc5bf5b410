"""Compiled kernels for the engine's SGP step (optional: the ``fast`` extra, numba).

The numpy path of :mod:`sgpverify.engine` stays the reference. A kernel here
does the same floating-point operations in the same order, fused into fewer
passes over memory, so that a run gives the same bits with or without numba
(``tests/test_kernels.py`` compares every Trace field of both paths, and
``benchmarks/engine_bits.py`` compares whole runs).

One SGP step without delays (the numpy path of :mod:`sgpverify.engine.step`
and :mod:`sgpverify.engine.mixers`: ``_track`` or ``_node_sum``, ``axpy``,
``gossip``, ``gossip_weights``, the de-biasing divide) is::

    y_j = x_j + (a * g_j)                          # a = -gamma; two roundings
    out_i = diag_i * y_i                           # the self share
    out_i += p_ij * y_j  for each message j -> i   # senders ascending, then edge order
    msum = g_0 + g_1 + ... + g_{n-1}               # node by node (numpy's axis-0 sum)
    w'_i = diag_i * w_i;  w'_i += p_ij * w_j       # the weights, in the same order
    z_i = out_i * (1 / w'_i)                       # the next step's de-biased point: one
                                                   # reciprocal per weight (engine.step.debias)

Two orders of work give these same bits:

- *by receiver* (long rows, the memory-bound regime): each output row is
  written once, by blocks that stay in cache, with ``y_j`` recomputed where it
  is read and the de-biased row written from the same block. Messages given
  as edges sorted by sender are regrouped by receiver with a stable counting
  sort, which keeps each receiver's senders ascending: the order in which
  scipy's ``csc_matvecs`` adds them.
- *by sender* (short rows, large n, random graphs): the self shares in one
  sequential pass, then the messages in edge order (``out[dst] += p y_src``):
  one random stream instead of two, and no sort.

The weights (``w' = P w``) have kernels of their own, called first, so that
the step can divide by the new weights; on random peer, :func:`_peer_py` does
both in one loop over the messages and prefetches the receivers' rows (mostly
out of cache) a few messages ahead: more of those misses in flight at once.

With delays (tau-OSGP on a topology), :func:`delayed_step` adds the self
shares into the slot of step k+1 and each message, in edge order, into the
slot of its arrival, values and weights: per slot and receiver the order of
the parts of :func:`sgpverify.engine.mixers.gossip` (self share, then senders
ascending).

No ``fastmath``: LLVM does not contract ``a * b + c`` into a fused
multiply-add without it, so every operation rounds as in numpy.

Set the environment variable ``SGPVERIFY_KERNELS=numpy`` to run the numpy
path even when numba is installed; :func:`check_kernels_setting` validates it.

The compiled kernels are cached on disk by numba, in the per-user directory of
:func:`sgpverify.engine.kernel_cache.cache_dir` (never in the package's
``__pycache__``); the cache never changes a bit of the results.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading

import numpy as np

from .kernel_cache import cache_dir

#: Whether numba is installed. It is imported only when a kernel is first
#: compiled (importing it takes about half a second): this is enough to decide.
HAVE_NUMBA = importlib.util.find_spec("numba") is not None

__all__ = ["available", "enabled", "check_kernels_setting", "cache_dir"]

#: Elements of one block of a row in the by-receiver kernel (64 KB of each array: in L2).
_BLOCK = 8192
#: Rows up to this many entries are short: direct indexing, and the by-sender
#: kernel for edge lists.
SHORT = 16
#: Three arrays: messages (src, dst, vals), edges sorted by sender; or compressed
#: rows (ptr, idx, vals).
Edges = tuple[np.ndarray, np.ndarray, np.ndarray]

_LENGTHS = {}


def _length(m: int) -> tuple[int, ...]:
    """A tuple of m zeros for a row of m <= :data:`SHORT` entries (else the empty tuple).

    Its length is part of the tuple's numba type, so a kernel compiled for it
    (one compilation per length, cached on disk) loops ``range(len(T))`` with a
    constant trip count that LLVM unrolls: the random-access loops over a short
    row (by sender, the weights, the delayed step) ran about twice as fast
    (n = 10^6, d = 4) as with the trip count read at run time. The same
    operations in the same order: the same bits."""
    t = _LENGTHS.get(m)
    if t is None:
        t = _LENGTHS[m] = (0,) * m if m <= SHORT else ()
    return t


def available() -> bool:
    """Whether numba is installed (the ``fast`` extra)."""
    return HAVE_NUMBA


#: With ``SGPVERIFY_KERNELS=auto``, a run whose state entries times iterations
#: is below this (about 0.3 s on the numpy path) keeps the numpy path while
#: numba is not loaded yet: importing it and loading the compiled kernels
#: costs 0.3-0.4 s per process (compiling them the first time ever, 1.5-3 s;
#: benchmarks/kernel_parts.py).
AUTO_MIN_WORK = 1 << 24


def check_kernels_setting() -> str:
    """The environment variable ``SGPVERIFY_KERNELS``, validated.

    Returns ``"numpy"`` (the numpy path: ``numpy``, ``off``, ``0``, ``no``,
    ``false``), ``"auto"`` (unset, empty or ``auto``) or ``"numba"`` (the
    compiled step forced: ``numba``, ``on``, ``1``, ``yes``, ``true``), case
    and surrounding spaces ignored. The command line calls it before any
    work, so that a bad setting is named at once.

    Raises
    ------
    ValueError
        If the value is none of these, or forces the compiled step while
        numba is not installed.

    Examples
    --------
    >>> check_kernels_setting() in ("numpy", "auto", "numba")
    True
    """
    mode = os.environ.get("SGPVERIFY_KERNELS", "auto").strip().lower()
    if mode in ("numpy", "off", "0", "no", "false"):
        return "numpy"
    if mode not in ("auto", "numba", "on", "1", "yes", "true", ""):
        raise ValueError(f"SGPVERIFY_KERNELS must be 'auto', 'numba' or 'numpy', got {mode!r}")
    if mode in ("auto", ""):
        return "auto"
    if not HAVE_NUMBA:
        raise ValueError(
            f"SGPVERIFY_KERNELS={mode!r} asks for the compiled step, but numba is not installed "
            "(pip install 'sgpverify[fast]', or unset SGPVERIFY_KERNELS)"
        )
    return "numba"


def enabled(work: int | None = None) -> bool:
    """Whether the engine uses the compiled kernels for a run of ``work``
    state entries x iterations: numba installed and ``SGPVERIFY_KERNELS`` not
    ``numpy``; with ``auto`` (the default), only for runs of at least
    :data:`AUTO_MIN_WORK` or once numba is loaded. The bits are the same
    either way, so the choice only moves the time.

    Raises the errors of :func:`check_kernels_setting`."""
    setting = check_kernels_setting()
    if setting == "numpy" or not HAVE_NUMBA:
        return False
    return setting == "numba" or work is None or work >= AUTO_MIN_WORK or "numba" in sys.modules


# ---------------------------------------------------------------- the kernels
# Plain Python functions, compiled on first use (cached on disk by numba).


def _by_receiver_py(n, src, dst, vals, ptr, src_s, val_s):
    """Edges sorted by sender -> (ptr, src_s, val_s) grouped by receiver, stable."""
    for i in range(n + 1):
        ptr[i] = 0
    m = src.shape[0]
    for e in range(m):
        ptr[dst[e] + 1] += 1
    for i in range(n):
        ptr[i + 1] += ptr[i]
    for e in range(m):  # ptr[i]: the next free slot of receiver i
        i = dst[e]
        q = ptr[i]
        src_s[q] = src[e]
        val_s[q] = vals[e]
        ptr[i] = q + 1
    for i in range(n, 0, -1):  # back to the starts
        ptr[i] = ptr[i - 1]
    ptr[0] = 0


def _recv_py(X, G, a, diag, ptr, src, val, out, msum, Z, w, d, T):
    """By receiver: out_i = diag_i y_i + sum_j p_ij y_j (storage order of row i);
    msum (m,) or empty; Z (n, m) or empty: out * (1 / w) per replica segment of d;
    T: :func:`_length` of m (short rows: a constant row length)."""
    n, m = X.shape
    track = msum.shape[0] > 0
    debias = Z.shape[0] > 0
    if m <= SHORT:  # short rows: direct indexing, no slices
        if len(T) > 0:
            m = len(T)  # a compile-time constant
        for i in range(n):
            di = diag[i]
            for c in range(m):
                g = G[i, c]
                if track:
                    if i == 0:
                        msum[c] = g
                    else:
                        msum[c] += g
                o = di * (X[i, c] + a * g)
                for e in range(ptr[i], ptr[i + 1]):
                    j = src[e]
                    o += val[e] * (X[j, c] + a * G[j, c])
                out[i, c] = o
            if debias:
                for r in range(m // d):  # replica segments: no integer division per entry
                    rw = 1.0 / w[i, r]
                    for c in range(r * d, (r + 1) * d):
                        Z[i, c] = out[i, c] * rw
        return
    R = m // d if debias else 1  # with de-biasing: one weight per replica segment of d entries
    seg = d if debias else m
    spare = np.empty(min(_BLOCK, m))  # the node sum's place when it is not wanted
    for i in range(n):
        di = diag[i]
        e0 = ptr[i]
        e1 = ptr[i + 1]
        for r in range(R):
            rw = 1.0 / w[i, r] if debias else 1.0  # the reciprocal once per weight
            # by blocks of a segment: a block's arrays stay in cache between the loops;
            # each loop runs over slices from 0 (vectorised by LLVM)
            for b0 in range(r * seg, (r + 1) * seg, _BLOCK):
                b1 = min(b0 + _BLOCK, (r + 1) * seg)
                ob = out[i, b0:b1]
                xb = X[i, b0:b1]
                gb = G[i, b0:b1]
                nb = ob.shape[0]
                if debias and e1 <= e0 + 1 and i > 0:
                    # no message or one (most rows of random peer): the node sum, the row and its
                    # de-biased row in one loop; o + t rounds as ob[c] += t
                    sb = msum[b0:b1] if track else spare[:nb]
                    zb = Z[i, b0:b1]
                    if e1 == e0:
                        for c in range(nb):
                            g = gb[c]
                            sb[c] += g
                            o = di * (xb[c] + a * g)
                            ob[c] = o
                            zb[c] = o * rw
                    else:
                        j = src[e0]
                        p = val[e0]
                        xj = X[j, b0:b1]
                        gj = G[j, b0:b1]
                        for c in range(nb):
                            g = gb[c]
                            sb[c] += g
                            o = di * (xb[c] + a * g) + p * (xj[c] + a * gj[c])
                            ob[c] = o
                            zb[c] = o * rw
                    continue
                if track:  # the node-by-node sum of the steps, in node order
                    sb = msum[b0:b1]
                    if i == 0:
                        for c in range(nb):
                            sb[c] = gb[c]
                    else:
                        for c in range(nb):
                            sb[c] += gb[c]
                if e1 == e0:
                    for c in range(nb):
                        ob[c] = di * (xb[c] + a * gb[c])
                else:  # the self share and the first message in one loop (the same roundings)
                    j = src[e0]
                    p = val[e0]
                    xj = X[j, b0:b1]
                    gj = G[j, b0:b1]
                    for c in range(nb):
                        ob[c] = di * (xb[c] + a * gb[c]) + p * (xj[c] + a * gj[c])
                    for e in range(e0 + 1, e1):
                        j = src[e]
                        p = val[e]
                        xj = X[j, b0:b1]
                        gj = G[j, b0:b1]
                        for c in range(nb):
                            ob[c] += p * (xj[c] + a * gj[c])
                if debias:  # the next step's de-biased point, while the block is in cache
                    zb = Z[i, b0:b1]
                    for c in range(nb):
                        zb[c] = ob[c] * rw


def _send_py(X, G, a, diag, src, dst, vals, out, msum, Z, w, d, T):
    """By sender: self shares in one pass, then the messages in edge order
    (edges sorted by sender), then Z = out * (1 / w) (when Z is not empty);
    T: :func:`_length` of m."""
    n, m = X.shape
    if len(T) > 0:
        m = len(T)  # a compile-time constant
    track = msum.shape[0] > 0
    for i in range(n):
        di = diag[i]
        for c in range(m):
            g = G[i, c]
            if track:
                if i == 0:
                    msum[c] = g
                else:
                    msum[c] += g
            out[i, c] = di * (X[i, c] + a * g)
    for e in range(src.shape[0]):
        j = src[e]
        i = dst[e]
        p = vals[e]
        for c in range(m):
            out[i, c] += p * (X[j, c] + a * G[j, c])
    if Z.shape[0] > 0:
        for i in range(n):
            for r in range(m // d):  # replica segments: no integer division per entry
                rw = 1.0 / w[i, r]
                for c in range(r * d, (r + 1) * d):
                    Z[i, c] = out[i, c] * rw


#: Messages ahead whose receivers' rows :func:`_peer_py` prefetches (16-24 measured best at
#: n = 10^6, d = 4: the latency of a miss over the work of one message).
_AHEAD = 20


def _prefetch(A, i, c):
    """A hint that ``A[i, c]`` is about to be written (compiled: :func:`_install_prefetch`)."""


def _peer_py(X, G, a, dst, out, msum, Z, w, wout, d, T, TR):
    """:func:`_weights_edges_py` and :func:`_send_py` (the same operations and order) on random
    peer: node j keeps half and sends half to ``dst[j]``. The messages of values and weights in
    one loop, the receivers' rows prefetched :data:`_AHEAD` messages ahead (both ends: a row
    may straddle two cache lines). T, TR: :func:`_length` of m and of R."""
    n, m = X.shape
    R = w.shape[1]
    if len(T) > 0:
        m = len(T)  # compile-time constants
    if len(TR) > 0:
        R = len(TR)
    track = msum.shape[0] > 0
    for i in range(n):
        for c in range(m):
            g = G[i, c]
            if track:
                if i == 0:
                    msum[c] = g
                else:
                    msum[c] += g
            out[i, c] = 0.5 * (X[i, c] + a * g)
        for r in range(R):
            wout[i, r] = w[i, r] * 0.5
    for j in range(n):
        if j + _AHEAD < n:
            k = dst[j + _AHEAD]
            _prefetch(out, k, 0)
            _prefetch(out, k, m - 1)
            _prefetch(wout, k, 0)
        i = dst[j]
        for c in range(m):
            out[i, c] += 0.5 * (X[j, c] + a * G[j, c])
        for r in range(R):
            wout[i, r] += 0.5 * w[j, r]
    if Z.shape[0] > 0:
        for i in range(n):
            for r in range(R):
                rw = 1.0 / wout[i, r]
                for c in range(r * d, (r + 1) * d):
                    Z[i, c] = out[i, c] * rw


def _shift_py(X, G, a, o, out, msum, T):
    """:func:`_send_py` on a circulant step with one offset o (node i keeps half and sends half to
    ``i + o mod n``): ``out_i = 1/2 y_i + 1/2 y_j``, j = i - o mod n, both y recomputed (the same
    roundings as the self share, then the message added); one sequential pass. The weights of
    such a step stay 1: no de-biasing."""
    n, m = X.shape
    if len(T) > 0:
        m = len(T)
    track = msum.shape[0] > 0
    for i in range(n):
        j = i - o if i >= o else i - o + n
        for c in range(m):
            g = G[i, c]
            if track:
                if i == 0:
                    msum[c] = g
                else:
                    msum[c] += g
            out[i, c] = 0.5 * (X[i, c] + a * g) + 0.5 * (X[j, c] + a * G[j, c])


def _node_sum_py(X, out, T):
    """out = the node-by-node sum of X (n, m) (numpy's axis-0 sum: ``0 + x_0 + x_1 + ...``), in one
    pass that also returns the largest and the smallest entry; T: :func:`_length` of m."""
    n, m = X.shape
    if len(T) > 0:
        m = len(T)
    hi = X[0, 0]
    lo = X[0, 0]
    for c in range(m):
        out[c] = 0.0  # numpy's sum starts from its identity: a column of -0.0 sums to +0.0
    for i in range(n):
        for c in range(m):
            v = X[i, c]
            out[c] += v
            if v > hi:
                hi = v
            if v < lo:
                lo = v
    return hi, lo


def node_sum(X2: np.ndarray, out: np.ndarray) -> tuple[float, float]:
    """``out = X2.sum(axis=0)`` for X2 (n, m) C-contiguous float64, n >= 1, the same bits (nodes
    in order), and ``(X2.max(), X2.min())`` of a finite X2, from one pass over memory."""
    return _k("_node_sum")(X2, out, _length(X2.shape[1]))


def _weights_edges_py(w, diag, src, dst, vals, out, T):
    """w' = diag * w, then w'[dst] += p w[src] in edge order (scipy's csc order);
    T: :func:`_length` of R."""
    n, R = w.shape
    if len(T) > 0:
        R = len(T)  # a compile-time constant
    for i in range(n):
        di = diag[i]
        for r in range(R):
            out[i, r] = w[i, r] * di
    for e in range(src.shape[0]):
        j = src[e]
        i = dst[e]
        p = vals[e]
        for r in range(R):
            out[i, r] += p * w[j, r]


def _weights_rows_py(w, diag, ptr, idx, vals, out, T):
    """w' = diag * w, then each row's entries in storage order (scipy's csr order);
    T: :func:`_length` of R."""
    n, R = w.shape
    if len(T) > 0:
        R = len(T)  # a compile-time constant
    for i in range(n):
        di = diag[i]
        for r in range(R):
            o = w[i, r] * di
            for e in range(ptr[i], ptr[i + 1]):
                o += vals[e] * w[idx[e], r]
            out[i, r] = o


def _delayed_py(X, G, a, diag, src, dst, vals, dl, slots, s0, w, slots_w, T, TR):
    """tau-OSGP: slot s0 (arrivals at k+1) += diag * y and diag * w; then each
    message, in edge order (sorted by sender), into the slot of its arrival
    (s0 + delay) mod S. The order of gossip's parts: per slot and receiver,
    the self share first, then the senders ascending. T, TR: :func:`_length`
    of m and of R."""
    n, m = X.shape
    R = w.shape[1]
    if len(T) > 0:
        m = len(T)  # compile-time constants
    if len(TR) > 0:
        R = len(TR)
    S = len(slots)
    T0 = slots[s0]
    W0 = slots_w[s0]
    for i in range(n):
        di = diag[i]
        for c in range(m):
            T0[i, c] += di * (X[i, c] + a * G[i, c])
        for r in range(R):
            W0[i, r] += di * w[i, r]
    for e in range(src.shape[0]):
        j = src[e]
        i = dst[e]
        p = vals[e]
        s = (s0 + dl[e]) % S
        T = slots[s]
        for c in range(m):
            T[i, c] += p * (X[j, c] + a * G[j, c])
        Tw = slots_w[s]
        for r in range(R):
            Tw[i, r] += p * w[j, r]


def delayed_step(
    X2: np.ndarray,
    G2: np.ndarray,
    a: float,
    diag: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    vals: np.ndarray,
    delays: np.ndarray,
    slots: tuple[np.ndarray, ...],
    s0: int,
    w: np.ndarray,
    slots_w: tuple[np.ndarray, ...],
) -> None:
    """One tau-OSGP gossip of ``X2 + a G2`` and ``w`` into the inbox ``slots``
    (a tuple of (n, m) arrays) and ``slots_w`` ((n, R) arrays), bit-equal to
    the engine's ``axpy`` + ``gossip``; the caller rotates the slots."""
    T, TR = _length(X2.shape[1]), _length(w.shape[1])
    _k("_delayed")(X2, G2, float(a), diag, src, dst, vals, delays, slots, int(s0), w, slots_w, T, TR)


def _install_prefetch():
    """Replace :func:`_prefetch` by a numba intrinsic that emits ``llvm.prefetch`` (write,
    high locality, data cache) of ``A[i, c]``; a hint only, it changes no value."""
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def prefetch(typingctx, A, i, c):
        def codegen(context, builder, sig, args):
            aryty = sig.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            inds = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:], sig.args[1:])]
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, inds)
            i8p = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch"
            )
            builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 1), ir.Constant(i32, 3), ir.Constant(i32, 1)])
            return context.get_dummy_value()

        return types.void(A, i, c), codegen

    globals()["_prefetch"] = prefetch


_jit = {}
_jit_lock = threading.Lock()


def _compile(py_func):
    """``py_func`` compiled by numba, cached in :func:`cache_dir` (or not cached, where that is None)."""
    import numba

    where = cache_dir()
    jit = numba.njit(cache=where is not None, nogil=True, boundscheck=False, fastmath=False)
    if where is None or os.environ.get("NUMBA_CACHE_DIR", ""):
        return jit(py_func)
    # numba picks the cache directory when the dispatcher is made (its locator reads
    # numba.config.CACHE_DIR, the value of NUMBA_CACHE_DIR at import): set it for these
    # kernels only, so that other numba code of the process keeps its own cache places.
    config = numba.config
    before = config.CACHE_DIR
    config.CACHE_DIR = where
    try:
        return jit(py_func)
    finally:
        config.CACHE_DIR = before


def _k(name):
    f = _jit.get(name)
    if f is None:
        with _jit_lock:
            f = _jit.get(name)
            if f is None:
                if not _jit:  # the first kernel of the process: numba is being imported
                    _install_prefetch()
                f = _jit[name] = _compile(globals()[name + "_py"])
    return f


_E1 = np.zeros(0)
_E2 = np.zeros((0, 1))


class Step:
    """The fused SGP step of one engine run (reused scratch arrays)."""

    __slots__ = ("ptr", "src", "val")

    def __init__(self, n: int) -> None:
        self.ptr = np.zeros(n + 1, dtype=np.int64)
        self.src = np.zeros(0, dtype=np.int64)
        self.val = np.zeros(0)

    def rows(self, n: int, edges: Edges) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ptr, src, val) of the edges grouped by receiver (scratch arrays, reused)."""
        src, dst, vals = edges
        if self.src.size < src.size:
            self.src = np.empty(max(src.size, 2 * self.src.size), dtype=np.int64)
            self.val = np.empty(max(src.size, 2 * self.val.size))
        _k("_by_receiver")(n, src, dst, vals, self.ptr, self.src, self.val)
        return self.ptr, self.src, self.val

    @staticmethod
    def sends(edges: Edges | None, m: int) -> bool:
        """Whether :meth:`run` works by sender (edges, short rows) rather than by receiver."""
        return edges is not None and m <= SHORT

    def run(
        self,
        X2: np.ndarray,
        G2: np.ndarray,
        a: float,
        diag: np.ndarray,
        edges: Edges | None,
        csr: Edges | None,
        out2: np.ndarray,
        msum: np.ndarray | None = None,
        Z2: np.ndarray | None = None,
        w: np.ndarray | None = None,
        d: int = 1,
        rows: Edges | None = None,
    ) -> None:
        """``out2 = diag * (X2 + a G2) + P_off @ (X2 + a G2)`` with the numpy path's
        roundings and order; X2, G2, out2 (n, m) C-contiguous float64.

        ``edges``: (src, dst, vals) sorted by sender, or None; ``csr``: (ptr, idx,
        vals) by receiver in storage order (used when ``edges`` is None);
        ``rows``: the edges already grouped by receiver (a cached step).
        ``msum`` (m,) receives the node-by-node sum of G2; ``Z2`` receives
        ``out2 * (1 / w)`` with the new weights ``w`` (n, R), m = R d."""
        n, m = X2.shape
        ms = _E1 if msum is None else msum
        Zs, ws = (_E2, _E2) if Z2 is None else (Z2, w)
        if self.sends(edges, m):
            src, dst, vals = edges
            _k("_send")(X2, G2, a, diag, src, dst, vals, out2, ms, Zs, ws, d, _length(m))
            return
        if edges is not None:
            ptr, src, val = rows if rows is not None else self.rows(n, edges)
        else:
            ptr, src, val = csr
        _k("_recv")(X2, G2, a, diag, ptr, src, val, out2, ms, Zs, ws, d, _length(m))

    @staticmethod
    def peer(
        X2: np.ndarray,
        G2: np.ndarray,
        a: float,
        dst: np.ndarray,
        out2: np.ndarray,
        w: np.ndarray,
        out_w: np.ndarray,
        msum: np.ndarray | None = None,
        Z2: np.ndarray | None = None,
        d: int = 1,
    ) -> None:
        """:meth:`weights` and :meth:`run` for a random-peer step (node j keeps half and sends
        half to ``dst[j]``), X2 (n, m) with m <= :data:`SHORT`: ``out_w = P w``, ``out2 = P (X2 +
        a G2)`` and, with ``Z2``, ``Z2 = out2 * (1 / out_w)`` per replica segment of d; the
        same bits, with one pass over the messages for both."""
        ms, Zs, T = _E1 if msum is None else msum, _E2 if Z2 is None else Z2, _length(X2.shape[1])
        _k("_peer")(X2, G2, a, dst, out2, ms, Zs, w, out_w, d, T, _length(w.shape[1]))

    @staticmethod
    def shift(
        X2: np.ndarray, G2: np.ndarray, a: float, o: int, out2: np.ndarray, msum: np.ndarray | None = None
    ) -> None:
        """:meth:`run` for a circulant step with one offset ``0 < o < n`` and shares 1/2 (short
        rows, weights all 1): the same bits, one sequential pass instead of the messages' scatter."""
        _k("_shift")(X2, G2, a, o, out2, _E1 if msum is None else msum, _length(X2.shape[1]))

    @staticmethod
    def weights(w: np.ndarray, diag: np.ndarray, edges: Edges | None, csr: Edges | None, out: np.ndarray) -> None:
        """``out = P w`` (the numpy path's ``gossip_weights`` arithmetic)."""
        if edges is not None:
            _k("_weights_edges")(w, diag, edges[0], edges[1], edges[2], out, _length(w.shape[1]))
        else:
            _k("_weights_rows")(w, diag, csr[0], csr[1], csr[2], out, _length(w.shape[1]))
