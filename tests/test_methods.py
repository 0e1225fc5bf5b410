"""Methods as objects: Push-DIGing against an independent per-node loop, its invariant, its claim
(exact stationarity where SGP stalls), and a user's method run through the same engine."""

import numpy as np
import pytest
from _tolerances import roundoff
from hypothesis import given, settings
from hypothesis import strategies as st

import sgpverify as sv
from sgpverify import graphs
from sgpverify.engine.methods import METHODS, Method, MethodState, PushDIGing
from sgpverify.mixing import mixing_schedule
from sgpverify.testing import strategies as sgst

pytestmark = pytest.mark.filterwarnings("ignore::sgpverify.errors.EffectiveStepWarning")


def reference_push_diging(prob, topo, *, step_size, n_iter, x0, tau=0, delay="fixed", seed=0):
    """Push-DIGing node by node, with dense matrices: one replica (written from the paper's
    recursion, not from the engine's code)."""
    S = mixing_schedule(topo, tau=tau, delay=delay, seed=seed)
    n, d, N = prob.n_nodes, prob.dim, S.N
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    u = np.zeros((N, d))
    u[:n] = x0
    v = np.zeros(N)
    v[:n] = 1.0
    g = np.asarray(prob.grad(u[:n].copy(), rng), dtype=float)
    y = np.zeros((N, d))
    y[:n] = g
    for k in range(n_iter):
        P = S.matrix(k).toarray()
        sent = u - step_size * y
        u_new = np.zeros((N, d))
        v_new = np.zeros(N)
        y_new = np.zeros((N, d))
        for i in range(N):
            for j in range(N):
                if P[i, j] != 0.0:
                    u_new[i] += P[i, j] * sent[j]
                    v_new[i] += P[i, j] * v[j]
                    y_new[i] += P[i, j] * y[j]
        z = u_new[:n] / v_new[:n, None]
        g_new = np.asarray(prob.grad(z, rng), dtype=float)
        y_new[:n] += g_new - g
        u, v, y, g = u_new, v_new, y_new, g_new
    return u[:n] / v[:n, None], y[:n], y.sum(axis=0) - g.sum(axis=0)


@pytest.mark.parametrize("tau, delay", [(0, "fixed"), (2, "fixed"), (2, "random")])
@pytest.mark.parametrize("topo", ["random-peer", "exponential-irregular"])
def test_push_diging_equals_the_per_node_reference(topo, tau, delay):
    n, d, K = 6, 3, 40
    prob = sv.problems.QuadraticCosine(n, d, seed=2)
    t = graphs.by_name(topo, n, seed=1)
    x0 = np.linspace(-1, 1, d)
    tr = sv.simulate(prob, t, step_size=0.05, n_iter=K, algorithm="push-diging", x0=x0, tau=tau, delay=delay, seed=3)
    z, y, inv = reference_push_diging(prob, t, step_size=0.05, n_iter=K, x0=x0, tau=tau, delay=delay, seed=3)
    tol = roundoff(1 + np.abs(z).max(), K * n * (tau + 1))
    np.testing.assert_allclose(tr.z, z, rtol=0, atol=tol)
    np.testing.assert_allclose(tr.tracking, y, rtol=0, atol=tol)
    assert tr.algorithm == "push-diging" and tr.tracking_error[-1] <= tol + np.abs(inv).max()


@settings(max_examples=25, deadline=None)
@given(
    topo=sgst.topologies(min_n=2, max_n=12, faults=False),
    tau=st.integers(0, 3),
    delay=st.sampled_from(["fixed", "random"]),
    seed=st.integers(0, 2**16),
)
def test_the_tracking_invariant_holds_on_any_schedule(topo, tau, delay, seed):
    # sum_i y_i (in flight included) = sum_i g_i at every record, to round-off
    n, d, K = topo.n, 3, 30
    prob = sv.problems.QuadraticCosine(n, d, seed=seed % 7)
    tr = sv.simulate(prob, topo, step_size=0.02, n_iter=K, algorithm="push-diging", tau=tau, delay=delay, seed=seed)
    scale = 1 + np.abs(tr.tracking).max()
    assert np.all(tr.tracking_error <= roundoff(scale * n * (tau + 1), K * n * (tau + 1)))
    assert np.all(tr.mass_error <= roundoff(1 + tr.state_max * n * (tau + 1), K * n * (tau + 1)))


def test_the_invariant_check_sees_a_lost_tracking_message():
    # the control of the invariant: a lost message takes its share of y, for good
    n, d = 8, 3
    prob = sv.problems.QuadraticCosine(n, d, seed=0)
    lossy = graphs.with_message_loss(graphs.random_peer(n, seed=0), 0.2, seed=1)
    tr = sv.simulate(prob, lossy, step_size=0.02, n_iter=30, algorithm="push-diging", x0=np.ones(d))
    assert tr.tracking_error.max() > 1e-3


class DroppedCorrection(PushDIGing):
    """Tracking with the correction term dropped: y only mixes (y^{k+1} = C^k y^k)."""

    name = "push-diging-no-correction"

    def step(self, k, P, state, gamma, grad):
        g_old = state.grads
        super().step(k, P, state, gamma, grad)
        state.vectors["y"][: state.n] -= state.grads - g_old


def _final_grad_norm(algorithm, zeta_scale, K=4000):
    prob = sv.problems.QuadraticCosine(8, 4, sigma=0.0, heterogeneity=zeta_scale, seed=0)
    topo = graphs.random_peer(8, seed=0)
    tr = sv.simulate(prob, topo, step_size=0.05, n_iter=K, algorithm=algorithm, x0=np.ones(4), record_every=K)
    return float(tr.grad_norm_sq[-1])


def test_tracking_reaches_exact_stationarity_where_sgp_stalls():
    # exact gradients, a constant step, a heterogeneous problem: Push-DIGing goes to round-off
    # (a criterion fixed in advance: ||grad f(xbar^K)||^2 <= 1e-20), SGP stalls at a floor
    # that grows with zeta^2 (>= 1e-8 and larger at the larger heterogeneity)
    assert _final_grad_norm("push-diging", 2.0) <= 1e-20
    floor_small, floor_large = _final_grad_norm("sgp", 1.0), _final_grad_norm("sgp", 4.0)
    assert floor_small >= 1e-8 and floor_large > 4 * floor_small
    # the control: tracking without its correction term does not reach stationarity
    assert not _final_grad_norm(DroppedCorrection(), 2.0) <= 1e-20


class UserSGP:
    """SGP written by a user as a Method, in a dozen lines: push-sum on x - gamma g."""

    name = "user-sgp"

    def start(self, n, X0, grad):
        w = np.zeros(X0.shape[:2])
        w[:n] = 1.0
        return MethodState(n, {"x": X0.copy()}, {"w": w}, grads=None, applied=np.zeros(X0.shape[1:]))

    def points(self, state, n):
        return state.vectors["x"][:n] * (1.0 / state.scalars["w"][:n])[:, :, None]

    def step(self, k, P, state, gamma, grad):
        n = state.n
        g = grad(self.points(state, n))
        x = state.vectors["x"].copy()
        x[:n] -= gamma * g
        state.applied += g.sum(axis=0)
        shape = x.shape
        state.vectors["x"] = np.asarray(P @ x.reshape(shape[0], -1)).reshape(shape)
        state.scalars["w"] = np.asarray(P @ state.scalars["w"])
        state.grads = g

    def tracking_error(self, state):
        return None


def test_a_users_method_runs_through_the_engine_as_sgp_does():
    assert isinstance(UserSGP(), Method) and isinstance(PushDIGing(), Method)
    n, d, K = 8, 3, 60
    prob = sv.problems.QuadraticCosine(n, d, seed=1)
    topo = graphs.random_peer(n, seed=2)
    kw = dict(step_size=0.05, n_iter=K, x0=np.linspace(-1, 1, d), seed=5, replicas=2, tau=1, delay="random")
    mine = sv.simulate(prob, topo, algorithm=UserSGP(), **kw)
    ref = sv.simulate(prob, topo, algorithm="sgp", **kw)
    tol = roundoff(1 + np.abs(ref.z).max(), K * n * 2)
    np.testing.assert_allclose(mine.z, ref.z, rtol=0, atol=tol)
    np.testing.assert_allclose(mine.grad_norm_sq, ref.grad_norm_sq, rtol=1e-9, atol=tol)
    assert mine.algorithm == "user-sgp" and mine.tracking_error is not None and np.isnan(mine.tracking_error).all()


def test_bad_methods_and_options_are_named():
    prob = sv.problems.QuadraticCosine(4, 2)
    with pytest.raises(TypeError, match="algorithm must be one of .* or a Method object"):
        sv.simulate(prob, graphs.ring(4), step_size=0.1, n_iter=2, algorithm=object())
    with pytest.raises(ValueError, match="momentum applies to the algorithms of the fused step only"):
        sv.simulate(prob, graphs.ring(4), step_size=0.1, n_iter=2, algorithm="push-diging", momentum=0.5)
    with pytest.raises(ValueError, match="algorithm must be one of"):
        sv.simulate(prob, graphs.ring(4), step_size=0.1, n_iter=2, algorithm="push-dig")
    assert set(METHODS) == {"sgp", "dpsgd", "allreduce", "local-sgd", "push-diging"}


def test_the_guides_push_diging_example_prints_what_the_guide_shows():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, str(root / "docs" / "examples" / "push_diging.py")], capture_output=True, text=True, check=True
    ).stdout
    guide = (root / "docs" / "guide.md").read_text()
    lines = out.strip().splitlines()
    assert len(lines) == 4 and all(line in guide for line in lines), out


def test_simulate_command_runs_push_diging_and_prints_its_invariant(capsys):
    from sgpverify.cli import main

    argv = ["simulate", "--problem", "quadratic-cosine", "--dim", "4", "--nodes", "8", "--topology", "random-peer"]
    rc = main(
        argv + ["--iters", "300", "--step-size", "0.05", "--algorithm", "push-diging", "--tau", "1", "--no-progress"]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "push-diging, tau=1" in out
    err = float(next(line.split()[1] for line in out.splitlines() if line.startswith("tracking_error")))
    assert err <= roundoff(10.0, 300 * 16)
