"""Vectorised multi-node simulation of SGP, tau-OSGP and baselines.

All nodes (and all replicas) advance together: the state is one array, the
gossip step one sparse product, with no Python loop over nodes or edges.

State layout: numerators ``X`` of shape ``(n, R, d)`` (C-contiguous, so that
``X.reshape(n, R*d)`` is a view and one CSR product mixes every replica at
once); push-sum weights ``w`` of shape ``(n, R)``. Messages in flight live in
an inbox ring of ``tau + 1`` slots, slot ``(k + 1 + r) mod (tau + 1)`` holding
the mass that arrives at step ``k + 1 + r``: the state memory is
``(tau + 2) n R d`` numbers, and the recursion is exactly the augmented one of
THEORY.md section 3 (row ``r*n + i`` of the augmented state = slot of arrival
step ``k + 1 + r``).

Small states (issue 11) avoid numpy call overhead without changing a bit:
the weight gossip is skipped while every weight is exactly 1 and the step's
matrix is known to map 1 to exactly 1 (measured once per cached step); the
problem gets each replica as a contiguous array and the gradients are stacked
into the state layout in one call; the arithmetic of the recorded metrics
(consensus, squared gradient norm, mass error, step_sq) is deferred and done
for a chunk of records at once, with the same operations in the same order
per record (``benchmarks/engine_bits.py`` compares every Trace field with the
previous engine).

With numba installed (the ``fast`` extra), the SGP step runs as compiled
kernels (:mod:`sgpverify._kernels`): without delays the weights' gossip, then
in one pass the update, the gossip of the values, the node sum of the mass
tracking and the next de-biasing divide; with delays on a topology the
update and the gossip of values and weights into the inbox slots. Each does the
numpy path's operations in the numpy path's order, so that the bits do not depend on it (``tests/test_kernels.py``).
``SGPVERIFY_KERNELS=numpy`` runs the numpy path.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import scipy.sparse as sp

from . import _kernels, metrics
from ._validate import check_choice, check_float, check_int, check_seed
from .errors import EffectiveStepWarning, MixingAssumptionError, SimulationDivergedError
from .graphs import Topology, is_strongly_connected, normalize_edges
from .mixing import FixedDelay, LinkDelay, MixingSchedule, delay_model, mixing_schedule
from .problems import check_problem, replica_grads

try:  # in-place Y += A @ X for CSR / CSC A (no temporary): scipy's own kernels
    from scipy.sparse._sparsetools import csc_matvecs as _csc_matvecs
    from scipy.sparse._sparsetools import csr_matvecs as _csr_matvecs
except ImportError:  # pragma: no cover - very old or future scipy
    _csr_matvecs = _csc_matvecs = None

__all__ = ["simulate", "Trace", "ALGORITHMS"]

ALGORITHMS = ("sgp", "dpsgd", "allreduce", "local-sgd")


@dataclasses.dataclass(frozen=True)
class Trace:
    """Result of :func:`simulate`.

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
    algorithms without weights). :func:`simulate` warns
    (:class:`~sgpverify.errors.EffectiveStepWarning`) when it exceeds ``1/L``.

    ``seed``: the seed used (fresh entropy when ``simulate`` got None), so
    that passing it back repeats the run bit for bit.

    ``xbar`` always counts the mass in flight (THEORY.md section 3).
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

    def final(self):
        """Last recorded value of each series (averaged over replicas)."""
        return {k: float(np.mean(getattr(self, k)[-1])) for k in self.SERIES}

    def to_dict(self, states=False):
        """JSON-ready dict: parameters, final values and series (states optional)."""
        out = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("x", "w", "z", "step_sq", "z_history") + self.SERIES + ("iterations",)
        }
        out["final"] = self.final()
        out["iterations"] = self.iterations.tolist()
        out["series"] = {k: getattr(self, k).tolist() for k in self.SERIES}
        if self.step_sq is not None:
            out["series"]["step_sq"] = self.step_sq.tolist()
        if states:
            out.update(x=self.x.tolist(), w=self.w.tolist(), z=self.z.tolist())
        return out


class _CSR:
    """Bare compressed sparse arrays (CSR, or CSC with ``by_column``) for the
    in-place kernels, without scipy object overhead per step."""

    __slots__ = ("indptr", "indices", "data", "shape", "nnz", "by_column")

    def __init__(self, indptr, indices, data, shape, by_column=False):
        self.indptr, self.indices, self.data, self.shape = indptr, indices, data, shape
        self.nnz = int(data.size)
        self.by_column = by_column

    @classmethod
    def from_rows(cls, n, rows, cols, vals):
        order = np.argsort(rows, kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        return cls(indptr, cols[order].astype(np.int32), np.ascontiguousarray(vals[order], dtype=float), (n, n))

    @classmethod
    def from_sorted_cols(cls, n, rows, cols, vals):
        """CSC from entries already sorted by column (edges sorted by sender): no sort."""
        indptr = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(np.bincount(cols, minlength=n), out=indptr[1:])
        return cls(indptr, rows.astype(np.int32), np.ascontiguousarray(vals, dtype=float), (n, n), True)

    def to_scipy(self):
        fmt = sp.csc_array if self.by_column else sp.csr_array
        return fmt((self.data, self.indices, self.indptr), shape=self.shape)


class _Split:
    """The gossip of one step without delays: diagonal ``diag`` (n,) and the
    off-diagonal messages ``off`` (CSR/CSC). ``keeps_ones``: whether the
    weight gossip maps an all-ones weight array to exactly 1 again (None until
    measured; cached with the step, so a periodic doubly stochastic schedule
    measures it once per step of the period and then skips the weight gossip).

    From a topology the messages are kept as ``edges`` = (src, dst, vals),
    sorted by sender, and ``off`` (CSC) is built from them when first asked
    for: the compiled step (:mod:`sgpverify._kernels`) reads the edges
    directly, and ``rows`` caches their regrouping by receiver."""

    __slots__ = ("diag", "diag3", "_off", "keeps_ones", "edges", "rows", "csr")

    def __init__(self, diag, off, edges=None):
        self.diag, self._off, self.keeps_ones = diag, off, None
        self.diag3 = diag[:, None, None]
        self.edges = edges
        self.rows = None
        self.csr = None if off is None or off.by_column else (off.indptr, off.indices, off.data)

    @property
    def off(self):
        if self._off is None:
            src, dst, vals = self.edges
            self._off = _CSR.from_sorted_cols(self.diag.shape[0], dst, src, vals)
        return self._off


class _Mixer:
    """The gossip matrices of each iteration, split by message delay.

    ``step(k)`` returns ``(parts, split, lost)``. With delays, ``parts[r]`` is
    the CSR matrix of the messages of delay r (``parts[0]`` also holds the
    diagonal, the self share). Without delays ``split`` (a :class:`_Split`:
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

    def __init__(self, schedule, tau, model, topology=None):
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

    def step(self, k):
        """``(parts, split, lost)``: the gossip of step k (see the class doc) and,
        under message loss, each node's total share lost in flight (else None)."""
        key = k % self.S.period if self.cacheable else None
        if key is not None and key in self._cache:
            return self._cache[key]
        build = _CSR.from_rows
        by_sender = False  # edges sorted by sender (a topology's)
        lost_share = keep = None
        if self.topo is not None:
            n = self.topo.n
            e = self.topo.edges(k)  # validated and sorted by sender
            src, dst = e[:, 0], e[:, 1]
            diag = 1.0 / (np.bincount(src, minlength=n) + 1.0)
            vals = diag[src]
            build = _CSR.from_sorted_cols  # edges come sorted by sender
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
        d = self.model.edge_delays(k, src, dst) if self.tau else None
        if keep is not None:  # lost messages never arrive
            src, dst, vals = src[keep], dst[keep], vals[keep]
            d = d[keep] if d is not None else None
        if self.tau == 0:
            if by_sender:  # the CSC is built when the numpy path asks for it
                edges = (np.ascontiguousarray(src), np.ascontiguousarray(dst), np.ascontiguousarray(vals, dtype=float))
                out = (None, _Split(diag, None, edges), lost_share)
            else:
                out = (None, _Split(diag, build(n, dst, src, vals)), lost_share)
        elif by_sender:
            if self._eye is None or self._eye[1].size != n:
                self._eye = (np.arange(n + 1, dtype=np.int32), np.arange(n, dtype=np.int32))
            parts = _DelayedParts(
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
            parts = [[_CSR.from_sorted_cols(n, idx, idx, diag)]]
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


class _DelayedParts:
    """The parts of a delayed step from a topology (see :class:`_Mixer`), built
    when first read. The compiled step (:mod:`sgpverify._kernels`) reads the
    edges (sorted by sender) and their delays instead, and never builds them."""

    __slots__ = ("slots", "eye", "diag", "src", "dst", "vals", "delays", "_parts")

    def __init__(self, slots, eye, diag, src, dst, vals, delays):
        self.slots, self.eye, self.diag = slots, eye, diag
        self.src, self.dst, self.vals, self.delays = src, dst, vals, delays
        self._parts = None

    def _build(self):
        # one stable sort by delay (senders stay in order within a delay) and
        # one count per (delay, sender)
        slots, n = self.slots, self.diag.shape[0]
        src, dst, vals, d = self.src, self.dst, self.vals, self.delays
        parts = [[_CSR(self.eye[0], self.eye[1], self.diag, (n, n), True)]]
        order = np.argsort(d, kind="stable")
        indptr = np.zeros((slots, n + 1), dtype=np.int32)
        np.cumsum(np.bincount(d * n + src, minlength=slots * n).reshape(slots, n), axis=1, out=indptr[:, 1:])
        rows = dst[order].astype(np.int32)
        v = np.ascontiguousarray(vals[order], dtype=float)
        a = 0
        for r in range(slots):
            b = a + int(indptr[r, -1])
            A = _CSR(indptr[r], rows[a:b], v[a:b], (n, n), True)
            if r == 0:
                parts[0].append(A)
            else:
                parts.append([A])
            a = b
        self._parts = parts
        return parts

    def __iter__(self):
        return iter(self._parts if self._parts is not None else self._build())

    def __len__(self):
        return self.slots

    def __getitem__(self, r):
        return (self._parts if self._parts is not None else self._build())[r]


def _spmm_add(A, X2, Y2):
    """Y2 += A @ X2 in place (2-D C-contiguous float64 arrays)."""
    if A.nnz == 0:
        return
    if _csr_matvecs is not None and X2.flags.c_contiguous and Y2.flags.c_contiguous:
        n_row, n_col = A.shape
        kernel = _csc_matvecs if A.by_column else _csr_matvecs
        kernel(n_row, n_col, X2.shape[1], A.indptr, A.indices, A.data, X2.ravel(), Y2.ravel())
    else:  # pragma: no cover - scipy without the kernel
        Y2 += A.to_scipy() @ X2


def simulate(
    problem,
    topology,
    *,
    step_size,
    n_iter,
    x0=None,
    tau=0,
    delay="fixed",
    algorithm="sgp",
    replicas=1,
    seed=0,
    record_every=1,
    momentum=0.0,
    nesterov=False,
    send_before_step=False,
    average_every=None,
    track_mass=True,
    progress=None,
    record_states=False,
    debias=True,
):
    """Simulate SGP (Algorithm 1), tau-OSGP or a baseline on a problem.

    Parameters
    ----------
    problem : Problem protocol
        ``n_nodes``, ``dim``, ``grad(z, rng)``, ``full_grad``, ``value``, constants.
    topology : Topology, MixingSchedule, matrix or list of matrices
        Communication schedule; a topology gets uniform push weights
        ``1/(out-degree + 1)`` ("sgp") or Metropolis weights ("dpsgd").
    step_size : float
        gamma > 0.
    n_iter : int
        Number of iterations K >= 0.
    x0 : array_like, optional
        ``(d,)`` (same start on every node, as in the paper) or ``(n, d)``;
        default zeros.
    tau : int
        Maximum message delay (tau-OSGP when > 0; "sgp" only).
    delay : {"fixed", "random"}, DelayModel or per-link matrix
        Delay of each message when ``tau > 0``.
    algorithm : {"sgp", "dpsgd", "allreduce", "local-sgd"}
        "sgp": push-sum gossip on ``X - gamma G`` (Algorithm 1); "dpsgd":
        ``X <- W X - gamma G`` with doubly stochastic Metropolis weights;
        "allreduce": exact averaging every step; "local-sgd": local steps,
        exact averaging every ``average_every`` steps.
    replicas : int
        Independent Monte-Carlo runs in one vectorised pass (gradient noise
        from ``SeedSequence(seed).spawn(replicas)``; graph and delays shared).
    seed : int or None
        Seed of the gradient noise and of random delays; same seed, same bits.
        None draws fresh entropy and records it in ``Trace.seed``.
    record_every : int
        Record the metrics every this many iterations (and at the end).
    momentum : float
        Local (not communicated) heavy-ball momentum in [0, 1).
    nesterov : bool
        Nesterov momentum (the paper's experiments: 0.9).
    send_before_step : bool
        The authors' overlap variant (THEORY.md section 3): the gossip mixes
        ``X`` before the gradient step, ``X <- P X - gamma G``.
    average_every : int, optional
        H for "local-sgd" (default 10).
    track_mass : bool
        Keep the running sum of applied steps for ``mass_error`` (one extra
        read of the step per iteration). With False, mass_error is NaN.
    progress : callable, optional
        Called as ``progress(k)`` after each iteration.
    record_states : bool or int
        Also keep the de-biased states z of every node at each record
        (``Trace.z_history``, shape (T, n, d) or (T, R, n, d)); an integer
        s >= 1 keeps every s-th record only (memory).
    debias : bool
        True (Algorithm 1): gradients at, and outputs, ``z = x / w``. False is
        a deliberately broken variant for negative controls: push-sum without
        de-biasing (``z = x``), wrong wherever the weights move.

    ``Trace.step_sq`` holds, for each recorded iteration k < K, the mean over
    nodes of the squared norm of the applied step direction,
    ``(1/n) sum_i ||g_i^k||^2`` (after momentum), the measured ``G_2^2`` of the
    consensus bound of docs/theory.md.

    Returns
    -------
    Trace

    Raises
    ------
    SimulationDivergedError
        If the state becomes NaN or infinite (names the first iteration at
        which a node's gradient or state is not finite, the node and the step
        size).
    MixingAssumptionError
        If a push-sum weight falls below ``1e-8`` (then at every further
        factor ``1e-4``) and the schedule is not strongly connected (over one
        period; for aperiodic schedules, over the second half of the run so
        far): names the nodes that receive nothing.

    Warns
    -----
    EffectiveStepWarning
        If ``Trace.effective_step_max`` (``step_size / w_min``) exceeds ``1/L``.

    Notes
    -----
    THEORY.md sections 2-3: ``X^{k+1} = P^(k) (X^k - gamma G^k)``,
    ``w^{k+1} = P^(k) w^k``, gradients at ``z = x / w``; with delays the
    recursion is the augmented one, buffers included in xbar.

    Examples
    --------
    >>> import sgpverify as sv
    >>> prob = sv.problems.QuadraticCosine(n=8, d=4, seed=0)
    >>> tr = sv.simulate(prob, sv.graphs.random_peer(8, seed=0), step_size=0.1, n_iter=50)
    >>> tr.z.shape, bool(tr.mass_error.max() < 1e-12)
    ((8, 4), True)
    """
    problem = check_problem(problem)
    algorithm = check_choice("algorithm", algorithm, ALGORITHMS)
    gamma = check_float("step_size", step_size, low=0.0, low_open=True)
    n_iter = check_int("n_iter", n_iter, min_value=0)
    tau = check_int("tau", tau, min_value=0)
    R = check_int("replicas", replicas, min_value=1)
    record_every = check_int("record_every", record_every, min_value=1)
    state_every = 1 if isinstance(record_states, bool) else check_int("record_states", record_states, min_value=1)
    record_states = bool(record_states)
    beta = check_float("momentum", momentum, low=0.0, high=1.0, high_open=True)
    seed = check_seed("seed", seed)
    if seed is None:  # fresh entropy, recorded so that the run can be repeated
        seed = int(np.random.SeedSequence().entropy)
    n, d = int(problem.n_nodes), int(problem.dim)
    if algorithm != "sgp" and tau > 0:
        raise ValueError(f"tau applies to algorithm 'sgp' only, got tau = {tau} with {algorithm!r}")
    if algorithm != "sgp" and send_before_step:
        raise ValueError(f"send_before_step applies to algorithm 'sgp' only, got {algorithm!r}")
    H = 10 if average_every is None else check_int("average_every", average_every, min_value=1)
    if average_every is not None and algorithm != "local-sgd":
        raise ValueError(f"average_every applies to algorithm 'local-sgd' only, got {algorithm!r}")

    # schedule
    mixer = None
    topo_name = getattr(topology, "name", "matrices")
    if algorithm in ("sgp", "dpsgd"):
        if isinstance(topology, MixingSchedule):
            if algorithm == "dpsgd":
                raise ValueError("algorithm 'dpsgd' needs a Topology (Metropolis weights), got a MixingSchedule")
            schedule = topology
            if schedule.tau != 0:
                raise ValueError("pass an un-augmented schedule and tau separately")
        elif algorithm == "dpsgd":
            if not isinstance(topology, Topology):
                raise TypeError(f"algorithm 'dpsgd' needs a Topology, got {type(topology).__name__}")
            if topology.loses_messages:
                raise ValueError(f"message loss applies to algorithm 'sgp' only, got {algorithm!r} on {topology.name}")
            schedule = mixing_schedule(topology, weights="metropolis")
        else:
            schedule = mixing_schedule(topology)
        if schedule.n != n:
            raise ValueError(f"topology has {schedule.n} nodes but problem.n_nodes = {n}")
        topo_name = schedule.name
        model = delay_model(delay, tau, seed) if tau > 0 else None
        if isinstance(model, LinkDelay) and model._D.shape != (n, n):
            raise ValueError(
                f"delay must be a per-link delay matrix of shape ({n}, {n}) for {n} nodes, got shape {model._D.shape}"
            )
        fast = topology if isinstance(topology, Topology) and algorithm == "sgp" else None
        mixer = _Mixer(schedule, tau, model, topology=fast)
    else:
        if isinstance(topology, Topology) and topology.n != n:
            raise ValueError(f"topology has {topology.n} nodes but problem.n_nodes = {n}")
        model = None

    # state
    X = np.empty((n, R, d))
    if x0 is None:
        X[...] = 0.0
    else:
        try:
            x0 = np.asarray(x0, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"x0 must be a numeric array of shape ({d},) or ({n}, {d}), got {_short(x0)}") from None
        if x0.shape == (d,):
            X[...] = x0
        elif x0.shape == (n, d):
            X[...] = x0[:, None, :]
        else:
            raise ValueError(f"x0 must have shape ({d},) or ({n}, {d}), got {x0.shape}")
        if not np.all(np.isfinite(x0)):
            raise ValueError("x0 must be finite, got non-finite entries")
    push = algorithm == "sgp"
    st = _State(X, n_slots=tau + 1 if push else (1 if algorithm == "dpsgd" else 0))
    Z = np.empty_like(X)
    U = np.zeros_like(X) if beta > 0 else None
    mass0 = X.sum(axis=0)  # (R, d)
    applied = np.zeros((R, d))  # sum over nodes and iterations of the applied steps
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    rngs = [np.random.default_rng(s) for s in ss.spawn(R)]

    T = (n_iter + record_every - 1) // record_every + 1  # records at k = 0, e, 2e, ... < K, and at K
    iterations = np.empty(T, dtype=np.int64)
    ser = {name: np.empty((T, R)) for name in Trace.SERIES}
    step_sq = np.empty((T - 1, R))
    z_history = []
    # lost_x / lost_w stay zero unless the topology loses messages: their series are 0
    lossy = mixer is not None and mixer.topo is not None and mixer.topo.loses_messages
    if not lossy:
        ser["mass_lost"][...] = 0.0
        ser["weight_lost"][...] = 0.0
    if not track_mass:
        ser["mass_error"][...] = np.nan
    ones = np.ones(n)
    lost_x = np.zeros((R, d))  # numerator mass lost in flight (message loss)
    lost_w = np.zeros(R)
    w_low = 1.0  # smallest weight of a real node when a gradient was taken
    alarm = _WEIGHT_ALARM  # next weight level that triggers the connectivity check
    last_record = [0]
    n_rec = [0]
    # Small states: the arithmetic of the consensus, the squared gradient norm
    # and the mass error is deferred and done for a chunk of records at once
    # (_flush), with the same operations in the same order per record; only
    # what depends on the problem (full_grad, value) and the finiteness test
    # run at each record, unless the problem says (``batch_metrics``) that its
    # full_grad and value take any leading axes and give, record by record,
    # the bits of one call per record: then they too run once per chunk.
    chunk = _DEFER_ELEMS // (n * R * d)
    batch_metrics = bool(getattr(problem, "batch_metrics", False))
    if chunk >= 4:
        zbuf, xbuf, gbuf = np.empty((chunk, n, R, d)), np.empty((chunk, R, d)), np.empty((chunk, R, d))
        sbuf = np.empty((chunk, n, R, d))  # the step directions, for step_sq
        tbuf, abuf = (np.empty((chunk, R, d)), np.empty((chunk, R, d))) if track_mass else (None, None)
    else:
        chunk = 0
    pending = [0, 0]  # first record and number of records in the buffers

    def flush():
        i0, c = pending
        if c:
            cs = min(c, T - 1 - i0)  # the record at K has no step
            if cs > 0:  # the same einsum, one record after the other
                np.divide(np.einsum("cnrd,cnrd->cr", sbuf[:cs], sbuf[:cs]), n, out=step_sq[i0 : i0 + cs])
            D = zbuf[:c] - xbuf[:c, None]
            D *= D
            sq = D.sum(axis=-1)  # (c, n, R): each node's squared distance, as metrics.consensus
            # nodes added in order (as metrics._sum_rows), then / n
            np.divide(np.add.accumulate(sq, axis=1)[:, -1], n, out=ser["consensus"][i0 : i0 + c])
            if batch_metrics:
                xb = xbuf[:c]
                ser["grad_norm_sq"][i0 : i0 + c] = np.sum(np.asarray(problem.full_grad(xb), dtype=float) ** 2, axis=-1)
                s_val[i0 : i0 + c] = problem.value(xb)
            else:
                ser["grad_norm_sq"][i0 : i0 + c] = np.sum(gbuf[:c] ** 2, axis=-1)
            if track_mass:
                ser["mass_error"][i0 : i0 + c] = np.max(np.abs(tbuf[:c] - (mass0 - gamma * abuf[:c])), axis=-1)
        pending[:] = [pending[0] + c, 0]

    gradients = _Gradients(problem, rngs, X.shape)
    # weights that stay exactly 1 (doubly stochastic, no delay): z = x, no division
    st.w_ones = push and tau == 0 or not push

    s_cons, s_gn, s_val, s_me = ser["consensus"], ser["grad_norm_sq"], ser["value"], ser["mass_error"]
    s_we, s_wmin, s_wmax = ser["weight_error"], ser["weight_min"], ser["weight_max"]
    ones_records = [0]  # records 0.. while every weight was exactly 1: filled at the end
    # the node sum without a Python detour when it is numpy's row-by-row sum (metrics._sum_rows)
    plain_sum = R * d > 1 or n == 1

    def record(k):
        i = n_rec[0]
        n_rec[0] += 1
        X, w = st.X, st.w
        in_flight = push and len(st.inbox) > 1  # with tau = 0 the single slot is empty here
        j = -1
        if chunk:
            if pending[1] == chunk:  # flushed here, once the last step direction is in
                flush()
            j = pending[1]
            pending[1] += 1
        if not plain_sum:
            tot = metrics.total(X, st.inbox if in_flight else ())
        else:  # metrics.total without the detour: the state, then each slot in flight
            tot = np.add.reduce(X, axis=0, out=tbuf[j] if j >= 0 and track_mass else None)
            if in_flight:
                for B in st.inbox:
                    tot += np.add.reduce(B, axis=0)
        w_ones = st.w_ones  # every weight exactly 1 (then tau = 0: none in flight)
        if w_ones:
            tot_w = None
        elif R > 1 or n == 1:
            tot_w = np.add.reduce(w, axis=0)
            if in_flight:
                for B in st.inbox_w:
                    tot_w += np.add.reduce(B, axis=0)
        else:
            tot_w = metrics.total(w, st.inbox_w if in_flight else ())
        # a non-finite entry makes its sum non-finite: the full scan only then
        if not math.isfinite(np.add.reduce(tot, axis=None) if w_ones else tot.sum() + tot_w.sum()):
            _check_finite(X, w, k, gamma, problem, last_record[0], w_low)
        last_record[0] = k
        if w_ones or not debias:  # x / 1 is x, bit for bit; the broken variant outputs x itself
            Zr = X
        else:
            np.divide(X, w[:, :, None], out=Z)
            Zr = Z
        iterations[i] = k
        if j >= 0:
            xbar = np.divide(tot, n, out=xbuf[j])  # (R, d)
            np.copyto(zbuf[j], Zr)
            if not batch_metrics:
                gbuf[j] = problem.full_grad(xbar)
            if track_mass:
                if tot is not tbuf[j]:
                    tbuf[j] = tot
                abuf[j] = applied
        else:
            xbar = tot / n  # (R, d)
            s_cons[i] = metrics.consensus(Zr, xbar)
            s_gn[i] = np.sum(np.asarray(problem.full_grad(xbar), dtype=float) ** 2, axis=-1)
            if track_mass:
                s_me[i] = np.max(np.abs(tot - (mass0 - gamma * applied)), axis=-1)
        if j < 0 or not batch_metrics:
            s_val[i] = problem.value(xbar)
        if w_ones:  # the sum of n ones is n exactly: weight_error 0, min = max = 1
            ones_records[0] = i + 1
        else:
            s_we[i] = np.abs(tot_w - n)
            s_wmin[i] = w.min(axis=0)
            s_wmax[i] = w.max(axis=0)
        if lossy:
            ser["mass_lost"][i] = np.max(np.abs(lost_x), axis=-1)
            ser["weight_lost"][i] = lost_w
        if record_states and i % state_every == 0:
            z_history.append(Zr.transpose(1, 0, 2).copy())

    small_step = push and tau == 0 and not send_before_step and X.size < _BLAS_MIN and _csr_matvecs is not None
    # the compiled fused step (numba, the `fast` extra): same operations, same order, same bits
    compiled = push and not send_before_step and _kernels.enabled(X.size * max(n_iter, 1))
    fused = _Fused(n, R * d, X.size >= _BLAS_MIN, mixer.cacheable) if compiled and tau == 0 else None
    fused_delayed = compiled and tau > 0
    z_ready = False  # Z = X / w already written for this step (by the fused step)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for k in range(n_iter):
            recording = k % record_every == 0
            if recording:
                record(k)
            # 1. stochastic gradients at the de-biased points z = x / w
            if push and not st.w_ones:
                wmin = float(st.w.min())
                if wmin < w_low:
                    w_low = wmin
                    if wmin < alarm:
                        alarm = _check_connected(mixer, st.w, k, alarm)
                if gradients.major:
                    G = gradients.at(st.X, st.w if debias else None)
                elif debias:
                    if not z_ready:  # else the fused step wrote it with the same division
                        np.divide(st.X, st.w[:, :, None], out=Z)
                    G = gradients(Z)
                else:
                    G = gradients(st.X)
            else:
                G = gradients.at(st.X) if gradients.major else gradients(st.X)
            z_ready = False
            # 2. local momentum (never communicated)
            if U is not None:
                U *= beta
                U += G
                G = G + beta * U if nesterov else U
            if recording:
                if chunk:
                    sbuf[pending[1] - 1] = G
                else:
                    step_sq[k // record_every] = np.einsum("nrd,nrd->r", G, G) / n
            # 3. the step and the gossip
            if push:
                parts, split, lost = mixer.step(k)
                if (
                    fused is not None
                    and split is not None
                    and lost is None
                    and G.shape == st.X.shape
                    and G.flags.c_contiguous
                ):
                    z_ready = fused.step(
                        st,
                        G,
                        -gamma,
                        split,
                        applied if track_mass else None,
                        ones,
                        k,
                        gamma,
                        problem,
                        w_low,
                        Z if fused.large and debias and not gradients.major and not np.may_share_memory(G, Z) else None,
                    )
                    if progress is not None:
                        progress(k)
                    continue
                elif (
                    fused_delayed
                    and lost is None
                    and isinstance(parts, _DelayedParts)
                    and G.shape == st.X.shape
                    and G.flags.c_contiguous
                ):
                    if track_mass:
                        _track(applied, G, ones, st, k, gamma, problem, w_low)
                    _fused_delayed_step(k, st, G, -gamma, parts)
                elif small_step and split is not None and lost is None and G.shape == st.X.shape:
                    if track_mass:
                        _track(applied, G, ones, st, k, gamma, problem, w_low)
                    _step_small(st, G, -gamma, split)
                else:
                    if track_mass:
                        _track(applied, G, ones, st, k, gamma, problem, w_low)
                    # under message loss, the shares lost in flight are accounted
                    _sgp_step(k, st, G, gamma, parts, send_before_step, split, lost, lost_x, lost_w)
            else:
                if track_mass:
                    _track(applied, G, ones, st, k, gamma, problem, w_low)
                if algorithm == "dpsgd":
                    # X <- W X - gamma G (Lian et al.): gradient at the pre-gossip X
                    parts, split, _ = mixer.step(k)
                    _gossip(k, st, parts, mix_weights=False, split=split)
                    _axpy(-gamma, G, st.X)
                else:
                    _axpy(-gamma, G, st.X)
                    if algorithm == "allreduce" or (k + 1) % H == 0:
                        st.X[...] = st.X.mean(axis=0, keepdims=True)
            if progress is not None:
                progress(k)
        record(n_iter)
        if chunk:
            flush()
    m = ones_records[0]
    s_we[:m], s_wmin[:m], s_wmax[:m] = 0.0, 1.0, 1.0

    effective = gamma / w_low if push else gamma
    L = float(problem.L)
    if L > 0 and effective > 1.0 / L:
        warnings.warn(
            f"effective step step_size / w_min = {gamma:g} / {w_low:.3g} = {effective:.3g} exceeds "
            f"1/L = {1.0 / L:.3g} (L = {L:.4g}): the descent analysis assumes a step <= 1/L on the "
            f"de-biased parameters",
            EffectiveStepWarning,
            stacklevel=2,
        )
    X, w = st.X, st.w
    if debias:
        np.divide(X, w[:, :, None], out=Z)
    else:
        Z[...] = X
    series = dict(ser, iterations=iterations, step_sq=step_sq)
    if record_states:
        series["z_history"] = np.asarray(z_history)
    xs, ws, zs = X.transpose(1, 0, 2), w.T, Z.transpose(1, 0, 2)
    if R == 1:
        xs, ws, zs = xs[0], ws[0], zs[0]
        for k in Trace.SERIES + ("step_sq",):
            series[k] = series[k][:, 0]
        if record_states:
            series["z_history"] = series["z_history"][:, 0]
    out = {}
    for name, arr in [("x", xs), ("w", ws), ("z", zs)] + list(series.items()):
        arr = np.array(arr, copy=True)
        arr.setflags(write=False)
        out[name] = arr
    return Trace(
        algorithm=algorithm,
        problem=getattr(problem, "name", type(problem).__name__),
        topology=topo_name,
        n=n,
        d=d,
        replicas=R,
        step_size=gamma,
        n_iter=n_iter,
        tau=tau,
        delay=model.name if model is not None else None,
        seed=seed if not isinstance(seed, np.random.SeedSequence) else None,
        effective_step_max=float(effective),
        **out,
    )


class _State:
    """Numerators X (n, R, d), weights w (n, R) and the inbox ring of messages in flight."""

    def __init__(self, X, n_slots):
        n, R, d = X.shape
        self.X = X
        self.w = np.ones((n, R))
        self.inbox = [np.zeros_like(X) for _ in range(n_slots)]
        self.inbox_w = [np.zeros((n, R)) for _ in range(n_slots)]
        self.w_ones = True  # every weight exactly 1 (tracked by the weight gossip)

    @classmethod
    def of(cls, X, w):
        """A view of a state (X, w) without an inbox (for the finiteness checks)."""
        st = cls.__new__(cls)
        st.X, st.w, st.inbox, st.inbox_w, st.w_ones = X, w, [], [], False
        return st


def _gossip(k, st, parts, mix_weights=True, split=None):
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
        np.multiply(st.X, split.diag[:, None, None], out=out)
        _spmm_add(split.off, X2, out.reshape(n, R * d))
        st.X, st.inbox[0] = out, st.X
        if mix_weights:
            _gossip_weights(st, split)
        return
    for r, mats in enumerate(parts):
        s = (k + 1 + r) % slots
        for A in mats:
            _spmm_add(A, X2, st.inbox[s].reshape(n, R * d))
            if mix_weights:
                _spmm_add(A, st.w, st.inbox_w[s])
    _rotate(st, (k + 1) % slots, mix_weights)


def _rotate(st, s, weights=True):
    """Slot s (the arrivals of the next step) becomes the state; the old state,
    zeroed, becomes slot s: no copy of the state is made."""
    old = st.X
    st.X, st.inbox[s] = st.inbox[s], old
    old.fill(0.0)
    if weights:
        old_w = st.w
        st.w, st.inbox_w[s] = st.inbox_w[s], old_w
        old_w.fill(0.0)


def _gossip_weights(st, split, mix=None):
    """``w <- P w`` without delays (``split``: see :class:`_Split`); ``mix(w, out)``
    writes ``P w`` (default: numpy and scipy's kernel; the compiled step passes its own).

    While every weight is exactly 1 and this step's matrix is known to map 1
    to exactly 1 (measured the first time, with the same kernels), the gossip
    is skipped: its result would be the same array of ones, bit for bit.
    ``st.w_ones`` records whether the weights are still exactly 1."""
    if st.w_ones and split.keeps_ones:
        return
    out_w = st.inbox_w[0]
    if mix is None:
        np.multiply(st.w, split.diag[:, None], out=out_w)
        _spmm_add(split.off, st.w, out_w)
    else:
        mix(st.w, out_w)
    if st.w_ones:  # the input was all ones: so is the output iff P 1 = 1 exactly
        split.keeps_ones = st.w_ones = bool(np.all(out_w == 1.0))
    st.w, st.inbox_w[0] = out_w, st.w


#: Records whose metric arithmetic is deferred and done at once (see simulate):
#: as many as fit in this many elements (512 KB), when at least 4 do.
_DEFER_ELEMS = 1 << 16


def _track(applied, G, ones, st, k, gamma, problem, w_low):
    """Add the node sum of the steps to ``applied``; name the node if it overflowed."""
    if G.size < _BLAS_MIN and G.flags.c_contiguous:  # _node_sum's small branch, inline
        a2 = applied.reshape(-1)
        np.add(a2, ones @ G.reshape(G.shape[0], -1), out=a2)
    else:
        applied += _node_sum(G, ones)
    # cheap finiteness test every step (the node sum of the steps is computed
    # anyway): names the actual iteration of a divergence
    if not math.isfinite(np.add.reduce(applied, axis=None)):
        _check_finite_step(st, G, k, gamma, problem, w_low)


def _sgp_step(k, st, G, gamma, parts, send_before_step, split=None, lost=None, lost_x=None, lost_w=None):
    """One SGP / tau-OSGP iteration in place: (st.X, st.w) become the state at k+1.

    ``lost``: each node's total share lost in flight this step (message loss);
    the mass it carries is added to ``lost_x`` (R, d) and ``lost_w`` (R,)."""
    if send_before_step:
        # the authors' overlap variant: mix x^k, then step locally
        if lost is not None:
            _account_lost(lost, st, lost_x, lost_w)
        _gossip(k, st, parts, split=split)
        _axpy(-gamma, G, st.X)
    else:
        # x^{k+1/2} = x^k - gamma g; then push-sum gossip of x^{k+1/2} and w^k
        _axpy(-gamma, G, st.X)
        if lost is not None:
            _account_lost(lost, st, lost_x, lost_w)
        _gossip(k, st, parts, split=split)


def _account_lost(lost, st, lost_x, lost_w):
    """Add the mass of the shares lost in flight (``lost[j]``: node j's lost share)."""
    idx = np.flatnonzero(lost)
    n, R, d = st.X.shape
    lost_x += (lost[idx] @ st.X[idx].reshape(len(idx), R * d)).reshape(R, d)
    lost_w += lost[idx] @ st.w[idx]


class _Gradients:
    """Stochastic gradients at Z (n, R, d), each replica from its own stream,
    written into one reused array; the per-replica views of the few state
    arrays the gradient is taken at are made once (call overhead at small
    sizes). The problem sees the same views as :func:`_gradients`, or, when
    it defines ``grad_replicas`` (:func:`sgpverify.problems.replica_grads`), the replicas
    stacked (R, n, d) in one call per step at small sizes."""

    def __init__(self, problem, rngs, shape):
        self.problem, self.rngs, self.R = problem, rngs, shape[1]
        self.G = np.empty(shape) if self.R > 1 else None
        self.Gv = [self.G[:, r, :] for r in range(self.R)] if self.R > 1 else None
        self._views = {}  # id -> (array, its replica views); the array is kept alive
        n, R, d = shape
        # small states: the problem gets each replica as a contiguous (n, d) array
        self.major = R > 1 and n * R * d < _BLAS_MIN
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
            np.copyto(Zt, X.transpose(1, 0, 2))
        else:
            np.divide(X.transpose(1, 0, 2), w.T[:, :, None], out=Zt)
        if self.stacked is not None:  # one call for the R replicas, then into the (n, R, d) layout
            self.stacked(Zt, self.rngs, self.Gt)
            np.copyto(self.G, self.Gt.transpose(1, 0, 2))
            return self.G
        grad = self.problem.grad
        # one copy of every replica's gradient into the (n, R, d) layout: side by side
        # along the columns of its (n, R d) view (np.stack did the same at twice the cost)
        np.concatenate([grad(z, rng) for z, rng in zip(self.Zv, self.rngs)], axis=1, out=self.G2)
        return self.G

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
    """One SGP step without delays on small arrays: ``_axpy`` then ``_gossip``
    (the same operations) in one function, for the call overhead."""
    X = st.X
    X += a * G
    out = st.inbox[0]
    np.multiply(X, split.diag3, out=out)
    off = split.off
    if off.nnz:
        n = X.shape[0]
        kernel = _csc_matvecs if off.by_column else _csr_matvecs
        kernel(n, n, X.size // n, off.indptr, off.indices, off.data, X.reshape(-1), out.reshape(-1))
    st.X, st.inbox[0] = out, X
    if not (st.w_ones and split.keeps_ones):
        _gossip_weights(st, split)


class _Fused:
    """The SGP step without delays through :mod:`sgpverify._kernels`:
    ``_track`` + ``_axpy`` + ``_gossip`` (+ the next step's de-biasing divide)
    in fewer passes over memory, bit-equal to them; the weights go through
    ``_gossip_weights`` with the compiled weight kernel.
    The node sum of the steps for the mass tracking is fused when the numpy
    path sums node by node (large arrays); small arrays keep ``_track`` (a
    BLAS product, whose order a kernel cannot copy)."""

    __slots__ = ("k", "msum", "large", "cache_rows")

    def __init__(self, n, m, large, cache_rows):
        self.k = _kernels.Step(n)
        self.large = large
        self.msum = np.empty(m) if large else None
        self.cache_rows = cache_rows  # the mixer caches its steps: so can the regrouped edges

    def step(self, st, G, a, split, applied, ones, k, gamma, problem, w_low, Z=None):
        """One step; with ``Z`` (large arrays, de-biasing on), also the next
        step's ``Z = X / w`` when the weights are not all 1 (returns whether)."""
        X = st.X
        n = X.shape[0]
        msum = None
        if applied is not None:
            if self.large:
                msum = self.msum
            else:
                _track(applied, G, ones, st, k, gamma, problem, w_low)
        # the weights first (they do not depend on X): the kernel can then de-bias
        w_old = st.w
        edges, csr = split.edges, split.csr
        _gossip_weights(st, split, lambda w, out: _kernels.Step.weights(w, split.diag, edges, csr, out))
        z_out = Z is not None and not st.w_ones
        out = st.inbox[0]
        X2 = X.reshape(n, -1)
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
        if msum is not None:  # _track's large branch: applied += the node-by-node sum
            applied += msum.reshape(applied.shape)
            if not math.isfinite(np.add.reduce(applied, axis=None)):  # the state the numpy path inspects
                _check_finite_step(_State.of(X, w_old), G, k, gamma, problem, w_low)
        st.X, st.inbox[0] = out, X
        return z_out


def _fused_delayed_step(k, st, G, a, parts):
    """The tau-OSGP step (``_axpy`` + ``_gossip`` with delays) through
    :func:`sgpverify._kernels.delayed_step`, bit-equal to them: the update,
    the self shares into the slot of step k+1, and each message into the slot
    of its arrival, values and weights; then the same rotation of the slots."""
    n = st.X.shape[0]
    s0 = (k + 1) % len(st.inbox)
    _kernels.delayed_step(
        st.X.reshape(n, -1),
        G.reshape(n, -1),
        a,
        parts.diag,
        parts.src,
        parts.dst,
        parts.vals,
        parts.delays,
        tuple(b.reshape(n, -1) for b in st.inbox),
        s0,
        st.w,
        tuple(st.inbox_w),
    )
    _rotate(st, s0)


def _gradients(problem, Z, rngs, R, out=None):
    """Stochastic gradients at Z (n, R, d), each replica from its own stream
    (written into ``out`` when given and R > 1)."""
    if R == 1:
        g = np.asarray(problem.grad(Z[:, 0, :], rngs[0]), dtype=float)
        return g.reshape(Z.shape) if g.flags.c_contiguous else np.ascontiguousarray(g).reshape(Z.shape)
    G = np.empty_like(Z) if out is None else out
    for r in range(R):  # a loop over replicas (few), each vectorised over nodes
        G[:, r, :] = problem.grad(Z[:, r, :], rngs[r])
    return G


#: Arrays from this size on are memory-bound: the update and the node sums
#: stream by blocks (no full-size temporary) instead of one numpy expression.
_BLAS_MIN = 1 << 18
#: Block of the large-array update (elements): a 512 KB temporary, cache-resident.
_AXPY_BLOCK = 1 << 16


def _axpy(a, G, X):
    """X += a * G in place.

    Large contiguous arrays are updated by blocks through one cache-resident
    temporary: the same two roundings (``a * g``, then the sum) as the
    small-array expression, so that the result never depends on the array
    size (replica 0 of an R-replica run is bit-equal to the one-replica run).
    BLAS daxpy is not used: it may fuse the multiply-add (one rounding).
    """
    if G.shape != X.shape:
        G = np.broadcast_to(G, X.shape)
    if X.size >= _BLAS_MIN and X.flags.c_contiguous and G.flags.c_contiguous and G.dtype == np.float64:
        xf, gf = X.reshape(-1), G.reshape(-1)  # views
        m = xf.size
        buf = np.empty(min(_AXPY_BLOCK, m))
        for a0 in range(0, m, _AXPY_BLOCK):  # blocks of the array, not nodes
            a1 = min(a0 + _AXPY_BLOCK, m)
            t = buf[: a1 - a0]
            np.multiply(gf[a0:a1], a, out=t)
            np.add(xf[a0:a1], t, out=xf[a0:a1])
    else:
        X += a * G


def _node_sum(G, ones):
    """Sum over the node axis of G (n, R, d) -> (R, d).

    Small arrays: ``ones @ G`` (BLAS dgemv; numpy's outer-axis reduction is
    slow when R d is small). Large arrays: numpy's reduction, one streaming read;
    a multi-threaded dgemv there leaves BLAS threads spinning that slowed the
    following single-threaded steps (measured: mass tracking cost 2-3 copies
    with dgemv, 1-1.6 with numpy, in benchmarks/bench_engine.py)."""
    n = G.shape[0]
    if not G.flags.c_contiguous:
        return G.sum(axis=0)
    if G.size >= _BLAS_MIN:
        return G.reshape(n, -1).sum(axis=0).reshape(G.shape[1:])
    return (ones @ G.reshape(n, -1)).reshape(G.shape[1:])


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


def _check_finite(X, w, k, gamma, problem, since=None, w_low=1.0):
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


#: Push-sum weight below which the engine checks that the schedule is strongly
#: connected (then again at each further factor ``_WEIGHT_ALARM_STEP``).
_WEIGHT_ALARM = 1e-8
_WEIGHT_ALARM_STEP = 1e-4


def _window_edges(mixer, a, b):
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


def _check_connected(mixer, w, k, alarm):
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
            f"grows without bound (the SGP analysis assumes B-strong connectivity, THEORY.md section 5)"
        )
    return float(w.min()) * _WEIGHT_ALARM_STEP


def _short(value, width=60):
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."
