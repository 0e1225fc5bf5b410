"""The gradient streams of a problem without ``grad_replicas``: the replicas share one
generator, in replica order, and the engine makes one stacked ``grad`` call per step only
where a probe has seen it give the bits of the R calls (the Problem protocol,
sgpverify.problems)."""

import numpy as np
import pytest
from _tolerances import roundoff

import sgpverify as sv
from sgpverify import graphs
from sgpverify.problems import replica_grads

pytestmark = pytest.mark.filterwarnings("ignore::sgpverify.EffectiveStepWarning")


class Cauchy:
    """The user's problem of docs/examples/mymod.py: ``grad`` takes leading replica axes.
    ``calls`` counts the calls with stacked (3-d) and with (n, d) points."""

    def __init__(self, n, d, seed=0, sigma2=0.25):
        self.c = np.random.default_rng(seed).standard_normal((n, d))
        self.n_nodes, self.dim = n, d
        self.L, self.sigma2, self.f_lower, self.zeta2 = 2.0, sigma2, 0.0, float(4 * d)
        self.calls = {"stacked": 0, "single": 0}

    def grad(self, z, rng):
        self.calls["stacked" if np.ndim(z) > 2 else "single"] += 1
        t = z - self.c
        return 2 * t / (1 + t**2) + rng.standard_normal(np.shape(z)) * np.sqrt(self.sigma2 / self.dim)

    def full_grad(self, x):
        t = np.asarray(x)[..., None, :] - self.c
        return np.mean(2 * t / (1 + t**2), axis=-2)

    def value(self, x):
        t = np.asarray(x)[..., None, :] - self.c
        return np.mean(np.sum(np.log1p(t**2), axis=-1), axis=-1)


class OnlyNodes(Cauchy):
    """The same gradients, refusing stacked points: the engine must make R calls."""

    def grad(self, z, rng):
        if np.ndim(z) > 2:
            raise ValueError("points must be (n, d)")
        return super().grad(z, rng)


class SameNoise(Cauchy):
    """A planted bug: the noise drawn for one (n, d) block whatever the leading axes, so a
    stacked call would give every replica the same noise."""

    def grad(self, z, rng):
        self.calls["stacked" if np.ndim(z) > 2 else "single"] += 1
        t = z - self.c
        return 2 * t / (1 + t**2) + rng.standard_normal(np.shape(z)[-2:]) * np.sqrt(self.sigma2 / self.dim)


class ReplicaMean(Cauchy):
    """A planted bug that shows only where the replicas differ: axis 0 meant as the nodes."""

    def grad(self, z, rng):
        g = super().grad(z, rng)
        return g - 0.1 * np.mean(z, axis=0)


class OwnStreams(Cauchy):
    """The same gradients with ``grad_replicas``: one stream per replica (the built-ins' contract;
    used where the class defines ``grad`` too)."""

    def grad(self, z, rng):
        return super().grad(z, rng)

    def grad_replicas(self, Z, rngs, out):
        for r, rng in enumerate(rngs):
            out[r] = self.grad(Z[r], rng)
        return out


N, D, K = 16, 10, 30
FIELDS = ("x", "w", "z", *sv.engine.Trace.SERIES, "iterations")


def test_own_streams_is_a_problem_with_its_own_streams():
    assert replica_grads(OwnStreams(N, D)) is not None and replica_grads(Cauchy(N, D)) is None


def _run(prob, R, topo="exponential", seed=4, **kw):
    topo = graphs.exponential(N) if topo == "exponential" else graphs.random_peer(N, seed=1)
    return sv.simulate(prob, topo, step_size=0.05, n_iter=K, replicas=R, seed=seed, x0=np.ones(D), **kw)


def _same(a, b, skip=()):
    for f in set(FIELDS) - set(skip):
        assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True), f


@pytest.mark.parametrize("kernels", ["numpy", "numba"])
@pytest.mark.parametrize(
    "R, topo, kw",
    [(8, "exponential", {}), (64, "exponential", {}), (8, "random-peer", dict(tau=2, delay="random"))],
    ids=["exponential-R8", "exponential-R64", "random-peer-tau2"],
)
def test_one_stacked_call_gives_the_bits_of_R_calls_on_the_shared_stream(R, topo, kw, kernels, monkeypatch):
    if kernels == "numba" and not sv.engine.kernels.available():
        pytest.skip("numba not installed (the fast extra)")
    monkeypatch.setenv("SGPVERIFY_KERNELS", kernels)
    fast, slow = Cauchy(N, D), OnlyNodes(N, D)
    a, b = _run(fast, R, topo, **kw), _run(slow, R, topo, **kw)
    _same(a, b)
    # step 0 (every replica at x0): R calls; step 1: R calls and the probe; then one call a step
    assert fast.calls["stacked"] == K - 1 and fast.calls["single"] == 1 + 2 * R  # + check_outputs
    assert slow.calls["single"] == 1 + K * R
    _same(a, _run(Cauchy(N, D), R, topo, **kw))  # the same seed, the same bits
    assert not np.allclose(a.z, _run(Cauchy(N, D), R, topo, seed=5, **kw).z)


def test_the_shared_stream_leaves_one_replica_runs_and_the_large_path_as_they_were(monkeypatch):
    # R = 1: the run's stream is spawn(1)[0], as with grad_replicas
    _same(_run(Cauchy(N, D), 1), _run(OwnStreams(N, D), 1))
    # large arrays (no stacked call): the R calls on the shared stream, the same bits
    small = _run(Cauchy(N, D), 4)
    monkeypatch.setattr(sv.engine.step, "BLAS_MIN", 1)
    # (not mass_error: the node sum of the steps is BLAS dgemv below BLAS_MIN, a numpy sum above)
    _same(small, _run(Cauchy(N, D), 4), skip=("mass_error",))


def test_without_noise_the_shared_stream_gives_the_own_streams_gradients():
    # sigma = 0: the gradients do not depend on the streams, so the runs agree to round-off
    a, b = _run(Cauchy(N, D, sigma2=0.0), 8), _run(OwnStreams(N, D, sigma2=0.0), 8)
    for f in ("x", "z", "grad_norm_sq", "consensus"):
        ref = getattr(b, f)
        np.testing.assert_allclose(getattr(a, f), ref, rtol=0, atol=roundoff(1 + np.abs(ref).max(), K * N))


def _noise_at_start(prob, R):
    """Each replica's first gradient minus the noiseless one (all replicas start at one point),
    flattened: (R, n d)."""
    seen = []
    grad = prob.grad

    def spy(z, rng):
        g = grad(z, rng)
        seen.append(np.array(g))
        return g

    prob.grad = spy  # an instance attribute: grad_replicas is not used, the streams are shared
    _run(prob, R)
    first = seen[1] if seen[1].ndim == 2 else None  # seen[0]: check_outputs
    G = np.stack(seen[1 : R + 1]) if first is not None else seen[1]
    t = np.ones(D) - prob.c
    return (G - 2 * t / (1 + t**2)).reshape(R, -1)


@pytest.mark.parametrize("make", [Cauchy, SameNoise], ids=["vectorised", "planted-same-noise"])
def test_replicas_draw_independent_noise(make):
    R = 64
    prob = make(N, D)
    E = _noise_at_start(prob, R)
    m = E.shape[1]
    assert np.allclose(E.var(axis=1).mean(), prob.sigma2 / D, rtol=6 / np.sqrt(R * m))
    C = np.corrcoef(E)[np.triu_indices(R, 1)]
    assert np.abs(C).max() < 5 / np.sqrt(m)  # 2016 pairs, each about N(0, 1/m)
    if make is SameNoise:  # the probe saw the stacked call's noise shared: R calls every step
        assert prob.calls["stacked"] == 1 and prob.calls["single"] == 1 + K * R


def test_a_grad_that_mixes_the_replicas_is_caught_where_they_differ():
    R = 8
    bad, ref = ReplicaMean(N, D), ReplicaMean(N, D)
    a = _run(bad, R)
    # the probe waits for points that differ between the replicas (all start at x0), and sees it
    assert bad.calls["stacked"] == 1 and bad.calls["single"] == 1 + K * R

    class Refusing(ReplicaMean):
        def grad(self, z, rng):
            if np.ndim(z) > 2:
                raise ValueError("points must be (n, d)")
            return super().grad(z, rng)

    _same(a, _run(Refusing(N, D), R))
    assert ref.calls["stacked"] == 0


def test_the_methods_loop_draws_the_shared_stream_in_replica_order():
    # push-diging (the Method loop) makes the R calls on the one stream, as the SGP step's definition
    R = 4
    a = _run(Cauchy(N, D), R, algorithm="push-diging")
    b = _run(OnlyNodes(N, D), R, algorithm="push-diging")
    _same(a, b)
    assert not np.allclose(a.z[0], a.z[1])
    own = _run(OwnStreams(N, D), R, algorithm="push-diging")  # one stream per replica: other draws
    assert not np.array_equal(a.z[1], own.z[1])


def test_the_shared_stream_is_the_first_spawned_drawn_in_replica_order():
    # the documented stream: SeedSequence(seed).spawn(R)[0], replica r's step-0 draws its r-th block
    R = 5
    prob = Cauchy(N, D)
    E = _noise_at_start(prob, R)
    rng = np.random.default_rng(np.random.SeedSequence(4).spawn(R)[0])
    want = rng.standard_normal((R, N, D)).reshape(R, -1) * np.sqrt(prob.sigma2 / D)
    np.testing.assert_allclose(E, want, rtol=0, atol=roundoff(4.0))
