"""The simulation loop: :func:`simulate` validates its input, sets up a run and
iterates it (the step of :mod:`sgpverify.engine.step`, the records of
:mod:`sgpverify.engine.trace`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from ..errors import EffectiveStepWarning
from ..graphs import Topology
from ..mixing import DelayModel, MixingSchedule, as_topology, check_delay_shape, delay_model, mixing_schedule
from ..problems import check_problem, replica_grads
from ..usercode import check_outputs
from ..validation import check_choice, check_float, check_int, check_memory, check_seed
from .methods import METHODS, LocalSGD, Method, fused_path, method_by_name, run_method
from .methods.loop import SERIES as METHOD_SERIES
from .mixers import Mixer, State
from .step import Stepper
from .trace import Recorder, Trace, record_count

__all__ = ["simulate", "ALGORITHMS", "memory_estimate", "effective_step_message"]

#: Bytes per node of a schedule's own arrays (edges, shares, index arrays of a period): measured at
#: most about 1.1 kB for the exponential graph at n = 10^6, and about 100 more per unit of tau
#: (the messages' delays).
SCHEDULE_BYTES_PER_NODE = 1100
DELAY_BYTES_PER_NODE = 120
#: Copies of the state (n x R x d float64) a step holds: numerators, de-biased points, gradients,
#: the step and the mixing's output, with margin; each delay slot adds two (values and weights).
STATE_COPIES = 7

#: The names of the built-in methods that the engine runs through its fused step (each of
#: :data:`~sgpverify.engine.methods.METHODS` names its own, or none).
ALGORITHMS = tuple(name for name, cls in METHODS.items() if cls.fused is not None)


def effective_step_message(gamma: float, w_min: float, L: float) -> str | None:
    """The text of the :class:`~sgpverify.errors.EffectiveStepWarning` of a run with step ``gamma``
    whose smallest push-sum weight was ``w_min`` (1 for a method without weights), on a problem with
    smoothness ``L``: None where the effective step ``gamma / w_min`` is within ``1/L`` (or L is 0)."""
    effective = gamma / w_min if w_min > 0 else math.inf
    if not (L > 0 and effective > 1.0 / L):
        return None
    return (
        f"effective step step_size / w_min = {gamma:g} / {w_min:.3g} = {effective:.3g} exceeds "
        f"1/L = {1.0 / L:.3g} (L = {L:.4g}): the descent analysis assumes a step <= 1/L on the "
        f"de-biased parameters"
    )


def simulate(
    problem: Any,
    topology: Topology | MixingSchedule | sp.sparray | npt.ArrayLike | Sequence[Any],
    *,
    step_size: float,
    n_iter: int,
    x0: npt.ArrayLike | None = None,
    tau: int = 0,
    delay: str | DelayModel | sp.sparray | npt.ArrayLike = "fixed",
    algorithm: str | Method = "sgp",
    replicas: int = 1,
    seed: int | np.random.SeedSequence | None = 0,
    record_every: int = 1,
    momentum: float = 0.0,
    nesterov: bool = False,
    send_before_step: bool = False,
    average_every: int | None = None,
    track_mass: bool = True,
    progress: Callable[[int], object] | None = None,
    record_states: bool | int = False,
    debias: bool = True,
    metric_mask: npt.ArrayLike | None = None,
) -> Trace:
    """Simulate SGP (Algorithm 1), tau-OSGP or a baseline on a problem.

    Parameters
    ----------
    problem : Problem protocol
        ``n_nodes``, ``dim``, ``grad(z, rng)``, ``full_grad``, ``value``, constants.
    topology : Topology, MixingSchedule, networkx graph, matrix or list of them
        Communication schedule (a list: item ``k mod len`` at step k); a topology gets uniform push weights
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
    algorithm : {"sgp", "dpsgd", "allreduce", "local-sgd", "push-diging"} or Method
        A :class:`~sgpverify.engine.methods.Method` object, or the name of a
        built-in one (:data:`~sgpverify.engine.methods.METHODS`; the name and
        the object give the same run): "sgp" (:class:`~sgpverify.engine.methods.SGP`),
        push-sum gossip on ``X - gamma G`` (Algorithm 1); "dpsgd"
        (:class:`~sgpverify.engine.methods.DPSGD`), ``X <- W X - gamma G`` with
        doubly stochastic Metropolis weights; "allreduce", exact averaging every
        step; "local-sgd" (``LocalSGD(H)``), local steps, exact averaging every
        H steps; "push-diging", gradient tracking over the same push matrices
        (:class:`~sgpverify.engine.methods.PushDIGing`). The engine runs a
        method through its fused step where the method names one
        (:func:`~sgpverify.engine.methods.fused_path`), else through the
        generic loop.
    replicas : int
        Independent Monte-Carlo runs in one vectorised pass (graph and delays
        shared). Gradient noise: replica r's own stream
        ``SeedSequence(seed).spawn(replicas)[r]`` for a problem with
        ``grad_replicas``; else one stream, the first, drawn in replica order
        (the Problem protocol in :mod:`sgpverify.problems`).
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
        The authors' overlap variant (docs/theory.md section 1b, "Send-before-step"): the gossip mixes
        ``X`` before the gradient step, ``X <- P X - gamma G``.
    average_every : int, optional
        H for "local-sgd" (default 10; ``LocalSGD(H)`` says the same).
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
    metric_mask : array_like of bool, optional
        Shape (records, replicas) (records ``ceil(n_iter / record_every) + 1``; (records,) with one
        replica): where False, the record's ``full_grad`` and ``value`` are not evaluated and its
        ``grad_norm_sq`` and ``value`` are NaN; every other series is recorded as without it. For
        long runs of a problem whose ``full_grad`` costs more than a step: the suite's settling
        rounds estimate the stationarity average from a sample of steps
        (:func:`sgpverify.suite.runs.metric_sample`). Default: every record. The fused algorithms only.

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
    docs/theory.md sections 1 and 1b: ``X^{k+1} = P^(k) (X^k - gamma G^k)``,
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
    method, average_every = _method(algorithm, average_every)
    algorithm = fused_path(method)  # the fused step that computes it, or None
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
    mask = _metric_mask(metric_mask, record_count(n_iter, record_every), R)
    need = memory_estimate(
        n, d, replicas=R, n_iter=n_iter, record_every=record_every, tau=tau, momentum=beta > 0,
        record_states=state_every if record_states else False,
    )  # fmt: skip
    check_memory("simulate", need, f"n = {n}, d = {d}, replicas = {R}, {n_iter} iterations, tau = {tau}")
    if algorithm is None:  # no fused step: the generic loop
        return _simulate_method(
            method, problem, topology, gamma=gamma, n_iter=n_iter, x0=x0, tau=tau, delay=delay, R=R, seed=seed,
            record_every=record_every, progress=progress,
            unused={"momentum": beta, "nesterov": nesterov, "send_before_step": send_before_step,
                    "average_every": average_every, "record_states": record_states, "debias=False": not debias,
                    "metric_mask": mask is not None},
        )  # fmt: skip
    if algorithm != "sgp" and tau > 0:
        raise ValueError(f"tau applies to algorithm 'sgp' only, got tau = {tau} with {algorithm!r}")
    if algorithm != "sgp" and send_before_step:
        raise ValueError(f"send_before_step applies to algorithm 'sgp' only, got {algorithm!r}")
    H = method.average_every if algorithm == "local-sgd" else 10
    if average_every is not None:
        raise ValueError(f"average_every applies to algorithm 'local-sgd' only, got {algorithm!r}")
    mixer, model, topo_name = _schedule(as_topology(topology), algorithm, n, tau, delay, seed)
    X = _initial_state(x0, n, R, d)
    # the node sum of the initial numerators (R, d): +0.0 everywhere from x0 = None (numpy's sum of
    # +0.0 from +0.0), without a pass over the state
    mass0 = np.zeros((R, d)) if x0 is None else X.sum(axis=0)
    # the user's code, named as theirs; from zeros, on a fresh zero array (no copy of the state)
    if x0 is None:
        check_outputs(problem, np.zeros((n, d)), mass0 / n, fresh=True)
    else:
        check_outputs(problem, X[:, 0, :], mass0 / n)

    # the run: the state, the gradient streams, the step and the records
    push = algorithm == "sgp"
    st = State(X, n_slots=tau + 1 if push else (1 if algorithm == "dpsgd" else 0))
    # weights that stay exactly 1 (doubly stochastic, no delay): z = x, no division
    st.w_ones = push and tau == 0 or not push
    Z = np.empty_like(X)
    rngs = _replica_streams(seed, R, shared=replica_grads(problem) is None)
    rec = Recorder(
        problem,
        Z,
        mass0,
        n_iter=n_iter,
        record_every=record_every,
        gamma=gamma,
        push=push,
        debias=debias,
        track_mass=track_mass,
        lossy=mixer is not None and mixer.topo is not None and mixer.topo.loses_messages,
        state_every=state_every if record_states else None,
        zero_start=x0 is None,
        metric_mask=mask,
    )
    stepper = Stepper(
        st,
        problem,
        rngs,
        Z,
        mixer,
        algorithm=algorithm,
        gamma=gamma,
        n_iter=n_iter,
        beta=beta,
        nesterov=nesterov,
        send_before_step=send_before_step,
        average_every=H,
        debias=debias,
        track_mass=track_mass,
    )
    record, direction, step_direction, update = rec.record, stepper.direction, rec.step_direction, stepper.update
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for k in range(n_iter):
            recording = k % record_every == 0
            if recording:
                record(k, stepper)
            G = direction(k)
            if recording:
                step_direction(k, G)
            update(k, G)
            if progress is not None:
                progress(k)
        rec.record(n_iter, stepper)
        rec.flush()

    w_low = stepper.w_low
    effective = gamma / w_low if push else gamma
    message = effective_step_message(gamma, w_low if push else 1.0, float(problem.L))
    if message is not None:
        warnings.warn(message, EffectiveStepWarning, stacklevel=2)
    X, w = st.X, st.w
    if not debias or st.w_ones:  # x * (1 / 1) is x, bit for bit (or the broken variant's output, x itself):
        Z = X  # the Trace's z is then x's read-only array too (a copy where x is one, R > 1)
    # else the record at n_iter wrote Z = X / w of this state (debias_into, the Recorder's Z is this Z)
    xs, ws, zs = X.transpose(1, 0, 2), w.T, Z.transpose(1, 0, 2)
    if R == 1:
        xs, ws, zs = xs[0], ws[0], zs[0]
    arrays = dict([("x", xs), ("w", ws), ("z", zs)] + list(rec.series().items()))
    return _trace(
        method.name, problem, topo_name, model, gamma, n_iter, tau, seed, R, effective, rec.state_max, arrays,
        owned=True,
    )  # fmt: skip


def _metric_mask(mask, T, R):
    """``metric_mask`` validated: None, or a bool array (T, R) (``(T,)`` accepted with one replica)."""
    if mask is None:
        return None
    m = np.asarray(mask)
    if m.dtype != bool:
        raise TypeError(f"metric_mask must be an array of bool, got dtype {m.dtype}")
    if m.ndim == 1 and R == 1:
        m = m[:, None]
    if m.shape != (T, R):
        raise ValueError(f"metric_mask must have shape (records, replicas) = {(T, R)}, got {m.shape}")
    return np.ascontiguousarray(m)


def _method(algorithm, average_every):
    """The :class:`~sgpverify.engine.methods.Method` that ``algorithm`` names or is, and what is
    left of ``average_every`` for the checks of the other options: a local SGD takes it (a name
    becomes ``LocalSGD(average_every)``; an object must say the same H)."""
    if isinstance(algorithm, str):
        name = check_choice("algorithm", algorithm, tuple(METHODS))
        if name == "local-sgd" and average_every is not None:
            return LocalSGD(average_every), None
        return method_by_name(name), average_every
    if not isinstance(algorithm, Method):
        raise TypeError(
            f"algorithm must be one of {', '.join(METHODS)} or a Method object "
            f"(name, start, points, step, tracking_error), got {type(algorithm).__name__}"
        )
    if isinstance(algorithm, LocalSGD) and average_every is not None:
        H = check_int("average_every", average_every, min_value=1)
        if H != algorithm.average_every:
            raise ValueError(f"average_every = {H} differs from the method's, {algorithm!r}: give H in one place")
        return algorithm, None
    return algorithm, average_every


def _trace(
    algorithm, problem, topo_name, model, gamma, n_iter, tau, seed, R, effective, state_max, arrays, owned=False
):
    """The :class:`Trace` of a run: its parameters and ``arrays`` (each copied, read-only; None kept).
    ``owned``: the arrays are the run's own, referenced nowhere else (simulate's loop): a
    C-contiguous one is then kept as a read-only view, not copied (at n = 10^6 the copies of x and z
    cost about as much as a step)."""
    frozen = {}
    for name, arr in arrays.items():
        if arr is not None:
            arr = arr.view() if owned and arr.flags.c_contiguous else np.array(arr, copy=True)
            arr.setflags(write=False)
        frozen[name] = arr
    return Trace(
        algorithm=algorithm,
        problem=getattr(problem, "name", type(problem).__name__),
        topology=topo_name,
        n=int(problem.n_nodes),
        d=int(problem.dim),
        replicas=R,
        step_size=gamma,
        n_iter=n_iter,
        tau=tau,
        delay=model.name if model is not None else None,
        seed=seed if not isinstance(seed, np.random.SeedSequence) else None,
        effective_step_max=float(effective),
        state_max=state_max,
        **frozen,
    )


def _replica_streams(seed, R, shared=False):
    """The generator of each replica, from ``SeedSequence(seed).spawn(R)`` (the same for every
    algorithm): replica r's own with ``grad_replicas``; else (``shared``) the first, one object
    for all R replicas, which draw from it in replica order at each step (the Problem protocol,
    :mod:`sgpverify.problems`)."""
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    children = ss.spawn(R)
    return [np.random.default_rng(children[0])] * R if shared else [np.random.default_rng(s) for s in children]


def memory_estimate(
    n: int,
    d: int,
    *,
    replicas: int = 1,
    n_iter: int = 0,
    record_every: int = 1,
    tau: int = 0,
    momentum: bool = False,
    record_states: bool | int = False,
) -> float:
    """Bytes a :func:`simulate` call of these sizes needs, beyond the problem's own data.

    The state's copies (:data:`STATE_COPIES` of ``8 n R d`` bytes, two more per delay slot and
    one for momentum), the schedule's arrays (:data:`SCHEDULE_BYTES_PER_NODE` per node), the
    records (12 series of ``R`` floats per record) and, with ``record_states``, the recorded
    states. Measured peaks stay below it by design (a realistic upper estimate): ``simulate``
    refuses a run whose estimate exceeds the memory available before it allocates anything.

    Examples
    --------
    >>> f"{memory_estimate(10**6, 10) / 1e9:.2f} GB"
    '1.66 GB'
    """
    state = 8.0 * n * replicas * d
    copies = STATE_COPIES + 2 * tau + (1 if momentum else 0)
    records = n_iter // record_every + 2
    per_node = SCHEDULE_BYTES_PER_NODE + DELAY_BYTES_PER_NODE * tau
    out = state * copies + per_node * n + 8.0 * 12 * records * replicas
    if record_states:
        every = 1 if isinstance(record_states, bool) else int(record_states)
        out += state * (records // every + 1)
    return out


def _simulate_method(
    method, problem, topology, *, gamma, n_iter, x0, tau, delay, R, seed, record_every, progress, unused
):
    """:func:`simulate` for a :class:`~sgpverify.engine.methods.Method` without a fused step
    (``algorithm="push-diging"``, a user's, ``SGP(fused=False)``): the schedule's
    (delay-augmented) matrices of the method's ``weights``, the run's gradient streams, the records."""
    for opt, value in unused.items():
        if value:
            raise ValueError(
                f"{opt} applies to the algorithms of the fused step only, got {opt} = {value!r} with {method.name!r}"
            )
    n, d = int(problem.n_nodes), int(problem.dim)
    topology = as_topology(topology)
    weights = getattr(method, "weights", "push")
    if weights not in ("push", "metropolis", None):
        raise ValueError(f"weights of method {method.name!r} must be 'push', 'metropolis' or None, got {weights!r}")
    topo_name = None
    if weights is None:  # the method averages by itself: the identity, no messages
        if tau > 0:
            raise ValueError(f"tau applies to methods that gossip (weights), got tau = {tau} with {method.name!r}")
        if isinstance(topology, Topology) and topology.n != n:
            raise ValueError(f"topology has {topology.n} nodes but problem.n_nodes = {n}")
        topo_name = getattr(topology, "name", "matrices")
        schedule = mixing_schedule(sp.identity(n, format="csr"))
    elif isinstance(topology, MixingSchedule):
        if topology.tau != 0:
            raise ValueError("pass an un-augmented schedule and tau separately")
        schedule = topology if tau == 0 else None
        if schedule is None:
            raise ValueError(f"tau > 0 with {method.name!r} needs a topology or matrices, got a MixingSchedule")
    else:
        schedule = mixing_schedule(topology, weights=weights, tau=tau, delay=delay, seed=seed)
    if schedule.n != n:
        raise ValueError(f"topology has {schedule.n} nodes but problem.n_nodes = {n}")
    X = _initial_state(x0, n, R, d)
    check_outputs(problem, X[:, 0, :], X.sum(axis=0) / n)
    rngs = _replica_streams(seed, R, shared=replica_grads(problem) is None)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        res = run_method(method, problem, schedule, X, rngs, gamma=gamma, n_iter=n_iter, record_every=record_every,
                         progress=progress)  # fmt: skip
    squeeze = R == 1
    arrays = {}
    for name in ("x", "w", "z", "y"):  # (n, R, d) or (n, R) -> replica first, squeezed at R = 1
        arr = res[name]
        if arr is not None:
            arr = arr.transpose(1, 0, 2) if arr.ndim == 3 else arr.T
            arr = arr[0] if squeeze else arr
        arrays["tracking" if name == "y" else name] = arr
    for name in ("iterations",) + METHOD_SERIES:
        arr = res[name]
        arrays[name] = arr[:, 0] if squeeze and arr.ndim == 2 else arr
    effective = gamma / res["w_low"]
    return _trace(
        method.name, problem, topo_name or schedule.name, schedule.model, gamma, n_iter, tau, seed, R, effective,
        res["state_max"], arrays,
    )  # fmt: skip


def _schedule(topology, algorithm, n, tau, delay, seed):
    """The gossip of a run: ``(mixer, model, topo_name)``, the :class:`Mixer` of
    the schedule (None for the algorithms without one), the delay model (None
    without delays) and the schedule's name; raises for a schedule that does
    not fit the algorithm or the problem."""
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
        check_delay_shape(model, n)
        fast = topology if isinstance(topology, Topology) and algorithm == "sgp" else None
        mixer = Mixer(schedule, tau, model, topology=fast)
    else:
        if isinstance(topology, Topology) and topology.n != n:
            raise ValueError(f"topology has {topology.n} nodes but problem.n_nodes = {n}")
        model = None
    return mixer, model, topo_name


def _initial_state(x0, n, R, d):
    """The numerators at iteration 0, (n, R, d): ``x0`` on every node and replica
    (zeros when None); raises for a bad ``x0``."""
    if x0 is None:  # zeros without a pass over memory (fresh pages are zero)
        return np.zeros((n, R, d))
    X = np.empty((n, R, d))
    if np.iscomplexobj(x0) and np.any(np.imag(x0) != 0):
        raise ValueError(f"x0 must be real, got complex entries {_short(x0)}")
    try:
        x0 = np.asarray(np.real_if_close(x0) if np.iscomplexobj(x0) else x0, dtype=float)
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
    return X


def _short(value, width=60):
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."
