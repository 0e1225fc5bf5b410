"""The built-in methods as Methods: each one's plain NumPy step (the generic loop) against the
engine's fused step on the same problem, schedule, seed and gradient streams; a name and its
object give the same trace; a variant of a built-in runs its own step; the errors are named.

Tolerance of generic vs fused (:func:`agreement_tol`): both compute the same recursion from the
same gradient draws and differ only in the order of their roundings (the sparse products' sums,
the node sums). Each entry of a step is a sum of at most ``n (tau + 1)`` products (a row of the
delay-augmented matrix), so a step adds at most ``c n (tau + 1) eps`` of the largest numerator
met; over K steps, ``K n (tau + 1)`` such roundings (:func:`roundoff`). The de-biased points
``z = x / w`` carry the numerators' absolute error divided by w, so the scale is the largest
numerator over the smallest weight (``state_max / w_low``, both measured by the fused run: a
bound on ``max |z|``). The recursion contracts (the runs converge), so the errors add up without
growing: one ``roundoff(scale, K n (tau + 1))``. A metric ``q = |v|^2`` of such points differs by
at most ``2 |v| dv + dv^2``: its allowance is the points' times ``2 (1 + L) scale + 1``.
"""

import numpy as np
import pytest
from _tolerances import roundoff
from hypothesis import given, settings
from hypothesis import strategies as st

import sgpverify as sv
from sgpverify import graphs
from sgpverify.engine import ALGORITHMS
from sgpverify.engine.methods import (
    DPSGD,
    METHODS,
    SGP,
    AllReduce,
    LocalSGD,
    Method,
    PushDIGing,
    fused_path,
    method_by_name,
    run_method,
)
from sgpverify.mixing import mixing_schedule
from sgpverify.testing import strategies as sgst

pytestmark = pytest.mark.filterwarnings("ignore::sgpverify.errors.EffectiveStepWarning")

BUILTIN = {"sgp": SGP, "dpsgd": DPSGD, "allreduce": AllReduce, "local-sgd": lambda **kw: LocalSGD(3, **kw)}
METRICS = ("consensus", "grad_norm_sq", "value")


def agreement_tol(trace, L, tau=0):
    """The allowance for the de-biased points of a generic run against the fused ``trace`` (of a
    problem with constant ``L``), and for its metrics (see the module docstring)."""
    n, K, L = trace.n, max(trace.n_iter, 1), float(L)
    scale = (1.0 + trace.state_max) * trace.effective_step_max / trace.step_size  # state_max / w_low
    tol = roundoff(scale, K * n * (tau + 1))
    return tol, tol * (2.0 * (1.0 + L) * scale + 1.0)


def run_both(method, prob, topo, **kw):
    """The fused run and the generic run of ``method`` (a class of :data:`BUILTIN`)."""
    fused = sv.simulate(prob, topo, algorithm=method(), **kw)
    generic = sv.simulate(prob, topo, algorithm=method(fused=False), **kw)
    return fused, generic


def assert_agree(fused, generic, L, tau=0):
    tol, tol_m = agreement_tol(fused, L, tau)
    assert generic.algorithm == fused.algorithm and generic.n_iter == fused.n_iter
    np.testing.assert_array_equal(generic.iterations, fused.iterations)
    np.testing.assert_allclose(generic.z, fused.z, rtol=0, atol=tol)
    np.testing.assert_allclose(generic.x, fused.x, rtol=0, atol=tol * fused.state_max)
    np.testing.assert_allclose(generic.w, fused.w, rtol=0, atol=tol)
    for name in METRICS:
        np.testing.assert_allclose(getattr(generic, name), getattr(fused, name), rtol=0, atol=tol_m, err_msg=name)
    # the mass bookkeeping of both: round-off, each on its own
    assert np.nanmax(np.abs(generic.mass_error - generic.mass_lost)) <= tol * fused.n
    assert np.nanmax(np.abs(fused.mass_error - fused.mass_lost)) <= tol * fused.n
    np.testing.assert_allclose(generic.mass_lost, fused.mass_lost, rtol=0, atol=tol * fused.n)


@pytest.mark.parametrize("name", list(BUILTIN))
@pytest.mark.parametrize("topo", ["random-peer", "exponential", "ring"])
@pytest.mark.parametrize("R", [1, 3])
def test_the_generic_step_equals_the_fused_step(name, topo, R):
    n, d, K = 8, 3, 60
    prob = sv.problems.QuadraticCosine(n, d, seed=1)
    t = graphs.by_name(topo, n, seed=2)
    kw = dict(step_size=0.05, n_iter=K, x0=np.linspace(-1, 1, d), seed=4, replicas=R)
    fused, generic = run_both(BUILTIN[name], prob, t, **kw)
    assert_agree(fused, generic, prob.L)
    # a meaningful comparison: the run moved by far more than the allowance
    assert np.abs(fused.z - np.linspace(-1, 1, d)).max() > 1e6 * agreement_tol(fused, prob.L)[0]


@pytest.mark.parametrize("tau, delay", [(1, "fixed"), (3, "fixed"), (2, "random")])
def test_tau_osgp_generic_equals_fused_on_the_augmented_matrices(tau, delay):
    n, d, K = 8, 3, 60
    prob = sv.problems.QuadraticCosine(n, d, seed=3)
    kw = dict(step_size=0.05, n_iter=K, x0=np.ones(d), seed=5, replicas=2, tau=tau, delay=delay)
    fused, generic = run_both(SGP, prob, graphs.random_peer(n, seed=1), **kw)
    assert_agree(fused, generic, prob.L, tau)


@pytest.mark.parametrize(
    "faulty",
    [
        lambda t: graphs.with_message_loss(t, 0.2, seed=1),
        lambda t: graphs.with_stragglers(t, [0, 3], every=3),
        lambda t: graphs.with_link_failures(t, 0.3, seed=2),
    ],
    ids=["message-loss", "stragglers", "link-failures"],
)
def test_sgp_generic_equals_fused_under_faults(faulty):
    # message loss: the generic step says what its messages carried (state.extra["sent"]), so the
    # lost mass is counted as the fused step counts it
    n, d, K = 8, 3, 40
    prob = sv.problems.QuadraticCosine(n, d, seed=0)
    topo = faulty(graphs.exponential(n, peers=1))
    fused, generic = run_both(SGP, prob, topo, step_size=0.02, n_iter=K, x0=np.ones(d), seed=1, replicas=2)
    assert_agree(fused, generic, prob.L)


@settings(max_examples=20, deadline=None)
@given(
    topo=sgst.topologies(min_n=2, max_n=10),
    tau=st.integers(0, 2),
    name=st.sampled_from(sorted(BUILTIN)),
    seed=st.integers(0, 2**16),
)
def test_generic_equals_fused_on_any_schedule(topo, tau, name, seed):
    if name != "sgp":
        tau = 0  # the other fused steps take no delays
    prob = sv.problems.QuadraticCosine(topo.n, 2, seed=seed % 5)
    kw = dict(step_size=0.02, n_iter=25, x0=np.ones(2), seed=seed, replicas=2, tau=tau)
    fused, generic = run_both(BUILTIN[name], prob, topo, **kw)
    assert_agree(fused, generic, prob.L, tau)


class Shared(sv.problems.QuadraticCosine):
    """QuadraticCosine without its stacked gradients: the replicas share one stream."""

    grad_replicas = None


@pytest.mark.parametrize("name", list(BUILTIN))
def test_run_method_on_the_methods_matrices_equals_the_fused_engine(name):
    # run_method itself (not through simulate): the schedule of the method's weights, the
    # streams simulate documents (SeedSequence(seed).spawn(R), one shared without grad_replicas)
    n, d, K, R, seed = 8, 3, 50, 3, 7
    for prob, shared in ((sv.problems.QuadraticCosine(n, d, seed=2), False), (Shared(n, d, seed=2), True)):
        topo = graphs.exponential(n, peers=1)
        method = BUILTIN[name](fused=False)
        # no gossip (weights None): the identity, as the engine passes it
        S = mixing_schedule(topo, weights=method.weights) if method.weights else mixing_schedule(np.eye(n))
        X0 = np.zeros((n, R, d)) + 0.5
        children = np.random.SeedSequence(seed).spawn(R)
        rngs = [np.random.default_rng(children[0])] * R if shared else [np.random.default_rng(c) for c in children]
        res = run_method(method, prob, S, X0, rngs, gamma=0.05, n_iter=K)
        fused = sv.simulate(prob, topo, algorithm=name, step_size=0.05, n_iter=K, x0=np.full(d, 0.5), seed=seed,
                            replicas=R, **({"average_every": 3} if name == "local-sgd" else {}))  # fmt: skip
        tol, tol_m = agreement_tol(fused, prob.L)
        np.testing.assert_allclose(res["z"].transpose(1, 0, 2), fused.z, rtol=0, atol=tol)
        for m in METRICS:
            np.testing.assert_allclose(res[m], getattr(fused, m), rtol=0, atol=tol_m, err_msg=m)


class Recording(sv.problems.QuadraticCosine):
    """Logs each gradient call: the points and the state of the generator it draws from."""

    grad_replicas = None

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.log = []

    def grad(self, z, rng):
        self.log.append((np.array(z, copy=True), rng.bit_generator.state["state"]["state"]))
        return super().grad(z, rng)


@pytest.mark.parametrize("name", list(BUILTIN))
def test_the_gradient_streams_line_up(name):
    # the same draws per node per step: one grad call per step, at the same points (to the
    # allowance), from the generator in the same state
    n, d, K = 6, 2, 30
    logs = []
    for fused in (True, False):
        prob = Recording(n, d, seed=1)
        kw = dict(step_size=0.05, n_iter=K, x0=np.ones(d), seed=3)
        tr = sv.simulate(prob, graphs.random_peer(n, seed=0), algorithm=BUILTIN[name](fused=fused), **kw)
        logs.append(prob.log[-K:])  # the last K: the engine's checks of the user's code come first
        if fused:
            tol = agreement_tol(tr, prob.L)[0]
    assert len(logs[0]) == len(logs[1]) == K
    for (z1, s1), (z2, s2) in zip(*logs):
        assert s1 == s2 and z1.shape == z2.shape == (n, d)
        np.testing.assert_allclose(z1, z2, rtol=0, atol=tol)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_a_name_and_its_object_give_the_same_trace(name):
    # the same path, the same bits (same machine, same process: an exact comparison)
    n, d = 6, 3
    prob = sv.problems.QuadraticCosine(n, d, seed=0)
    topo = graphs.random_peer(n, seed=1)
    kw = dict(step_size=0.05, n_iter=20, x0=np.ones(d), seed=2, replicas=2)
    by_name = sv.simulate(prob, topo, algorithm=name, **kw)
    by_object = sv.simulate(prob, topo, algorithm=METHODS[name](), **kw)
    assert by_name.to_dict() == by_object.to_dict()
    assert by_name.algorithm == name and fused_path(method_by_name(name)) == (name if name in ALGORITHMS else None)


def test_local_sgd_takes_its_period_from_the_object_or_the_option():
    prob = sv.problems.QuadraticCosine(6, 2, seed=0)
    kw = dict(step_size=0.05, n_iter=20, x0=np.ones(2), seed=2)
    a = sv.simulate(prob, graphs.ring(6), algorithm="local-sgd", average_every=4, **kw)
    b = sv.simulate(prob, graphs.ring(6), algorithm=LocalSGD(4), **kw)
    c = sv.simulate(prob, graphs.ring(6), algorithm=LocalSGD(4), average_every=4, **kw)
    d = sv.simulate(prob, graphs.ring(6), algorithm="local-sgd", **kw)
    assert a.to_dict() == b.to_dict() == c.to_dict() != d.to_dict()


class Doubled(SGP):
    """A variant of SGP (its step with twice the step size): not the fused step's recursion."""

    name = "sgp-doubled"

    def step(self, k, P, state, gamma, grad):
        super().step(k, P, state, 2 * gamma, grad)


class Renamed(SGP):
    name = "my-sgp"


def test_a_variant_of_a_builtin_runs_its_own_step():
    assert fused_path(Doubled()) is None and fused_path(Renamed()) == "sgp" and fused_path(PushDIGing()) is None
    assert all(isinstance(cls(), Method) for cls in METHODS.values())
    n, d, K = 8, 3, 40
    prob = sv.problems.QuadraticCosine(n, d, seed=1)
    topo = graphs.random_peer(n, seed=0)
    kw = dict(n_iter=K, x0=np.ones(d), seed=3)
    doubled = sv.simulate(prob, topo, algorithm=Doubled(), step_size=0.02, **kw)
    sgp2 = sv.simulate(prob, topo, algorithm="sgp", step_size=0.04, **kw)
    sgp1 = sv.simulate(prob, topo, algorithm="sgp", step_size=0.02, **kw)
    tol = agreement_tol(sgp2, prob.L)[0]
    np.testing.assert_allclose(doubled.z, sgp2.z, rtol=0, atol=tol)
    assert np.abs(doubled.z - sgp1.z).max() > 1e6 * tol and doubled.algorithm == "sgp-doubled"
    renamed = sv.simulate(prob, topo, algorithm=Renamed(), step_size=0.02, **kw)
    assert renamed.algorithm == "my-sgp" and np.array_equal(renamed.z, sgp1.z)  # the fused step: the same bits


def test_fused_only_options_and_bad_methods_are_named():
    prob = sv.problems.QuadraticCosine(4, 2)
    ring = graphs.ring(4)
    kw = dict(step_size=0.1, n_iter=2)
    for opt, value in (("send_before_step", True), ("momentum", 0.5), ("nesterov", True), ("record_states", True)):
        with pytest.raises(ValueError, match=f"{opt} applies to the algorithms of the fused step only, got {opt} = "):
            sv.simulate(prob, ring, algorithm=SGP(fused=False), **{opt: value}, **kw)
    with pytest.raises(ValueError, match="debias=False applies to the algorithms of the fused step only"):
        sv.simulate(prob, ring, algorithm=SGP(fused=False), debias=False, **kw)
    with pytest.raises(ValueError, match="average_every must be an integer >= 1, got 0"):
        LocalSGD(0)
    with pytest.raises(ValueError, match=r"average_every = 3 differs from the method's, LocalSGD\(average_every=5\)"):
        sv.simulate(prob, ring, algorithm=LocalSGD(5), average_every=3, **kw)
    with pytest.raises(ValueError, match="average_every applies to algorithm 'local-sgd' only, got 'dpsgd'"):
        sv.simulate(prob, ring, algorithm=DPSGD(), average_every=3, **kw)
    with pytest.raises(ValueError, match="tau applies to methods that gossip .*, got tau = 1 with 'allreduce'"):
        sv.simulate(prob, ring, algorithm=AllReduce(fused=False), tau=1, **kw)
    with pytest.raises(ValueError, match="tau applies to algorithm 'sgp' only, got tau = 1 with 'allreduce'"):
        sv.simulate(prob, ring, algorithm=AllReduce(), tau=1, **kw)

    class Odd(SGP):
        weights = "doubly"

        def step(self, k, P, state, gamma, grad):
            super().step(k, P, state, gamma, grad)

    with pytest.raises(ValueError, match="weights of method 'sgp' must be 'push', 'metropolis' or None, got 'doubly'"):
        sv.simulate(prob, ring, algorithm=Odd(), **kw)
    names = "'sgp', 'dpsgd', 'allreduce', 'local-sgd', 'push-diging'"
    with pytest.raises(ValueError, match=f"algorithm must be one of {names}, got 'osgp'"):
        sv.simulate(prob, ring, algorithm="osgp", **kw)
