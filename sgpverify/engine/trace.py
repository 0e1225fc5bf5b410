"""The result of a run, :class:`Trace`, and its recording, :class:`Recorder`."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import metrics
from ..errors import SimulationDivergedError
from . import kernels
from .step import BLAS_MIN, check_finite, finite_probe, same_sums, sum_rows
from .step import debias as debias_into

if TYPE_CHECKING:
    from .step import Stepper


@dataclasses.dataclass(frozen=True)
class Trace:
    """Result of :func:`~sgpverify.engine.simulate`.

    Final states (leading replica axis only when ``replicas > 1``):
    ``x`` numerators of the real nodes ``(n, d)``, ``w`` push-sum weights
    ``(n,)``, ``z = x / w`` the de-biased parameters ``(n, d)``.

    Recorded series (every ``record_every`` iterations, iteration 0 and the last
    included), each of shape ``(T,)`` or ``(T, R)``:

    - ``iterations``: the iteration k of each record (state before step k);
    - ``consensus``: ``(1/n) sum_i ||z_i - xbar||^2``;
    - ``grad_norm_sq``: ``||grad f(xbar)||^2``; ``value``: ``f(xbar)``;
    - ``mass_error``: ``max |sum of numerators incl. in flight - (initial sum -
      step_size * sum of applied steps)|`` over coordinates;
    - ``weight_error``: ``|sum of weights incl. in flight - n|``;
    - ``weight_min``, ``weight_max``: over the real nodes;
    - ``mass_lost``: ``max |numerator mass lost in flight so far|`` over
      coordinates, and ``weight_lost``: the weight lost, both zero unless the
      topology loses messages (:func:`sgpverify.graphs.with_message_loss`);
      then ``mass_error - mass_lost`` and ``weight_error - weight_lost`` are
      round-off.

    ``effective_step_max``: the largest step on the de-biased parameters,
    ``step_size / w_min`` over the run (``w_min`` the smallest push-sum
    weight of a real node when a gradient is taken; ``step_size`` for
    algorithms without weights). :func:`~sgpverify.engine.simulate` warns
    (:class:`~sgpverify.errors.EffectiveStepWarning`) when it exceeds ``1/L``.

    ``state_max``: the largest ``|x|`` of a real node's numerator at any record, the scale of the
    round-off in ``mass_error`` (NaN when the mass is not tracked).

    ``seed``: the seed used (fresh entropy when ``simulate`` got None), so
    that passing it back repeats the run bit for bit.

    ``xbar`` always counts the mass in flight (docs/theory.md section 1, "The invariant").

    Gradient tracking (``algorithm="push-diging"``, :mod:`sgpverify.engine.methods`): ``tracking``
    is the final tracking variable ``y`` of the real nodes, ``tracking_error`` the recorded error
    of its invariant, ``max |sum_i y_i (in flight included) - sum_i g_i|`` over coordinates;
    both None for the other algorithms.
    """

    algorithm: str
    problem: str
    topology: str
    n: int
    d: int
    replicas: int
    step_size: float
    n_iter: int
    tau: int
    delay: str | None
    seed: int | None
    x: np.ndarray
    w: np.ndarray
    z: np.ndarray
    iterations: np.ndarray
    consensus: np.ndarray
    grad_norm_sq: np.ndarray
    value: np.ndarray
    mass_error: np.ndarray
    weight_error: np.ndarray
    weight_min: np.ndarray
    weight_max: np.ndarray
    mass_lost: np.ndarray
    weight_lost: np.ndarray
    effective_step_max: float
    z_history: np.ndarray | None = None
    step_sq: np.ndarray | None = None
    state_max: float = math.nan
    tracking: np.ndarray | None = None
    tracking_error: np.ndarray | None = None

    SERIES = (
        "consensus",
        "grad_norm_sq",
        "value",
        "mass_error",
        "weight_error",
        "weight_min",
        "weight_max",
        "mass_lost",
        "weight_lost",
    )

    def final(self) -> dict[str, float]:
        """Last recorded value of each series (averaged over replicas)."""
        return {k: float(np.mean(getattr(self, k)[-1])) for k in self.SERIES}

    #: The measurements :meth:`check_finite` holds finite, with their names in its message.
    MEASURED = (("consensus", "consensus"), ("grad_norm_sq", "||grad f(xbar)||^2"), ("value", "f(xbar)"))

    def check_finite(self) -> Trace:
        """Return the trace, or raise if a recorded measurement or the final state is not finite.

        :func:`~sgpverify.engine.simulate` raises when the state itself
        overflows; a run whose state is still finite (up to about 1e308) can
        record measurements that overflow already (``f(xbar)``,
        ``||grad f(xbar)||^2`` and the consensus square the state). This
        check catches both, whatever the number of iterations.

        Raises
        ------
        SimulationDivergedError
            Naming the first recorded iteration at which a measurement is not
            finite (and its value), or the final state, and the step size.

        Examples
        --------
        >>> import sgpverify as sv
        >>> prob = sv.problems.QuadraticCosine(n=4, d=2, seed=0)
        >>> tr = sv.simulate(prob, sv.graphs.ring(4), step_size=0.1, n_iter=20)
        >>> tr.check_finite() is tr
        True
        """
        first = None
        for key, label in self.MEASURED:
            arr = np.asarray(getattr(self, key), dtype=float)
            bad = ~np.isfinite(arr.reshape(len(arr), -1)).all(axis=1)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                if first is None or i < first[0]:
                    first = (i, label, float(np.ravel(arr[i])[np.flatnonzero(~np.isfinite(np.ravel(arr[i])))[0]]))
        where = None
        if first is not None:
            i, label, v = first
            where = f"{label} = {v} at iteration {int(self.iterations[i])}"
        elif not (np.isfinite(self.x).all() and np.isfinite(self.w).all()):
            where = f"the final state is not finite at iteration {self.n_iter}"
        if where is None:
            return self
        exc = SimulationDivergedError(
            f"simulation diverged: {where}, the first record not finite (step_size = {self.step_size:g}: "
            "the run overflows; a smaller step size is needed)"
        )
        exc.iteration = int(self.iterations[first[0]]) if first is not None else self.n_iter
        raise exc

    def to_dict(self, states: bool = False) -> dict[str, Any]:
        """JSON-ready dict: parameters, final values and series (states optional)."""
        out = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name
            not in ("x", "w", "z", "step_sq", "z_history", "tracking", "tracking_error") + self.SERIES + ("iterations",)
        }
        out["final"] = self.final()
        out["iterations"] = self.iterations.tolist()
        out["series"] = {k: getattr(self, k).tolist() for k in self.SERIES}
        if self.step_sq is not None:
            out["series"]["step_sq"] = self.step_sq.tolist()
        if self.tracking_error is not None:
            out["series"]["tracking_error"] = self.tracking_error.tolist()
        if states:
            out.update(x=self.x.tolist(), w=self.w.tolist(), z=self.z.tolist())
        return out


def stack_replicas(traces: list[Trace]) -> Trace:
    """The runs ``traces`` (one replica each, the same method, step size, budget and records) as one
    trace whose replicas they are, in order: the series side by side ``(T, R)``, the final states
    stacked ``(R, n, d)``, ``state_max`` and ``effective_step_max`` their largest. Used where each
    replica runs on its own realisation of a random schedule, which one :func:`simulate` call, with one
    mixing matrix per step for all its replicas, cannot do. ``topology`` and ``seed`` are the first
    run's.

    Examples
    --------
    >>> import numpy as np, sgpverify as sv
    >>> prob = sv.problems.QuadraticCosine(n=4, d=2, seed=0)
    >>> runs = [sv.simulate(prob, sv.graphs.erdos_renyi(4, 0.5, seed=s), step_size=0.1, n_iter=5, seed=s)
    ...         for s in range(3)]
    >>> tr = stack_replicas(runs)
    >>> tr.replicas, tr.consensus.shape, tr.z.shape
    (3, (6, 3), (3, 4, 2))
    """
    first = traces[0]
    for t in traces:
        if t.replicas != 1 or t.n_iter != first.n_iter or not np.array_equal(t.iterations, first.iterations):
            raise ValueError(
                f"traces must be runs of one replica with the same records, got replicas = {t.replicas}, "
                f"n_iter = {t.n_iter} against {first.n_iter}"
            )

    def side(name):
        vals = [getattr(t, name) for t in traces]
        return None if vals[0] is None else np.column_stack([np.asarray(v) for v in vals])

    def stacked(name, axis=0):
        vals = [getattr(t, name) for t in traces]
        return None if vals[0] is None else np.stack([np.asarray(v) for v in vals], axis=axis)

    return dataclasses.replace(
        first,
        replicas=len(traces),
        x=stacked("x"),
        w=stacked("w"),
        z=stacked("z"),
        tracking=stacked("tracking"),
        z_history=stacked("z_history", axis=1),
        step_sq=side("step_sq"),
        tracking_error=side("tracking_error"),
        effective_step_max=float(np.max([t.effective_step_max for t in traces])),
        state_max=float(np.max([t.state_max for t in traces])),
        **{k: side(k) for k in Trace.SERIES},
    )


#: Entries per block of :func:`consensus_large` (512 KB temporaries, cache-resident).
_CONSENSUS_BLOCK = 1 << 16


def consensus_large(Z: np.ndarray, xbar: np.ndarray) -> np.ndarray:
    """:func:`sgpverify.metrics.consensus` of Z (n, R, d) and xbar (R, d), the same bits, faster
    for a short last axis (1 < d < 8).

    numpy sums a last axis shorter than 8 entry after entry (``((a0 + a1) + a2) + ...``), one
    short inner loop per node and replica: about 20 ns each, 40 ms at n = 10^6. The same sums
    column by column run over whole blocks. Whether they give numpy's bits is checked on the
    first block (numpy's own sum beside them); if not, numpy's sum is used throughout."""
    n, R, d = Z.shape
    if not 1 < d < 8:
        return metrics.consensus(Z, xbar)
    per = max(1, _CONSENSUS_BLOCK // (R * d))
    sq = np.empty((n, R))
    D = np.empty((min(per, n), R, d))
    by_columns = True
    for a in range(0, n, per):
        b = min(a + per, n)
        Db = D[: b - a]
        np.subtract(Z[a:b], xbar, out=Db)
        Db *= Db
        out = sq[a:b]
        if by_columns:
            _sum_columns(Db, out)
            if a == 0:
                by_columns = np.array_equal(out, Db.sum(axis=-1))
                if not by_columns:
                    out[...] = Db.sum(axis=-1)
        else:
            np.sum(Db, axis=-1, out=out)
    if R == 1 and n > 1:  # metrics' node-after-node sum of one column
        return np.add.accumulate(sq[:, 0])[-1:] / n
    return sq.sum(axis=0) / n


def _sum_columns(D: np.ndarray, out: np.ndarray) -> None:
    """``out = ((D[..., 0] + D[..., 1]) + D[..., 2]) + ...``: the last axis, entry after entry."""
    np.add(D[..., 0], D[..., 1], out=out)
    for c in range(2, D.shape[-1]):
        out += D[..., c]


#: Longest last axis that :func:`sum_last` sums by columns (numpy's pairwise sum of a contiguous
#: row is one unrolled block up to this length; longer rows are split in halves).
PAIRWISE_BLOCK = 128
#: Per row length m: whether :func:`sum_last`'s column sums give numpy's bits, probed once per process.
_PAIRWISE_ROWS = {}


def sum_last(A: np.ndarray) -> np.ndarray:
    """``A.sum(axis=-1)`` of a C-contiguous float64 array, the same bits, faster for many short rows.

    numpy sums a contiguous last axis of m entries one row at a time (about 14 ns a row at m = 10),
    each from zero in its pairwise order: m < 8 entries one after the other; else eight running
    sums of the entries ``i mod 8`` (their first eight, then each later block of eight), combined as
    ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``, then the last ``m mod 8`` entries one
    after the other. The same operations on whole columns run over all rows at once (the deferred
    records' squared distances: 6144 rows of 10 in 3 us instead of 15 at R = 64). That they give
    numpy's bits is probed once per row length (:func:`~sgpverify.engine.step.same_sums`); if not
    (or m > :data:`PAIRWISE_BLOCK`), numpy's sum is used."""
    m = A.shape[-1]
    if m < 2 or m > PAIRWISE_BLOCK or A.size == 0 or not A.flags.c_contiguous:
        return A.sum(axis=-1)
    ok = _PAIRWISE_ROWS.get(m)
    if ok is None:
        ok = _PAIRWISE_ROWS[m] = same_sums(_pairwise_columns, _numpy_last, 4099, m)
    return _pairwise_columns(A) if ok else A.sum(axis=-1)


def _numpy_last(A: np.ndarray) -> np.ndarray:
    return A.sum(axis=-1)


def _pairwise_columns(A: np.ndarray) -> np.ndarray:
    """numpy's pairwise sum of each row of A (..., m), 2 <= m <= 128, by columns, from zero."""
    m = A.shape[-1]
    A2 = A.reshape(-1, m)
    col = [A2[:, i] for i in range(m)]
    if m < 8:
        out = np.empty(A2.shape[0])
        _sum_columns(A2, out)
    else:
        r = [np.add(col[j], col[j + 8]) for j in range(8)] if m >= 16 else col[:8]
        for b in range(16, m - m % 8, 8):
            for j in range(8):
                r[j] += col[b + j]
        out = np.add(r[0], r[1])
        t = np.add(r[2], r[3])
        out += t
        u = np.add(r[4], r[5])
        np.add(r[6], r[7], out=t)
        u += t
        out += u
        for i in range(m - m % 8, m):
            out += col[i]
    out += 0.0  # from zero: a row of -0.0 sums to +0.0
    return out.reshape(A.shape[:-1])


def _in_flight(slots: list[np.ndarray], empty: int | None) -> list[np.ndarray]:
    """The inbox slots that may hold messages: all but the one just zeroed (its node sum, +0.0,
    would leave a sum that never is -0.0 unchanged, bit for bit: numpy sums from +0.0)."""
    return slots if empty is None else slots[:empty] + slots[empty + 1 :]


#: Records whose metric arithmetic is deferred and done at once (see :class:`Recorder`):
#: as many as fit in this many elements (512 KB), when at least 4 do.
DEFER_ELEMS = 1 << 16


def record_count(n_iter: int, record_every: int) -> int:
    """Records of a run: at k = 0, e, 2e, ... < K, and at K (``e = record_every``)."""
    return (n_iter + record_every - 1) // record_every + 1


def masked(fn: Any, X: np.ndarray, m: np.ndarray | None, vector: bool) -> Any:
    """``fn(X)`` where ``m`` (X's leading axes, bool) is None or all True; else ``fn`` of the points
    ``X[m]`` only, NaN at the others (``vector``: ``fn`` gives a vector per point, as ``full_grad``;
    else a number, as ``value``)."""
    if m is None or m.all():
        return fn(X)
    out = np.full(m.shape + (X.shape[-1],) * vector, np.nan)
    if m.any():
        out[m] = np.asarray(fn(X[m]), dtype=float)
    return out


class Recorder:
    """The recorded series of one run (see :class:`Trace`), filled record by record.

    :meth:`record` takes the metrics of the state before iteration k,
    :meth:`step_direction` the step direction of a recorded iteration (for
    ``step_sq``), :meth:`flush` ends the deferred arithmetic and
    :meth:`series` gives the arrays. ``Z`` (n, R, d) is the buffer of the
    de-biased points (shared with the step), ``mass0`` (R, d) the node sum
    of the initial numerators; the other arguments are
    :func:`~sgpverify.engine.simulate`'s, validated (``state_every``: keep the
    states of every this many records, None for none).

    Small states: the arithmetic of the consensus, the squared gradient norm
    and the mass error is deferred and done for a chunk of records at once
    (:meth:`flush`), with the same operations in the same order per record; only
    what depends on the problem (full_grad, value) and the finiteness test
    run at each record, unless the problem says (``batch_metrics``) that its
    full_grad and value take any leading axes and give, record by record,
    the bits of one call per record: then they too run once per chunk.
    """

    def __init__(
        self,
        problem: Any,
        Z: np.ndarray,
        mass0: np.ndarray,
        *,
        n_iter: int,
        record_every: int,
        gamma: float,
        push: bool,
        debias: bool,
        track_mass: bool,
        lossy: bool,
        state_every: int | None,
        zero_start: bool = False,
        metric_mask: np.ndarray | None = None,
    ) -> None:
        n, R, d = Z.shape
        self.mask = metric_mask  # (T, R) bool: the (record, replica) pairs whose full_grad and value run
        # the state at iteration 0 is +0.0 everywhere (x0 = None): the first record of a large
        # state knows its node sum, extremes and consensus (+0.0) without passes over it
        self.zero_start = zero_start
        self.problem, self.Z, self.mass0, self.n, self.R = problem, Z, mass0, n, R
        self.record_every, self.gamma, self.push, self.debias = record_every, gamma, push, debias
        self.track_mass, self.lossy, self.state_every = track_mass, lossy, state_every
        self.T = T = record_count(n_iter, record_every)
        self.iterations = np.empty(T, dtype=np.int64)
        self.ser = ser = {name: np.empty((T, R)) for name in Trace.SERIES}
        self.step_sq = np.empty((T - 1, R))
        self.z_history = []
        # lost_x / lost_w stay zero unless the topology loses messages: their series are 0
        if not lossy:
            ser["mass_lost"][...] = 0.0
            ser["weight_lost"][...] = 0.0
        if not track_mass:
            ser["mass_error"][...] = np.nan
        self.state_max = 0.0 if track_mass else math.nan  # max |x| over the records: the round-off scale
        self.last_record = 0  # the iteration of the last record
        self.n_rec = 0  # records taken
        chunk = DEFER_ELEMS // (n * R * d)
        self.batch_metrics = bool(getattr(problem, "batch_metrics", False))
        if chunk >= 4:
            self.zbuf, self.xbuf, self.gbuf = (
                np.empty((chunk, n, R, d)),
                np.empty((chunk, R, d)),
                np.empty((chunk, R, d)),
            )
            self.sbuf = np.empty((chunk, n, R, d))  # the step directions, for step_sq
            self.tbuf, self.abuf = (np.empty((chunk, R, d)), np.empty((chunk, R, d))) if track_mass else (None, None)
        else:
            chunk = 0
        self.chunk = chunk
        self.dbuf = self.mbuf = None  # the flush's scratch (made at the first)
        # the numerators of the records in the buffers, for state_max (max |x|, taken at the flush):
        # in zbuf while the records' z is x (weights 1, or no de-biasing: a prefix of the run),
        # then in xsbuf (made when first needed)
        self.x_in_z = 0  # records of the buffers whose x is in zbuf (they come first)
        self.xsbuf = None
        self.pending = [0, 0]  # first record and number of records in the buffers
        self.ones_records = 0  # records 0.. while every weight was exactly 1: filled at the end
        # the node sum without a Python detour when it is numpy's row-by-row sum (metrics._sum_rows)
        self.plain_sum = R * d > 1 or n == 1
        self.value = ser["value"]
        # the short record of small states with weights 1 (:meth:`_record_ones`)
        self.lean = bool(chunk) and self.plain_sum and not lossy and state_every is None and not self.batch_metrics

    def flush(self) -> None:
        """The deferred arithmetic of the records in the buffers."""
        pending, n, ser, problem = self.pending, self.n, self.ser, self.problem
        i0, c = pending
        if c:
            sbuf, xbuf, gbuf = self.sbuf, self.xbuf, self.gbuf
            cs = min(c, self.T - 1 - i0)  # the record at K has no step
            if cs > 0:  # the same einsum, one record after the other
                np.divide(np.einsum("cnrd,cnrd->cr", sbuf[:cs], sbuf[:cs]), n, out=self.step_sq[i0 : i0 + cs])
            sq = self._distances(c)  # (c, n, R): each node's squared distance, as metrics.consensus
            # nodes added in order (as metrics._sum_rows), then / n: numpy adds an outer axis row
            # after row (R > 1; a single column would be summed pairwise, hence the accumulate)
            cons = np.add.reduce(sq, axis=1) if self.R > 1 else np.add.accumulate(sq, axis=1)[:, -1]
            np.divide(cons, n, out=ser["consensus"][i0 : i0 + c])
            if self.batch_metrics:
                xb = xbuf[:c]
                m = None if self.mask is None else self.mask[i0 : i0 + c]
                g = np.asarray(masked(problem.full_grad, xb, m, True), dtype=float)
                ser["grad_norm_sq"][i0 : i0 + c] = np.sum(g**2, axis=-1)
                ser["value"][i0 : i0 + c] = masked(problem.value, xb, m, False)
            else:
                ser["grad_norm_sq"][i0 : i0 + c] = sum_last(gbuf[:c] ** 2)
            if self.track_mass:  # max |x| over the records: max and min are exact in any order
                p = self.x_in_z
                for B in (self.zbuf[:p], self.xsbuf[p:c] if p < c else None):
                    if B is not None and B.size:
                        self.state_max = max(self.state_max, float(B.max()), -float(B.min()))
                self._mass_error(c, ser["mass_error"][i0 : i0 + c])
        pending[:] = [pending[0] + c, 0]
        self.x_in_z = 0

    def _distances(self, c: int) -> np.ndarray:
        """(c, n, R): each node's squared distance ``sum_last((z - xbar)^2)`` of the c buffered
        records (:func:`sgpverify.metrics.consensus`'s sums), the squares in a buffer made at the
        first flush."""
        if self.dbuf is None:
            self.dbuf = np.empty_like(self.zbuf)
        D = np.subtract(self.zbuf[:c], self.xbuf[:c, None], out=self.dbuf[:c])
        D *= D
        return sum_last(D)

    def _mass_error(self, c: int, out: np.ndarray) -> None:
        """``out`` (c, R) = ``max |tot - (mass0 - gamma applied)|`` over the coordinates, of the c
        buffered records: the same arithmetic, into buffers, and the largest entry of each row
        from a copy with the coordinates first (numpy's max along a short last axis costs ~30 ns
        a row; max is exact in any order)."""
        if self.mbuf is None:
            self.mbuf = np.empty_like(self.tbuf), np.empty((self.tbuf.shape[2],) + self.tbuf.shape[:2])
        t, u = self.mbuf[0][:c], self.mbuf[1][:, :c]
        np.multiply(self.abuf[:c], self.gamma, out=t)
        np.subtract(self.mass0, t, out=t)
        np.subtract(self.tbuf[:c], t, out=t)
        np.abs(t, out=t)
        u[...] = t.transpose(2, 0, 1)
        np.maximum.reduce(u, axis=0, out=out)

    def record(self, k: int, stepper: Stepper) -> None:
        """The record of the state before iteration k (``stepper.st``, with the
        running sums of ``stepper``); raises if the state is not finite."""
        if self.lean and stepper.st.w_ones:
            return self._record_ones(k, stepper)
        i = self.n_rec
        self.n_rec += 1
        n, R, chunk, pending, ser, problem = self.n, self.R, self.chunk, self.pending, self.ser, self.problem
        track_mass, tbuf = self.track_mass, (self.tbuf if chunk else None)
        st, applied = stepper.st, stepper.applied
        X, w = st.X, st.w
        in_flight = self.push and len(st.inbox) > 1  # with tau = 0 the single slot is empty here
        j = -1
        if chunk:
            if pending[1] == chunk:  # flushed here, once the last step direction is in
                self.flush()
            j = pending[1]
            pending[1] += 1
        extremes = None  # (max, min) of X when the compiled node sum gave them
        zero = k == 0 and j < 0 and self.zero_start  # numpy's sums from +0.0 of +0.0 are +0.0
        if zero:
            tot, extremes = np.zeros((R, X.shape[2])), (0.0, 0.0)
        elif not self.plain_sum:
            tot = metrics.total(X, st.inbox if in_flight else ())
        elif stepper.compiled_sums:  # large states: one compiled pass, the same sum, and max and min
            tot = tbuf[j] if j >= 0 and track_mass else np.empty((R, X.shape[2]))
            extremes = kernels.node_sum(X.reshape(n, -1), tot.reshape(-1))
            if in_flight:
                for B in _in_flight(st.inbox, st.empty):
                    tot += np.add.reduce(B, axis=0)
        elif X.size >= BLAS_MIN:  # large states: the same sum, faster (the records' buffers are small-only)
            tot = sum_rows(X.reshape(n, -1)).reshape(X.shape[1:])
            if in_flight:
                for B in _in_flight(st.inbox, st.empty):
                    tot += np.add.reduce(B, axis=0)
        else:  # metrics.total without the detour: the state, then each slot in flight
            tot = np.add.reduce(X, axis=0, out=tbuf[j] if j >= 0 and track_mass else None)
            if in_flight:
                for B in _in_flight(st.inbox, st.empty):
                    tot += np.add.reduce(B, axis=0)
        w_ones = st.w_ones  # every weight exactly 1 (then tau = 0: none in flight)
        if w_ones:
            tot_w = None
        elif R > 1 or n == 1:
            tot_w = np.add.reduce(w, axis=0)
            if in_flight:
                for B in _in_flight(st.inbox_w, st.empty):
                    tot_w += np.add.reduce(B, axis=0)
        else:
            tot_w = metrics.total(w, st.inbox_w if in_flight else ())
        # a non-finite entry makes its sum non-finite: the full scan only then
        # (a dot product with ones: any order of the same sum decides finiteness alike, an overflow
        # of a finite sum only costs the full scan)
        probe = finite_probe(tot.reshape(-1))
        if not math.isfinite(probe if w_ones else probe + finite_probe(tot_w.reshape(-1))):
            check_finite(X, w, k, self.gamma, problem, self.last_record, stepper.w_low)
        self.last_record = k
        if track_mass and j < 0:  # X is finite here (deferred to the flush with the buffers)
            hi, lo = (X.max(), X.min()) if extremes is None else extremes
            self.state_max = max(self.state_max, float(hi), -float(lo))
        if w_ones or not self.debias:  # x / 1 is x, bit for bit; the broken variant outputs x itself
            Zr = X
        else:
            Zr = self.Z
            if not stepper.z_ready:  # else the compiled step wrote Z = X (1/w) of this state, the same bits
                debias_into(X, w, Zr)
                stepper.z_ready = True  # the step's gradients are taken at this Z
        self.iterations[i] = k
        if j >= 0:
            xbar = np.divide(tot, n, out=self.xbuf[j])  # (R, d)
            self.zbuf[j] = Zr
            if track_mass:
                if Zr is X and self.x_in_z == j:
                    self.x_in_z = j + 1
                else:
                    if self.xsbuf is None:
                        self.xsbuf = np.empty_like(self.zbuf)
                    self.xsbuf[j] = X
            if not self.batch_metrics:
                self.gbuf[j] = self._at(problem.full_grad, xbar, i, True)
            if track_mass:
                if tot is not tbuf[j]:
                    tbuf[j] = tot
                self.abuf[j] = applied
        else:
            xbar = tot / n  # (R, d)
            ser["consensus"][i] = 0.0 if zero else consensus_large(Zr, xbar)
            g = np.asarray(self._at(problem.full_grad, xbar, i, True), dtype=float)
            ser["grad_norm_sq"][i] = np.sum(g**2, axis=-1)
            if track_mass:
                ser["mass_error"][i] = np.max(np.abs(tot - (self.mass0 - self.gamma * applied)), axis=-1)
        if j < 0 or not self.batch_metrics:
            ser["value"][i] = self._at(problem.value, xbar, i, False)
        if w_ones:  # the sum of n ones is n exactly: weight_error 0, min = max = 1
            self.ones_records = i + 1
        else:
            ser["weight_error"][i] = np.abs(tot_w - n)
            ser["weight_min"][i] = w.min(axis=0)
            ser["weight_max"][i] = w.max(axis=0)
        if self.lossy:
            ser["mass_lost"][i] = np.max(np.abs(stepper.lost_x), axis=-1)
            ser["weight_lost"][i] = stepper.lost_w
        if self.state_every is not None and i % self.state_every == 0:
            self.z_history.append(Zr.transpose(1, 0, 2).copy())

    def _record_ones(self, k: int, stepper: Stepper) -> None:
        """:meth:`record`'s work and order for small states whose weights are all exactly 1, with
        the problem's metrics record by record and nothing in flight (the suite's runs on a doubly
        stochastic schedule), without the branches of the general case."""
        i = self.n_rec
        self.n_rec += 1
        pending = self.pending
        if pending[1] == self.chunk:
            self.flush()
        j = pending[1]
        pending[1] = j + 1
        X = stepper.st.X
        track_mass = self.track_mass
        tot = np.add.reduce(X, axis=0, out=self.tbuf[j] if track_mass else None)
        if not math.isfinite(finite_probe(tot.reshape(-1))):
            check_finite(X, stepper.st.w, k, self.gamma, self.problem, self.last_record, stepper.w_low)
        self.last_record = k
        self.iterations[i] = k
        xbar = np.divide(tot, self.n, out=self.xbuf[j])
        self.zbuf[j] = X  # z = x / 1 = x
        if track_mass:
            if self.x_in_z == j:  # x is in zbuf (state_max at the flush)
                self.x_in_z = j + 1
            else:
                if self.xsbuf is None:
                    self.xsbuf = np.empty_like(self.zbuf)
                self.xsbuf[j] = X
            self.abuf[j] = stepper.applied
        problem = self.problem
        self.gbuf[j] = self._at(problem.full_grad, xbar, i, True)
        self.value[i] = self._at(problem.value, xbar, i, False)
        self.ones_records = i + 1

    def _at(self, fn: Any, xbar: np.ndarray, i: int, vector: bool) -> Any:
        """``fn(xbar)`` of record ``i`` (``xbar`` (R, d)), on the replicas its mask row selects."""
        return fn(xbar) if self.mask is None else masked(fn, xbar, self.mask[i], vector)

    def step_direction(self, k: int, G: np.ndarray) -> None:
        """The step direction ``G`` (n, R, d) of recorded iteration k, for ``step_sq``."""
        if self.chunk:
            self.sbuf[self.pending[1] - 1] = G
        else:
            self.step_sq[k // self.record_every] = np.einsum("nrd,nrd->r", G, G) / self.n

    def series(self) -> dict[str, np.ndarray]:
        """The recorded arrays by Trace field (the replica axis dropped when R = 1),
        once the last record is taken and flushed."""
        m = self.ones_records
        ser = self.ser
        ser["weight_error"][:m], ser["weight_min"][:m], ser["weight_max"][:m] = 0.0, 1.0, 1.0
        series = dict(ser, iterations=self.iterations, step_sq=self.step_sq)
        if self.state_every is not None:
            series["z_history"] = np.asarray(self.z_history)
        if self.R == 1:
            for k in Trace.SERIES + ("step_sq",):
                series[k] = series[k][:, 0]
            if self.state_every is not None:
                series["z_history"] = series["z_history"][:, 0]
        return series
