"""The SGP step: each iteration's direction and update, in place on the state.

:class:`Stepper` runs the iterations of one :func:`~sgpverify.engine.simulate`
call: the direction (stochastic gradients at the de-biased points ``z = x / w``,
then local momentum) and the update (the step and the gossip of
:mod:`sgpverify.engine.mixers`), with the running sums the records read. The
update takes the compiled kernels (:mod:`sgpverify.engine.kernels`) or a
small-state shortcut where they apply; each does the numpy path's operations
in its order, so that the bits never depend on the path. The finiteness
checks name the node and iteration of a divergence.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import SimulationDivergedError
from ..problems import replica_grads
from . import kernels
from .mixers import (
    WEIGHT_ALARM,
    DelayedParts,
    Mixer,
    State,
    check_connected,
    csc_matvecs,
    csr_matvecs,
    gossip,
    gossip_weights,
    rotate,
)

#: Arrays from this size on are memory-bound: the update and the node sums
#: stream by blocks (no full-size temporary) instead of one numpy expression.
BLAS_MIN = 1 << 18
#: Block of the large-array update (elements): a 512 KB temporary, cache-resident.
AXPY_BLOCK = 1 << 16
#: The first steps of a run, among which the first whose points differ between all replicas
#: probes the stacked ``grad`` call of a problem without ``grad_replicas`` against the R calls
#: on the replicas' shared stream (see :mod:`sgpverify.problems`); none such: the R calls.
PROBES = 8


class Stepper:
    """The iterations of one run, in place on the state ``st``.

    :meth:`direction` gives iteration k's step direction, :meth:`update`
    applies it: ``(st.X, st.w)`` become the state at k + 1. ``Z`` (n, R, d)
    receives the de-biased points the gradients are taken at (the records
    share it). The arguments are :func:`~sgpverify.engine.simulate`'s,
    validated; ``mixer`` is None for the algorithms without gossip matrices.

    What the iterations accumulate, for the records: ``applied`` (R, d), the
    sum over nodes and iterations of the applied steps (mass tracking);
    ``lost_x`` (R, d) and ``lost_w`` (R,), the numerator mass and weight lost
    in flight (message loss); ``w_low``, the smallest weight of a real node
    when a gradient was taken.

    The update takes the first path that applies, all with the same bits: the
    compiled fused step (numba, no delays), the compiled delayed step, the
    small-state step, the numpy path.
    """

    def __init__(
        self,
        st: State,
        problem: Any,
        rngs: Sequence[np.random.Generator],
        Z: np.ndarray,
        mixer: Mixer | None,
        *,
        algorithm: str,
        gamma: float,
        n_iter: int,
        beta: float = 0.0,
        nesterov: bool = False,
        send_before_step: bool = False,
        average_every: int = 10,
        debias: bool = True,
        track_mass: bool = True,
    ) -> None:
        X = st.X
        n, R, d = X.shape
        self.st, self.problem, self.Z, self.mixer = st, problem, Z, mixer
        self.algorithm, self.gamma, self.push = algorithm, gamma, algorithm == "sgp"
        self.beta, self.nesterov = beta, nesterov
        self.send_before_step, self.H = send_before_step, average_every
        self.debias, self.track_mass = debias, track_mass
        self.U = np.zeros_like(X) if beta > 0 else None
        self.applied = np.zeros((R, d))  # sum over nodes and iterations of the applied steps
        # ones @ G2: the mass tracking's node sum of small states (large ones sum by _node_sum; node_dot's probe
        # of a large shape would cost about 2 s and 4 copies of the state at n = 1024, d = 20000)
        self.sum_nodes = node_dot(n, R * d) if X.size < BLAS_MIN else None
        self.lost_x = np.zeros((R, d))  # numerator mass lost in flight (message loss)
        self.lost_w = np.zeros(R)
        self.w_low = 1.0  # smallest weight of a real node when a gradient was taken
        self.alarm = WEIGHT_ALARM  # next weight level that triggers the connectivity check
        self.gradients = _Gradients(problem, rngs, X.shape)
        push = self.push
        tau = mixer.tau if push else 0
        self.small = push and tau == 0 and not send_before_step and X.size < BLAS_MIN and csr_matvecs is not None
        # the compiled fused step (numba, the `fast` extra): same operations, same order, same bits
        compiled = push and not send_before_step and kernels.enabled(X.size * max(n_iter, 1))
        self.fused = _Fused(n, R * d, X.size >= BLAS_MIN, mixer.cacheable) if compiled and tau == 0 else None
        self.fused_delayed = compiled and tau > 0
        # the records' node sums of large states through the compiled kernel too (the same bits)
        self.compiled_sums = compiled and X.size >= BLAS_MIN
        # Z = X (1/w) already written for this step's state (by the fused step or by a record)
        self.z_ready = False

    def direction(self, k: int) -> np.ndarray:
        """Iteration k's step direction (n, R, d): the stochastic gradients at
        the de-biased points ``z = x / w``, then the local momentum (never
        communicated). Checks the schedule's connectivity when a push-sum
        weight falls to a new low below the alarm level."""
        st, gradients = self.st, self.gradients
        # 1. stochastic gradients at the de-biased points z = x / w
        if self.push and not st.w_ones:
            wmin = float(st.w.min())
            if wmin < self.w_low:
                self.w_low = wmin
                if wmin < self.alarm:
                    self.alarm = check_connected(self.mixer, st.w, k, self.alarm)
            if gradients.major:  # Z = X (1/w) when written already (a record's, the fused step's)
                G = gradients.at(self.Z) if self.z_ready else gradients.at(st.X, st.w if self.debias else None)
            elif self.debias:
                if not self.z_ready:  # else the fused step wrote it with the same arithmetic
                    debias(st.X, st.w, self.Z)
                G = gradients(self.Z)
            else:
                G = gradients(st.X)
        else:
            G = gradients.at(st.X) if gradients.major else gradients(st.X)
        self.z_ready = False
        # 2. local momentum (never communicated)
        U = self.U
        if U is not None:
            U *= self.beta
            U += G
            G = G + self.beta * U if self.nesterov else U
        return G

    def _lean(self, k, G, split):
        """The compiled step of a small state whose weights stay all 1 on a cached step (its
        messages regrouped by receiver) or a circulant step with one offset: what
        :meth:`_Fused.step` does then (``_track``, no weight gossip, no de-biasing, the
        by-receiver kernel or the shift kernel: the same products and sums), without its branches."""
        st = self.st
        X = st.X
        n = X.shape[0]
        X2, G2 = X.reshape(n, -1), G.reshape(n, -1)
        if self.track_mass:
            _track(self.applied, G, self.sum_nodes, st, k, self.gamma, self.problem, self.w_low)
        out = st.inbox[0]
        if split.shift is not None:  # one message per receiver, shares 1/2: _recv's sums, in one pass
            kernels.Step.shift(X2, G2, -self.gamma, split.shift, out.reshape(n, -1))
        else:
            self.fused.k.run(
                X2, G2, -self.gamma, split.diag, split.edges, None, out.reshape(n, -1), d=X.shape[2], rows=split.rows
            )
        st.X, st.inbox[0] = out, X

    def update(self, k: int, G: np.ndarray) -> None:
        """Iteration k's update with direction ``G``: the step and the gossip."""
        st, gamma, problem = self.st, self.gamma, self.problem
        if not self.push:
            if self.track_mass:
                _track(self.applied, G, self.sum_nodes, st, k, gamma, problem, self.w_low)
            if self.algorithm == "dpsgd":
                # X <- W X - gamma G (Lian et al.): gradient at the pre-gossip X
                parts, split, _ = self.mixer.step(k)
                gossip(k, st, parts, mix_weights=False, split=split)
                axpy(-gamma, G, st.X)
            else:
                axpy(-gamma, G, st.X)
                if self.algorithm == "allreduce" or (k + 1) % self.H == 0:
                    st.X[...] = st.X.mean(axis=0, keepdims=True)
            return
        parts, split, lost = self.mixer.step(k)
        fused = self.fused
        if (
            fused is not None
            and split is not None
            and lost is None
            and (G is self.gradients.G or (G.shape == st.X.shape and G.flags.c_contiguous))
        ):
            if (
                not fused.large
                and st.w_ones
                and split.keeps_ones
                and (split.shift is not None or split.rows is not None)
            ):
                return self._lean(k, G, split)
            Z = self.Z
            # large arrays: the kernel also writes the next step's z = x / w (unless G lives in Z)
            z_next = fused.large and self.debias and not self.gradients.major and not np.may_share_memory(G, Z)
            applied = self.applied if self.track_mass else None
            self.z_ready = fused.step(
                st, G, -gamma, split, applied, self.sum_nodes, k, gamma, problem, self.w_low, Z if z_next else None
            )
            return
        if self.track_mass:  # the paths below track the mass first
            _track(self.applied, G, self.sum_nodes, st, k, gamma, problem, self.w_low)
        if (
            self.fused_delayed
            and lost is None
            and isinstance(parts, DelayedParts)
            and G.shape == st.X.shape
            and G.flags.c_contiguous
        ):
            _fused_delayed_step(k, st, G, -gamma, parts)
        elif self.small and split is not None and lost is None and G.shape == st.X.shape:
            _step_small(st, G, -gamma, split)
        else:
            # under message loss, the shares lost in flight are accounted
            _sgp_step(k, st, G, gamma, parts, self.send_before_step, split, lost, self.lost_x, self.lost_w)


def debias(X: np.ndarray, w: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out = X * (1 / w)``: the de-biased points ``z = x / w`` of a state X (n, R, d)
    with weights w (n, R), into ``out``; returns it.

    One reciprocal per weight (n R divisions) and one multiplication per entry,
    instead of a division per entry (about 0.85 of a full-array copy at large
    sizes). The compiled step (:mod:`sgpverify.engine.kernels`) computes the
    same reciprocal and the same products: the same bits on both paths. The
    result differs from ``X / w`` in the last bit at most (two roundings
    instead of one).
    """
    np.multiply(X, np.divide(1.0, w)[:, :, None], out=out)
    return out


def axpy(a: float, G: np.ndarray, X: np.ndarray) -> None:
    """X += a * G in place.

    Large contiguous arrays are updated by blocks through one cache-resident
    temporary: the same two roundings (``a * g``, then the sum) as the
    small-array expression, so that the result never depends on the array
    size (with one stream per replica, replica 0 of an R-replica run is
    bit-equal to the one-replica run).
    BLAS daxpy is not used: it may fuse the multiply-add (one rounding).
    """
    if G.shape != X.shape:
        G = np.broadcast_to(G, X.shape)
    if X.size >= BLAS_MIN and X.flags.c_contiguous and G.flags.c_contiguous and G.dtype == np.float64:
        xf, gf = X.reshape(-1), G.reshape(-1)  # views
        m = xf.size
        buf = np.empty(min(AXPY_BLOCK, m))
        for a0 in range(0, m, AXPY_BLOCK):  # blocks of the array, not nodes
            a1 = min(a0 + AXPY_BLOCK, m)
            t = buf[: a1 - a0]
            np.multiply(gf[a0:a1], a, out=t)
            np.add(xf[a0:a1], t, out=xf[a0:a1])
    else:
        X += a * G


def _node_sum(G):
    """Sum over the node axis of G (n, R, d) -> (R, d), large or non-contiguous arrays (small
    ones: :func:`node_dot`): numpy's reduction, one streaming read; a multi-threaded dgemv there
    leaves BLAS threads spinning that slowed the following single-threaded steps (measured: mass
    tracking cost 2-3 copies with dgemv, 1-1.6 with numpy, in benchmarks/bench_engine.py)."""
    if not G.flags.c_contiguous:
        return G.sum(axis=0)
    return sum_rows(G.reshape(G.shape[0], -1)).reshape(G.shape[1:])


#: Per (n, m): whether ``ones.dot(A2)`` gives the bits of ``ones @ A2`` (see :func:`node_dot`).
_DOT_ROWS = {}


def node_dot(n: int, m: int) -> Callable[[np.ndarray], np.ndarray]:
    """A function giving ``ones @ A2`` (the node sum of the mass tracking of small states, a BLAS
    dgemv: numpy's outer-axis reduction is slow when m is small) of a C-contiguous (n, m)
    float64 ``A2``, ``ones`` n ones: ``ones.dot``, the same dgemv call at under half of the
    matmul ufunc's cost (0.34 us instead of 0.81 at n = 16, m = 80), where it gives the same
    bits, probed once per shape, byte for byte, on normal entries (any other order of the
    sums rounds differently), on entries over the whole float64 range and on -0.0; else
    ``ones @``."""
    ones = np.ones(n)
    ok = _DOT_ROWS.get((n, m))
    if ok is None:
        ok = _DOT_ROWS[(n, m)] = same_sums(ones.__matmul__, ones.dot, n, m)
    return ones.dot if ok else ones.__matmul__


def same_sums(f: Callable[[np.ndarray], np.ndarray], g: Callable[[np.ndarray], np.ndarray], n: int, m: int) -> bool:
    """Whether ``f(A)`` and ``g(A)`` are byte for byte equal on (n, m) arrays A of normal entries
    (any other order of their sums rounds differently), of entries over the whole float64 range
    and of -0.0: the probe of every same-bits shortcut (:func:`node_dot`, :func:`sum_rows`,
    :func:`sgpverify.engine.trace.sum_last`), once per shape, before it is used."""
    rng = np.random.default_rng(n * 7919 + m)
    probes = (
        rng.standard_normal((n, m)),
        rng.standard_normal((n, m)) * 10.0 ** rng.integers(-300, 300, (n, m)),
        -np.zeros((n, m)),
    )
    return all(f(P).tobytes() == g(P).tobytes() for P in probes)


#: Rows up to this length are summed by :func:`sum_rows`'s einsum.
SHORT_SUM = 64
#: Per row length m: whether ``np.einsum("ij->j")`` adds the rows of an (n, m) array in numpy's
#: order (see :func:`sum_rows`), probed once per process.
_EINSUM_ROWS = {}


def sum_rows(A2: np.ndarray) -> np.ndarray:
    """``A2.sum(axis=0)`` of a C-contiguous (n, m) float64 array, the same bits, faster for short rows.

    numpy adds an outer axis row after row, one short inner loop per row (about 10 ns each: 11 ms
    for n = 10^6, m = 4, ten times a copy). ``np.einsum("ij->j")`` adds the same rows in the same
    order in one loop, both from zeros (a column of -0.0 sums to +0.0 in both). That einsum keeps
    numpy's order is probed once per row length (:func:`same_sums`, over several of numpy's buffers
    of rows); if it does not, numpy's sum is used."""
    m = A2.shape[1]
    if m > SHORT_SUM:  # long rows: numpy's inner loops are long, its sum as fast
        return A2.sum(axis=0)
    ok = _EINSUM_ROWS.get(m)
    if ok is None:  # rows across several of numpy's buffers of 8192
        ok = _EINSUM_ROWS[m] = m > 1 and same_sums(_einsum_rows, _numpy_rows, 3 * 8192 + 5, m)
    return _einsum_rows(A2) if ok else A2.sum(axis=0)


def _einsum_rows(A2: np.ndarray) -> np.ndarray:
    return np.einsum("ij->j", A2)


def _numpy_rows(A2: np.ndarray) -> np.ndarray:
    return A2.sum(axis=0)


def _track(applied, G, sum_nodes, st, k, gamma, problem, w_low):
    """Add the node sum of the steps to ``applied``; name the node if it overflowed.
    ``sum_nodes``: :func:`node_dot` of G's shape as (n, R d), for small arrays (None: large ones)."""
    a2 = applied.reshape(-1)
    if sum_nodes is not None and G.size < BLAS_MIN and G.flags.c_contiguous:
        np.add(a2, sum_nodes(G.reshape(G.shape[0], -1)), out=a2)
    else:
        applied += _node_sum(G)
    # cheap finiteness test every step (the node sum of the steps is computed
    # anyway): names the actual iteration of a divergence
    if not math.isfinite(finite_probe(a2)):
        _check_finite_step(st, G, k, gamma, problem, w_low)


_ONES = {}
#: Longest array :func:`finite_probe` adds by a BLAS dot product (multi-threaded BLAS calls on
#: long arrays leave threads spinning that slow the single-threaded passes after them).
DOT_MAX = 1024


def finite_probe(a: np.ndarray) -> float:
    """A sum of the entries of the 1-D array ``a``, in some order: finite iff every entry is,
    unless a finite sum overflows (the callers' full scan then decides). The engine's cheap
    finiteness test: a dot product with ones for short arrays (about a third of
    ``np.add.reduce``'s time at the suite's sizes), numpy's sum beyond :data:`DOT_MAX`."""
    m = a.shape[0]
    if m > DOT_MAX:
        return np.add.reduce(a)
    o = _ONES.get(m)
    if o is None:
        o = _ONES[m] = np.ones(m)
    return a.dot(o)


def _sgp_step(k, st, G, gamma, parts, send_before_step, split=None, lost=None, lost_x=None, lost_w=None):
    """One SGP / tau-OSGP iteration in place: (st.X, st.w) become the state at k+1.

    ``lost``: each node's total share lost in flight this step (message loss);
    the mass it carries is added to ``lost_x`` (R, d) and ``lost_w`` (R,)."""
    if send_before_step:
        # the authors' overlap variant: mix x^k, then step locally
        if lost is not None:
            _account_lost(lost, st, lost_x, lost_w)
        gossip(k, st, parts, split=split)
        axpy(-gamma, G, st.X)
    else:
        # x^{k+1/2} = x^k - gamma g; then push-sum gossip of x^{k+1/2} and w^k
        axpy(-gamma, G, st.X)
        if lost is not None:
            _account_lost(lost, st, lost_x, lost_w)
        gossip(k, st, parts, split=split)


def _account_lost(lost, st, lost_x, lost_w):
    """Add the mass of the shares lost in flight (``lost[j]``: node j's lost share)."""
    idx = np.flatnonzero(lost)
    n, R, d = st.X.shape
    lost_x += (lost[idx] @ st.X[idx].reshape(len(idx), R * d)).reshape(R, d)
    lost_w += lost[idx] @ st.w[idx]


class _Gradients:
    """Stochastic gradients at Z (n, R, d), each replica from its stream in
    ``rngs`` (one object R times: the replicas share it, in replica order),
    written into one reused array; the per-replica views of the few state
    arrays the gradient is taken at are made once (call overhead at small
    sizes). The problem sees the same views as :func:`_gradients`, or, when
    it defines ``grad_replicas`` (:func:`sgpverify.problems.replica_grads`), the replicas
    stacked (R, n, d) in one call per step at small sizes; so too, with a
    shared stream, ``grad`` itself once a probe (:meth:`_probe`) has seen
    that call give the bits and draws of the R calls."""

    def __init__(self, problem, rngs, shape):
        self.problem, self.rngs, self.R = problem, rngs, shape[1]
        # one stream shared by the replicas (a problem without grad_replicas): one stacked call
        # per step once a probe has seen it give the R calls' bits (see _probe)
        self.probes = PROBES if self.R > 1 and rngs[1] is rngs[0] else 0
        self.one_call = False
        self.G = np.empty(shape) if self.R > 1 else None
        self.Gv = [self.G[:, r, :] for r in range(self.R)] if self.R > 1 else None
        self._views = {}  # id -> (array, its replica views); the array is kept alive
        n, R, d = shape
        # small states: the problem gets each replica as a contiguous (n, d) array
        self.major = R > 1 and n * R * d < BLAS_MIN
        if self.major:
            self.G2 = self.G.reshape(n, R * d)  # a view
            self.Zt = np.empty((R, n, d))
            self.Zv = list(self.Zt)  # its replicas, contiguous (n, d) views
            self.stacked = replica_grads(problem)
            self.Gt = np.empty((R, n, d)) if self.stacked is not None else None

    def at(self, X, w=None):
        """Gradients at ``X / w`` (``X`` when w is None)."""
        if not self.major:
            return None
        Zt = self.Zt
        if w is None:
            Zt[...] = X.transpose(1, 0, 2)
        else:
            np.multiply(X.transpose(1, 0, 2), np.divide(1.0, w).T[:, :, None], out=Zt)  # debias's arithmetic
        if self.stacked is not None:  # one call for the R replicas, then into the (n, R, d) layout
            self.stacked(Zt, self.rngs, self.Gt)
            self.G[...] = self.Gt.transpose(1, 0, 2)
            return self.G
        grad = self.problem.grad
        if self.one_call:  # one stream, one call: the R replicas' draws in replica order
            g = grad(Zt, self.rngs[0])
            if type(g) is np.ndarray and g.dtype == np.float64:  # np.copyto's copy, without its dispatch
                self.G[...] = g.transpose(1, 0, 2)
            else:
                np.copyto(self.G, np.asarray(g).transpose(1, 0, 2))
            return self.G
        twin = None
        if self.probes:  # probed once, at the first step whose points differ between all replicas
            self.probes -= 1
            if len({z.tobytes() for z in Zt}) == self.R:
                twin, self.probes = copy.deepcopy(self.rngs[0]), 0
        # one copy of every replica's gradient into the (n, R, d) layout: side by side
        # along the columns of its (n, R d) view (np.stack did the same at twice the cost)
        np.concatenate([grad(z, rng) for z, rng in zip(self.Zv, self.rngs)], axis=1, out=self.G2)
        if twin is not None:
            self._probe(grad, Zt, twin)
        return self.G

    def _probe(self, grad, Zt, twin):
        """Does one call ``grad(Zt, twin)`` on the stacked points give the bits just computed by
        R calls and leave its generator where they left the shared one? Then the next steps
        make that call."""
        try:
            g = np.asarray(grad(Zt, twin))
            same = g.shape == Zt.shape and np.array_equal(g.transpose(1, 0, 2), self.G)
        except Exception:  # a grad that does not take the stacked points: R calls, as defined
            same = False
        self.one_call = same and twin.bit_generator.state == self.rngs[0].bit_generator.state

    def __call__(self, Z):
        if self.R == 1:
            return _gradients(self.problem, Z, self.rngs, 1)
        v = self._views.get(id(Z))
        if v is None or v[0] is not Z:
            if len(self._views) > 16:  # pragma: no cover - the engine uses a few arrays
                self._views.clear()
            v = self._views[id(Z)] = (Z, [Z[:, r, :] for r in range(self.R)])
        grad = self.problem.grad
        for z, g, rng in zip(v[1], self.Gv, self.rngs):
            g[...] = grad(z, rng)
        return self.G


def _step_small(st, G, a, split):
    """One SGP step without delays on small arrays: ``axpy`` then ``gossip``
    (the same operations) in one function, for the call overhead."""
    X = st.X
    X += a * G
    out = st.inbox[0]
    np.multiply(X, split.diag3, out=out)
    off = split.off
    if off.nnz:
        n = X.shape[0]
        kernel = csc_matvecs if off.by_column else csr_matvecs
        kernel(n, n, X.size // n, off.indptr, off.indices, off.data, X.reshape(-1), out.reshape(-1))
    st.X, st.inbox[0] = out, X
    if not (st.w_ones and split.keeps_ones):
        gossip_weights(st, split)


class _Fused:
    """The SGP step without delays through :mod:`sgpverify.engine.kernels`:
    ``_track`` + ``axpy`` + ``gossip`` (+ the next step's de-biasing, :func:`debias`)
    in fewer passes over memory, bit-equal to them; the weights go through
    ``gossip_weights`` with the compiled weight kernel.
    The node sum of the steps for the mass tracking is fused when the numpy
    path sums node by node (large arrays); small arrays keep ``_track`` (a
    BLAS product, whose order a kernel cannot copy)."""

    __slots__ = ("k", "msum", "large", "cache_rows")

    def __init__(self, n, m, large, cache_rows):
        self.k = kernels.Step(n)
        self.large = large
        self.msum = np.empty(m) if large else None
        self.cache_rows = cache_rows  # the mixer caches its steps: so can the regrouped edges

    def step(self, st, G, a, split, applied, sum_nodes, k, gamma, problem, w_low, Z=None):
        """One step; with ``Z`` (large arrays, de-biasing on), also the next
        step's ``Z = X / w`` when the weights are not all 1 (returns whether)."""
        X = st.X
        n = X.shape[0]
        msum = None
        if applied is not None:
            if self.large:
                msum = self.msum
            else:
                _track(applied, G, sum_nodes, st, k, gamma, problem, w_low)
        w_old = st.w
        out = st.inbox[0]
        X2 = X.reshape(n, -1)
        if split.peer and X2.shape[1] <= kernels.SHORT and not (st.w_ones and split.keeps_ones):
            # random peer: the weights and the values in one kernel (Z is left unused if the
            # weights stay all ones)
            G2, out2, Z2 = G.reshape(n, -1), out.reshape(n, -1), None if Z is None else Z.reshape(n, -1)
            step = lambda w, ow: self.k.peer(X2, G2, a, split.edges[1], out2, w, ow, msum, Z2, X.shape[2])  # noqa: E731
            gossip_weights(st, split, step)
            z_out = Z is not None and not st.w_ones
            return self._finish(st, X, out, msum, applied, w_old, G, k, gamma, problem, w_low, z_out)
        # the weights first (they do not depend on X): the kernel can then de-bias
        gossip_weights(st, split, lambda w, out: kernels.Step.weights(w, split.diag, split.edges, split.csr, out))
        z_out = Z is not None and not st.w_ones
        if split.shift is not None and not z_out and X2.shape[1] <= kernels.SHORT:
            self.k.shift(X2, G.reshape(n, -1), a, split.shift, out.reshape(n, -1), msum)
            return self._finish(st, X, out, msum, applied, w_old, G, k, gamma, problem, w_low, z_out)
        edges, csr = split.edges, split.csr
        rows = None
        if edges is not None and not self.k.sends(edges, X2.shape[1]):
            rows = split.rows
            if rows is None:
                rows = self.k.rows(n, edges)
                if self.cache_rows:
                    rows = split.rows = tuple(r.copy() for r in rows)
        self.k.run(
            X2,
            G.reshape(n, -1),
            a,
            split.diag,
            edges,
            csr,
            out.reshape(n, -1),
            msum,
            Z.reshape(n, -1) if z_out else None,
            st.w if z_out else None,
            X.shape[2],
            rows=rows,
        )
        return self._finish(st, X, out, msum, applied, w_old, G, k, gamma, problem, w_low, z_out)

    @staticmethod
    def _finish(st, X, out, msum, applied, w_old, G, k, gamma, problem, w_low, z_out):
        if msum is not None:  # _track's large branch: applied += the node-by-node sum
            applied += msum.reshape(applied.shape)
            if not math.isfinite(np.add.reduce(applied, axis=None)):  # the state the numpy path inspects
                _check_finite_step(State.of(X, w_old), G, k, gamma, problem, w_low)
        st.X, st.inbox[0] = out, X
        return z_out


def _fused_delayed_step(k, st, G, a, parts):
    """The tau-OSGP step (``axpy`` + ``gossip`` with delays) through
    :func:`sgpverify.engine.kernels.delayed_step`, bit-equal to them: the update,
    the self shares into the slot of step k+1, and each message into the slot
    of its arrival, values and weights; then the same rotation of the slots."""
    n = st.X.shape[0]
    s0 = (k + 1) % len(st.inbox)
    kernels.delayed_step(
        st.X.reshape(n, -1),
        G.reshape(n, -1),
        a,
        parts.diag,
        parts.src,
        parts.dst,
        parts.vals,
        parts.delays,
        tuple([b.reshape(n, -1) for b in st.inbox]),
        s0,
        st.w,
        tuple(st.inbox_w),
    )
    rotate(st, s0)


def _gradients(problem, Z, rngs, R, out=None):
    """Stochastic gradients at Z (n, R, d), replica r from ``rngs[r]``, in
    replica order (written into ``out`` when given and R > 1)."""
    if R == 1:
        g = np.asarray(problem.grad(Z[:, 0, :], rngs[0]), dtype=float)
        return g.reshape(Z.shape) if g.flags.c_contiguous else np.ascontiguousarray(g).reshape(Z.shape)
    G = np.empty_like(Z) if out is None else out
    for r in range(R):  # a loop over replicas (few), each vectorised over nodes
        G[:, r, :] = problem.grad(Z[:, r, :], rngs[r])
    return G


def _diverged(i, k, gamma, problem, what="", since=None, w_low=1.0):
    """The error, with ``iteration`` and ``node`` attributes; names the effective
    step when small push-sum weights amplified the step."""
    where = (
        f"at iteration {k}"
        if since is None or since >= k - 1
        else (f"at iteration {k} (first seen at this record; finite at iteration {since})")
    )
    eff = (
        f", effective step step_size / w_min = {gamma / w_low:.4g} with push-sum weights down to {w_low:.3g}"
        if w_low < 1.0
        else ""
    )
    exc = SimulationDivergedError(
        f"simulation diverged: node {i} is not finite {where}{what} "
        f"(step_size = {gamma:g}{eff}; problem L = {float(problem.L):.4g}, so a step <= 1/L = "
        f"{1 / float(problem.L) if problem.L else math.inf:.4g} is the safe range)"
    )
    exc.iteration, exc.node = k, i
    return exc


def check_finite(
    X: np.ndarray, w: np.ndarray, k: int, gamma: float, problem: Any, since: int | None = None, w_low: float = 1.0
) -> None:
    """At a record: raise if the state is not finite (the per-step test, with
    mass tracking, has normally caught it at its actual iteration already)."""
    if np.isfinite(X).all() and np.isfinite(w).all():
        return
    bad = ~np.isfinite(X).all(axis=(1, 2)) | ~np.isfinite(w).all(axis=1)
    i = int(np.flatnonzero(bad)[0])
    raise _diverged(i, k, gamma, problem, since=since, w_low=w_low)


def _check_finite_step(st, G, k, gamma, problem, w_low=1.0):
    """The node sum of the steps of iteration k is not finite: find the node."""
    X, w = st.X, st.w
    bad_x = ~np.isfinite(X).all(axis=(1, 2)) | ~np.isfinite(w).all(axis=1)
    if bad_x.any():
        raise _diverged(int(np.flatnonzero(bad_x)[0]), k, gamma, problem, w_low=w_low)
    bad_g = ~np.isfinite(G).all(axis=(1, 2))
    if bad_g.any():
        raise _diverged(
            int(np.flatnonzero(bad_g)[0]), k, gamma, problem, " (its stochastic gradient overflows)", w_low=w_low
        )
    # finite steps whose sum overflowed: not a divergence of a node (yet)
