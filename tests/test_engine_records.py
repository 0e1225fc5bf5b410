"""The records' cheaper forms: the deferred records' sums by columns
(:func:`sgpverify.engine.trace.sum_last`), node sums without the inbox slot just zeroed, and the
start from x0 = None without a pass over the state. Each must give the bits of the general path
it replaces."""

from __future__ import annotations

import numpy as np
import pytest

import sgpverify as sv
import sgpverify.engine.trace as trace
from sgpverify.engine.trace import sum_last


def _wide(rng, shape):
    """Entries over most of the float64 range, subnormal halves included."""
    return rng.standard_normal(shape) * 10.0 ** rng.integers(-310, 300, shape)


@pytest.mark.parametrize("m", list(range(1, 19)) + [23, 24, 31, 40, 127, 128, 129, 200])
def test_sum_last_equals_numpy_sum(m):
    rng = np.random.default_rng(m)
    for A in (_wide(rng, (3, 5, m)), _wide(rng, (1, m)), -np.zeros((2, 3, m)), np.zeros((0, m))):
        got = sum_last(A)
        assert got.shape == A.shape[:-1]
        assert got.tobytes() == A.sum(axis=-1).tobytes()


def test_sum_last_of_a_strided_array_is_numpys():
    A = _wide(np.random.default_rng(1), (6, 20))[:, ::2]  # not contiguous: numpy's own sum
    assert sum_last(A).tobytes() == A.sum(axis=-1).tobytes()


def test_sum_last_falls_back_when_the_probe_differs(monkeypatch):
    # a numpy whose row sums ran in another order: the probe sends every call to numpy's sum
    monkeypatch.setattr(trace, "_PAIRWISE_ROWS", {})
    real = trace._pairwise_columns

    def skewed(A):
        out = real(A)
        out *= 1.0 + 2.0**-40  # another rounding
        return out

    monkeypatch.setattr(trace, "_pairwise_columns", skewed)
    A = _wide(np.random.default_rng(2), (50, 10))
    assert sum_last(A).tobytes() == A.sum(axis=-1).tobytes()
    assert trace._PAIRWISE_ROWS == {10: False}


def _runs(monkeypatch, n, d, R, topo, **kw):
    prob = sv.problems.QuadraticCosine(n, d, sigma=0.1, seed=0)
    args = dict(step_size=0.05, n_iter=23, replicas=R, seed=3, **kw)
    deferred = sv.simulate(prob, topo, **args)
    monkeypatch.setattr(trace, "DEFER_ELEMS", 0)  # every record's arithmetic at once (the general path)
    direct = sv.simulate(prob, topo, **args)
    return deferred, direct


@pytest.mark.parametrize("d", [1, 3, 10, 17])
@pytest.mark.parametrize("R", [1, 2, 8])
@pytest.mark.parametrize("tau", [0, 2])
def test_deferred_records_equal_the_direct_records(monkeypatch, d, R, tau):
    n = 12
    topo = sv.graphs.exponential(n) if tau == 0 else sv.graphs.random_peer(n, seed=1)
    a, b = _runs(monkeypatch, n, d, R, topo, tau=tau, delay="random" if tau else "fixed")
    for f in ("consensus", "grad_norm_sq", "value", "mass_error", "weight_error", "step_sq", "state_max"):
        assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True), f


@pytest.mark.parametrize("tau,R", [(1, 1), (2, 3), (4, 8)])
def test_records_skip_the_zeroed_slot_with_the_same_bits(monkeypatch, tau, R):
    # the records' sums in flight without the slot that the rotation just zeroed, against all slots
    n, d = 9, 3
    prob = sv.problems.QuadraticCosine(n, d, sigma=0.1, seed=0)
    args = dict(step_size=0.05, n_iter=31, replicas=R, seed=3, tau=tau, delay="random")
    topo = sv.graphs.random_peer(n, seed=1)
    skipping = sv.simulate(prob, topo, **args)
    monkeypatch.setattr(trace, "_in_flight", lambda slots, empty: slots)
    every = sv.simulate(prob, topo, **args)
    for f in ("mass_error", "weight_error", "consensus", "grad_norm_sq", "value", "state_max"):
        assert np.array_equal(getattr(skipping, f), getattr(every, f), equal_nan=True), f
    assert np.all(skipping.mass_error < 1e-12) and np.all(skipping.weight_error < 1e-12)


@pytest.mark.parametrize("R,tau", [(1, 0), (3, 0), (2, 2)])
def test_a_start_from_none_equals_a_start_from_zeros(R, tau):
    # x0 = None: the initial mass and the user-code check from zeros, without reading the state
    n, d = 10, 4
    prob = sv.problems.QuadraticCosine(n, d, sigma=0.1, seed=0)
    topo = sv.graphs.random_peer(n, seed=1)
    args = dict(step_size=0.05, n_iter=17, replicas=R, seed=3, tau=tau, delay="random" if tau else "fixed")
    a = sv.simulate(prob, topo, **args)
    b = sv.simulate(prob, topo, x0=np.zeros(d), **args)
    for f in ("x", "w", "z", "consensus", "mass_error", "weight_error", "step_sq", "state_max"):
        assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True), f


def test_the_user_code_check_of_a_start_from_none_sees_zeros():
    seen = []

    class Probe:
        n_nodes, dim, L, sigma2, zeta2, f_lower = 5, 3, 1.0, 0.0, 0.0, 0.0

        def grad(self, z, rng):
            seen.append(np.array(z, copy=True))
            z += 1.0  # the check's own array: the run's state is untouched
            return z - 1.0

        def full_grad(self, x):
            return np.asarray(x) * 1.0

        def value(self, x):
            return np.sum(np.asarray(x) ** 2, axis=-1)

    tr = sv.simulate(Probe(), sv.graphs.ring(5), step_size=0.1, n_iter=2)
    assert seen[0].shape == (5, 3) and seen[0].flags.c_contiguous and not np.any(seen[0])
    assert np.all(np.isfinite(tr.x)) and np.all(seen[1] == 0.0)  # the run's first points: zeros still


@pytest.mark.parametrize("R,tau,topo", [(1, 2, "rp"), (3, 2, "rp"), (3, 0, "rp"), (4, 0, "er")])
def test_the_trajectory_does_not_depend_on_how_often_it_is_recorded(R, tau, topo):
    # a record's z = x (1/w) is the one the step's gradients are then taken at: the same bits
    n, d = 12, 3
    prob = sv.problems.QuadraticCosine(n, d, sigma=0.1, seed=0)
    graph = sv.graphs.random_peer(n, seed=1) if topo == "rp" else sv.graphs.erdos_renyi(n, 0.3, seed=2)
    args = dict(step_size=0.05, n_iter=20, replicas=R, seed=3, tau=tau, delay="random" if tau else "fixed")
    every, sparse = sv.simulate(prob, graph, record_every=1, **args), sv.simulate(prob, graph, record_every=5, **args)
    for f in ("x", "w", "z"):
        assert np.array_equal(getattr(every, f), getattr(sparse, f)), f
    for f in ("consensus", "value", "mass_error", "weight_min"):
        assert np.array_equal(getattr(every, f)[::5], getattr(sparse, f)), f


@pytest.mark.parametrize("kernels_setting", ["numpy", "numba"])
@pytest.mark.parametrize("R,tau,d", [(1, 0, 4), (2, 1, 3), (1, 0, 300)])
def test_a_large_start_from_none_equals_a_start_from_zeros(monkeypatch, kernels_setting, R, tau, d):
    # the first record of a large state from x0 = None: its sums known without passes over the state
    if kernels_setting == "numba" and not sv.engine.kernels.available():
        pytest.skip("numba (the fast extra) not installed")
    monkeypatch.setenv("SGPVERIFY_KERNELS", kernels_setting)
    n = (1 << 18) // (R * d) + 3  # a large state: the records' direct path
    prob = sv.problems.QuadraticCosine(n, d, sigma=0.1, seed=0)
    topo = sv.graphs.random_peer(n, seed=1)
    args = dict(step_size=0.05, n_iter=3, replicas=R, seed=3, tau=tau, delay="random" if tau else "fixed")
    a = sv.simulate(prob, topo, **args)
    b = sv.simulate(prob, topo, x0=np.zeros(d), **args)
    for f in ("x", "w", "z", "consensus", "grad_norm_sq", "mass_error", "weight_error", "step_sq", "state_max"):
        assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True), f
    # exact by construction: every node starts at the same zeros, so their distance to the average is +0.0
    assert np.all(a.consensus[0] == 0.0) and a.state_max > 0.0


@pytest.mark.parametrize("R", [1, 3])
def test_z_of_weights_all_one_is_x_read_only(R):
    # weights that stay 1: z = x (1/1) is x, kept as x's array (R = 1) or its own copy
    prob = sv.problems.QuadraticCosine(8, 3, sigma=0.1, seed=0)
    tr = sv.simulate(prob, sv.graphs.exponential(8), step_size=0.05, n_iter=5, replicas=R)
    # exact by construction: the weights are never gossiped here (doubly stochastic, no delay) and z is x's array
    assert np.array_equal(tr.z, tr.x) and np.all(tr.w == 1.0)
    assert not tr.z.flags.writeable and not tr.x.flags.writeable
    assert np.shares_memory(tr.z, tr.x) == (R == 1)
    with pytest.raises(ValueError):
        tr.z[0] = 1.0


def test_divergence_on_a_cached_step_is_named_the_same_on_both_paths(monkeypatch):
    # weights all 1 on a periodic schedule (the compiled lean step): the per-step finiteness test
    if not sv.engine.kernels.available():
        pytest.skip("numba (the fast extra) not installed")
    prob = sv.problems.QuadraticCosine(16, 10, seed=0)
    errs = []
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("SGPVERIFY_KERNELS", mode)
        with pytest.raises(sv.SimulationDivergedError) as e:
            sv.simulate(prob, sv.graphs.exponential(16), step_size=1e6, n_iter=600, replicas=8, record_every=1000)
        errs.append((e.value.iteration, e.value.node, str(e.value)))
    assert errs[0] == errs[1] and errs[0][0] < 600


@pytest.mark.parametrize("n,m", [(1, 1), (2, 3), (16, 10), (16, 80), (16, 640), (7, 1000), (300, 5)])
def test_the_mass_tracking_node_sum_is_ones_matmul(n, m):
    # node_dot: ndarray.dot where it is the same dgemv as ones @ (the bits of the node sum before)
    from sgpverify.engine.step import node_dot

    rng = np.random.default_rng(m)
    f, ones = node_dot(n, m), np.ones(n)
    for A in (rng.standard_normal((n, m)), _wide(rng, (n, m)), -np.zeros((n, m)), np.full((n, m), np.inf)):
        assert f(A).tobytes() == (ones @ A).tobytes()


def test_the_node_sum_falls_back_to_matmul_when_the_probe_differs(monkeypatch):
    import sgpverify.engine.step as step

    ones = np.ones(16)
    # the probe sees another rounding
    assert not step.same_sums(ones.__matmul__, lambda A: ones.dot(A) * (1.0 + 2.0**-40), 16, 80)
    assert step.same_sums(ones.__matmul__, ones.__matmul__, 16, 80)
    # a shape whose probe failed: ones @ itself
    monkeypatch.setattr(step, "_DOT_ROWS", {(16, 80): False})
    f = step.node_dot(16, 80)
    assert f.__name__ == "__matmul__"
    A = _wide(np.random.default_rng(3), (16, 80))
    assert f(A).tobytes() == (ones @ A).tobytes()


def test_a_large_state_is_never_probed_for_its_node_sum(monkeypatch):
    """node_dot's probe draws arrays of the state's shape: only small states (below BLAS_MIN entries) take it;
    a large state sums its nodes by numpy's reduction and is never probed, with the same mass tracking."""
    import sgpverify.engine.step as step

    calls = []
    real = step.same_sums
    monkeypatch.setattr(step, "same_sums", lambda f, g, n, m: calls.append((n, m)) or real(f, g, n, m))
    monkeypatch.setattr(step, "_DOT_ROWS", {})
    n, d = 64, step.BLAS_MIN // 64  # n d = BLAS_MIN: large
    prob = sv.problems.QuadraticCosine(n, d, sigma=0.1, seed=0)
    tr = sv.simulate(prob, sv.graphs.exponential(n), step_size=0.05, n_iter=3, seed=3)
    assert calls == [] and np.isfinite(tr.mass_error).all()
    sv.simulate(
        sv.problems.QuadraticCosine(8, 5, sigma=0.1, seed=0), sv.graphs.exponential(8), step_size=0.05, n_iter=3
    )
    assert calls == [(8, 5)]
