"""The engine's cheaper per-step forms at large n: circulant steps as shifts of the state, the
records' consensus by columns and node sums through a kernel, the Trace's arrays kept as views.
Each must give the bits of the general path it replaces."""

from __future__ import annotations

import numpy as np
import pytest

import sgpverify as sv
from sgpverify import graphs, metrics
from sgpverify.engine import kernels, mixers
from sgpverify.engine.trace import consensus_large

needs_numba = pytest.mark.skipif(not kernels.available(), reason="numba (the fast extra) not installed")


def _wide(rng, shape):
    """Entries over most of the float64 range, subnormal halves included."""
    return rng.standard_normal(shape) * 10.0 ** rng.integers(-310, 300, shape)


@pytest.mark.parametrize("n,m,o", [(2, 1, 1), (5, 3, 4), (100, 7, 64), (70000, 4, 65536), (9, 3000, 8)])
def test_gossip_shift_equals_the_sparse_product(n, m, o):
    rng = np.random.default_rng(n + m)
    X = _wide(rng, (n, m))
    out = np.full_like(X, np.nan)
    mixers.gossip_shift(X, o, out)
    src = np.arange(n)
    half = np.full(n, 0.5)
    ref = X * 0.5
    mixers.spmm_add(mixers.CSR.from_sorted_cols(n, (src + o) % n, src, half), X, ref)
    assert np.array_equal(out, ref)


def _general(topo):
    """The same schedule without its offsets: the mixer takes the general path."""
    return graphs.PeriodicTopology(topo.n, [topo.edges(k) for k in range(topo.period)], name=topo.name)


def test_mixer_makes_shifts_only_of_one_offset_steps_that_keep_the_contract():
    topo = graphs.exponential(64)
    mx = mixers.Mixer(sv.mixing.mixing_schedule(topo), 0, None, topology=topo)
    for k in range(topo.period):
        _, split, _ = mx.step(k)
        assert split.shift == topo.offsets[k][0] and split.keeps_ones
        src, dst, vals = split.edges  # made when read: the topology's edges and shares 1/2
        assert np.array_equal(np.stack([src, dst], 1), topo.edges(k)) and np.all(vals == 0.5)
    two = graphs.exponential(64, peers=2)  # two offsets a step: the general path
    assert mixers.Mixer(sv.mixing.mixing_schedule(two), 0, None, topology=two).step(0)[1].shift is None
    # offsets that contradict the edges: not trusted
    liar = graphs.PeriodicTopology(64, [graphs.edges_from_offsets(64, (2,))], offsets=((3,),))
    assert mixers.Mixer(sv.mixing.mixing_schedule(liar), 0, None, topology=liar).step(0)[1].shift is None
    # with delays: the general path
    mx = mixers.Mixer(sv.mixing.mixing_schedule(topo), 1, sv.mixing.delay_model("fixed", 1, 0), topology=topo)
    assert mx.step(0)[1] is None


@pytest.mark.parametrize("kernel_setting", ["numpy", "numba"])
@pytest.mark.parametrize(
    "make,n,d,kw",
    [
        (graphs.exponential, 70000, 4, {}),
        (graphs.exponential, 16, 10, dict(replicas=8)),
        (graphs.ring, 5000, 2, dict(replicas=3, track_mass=False)),
        (graphs.bipartite_exponential, 64, 4200, {}),
    ],
)
def test_shift_steps_give_the_general_paths_bits(make, n, d, kw, kernel_setting, monkeypatch):
    if kernel_setting == "numba" and not kernels.available():
        pytest.skip("numba (the fast extra) not installed")
    monkeypatch.setenv("SGPVERIFY_KERNELS", kernel_setting)
    prob = sv.problems.QuadraticCosine(n, d, sigma=0.5, seed=0)
    kw = dict(dict(step_size=0.05, n_iter=7, seed=3, record_every=3), **kw)
    topo = make(n)
    a, b = sv.simulate(prob, topo, **kw), sv.simulate(prob, _general(topo), **kw)
    for f in ("x", "w", "z", "consensus", "grad_norm_sq", "value", "mass_error", "step_sq", "state_max"):
        assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True), f


@pytest.mark.parametrize("n,R,d", [(1, 1, 4), (3, 2, 2), (70000, 1, 4), (70001, 3, 5), (5000, 2, 7), (100, 2, 9)])
def test_consensus_large_equals_metrics_consensus(n, R, d):
    rng = np.random.default_rng(n * R * d)
    Z, xbar = rng.standard_normal((n, R, d)) * 10.0 ** rng.integers(-100, 100, (n, R, d)), rng.standard_normal((R, d))
    assert np.array_equal(consensus_large(Z, xbar), metrics.consensus(Z, xbar))


def test_consensus_large_falls_back_when_the_columns_differ(monkeypatch):
    # a numpy whose short sums ran in another order: the first block's check sends it to numpy's sum
    rng = np.random.default_rng(0)
    Z, xbar = rng.standard_normal((70000, 1, 4)) * 1e10, rng.standard_normal((1, 4))
    ref = metrics.consensus(Z, xbar)
    import sgpverify.engine.trace as trace

    real, calls = trace._sum_columns, []

    def skewed(D, out):
        calls.append(1)
        real(D, out)
        out *= 1.0 + 2.0**-40  # another rounding

    monkeypatch.setattr(trace, "_sum_columns", skewed)
    got = consensus_large(Z, xbar)
    assert calls == [1]  # the column sums ran once, on the first block, and were dropped
    assert np.array_equal(got, ref)


@needs_numba
@pytest.mark.parametrize("n,m", [(1, 1), (1, 5), (7, 3), (70000, 4), (1000, 40)])
def test_node_sum_kernel_is_numpys_sum_and_extremes(n, m):
    rng = np.random.default_rng(n + m)
    X = _wide(rng, (n, m))
    out = np.empty(m)
    hi, lo = kernels.node_sum(X, out)
    assert np.array_equal(out, X.sum(axis=0)) and hi == X.max() and lo == X.min()


def test_trace_arrays_are_read_only_and_separate():
    # separate, except z of weights that stayed 1 (exponential): x (1/1) is x, its very array
    prob = sv.problems.QuadraticCosine(70000, 4, sigma=0.5, seed=0)
    for topo, shared in ((graphs.exponential(70000), True), (graphs.random_peer(70000, seed=0), False)):
        tr = sv.simulate(prob, topo, step_size=0.05, n_iter=3)
        arrays = [tr.x, tr.w, tr.z, tr.consensus, tr.value]
        assert not any(a.flags.writeable for a in arrays)
        assert np.shares_memory(tr.x, tr.z) == shared and tr.x.flags.c_contiguous


@needs_numba
def test_node_sum_kernel_sums_negative_zeros_as_numpy_does():
    X = -np.zeros((9, 4))
    X[3, 1] = 2.0**-1074  # one column not zero
    out = np.empty(4)
    kernels.node_sum(X, out)
    assert out.tobytes() == X.sum(axis=0).tobytes()


@pytest.mark.parametrize("n,m", [(1, 2), (3, 1), (70000, 1), (70000, 4), (5000, 3), (40000, 8), (100, 64), (50, 65)])
def test_sum_rows_is_numpys_sum_byte_for_byte(n, m):
    from sgpverify.engine.step import sum_rows

    rng = np.random.default_rng(n + m)
    for A in (_wide(rng, (n, m)), -np.zeros((n, m))):
        assert sum_rows(A).tobytes() == A.sum(axis=0).tobytes()


@pytest.mark.parametrize(
    "make,kw",
    [
        (graphs.exponential, {}),
        (lambda n: graphs.random_peer(n, seed=1), dict(tau=2, delay="random")),
        (lambda n: graphs.random_peer(n, seed=1), dict(debias=False)),
        (lambda n: graphs.random_peer(n, seed=1), dict(track_mass=False)),
    ],
)
@pytest.mark.filterwarnings("ignore::sgpverify.EffectiveStepWarning")
def test_chunked_records_equal_records_one_by_one(make, kw, monkeypatch):
    # the records' deferred arithmetic (state_max per chunk, the short record of weights 1)
    # gives the bits of the records taken one at a time
    import sgpverify.engine.trace as trace

    prob = sv.problems.QuadraticCosine(16, 10, sigma=0.5, seed=0)
    kw = dict(dict(step_size=0.2, n_iter=37, replicas=3, seed=2), **kw)
    a = sv.simulate(prob, make(16), **kw)
    monkeypatch.setattr(trace, "DEFER_ELEMS", 0)
    b = sv.simulate(prob, make(16), **kw)
    for f in ("x", "w", "z", "state_max", "step_sq", *sv.Trace.SERIES):
        assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True), f
