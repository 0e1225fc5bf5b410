"""SGPOptimizer on 4 gloo ranks (one process each), held against the simulator.

The runs start 4 ranks with ``sgpverify.distributed.spawn`` (forked: about 2 s on a quiet
machine; the problem runs share one start). Exact comparisons (``==``) are exact by
construction: the same numpy gradients at the same points, shares of 1/2 (the exponential graph
on 4 nodes: one in- and one out-neighbour a step, so every fold is a sum of two terms, whatever
the order), a correctly rounded division, and the simulator's two roundings ``x + (-gamma) g``
(``SimulatorSGD``; ``torch.optim.SGD`` fuses the multiply-add and is held to a tolerance
instead). CUDA cases run with the module on the GPU (gloo stages the messages through the host)
and are skipped without CUDA.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch not installed: pip install torch==2.13.0 'sgpverify[distributed]'")

import _dist_workers as W  # noqa: E402

from sgpverify import distributed as D  # noqa: E402
from sgpverify import graphs, problems, simulate  # noqa: E402
from sgpverify.mixing import push_matrix  # noqa: E402

EPS = float(np.finfo(float).eps)
EPS32 = float(np.finfo(np.float32).eps)
N = 4
DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")),
]


def _spec(**kw):
    spec = {"iters": 30, "seed": 3, "step_size": 0.05, "tau": 0, "delay": "fixed", "x0_spread": 1.0}
    spec.update(kw)
    return spec


def _simulated(spec):
    prob = problems.QuadraticCosine(N, spec.get("dim", 10), seed=spec["seed"])
    topo = graphs.by_name(spec.get("topology", "exponential"), N, seed=spec["seed"])
    x0 = np.full((N, spec.get("dim", 10)), 1.0) + spec["x0_spread"] * (np.arange(N) - (N - 1) / 2.0)[:, None]
    return simulate(
        prob,
        topo,
        step_size=spec["step_size"],
        n_iter=spec["iters"],
        x0=x0,
        tau=spec["tau"],
        delay="fixed",
        seed=spec["seed"],
        record_states=True,
    )


def _z(outs):
    """(iters + 1, n, d): every rank's z before each step and after the last (before the flush)."""
    return np.stack([o["z"] for o in outs], axis=1)


SPECS = {
    "tau0": _spec(tau=0, update="numerator"),
    "tau2-fixed": _spec(tau=2, update="numerator"),
    "tau0-delta": _spec(tau=0, update="delta"),
    "tau2-delta": _spec(tau=2, update="delta"),
    "torch-sgd": _spec(inner="sgd"),
    "float32": _spec(param_dtype="float32"),
    "float32-state64": _spec(param_dtype="float32", state_dtype="float64", update="delta"),
    "adam": _spec(inner="adam", update="delta", iters=25),
}


@pytest.fixture(scope="module", params=DEVICES)
def runs(request):
    """Every run of SPECS on this device, one after the other in one start of 4 ranks."""
    specs = {name: dict(spec, device=request.param) for name, spec in SPECS.items()}
    outs = D.spawn(W.problem_runs, N, (specs,))
    return {name: [o[name] for o in outs] for name in specs} | {"device": request.param}


@pytest.mark.parametrize("name", ["tau0", "tau2-fixed", "tau0-delta"])
def test_plain_sgd_float64_bit_equal_to_simulator(runs, name):
    outs, tr = runs[name], _simulated(SPECS[name])
    assert all(o["is_optimizer"] for o in outs)
    assert {o["x_device"].split(":")[0] for o in outs} == {runs["device"]}
    z = _z(outs)
    # every step of every rank: the same bits as the simulator
    assert np.array_equal(z, tr.z_history), float(np.abs(z - tr.z_history).max())
    # the control: the same run one step behind is far from it (the comparison can fail)
    assert np.abs(z[1:] - tr.z_history[:-1]).max() > 1e-3


def test_delta_update_with_delays_is_close_but_not_bit_equal(runs):
    # "delta" adds z_new - z_old to x: with w != 1 (delays) that differs from x - gamma g by
    # round-off per step; stated tolerance roundoff(scale, ops = iters * 4)
    spec = SPECS["tau2-delta"]
    tr = _simulated(spec)
    z = _z(runs["tau2-delta"])
    scale = float(np.abs(tr.z_history).max())
    err = float(np.abs(z - tr.z_history).max())
    assert err <= 64 * EPS * 4 * spec["iters"] * scale
    assert np.abs(z[1:] - tr.z_history[:-1]).max() > 1e-3


def test_torch_sgd_and_float32_within_tolerance_of_simulator(runs):
    tr = _simulated(SPECS["torch-sgd"])
    scale = float(np.abs(tr.z_history).max())
    L = float(problems.QuadraticCosine(N, 10, seed=3).L)
    # round-off of r roundings a step, carried through K steps of a map with Lipschitz constant
    # <= 1 + gamma L (mixing is non-expansive in the max norm): K r eps scale (1 + gamma L)^K, r = 4
    K = SPECS["torch-sgd"]["iters"]
    growth = (1 + SPECS["torch-sgd"]["step_size"] * L) ** K
    err64 = float(np.abs(_z(runs["torch-sgd"]) - tr.z_history).max())
    assert err64 <= 4 * K * EPS * scale * growth
    err32 = float(np.abs(_z(runs["float32"]) - tr.z_history).max())
    assert err32 <= 4 * K * EPS32 * scale * growth
    # the float32 run is float32: its error is well above float64 round-off (the check can fail)
    assert err32 > 64 * K * EPS * scale
    # float32 parameters, x and w in float64 on request: the state is float64, the error float32's
    outs = runs["float32-state64"]
    assert {o["x_dtype"] for o in outs} == {"torch.float64"}
    assert float(np.abs(_z(outs) - tr.z_history).max()) <= 4 * K * EPS32 * scale * growth


def _adam_reference(spec):
    """One process, n torch Adam optimizers, the push-sum recursion with sgpverify's mixing matrices
    (dense): x += (Adam step at z), X <- P X, w <- P w, z = x / w."""
    d, lr = spec.get("dim", 10), spec["step_size"]
    prob = problems.QuadraticCosine(N, d, seed=spec["seed"])
    topo = graphs.exponential(N)
    rng = np.random.default_rng(np.random.SeedSequence(spec["seed"]).spawn(1)[0])
    X = np.full((N, d), 1.0) + spec["x0_spread"] * (np.arange(N) - (N - 1) / 2.0)[:, None]
    w = np.ones(N)
    ps = [torch.nn.Parameter(torch.tensor(X[i])) for i in range(N)]
    opts = [torch.optim.Adam([p], lr=lr) for p in ps]
    zs = [X / w[:, None]]
    for k in range(spec["iters"]):
        Z = X / w[:, None]
        G = np.asarray(prob.grad(Z, rng), dtype=float)
        for i in range(N):
            ps[i].grad = torch.from_numpy(G[i].copy())
            opts[i].step()
            X[i] = X[i] + (ps[i].detach().numpy() - Z[i])
        P = push_matrix(topo, k).toarray()
        X, w = P @ X, P @ w
        for i in range(N):
            with torch.no_grad():
                ps[i].copy_(torch.from_numpy(X[i] / w[i]))
        zs.append(X / w[:, None])
    return np.array(zs)


def test_adam_matches_a_one_process_reference_and_is_not_sgd(runs):
    spec = SPECS["adam"]
    z = _z(runs["adam"])
    ref = _adam_reference(spec)
    scale = float(np.abs(ref).max())
    # the same operations but for the dense products P X (sums of two terms with zeros): round-off only
    assert np.abs(z - ref).max() <= 64 * EPS * 4 * spec["iters"] * scale
    # the control: Adam's trajectory is not plain SGD's (the simulator's)
    assert np.abs(z - _simulated(spec).z_history).max() > 1e-3


def test_mass_bookkeeping_with_messages_in_flight():
    # tau-OSGP with real asynchrony (asap) and a slow link: messages are in flight at most steps
    spec = _spec(tau=2, delay="asap", iters=40, link_delay=0.003)
    outs = D.spawn(W.problem_run, N, (spec,))
    d = 10
    x0_sum = (np.full((N, d), 1.0) + spec["x0_spread"] * (np.arange(N) - (N - 1) / 2.0)[:, None]).sum(axis=0)
    applied = np.cumsum(sum(o["grads"] for o in outs), axis=0)  # (iters, d)
    mass = sum(o["mass"] for o in outs)  # (iters, d + 1): x + sent - received, summed over ranks
    expected = x0_sum[None, :] - spec["step_size"] * applied
    scale = float(np.abs(mass).max()) + 1
    tol = 64 * EPS * spec["iters"] * N * scale
    assert np.abs(mass[:, :d] - expected).max() <= tol
    assert np.abs(mass[:, d] - N).max() <= tol
    # the control: the nodes alone (without what is in flight) miss weight at some steps
    nodes = sum(o["nodes"] for o in outs)
    assert np.abs(nodes[:, d] - N).max() > 1e-3
    # after the flush nothing is in flight: the numerators alone carry the whole mass
    x_end = sum(o["x_after_flush"] for o in outs)
    w_end = sum(o["w_after_flush"] for o in outs)
    assert np.abs(x_end - expected[-1]).max() <= tol
    assert abs(w_end - N) <= tol


STEPS = 12


@pytest.fixture(scope="module", params=[0, 1], ids=["tau0", "tau1-fixed"])
def checkpointed(request, tmp_path_factory):
    """The standard loop: uninterrupted (saving at the half), and saved then restored in fresh processes."""
    tau, ckpt = request.param, str(tmp_path_factory.mktemp("ckpt") / "ckpt")
    full = D.spawn(W.training_loop, N, ("full", STEPS, ckpt, tau))
    D.spawn(W.training_loop, N, ("first", STEPS, ckpt, tau))
    resumed = D.spawn(W.training_loop, N, ("resume", STEPS, ckpt, tau))
    partial = D.spawn(W.training_loop, N, ("resume", STEPS, ckpt, tau, "fixed", "model")) if tau == 0 else None
    return {"tau": tau, "full": full, "resumed": resumed, "partial": partial}


def test_standard_loop_checkpoint_restore_in_fresh_processes(checkpointed):
    # the two-line change in a standard loop (Nesterov SGD, weight decay, StepLR, BatchNorm buffers
    # gossiped): save at the half, restore in new processes, continue == the uninterrupted run
    full, resumed = checkpointed["full"], checkpointed["resumed"]
    for f, r in zip(full, resumed):
        assert np.array_equal(f["flat"], r["flat"])
        assert f["lrs"][STEPS // 2 :] == r["lrs"]
    assert all(f["is_optimizer"] for f in full)
    # the scheduler acted on the inner optimizer's param groups (StepLR: halved every 4 steps)
    assert full[0]["lrs"][:5] == [0.1, 0.1, 0.1, 0.05, 0.05]
    assert full[0]["inner_lr"] == full[0]["lrs"][-1]
    assert np.mean(full[0]["losses"][-3:]) < full[0]["losses"][0]  # it trains


def test_restore_without_the_optimizer_state_differs(checkpointed):
    # the control of the checkpoint test: restoring the model alone does not continue the run
    if checkpointed["partial"] is None:
        pytest.skip("the control runs once, with tau = 0")
    gaps = [np.abs(f["flat"] - p["flat"]).max() for f, p in zip(checkpointed["full"], checkpointed["partial"])]
    assert max(gaps) > 1e-6


def test_batchnorm_buffers_are_gossiped(checkpointed):
    # every rank's data differ: its BatchNorm running mean drifts its own way unless gossiped
    if checkpointed["tau"] != 0:
        pytest.skip("runs once, with tau = 0")
    off = D.spawn(W.training_loop, N, ("full", STEPS, "", 0, "fixed", "all", False))

    def spread(outs):
        rm = np.array([o["running_mean"] for o in outs])
        return float(np.abs(rm - rm.mean(axis=0)).max())

    assert spread(checkpointed["full"]) < 0.25 * spread(off)


def test_bad_input_errors_name_the_parameter():
    errs = D.spawn(W.bad_input, N)[0]
    assert errs["n != world"] == ("ValueError", "topology.n must equal the world size (4), got a topology of 5 nodes")
    assert errs["tau = -1"][0] == "ValueError" and errs["tau = -1"][1].startswith("tau must be an integer >= 0")
    assert errs["tau = 1.5"][0] in ("TypeError", "ValueError") and "tau" in errs["tau = 1.5"][1]
    assert errs["not an optimizer"][0] == "TypeError"
    assert errs["not an optimizer"][1].startswith("optimizer must be a torch.optim.Optimizer")
    assert errs["not a topology"][0] == "TypeError" and "topology" in errs["not a topology"][1]
    assert errs["delay"][0] == "ValueError" and errs["delay"][1].startswith("delay must be one of")
    assert errs["timeout"][0] == "ValueError" and "timeout" in errs["timeout"][1]
    assert errs["dtype"][0] == "ValueError" and "dtype" in errs["dtype"][1]
    assert "update 'numerator'" in errs["numerator float64 state on float32"][1]


def test_without_a_process_group_the_error_says_so():
    p = torch.nn.Parameter(torch.zeros(2))
    with pytest.raises(D.DistributedError, match="needs torch.distributed initialised"):
        D.SGPOptimizer(torch.optim.SGD([p], lr=0.1), graphs.exponential(4))
    with pytest.raises(TypeError, match="optimizer must be a torch.optim.Optimizer"):
        D.SGPOptimizer(object(), graphs.exponential(4))


def test_a_silent_rank_is_named():
    outs = D.spawn(W.silent_rank, N, (2, 3.0))
    assert outs[2] == "silent"
    # rank 2 receives from rank 1 and sends to rank 3 at step 0 (exponential graph: i -> i + 1)
    assert "message from rank 2 of iteration 0 not received within 3 s" in outs[3], outs[3]
    assert all(o != "no error" for o in outs)


def test_grad_scaler_skipped_step_keeps_gossiping():
    outs = D.spawn(W.grad_scaler, N, (4,))
    assert [o["k"] for o in outs] == [4] * N  # every rank took every step: no one waited for a skipped one
    assert outs[1]["scales"][1] == outs[1]["scales"][0] / 2  # the scaler backed off on rank 1 only
    assert outs[0]["scales"][1] == outs[0]["scales"][0]
    # the inf gradients never reached a numerator (they would have spread to every rank)
    assert all(np.isfinite(o["z"]).all() and np.isfinite(o["w"]) for o in outs)
