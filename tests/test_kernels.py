"""The compiled SGP step (sgpverify.engine.kernels, numba: the ``fast`` extra) against
the numpy path it replaces: the same bits, kernel by kernel and run by run.

The numpy path is the reference (``SGPVERIFY_KERNELS=numpy``). Every test here
needs numba; the README's test command installs it, so they run in CI."""

import numpy as np
import pytest

import sgpverify as sv
from sgpverify import graphs, mixing
from sgpverify.engine import kernels, mixers, step

pytestmark = [
    pytest.mark.filterwarnings("ignore::sgpverify.EffectiveStepWarning"),
    pytest.mark.skipif(not kernels.available(), reason="numba not installed (the fast extra)"),
]


def _numpy_step(X, G, a, split, w_new=None, d=1):
    """The numpy path's arithmetic of one step (step.axpy, mixers.gossip, the node sum)."""
    n = X.shape[0]
    Y = X.copy()
    step.axpy(a, G, Y)
    out = Y * split.diag[:, None]
    mixers.spmm_add(split.off, Y, out)
    msum = G.sum(axis=0)
    Z = None
    if w_new is not None:
        R = w_new.shape[1]
        Z = step.debias(out.reshape(n, R, d), w_new, np.empty((n, R, d))).reshape(n, R * d)
    return out, msum, Z


def _numpy_weights(w, split):
    out = np.multiply(w, split.diag[:, None])
    mixers.spmm_add(split.off, w, out)
    return out


def _splits(n, seed):
    """Steps of several shapes: edge lists (one peer, several peers, in-degree 0
    and >= 3, empty) and CSR matrices from a schedule."""
    rng = np.random.default_rng(seed)
    out = []
    for topo in (
        graphs.random_peer(n, seed=seed),
        graphs.exponential(n, peers=2),
        graphs.erdos_renyi(n, 0.4, seed=seed),
        graphs.star(n),
    ):
        mixer = mixers.Mixer(mixing.mixing_schedule(topo), 0, None, topology=topo)
        out.append((topo.name, mixer.step(int(rng.integers(0, 50)))[1]))
    # a schedule's matrices (CSR by receiver, not from a topology)
    S = mixing.mixing_schedule(graphs.erdos_renyi(n, 0.3, seed=seed + 1))
    mixer = mixers.Mixer(S, 0, None)
    out.append(("matrices", mixer.step(3)[1]))
    # no messages at all
    empty = mixers.Split(np.ones(n), None, (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)))
    out.append(("empty", empty))
    return out


@pytest.mark.parametrize(
    "m,d", [(1, 1), (4, 4), (16, 8), (17, 17), (2500, 2500), (2500, 1250), (3000, 600), (17000, 17000), (20000, 10000)]
)
def test_fused_step_equals_the_numpy_step_bit_for_bit(m, d):
    # short rows (by sender for edges), long rows by blocks (by receiver, counting
    # sort), replica segments of several blocks (the block is 8192 entries)
    n = 23
    rng = np.random.default_rng(m)
    X = rng.standard_normal((n, m))
    G = rng.standard_normal((n, m)) * 10.0
    R = m // d
    w = rng.random((n, R)) + 0.25
    K = kernels.Step(n)
    for name, split in _splits(n, m):
        ref, ref_sum, ref_z = _numpy_step(X, G, -0.037, split, w, d)
        out, msum, Z = np.full_like(X, np.nan), np.full(m, np.nan), np.full_like(X, np.nan)
        K.run(X, G, -0.037, split.diag, split.edges, split.csr, out, msum, Z, w, d)
        assert np.array_equal(out, ref), name
        assert np.array_equal(msum, ref_sum), name
        assert np.array_equal(Z, ref_z), name
        # without the optional outputs
        out2 = np.full_like(X, np.nan)
        K.run(X, G, -0.037, split.diag, split.edges, split.csr, out2)
        assert np.array_equal(out2, ref), name
        # de-biased without the node sum (rows of at most one message take one loop)
        out3, Z3 = np.full_like(X, np.nan), np.full_like(X, np.nan)
        K.run(X, G, -0.037, split.diag, split.edges, split.csr, out3, None, Z3, w, d)
        assert np.array_equal(out3, ref), name
        assert np.array_equal(Z3, ref_z), name
        # the weights
        ow = np.full_like(w, np.nan)
        kernels.Step.weights(w, split.diag, split.edges, split.csr, ow)
        assert np.array_equal(ow, _numpy_weights(w, split)), name


def test_regrouping_by_receiver_is_stable_and_complete():
    n = 40
    rng = np.random.default_rng(1)
    src = np.sort(rng.integers(0, n, 200))
    dst = rng.integers(0, n, 200)
    vals = rng.random(200)
    ptr, s, v = kernels.Step(n).rows(n, (src, dst, vals))
    for i in range(n):
        sel = dst == i  # the edges into i, in edge order (senders ascending)
        assert np.array_equal(s[ptr[i] : ptr[i + 1]], src[sel])
        assert np.array_equal(v[ptr[i] : ptr[i + 1]], vals[sel])


def _fields(tr):
    return {f: getattr(tr, f) for f in ("x", "w", "z", *sv.Trace.SERIES, "iterations", "step_sq")}


def _equal(a, b):
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


CASES = [
    # (name, n, d, topology, kwargs): every branch the fused step takes
    ("small-exp", 16, 10, lambda n: graphs.exponential(n), dict(replicas=8)),
    ("small-rp", 16, 10, lambda n: graphs.random_peer(n, seed=1), dict(replicas=3)),
    ("small-rp-R1", 12, 3, lambda n: graphs.random_peer(n, seed=1), dict()),
    ("small-er-nomass", 12, 3, lambda n: graphs.erdos_renyi(n, 0.3, seed=2), dict(track_mass=False, replicas=2)),
    ("small-matrices", 12, 5, lambda n: mixing.mixing_schedule(graphs.random_peer(n, seed=4)), dict(replicas=2)),
    (
        "small-mom-states",
        12,
        5,
        lambda n: graphs.random_peer(n, seed=1),
        dict(momentum=0.9, nesterov=True, record_states=True, replicas=2),
    ),
    ("small-nodebias", 12, 5, lambda n: graphs.random_peer(n, seed=1), dict(debias=False)),
    ("big-rp", 64, 4200, lambda n: graphs.random_peer(n, seed=1), dict(replicas=2, n_iter=6)),
    ("big-exp2", 64, 4200, lambda n: graphs.exponential(n, peers=2), dict(n_iter=6)),
    ("big-rp-nomass", 64, 4200, lambda n: graphs.random_peer(n, seed=1), dict(track_mass=False, n_iter=6)),
    ("big-nodebias", 64, 4200, lambda n: graphs.random_peer(n, seed=1), dict(debias=False, n_iter=6)),
    ("big-matrices", 64, 4200, lambda n: mixing.mixing_schedule(graphs.random_peer(n, seed=4)), dict(n_iter=6)),
    # message loss: the steps that lose a message take the numpy path, the others the kernel
    (
        "big-loss",
        64,
        4200,
        lambda n: graphs.with_message_loss(graphs.random_peer(n, seed=1), 0.01, seed=3),
        dict(n_iter=12, record_every=5),
    ),
    (
        "small-loss",
        16,
        10,
        lambda n: graphs.with_message_loss(graphs.random_peer(n, seed=1), 0.03, seed=3),
        dict(n_iter=30, replicas=2),
    ),
    # tau-OSGP: the delayed step (random delays, fixed delays on a cached period,
    # with message loss on some steps, large arrays, large n)
    ("small-rp-tau2-random", 16, 10, lambda n: graphs.random_peer(n, seed=1), dict(replicas=8, tau=2, delay="random")),
    ("small-exp-tau1-fixed", 12, 3, lambda n: graphs.exponential(n), dict(replicas=2, tau=1, delay="fixed")),
    ("small-exp2-tau4-random-R1", 12, 3, lambda n: graphs.exponential(n, peers=2), dict(tau=4, delay="random")),
    (
        "small-loss-tau2",
        16,
        10,
        lambda n: graphs.with_message_loss(graphs.random_peer(n, seed=1), 0.03, seed=3),
        dict(n_iter=30, replicas=2, tau=2, delay="random"),
    ),
    ("small-nodebias-tau2", 12, 5, lambda n: graphs.random_peer(n, seed=1), dict(debias=False, tau=2, delay="random")),
    ("big-rp-tau2", 64, 4200, lambda n: graphs.random_peer(n, seed=1), dict(n_iter=6, tau=2, delay="random")),
    ("largen-rp-tau1", 70000, 4, lambda n: graphs.random_peer(n, seed=1), dict(n_iter=5, tau=1, delay="random")),
    ("largen-rp", 70000, 4, lambda n: graphs.random_peer(n, seed=1), dict(n_iter=5)),
    # random peer's own kernel: replica segments of the weights and of z (steps between records: their
    # gradients at the kernel's z); two nodes (the weights stay 1)
    ("largen-rp-R3", 70000, 4, lambda n: graphs.random_peer(n, seed=1), dict(n_iter=5, replicas=3, record_every=4)),
    ("two-rp", 2, 3, lambda n: graphs.random_peer(n, seed=1), dict(n_iter=6, replicas=2)),
    ("largen-exp", 70000, 4, lambda n: graphs.exponential(n), dict(n_iter=5)),
    # circulant steps with one offset: the shift kernel (short rows), by receiver (long rows)
    ("largen-exp-R3-nomass", 70000, 2, lambda n: graphs.exponential(n), dict(n_iter=4, replicas=3, track_mass=False)),
    ("largen-ring-nodebias", 70001, 3, lambda n: graphs.ring(n), dict(n_iter=3, debias=False)),
    ("big-exp-long-rows", 64, 4200, lambda n: graphs.exponential(n), dict(n_iter=6, replicas=2)),
    ("largen-bipartite", 70000, 4, lambda n: graphs.bipartite_exponential(n), dict(n_iter=5)),
]


@pytest.mark.parametrize("name,n,d,make,kw", CASES, ids=[c[0] for c in CASES])
def test_simulate_gives_the_same_bits_with_and_without_numba(name, n, d, make, kw, monkeypatch):
    prob = sv.problems.QuadraticCosine(n, d, sigma=0.5, seed=0)
    kw = dict(dict(step_size=0.05, n_iter=40, seed=3), **kw)
    calls = []
    run, delayed, shift, peer = kernels.Step.run, kernels.delayed_step, kernels.Step.shift, kernels.Step.peer
    monkeypatch.setattr(kernels.Step, "run", lambda self, *a, **k: (calls.append(1), run(self, *a, **k))[1])
    monkeypatch.setattr(kernels.Step, "shift", staticmethod(lambda *a, **k: (calls.append(1), shift(*a, **k))[1]))
    monkeypatch.setattr(kernels.Step, "peer", staticmethod(lambda *a, **k: (calls.append(1), peer(*a, **k))[1]))
    monkeypatch.setattr(kernels, "delayed_step", lambda *a, **k: (calls.append(1), delayed(*a, **k))[1])
    monkeypatch.setenv("SGPVERIFY_KERNELS", "numpy")
    ref = sv.simulate(prob, make(n), **kw)
    assert not calls
    monkeypatch.setenv("SGPVERIFY_KERNELS", "numba")
    got = sv.simulate(prob, make(n), **kw)
    topo = make(n)
    if getattr(topo, "loses_messages", False):  # both paths were taken, in turn
        assert 0 < len(calls) < kw["n_iter"]
    else:
        assert len(calls) == kw["n_iter"]  # every step went through the kernel
    a, b = _fields(ref), _fields(got)
    bad = [f for f in a if not _equal(a[f], b[f])]
    assert not bad, f"{name}: fields differ: {bad}"
    if kw.get("record_states"):
        assert np.array_equal(ref.z_history, got.z_history)


def test_divergence_is_named_the_same_on_both_paths(monkeypatch):
    # the fused step's finiteness test names the node and iteration as the numpy path does
    prob = sv.problems.QuadraticCosine(64, 4200, seed=0)
    errs = []
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("SGPVERIFY_KERNELS", mode)
        with pytest.raises(sv.SimulationDivergedError) as e:
            sv.simulate(prob, graphs.random_peer(64, seed=0), step_size=1e6, n_iter=400, record_every=1000)
        errs.append((e.value.iteration, e.value.node, str(e.value)))
    assert errs[0] == errs[1]


def test_bad_kernel_setting_names_the_variable_and_value(monkeypatch):
    monkeypatch.setenv("SGPVERIFY_KERNELS", "fastest")
    with pytest.raises(ValueError, match="SGPVERIFY_KERNELS.*'fastest'"):
        sv.simulate(sv.problems.QuadraticCosine(4, 2, seed=0), graphs.exponential(4), step_size=0.1, n_iter=2)


@pytest.mark.parametrize(
    "make",
    [lambda: sv.problems.QuadraticCosine(6, 7, seed=1), lambda: sv.problems.DoubleWell(6, 7, seed=1)],
    ids=["quadcos", "doublewell"],
)
def test_batch_metrics_problems_give_row_by_row_bits(make):
    # the promise behind Problem.batch_metrics: a stacked call equals one call per row
    prob = make()
    assert prob.batch_metrics
    x = np.random.default_rng(0).standard_normal((9, 5, 7)) * 3
    v, g = prob.value(x), prob.full_grad(x)
    for c in range(9):
        assert np.array_equal(v[c], prob.value(x[c]))
        assert np.array_equal(g[c], prob.full_grad(x[c]))
        for r in range(5):
            assert np.array_equal(v[c, r], prob.value(x[c, r]))


class _Hide:
    """A problem with batch_metrics hidden (the engine's per-record calls)."""

    def __init__(self, inner):
        self._inner = inner

    # the gradients forwarded by the class itself, so that the replicas keep their own streams (a wrapper
    # that only forwards attributes has no grad_replicas of its own: its replicas would share one)
    def grad(self, z, rng):
        return self._inner.grad(z, rng)

    def grad_replicas(self, Z, rngs, out):
        return self._inner.grad_replicas(Z, rngs, out)

    def __getattr__(self, name):
        if name == "batch_metrics":
            raise AttributeError(name)
        return getattr(self._inner, name)


@pytest.mark.parametrize("R", [1, 8])
def test_batched_records_equal_per_record_calls(R, monkeypatch):
    monkeypatch.setenv("SGPVERIFY_KERNELS", "numpy")
    prob = sv.problems.QuadraticCosine(16, 10, sigma=0.5, seed=0)
    kw = dict(step_size=0.05, n_iter=90, replicas=R, seed=2)
    a = sv.simulate(prob, graphs.random_peer(16, seed=0), **kw)
    b = sv.simulate(_Hide(prob), graphs.random_peer(16, seed=0), **kw)
    assert not hasattr(_Hide(prob), "batch_metrics")
    for f in ("value", "grad_norm_sq", "consensus", "mass_error"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert not sv.problems.NonconvexLogistic(4, 3, seed=0).batch_metrics  # BLAS: not promised


def test_asking_for_numba_without_it_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(kernels, "HAVE_NUMBA", False)
    monkeypatch.setenv("SGPVERIFY_KERNELS", "numba")
    with pytest.raises(ValueError, match="SGPVERIFY_KERNELS='numba'.*numba is not installed"):
        sv.simulate(sv.problems.QuadraticCosine(4, 2, seed=0), graphs.exponential(4), step_size=0.1, n_iter=2)
    monkeypatch.setenv("SGPVERIFY_KERNELS", "auto")  # auto without numba: the numpy path, silently
    assert not kernels.enabled()
    sv.simulate(sv.problems.QuadraticCosine(4, 2, seed=0), graphs.exponential(4), step_size=0.1, n_iter=2)


def test_cli_names_a_bad_kernel_setting_before_any_work(monkeypatch, tmp_path, capsys):
    from sgpverify.cli import main

    monkeypatch.setenv("SGPVERIFY_KERNELS", "bogus")
    out = tmp_path / "out"
    assert (
        main(["verify", "--quick", "--only", "mass-conservation", "--no-cache", "--no-progress", "--out", str(out)])
        == 2
    )
    assert "SGPVERIFY_KERNELS must be 'auto', 'numba' or 'numpy', got 'bogus'" in capsys.readouterr().err
    assert not out.exists()  # nothing half-written


@pytest.mark.parametrize(
    "value, setting",
    [("numpy", "numpy"), (" OFF ", "numpy"), ("0", "numpy"), ("", "auto"), ("Auto", "auto"), ("numba", "numba")],
)
def test_check_kernels_setting_reads_every_spelling(value, setting, monkeypatch):
    monkeypatch.setenv("SGPVERIFY_KERNELS", value)
    assert sv.engine.check_kernels_setting() == setting
    monkeypatch.delenv("SGPVERIFY_KERNELS")
    assert sv.engine.check_kernels_setting() == "auto"


def test_cli_checks_the_kernel_setting_even_for_a_command_without_a_simulation(monkeypatch, capsys):
    # the check runs first, not only where the engine would have raised anyway
    from sgpverify.cli import main

    monkeypatch.setenv("SGPVERIFY_KERNELS", "bogus")
    assert main(["mixing", "--topology", "ring", "--nodes", "4", "--horizon", "5"]) == 2
    assert "SGPVERIFY_KERNELS must be 'auto', 'numba' or 'numpy', got 'bogus'" in capsys.readouterr().err


def test_auto_keeps_small_runs_on_numpy_until_numba_is_loaded(monkeypatch):
    # the bits are the same either way: auto only saves the import (about 0.4 s) on tiny runs
    monkeypatch.setenv("SGPVERIFY_KERNELS", "auto")
    monkeypatch.delitem(__import__("sys").modules, "numba", raising=False)
    assert not kernels.enabled(1000)
    assert kernels.enabled(kernels.AUTO_MIN_WORK)
    monkeypatch.setitem(__import__("sys").modules, "numba", object())  # loaded: always worth it
    assert kernels.enabled(1000)
    monkeypatch.setenv("SGPVERIFY_KERNELS", "numba")  # forced: whatever the size
    monkeypatch.delitem(__import__("sys").modules, "numba")
    assert kernels.enabled(1)


@pytest.mark.parametrize(
    "n,d,kw",
    [(64, 4200, {}), (70000, 4, {}), (16, 10, dict(replicas=8)), (16, 10, dict(replicas=8, tau=2, delay="random"))],
    ids=["by-receiver", "by-sender", "small", "small-tau2"],
)
def test_debiased_points_are_x_times_one_reciprocal_per_weight_on_both_paths(n, d, kw, monkeypatch):
    """z = x * (1 / w) with the reciprocal computed once per weight (engine.step.debias; the
    fused kernels write the next step's z with the same arithmetic on large arrays): numpy
    and numba give the same bits, and they are not those of x / w (which the paths used before)."""
    prob = sv.problems.QuadraticCosine(n, d, sigma=0.5, seed=0)
    # records only at the start and the end: a record writes the points it reads itself (numpy),
    # so between records the gradients are taken at the z the fused kernel wrote (large arrays)
    kw = dict(dict(step_size=0.05, n_iter=6, seed=3, record_every=1000), **kw)
    tr = {}
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("SGPVERIFY_KERNELS", mode)
        tr[mode] = sv.simulate(prob, graphs.random_peer(n, seed=1), **kw)
    a, b = _fields(tr["numpy"]), _fields(tr["numba"])
    assert not [f for f in a if not _equal(a[f], b[f])]
    x, w, z = tr["numba"].x, tr["numba"].w, tr["numba"].z
    assert np.array_equal(z, x * (1.0 / w)[..., None])
    # the two roundings of x * (1 / w) differ from the one of x / w on some entries
    assert not np.array_equal(z, x / w[..., None])
