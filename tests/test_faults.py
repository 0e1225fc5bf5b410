"""Faults of the user's code and late failures: named as the user's, before the work where the
input allows, and a late failure becomes a verdict with the report still written.

Each test has its control: our own bug still exits 3 ("internal error"), an honest run still
passes, the documented bound itself is accepted.
"""

import json
import textwrap
import tracemalloc

import numpy as np
import pytest

import sgpverify as sv
from sgpverify import plots
from sgpverify.cli import main
from sgpverify.errors import UserCodeError
from sgpverify.usercode import check_outputs, user_error
from sgpverify.validation import check_magnitude

MODULE = textwrap.dedent(
    """
    import numpy as np


    class Cauchy:
        def __init__(self, n, d, seed, mode="ok"):
            self.c = np.random.default_rng(seed).standard_normal((n, d))
            self.n_nodes, self.dim, self.mode, self.calls = n, d, mode, 0
            self.L, self.sigma2, self.zeta2, self.f_lower = 2.0, 0.25, float(4 * d), 0.0

        def grad(self, z, rng):
            self.calls += 1
            t = z - self.c
            g = 2 * t / (1 + t**2) + rng.standard_normal(z.shape) * 0.5 / np.sqrt(self.dim)
            if self.mode == "raises":
                return np.linalg.solve(np.zeros((2, 2)), np.ones(2))
            if self.mode == "raises-late" and self.calls > 40:
                raise RuntimeError("my model broke")
            if self.mode == "nan-late" and self.calls > 300:
                return g * np.nan
            if self.mode == "short":
                return g[..., :-1]
            if self.mode == "flat":
                return g.ravel()
            if self.mode == "complex":
                return g + 0j
            return g

        def full_grad(self, x):
            t = np.asarray(x)[..., None, :] - self.c
            return np.mean(2 * t / (1 + t**2), axis=-2)

        def value(self, x):
            if self.mode == "value-none":
                return None
            t = np.asarray(x)[..., None, :] - self.c
            return np.mean(np.sum(np.log1p(t**2), axis=-1), axis=-1)


    def make(n, d, seed, mode="ok"):
        return Cauchy(n, d, seed, mode)
    """
)
MODES = ("ok", "raises", "raises-late", "nan-late", "short", "flat", "complex", "value-none")


@pytest.fixture
def usermod(tmp_path, monkeypatch):
    """A user's module in the working directory, with one factory per mode."""
    factory = "\n\ndef {}(n, d, seed):\n    return make(n, d, seed, {!r})\n"
    src = MODULE + "".join(factory.format(m.replace("-", "_"), m) for m in MODES)
    (tmp_path / "faultmod.py").write_text(src)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    import sys

    sys.modules.pop("faultmod", None)
    return importlib.import_module("faultmod")


def _simulate(mode, capsys, *extra):
    argv = ["simulate", "--problem", f"faultmod:{mode.replace('-', '_')}", "--dim", "5", "--nodes", "8"]
    argv += ["--topology", "exponential", "--iters", "100", "--step-size", "0.05", "--no-progress", *extra]
    rc = main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_an_exception_in_the_users_grad_is_named_with_their_traceback(usermod, capsys):
    rc, _, err = _simulate("raises", capsys)
    assert rc == 2
    assert "raised in your problem's grad" in err and "LinAlgError: Singular matrix" in err
    assert 'faultmod.py", line' in err and "in grad" in err  # the user's own traceback
    assert "internal error" not in err


def test_our_own_bug_is_still_an_internal_error(usermod, capsys, monkeypatch):
    # the control: an exception raised in sgpverify's code (not the user's) keeps status 3
    import sgpverify.engine.simulation as simulation

    ns = {}  # a function of sgpverify's own file (a planted bug), not a frame of the test's
    code = "def broken(*args, **kwargs):\n    raise RuntimeError('a bug of ours')\n"
    exec(compile(code, simulation.__file__, "exec"), ns)
    monkeypatch.setattr(simulation, "_initial_state", ns["broken"])
    rc, _, err = _simulate("ok", capsys)
    assert rc == 3 and "internal error" in err and "your problem" not in err


@pytest.mark.parametrize(
    "mode, method, got",
    [
        ("short", "grad", "got shape (8, 4), dtype float64"),
        ("flat", "grad", "got shape (40,), dtype float64"),
        ("complex", "grad", "got shape (8, 5), dtype complex128"),
        ("value-none", "value", "got None"),
    ],
)
def test_an_output_the_protocol_refuses_is_named_before_any_step(usermod, capsys, mode, method, got):
    rc, out, err = _simulate(mode, capsys)
    assert rc == 2 and out == ""
    assert f"your problem's {method} must return a real array of shape" in err and got in err
    # the Python API raises the same error, naming the method
    with pytest.raises(UserCodeError, match=f"your problem's {method}"):
        sv.simulate(getattr(usermod, mode.replace("-", "_"))(8, 5, 0), sv.graphs.ring(8), step_size=0.05, n_iter=3)


def test_an_honest_user_problem_passes_the_output_check(usermod, capsys):
    rc, out, _ = _simulate("ok", capsys)
    assert rc == 0 and "mass_error" in out
    prob = usermod.ok(8, 5, 0)
    check_outputs(prob, np.zeros((8, 5)), np.zeros((3, 5)))  # replicas: (R, d) and (R,)
    assert prob.calls == 1  # one probe call of grad, on a stream of its own


def test_the_probe_does_not_move_the_runs_streams(usermod):
    # the run of a checked user problem has the bits of the same run without the probe
    import sgpverify.engine.simulation as simulation

    prob = usermod.ok(8, 5, 0)
    a = sv.simulate(prob, sv.graphs.random_peer(8, seed=1), step_size=0.05, n_iter=20, replicas=2)
    orig = simulation.check_outputs
    try:
        simulation.check_outputs = lambda *args, **kw: None
        b = sv.simulate(usermod.ok(8, 5, 0), sv.graphs.random_peer(8, seed=1), step_size=0.05, n_iter=20, replicas=2)
    finally:
        simulation.check_outputs = orig
    assert np.array_equal(a.z, b.z) and np.array_equal(a.grad_norm_sq, b.grad_norm_sq)


def test_user_error_reads_the_traceback():
    def grad(z, rng):  # a frame outside sgpverify, called from sgpverify: the user's
        raise KeyError("data file")

    with pytest.raises(UserCodeError) as info:
        check_outputs(type("P", (), {"grad": staticmethod(grad)})(), np.zeros((2, 2)), np.zeros((1, 2)))
    assert info.value.method == "grad" and "KeyError" in info.value.user_traceback
    # pickled whole (the units of verify run in worker processes)
    import pickle

    back = pickle.loads(pickle.dumps(info.value))
    assert str(back) == str(info.value) and back.user_traceback == info.value.user_traceback
    try:
        np.linalg.solve(np.zeros((2, 2)), np.ones(2))  # raised in numpy, called from here: not sgpverify's caller
    except np.linalg.LinAlgError as exc:
        assert user_error(exc) is None


def test_verify_names_an_exception_raised_in_a_worker(usermod, capsys, tmp_path):
    argv = ["verify", "--quick", "--problem", "faultmod:raises_late", "--dim", "4", "--nodes", "8"]
    argv += ["--only", "stationarity-rate", "--workers", "2", "--out", str(tmp_path / "o"), "--no-cache"]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2
    assert "RuntimeError: my model broke (raised in your problem's grad)" in err and "internal error" not in err
    assert 'faultmod.py", line' in err


def test_verify_refuses_a_value_of_none_before_any_unit_is_cached(usermod, capsys, tmp_path):
    cache = tmp_path / "cache"
    argv = ["verify", "--quick", "--problem", "faultmod:value_none", "--dim", "4", "--nodes", "8"]
    rc = main(argv + ["--out", str(tmp_path / "o"), "--cache", str(cache)])
    err = capsys.readouterr().err
    assert rc == 2 and "your problem's value must return a real array" in err
    assert not cache.exists() or not any(p.is_file() for p in cache.rglob("*"))


def test_a_late_nan_becomes_the_checks_verdict_and_the_report_is_written(usermod, capsys, tmp_path):
    out = tmp_path / "o"
    argv = ["verify", "--quick", "--problem", "faultmod:nan_late", "--dim", "4", "--nodes", "8"]
    argv += ["--only", "stationarity-rate", "--only", "mixing-constants", "--out", str(out), "--no-cache"]
    rc = main(argv)
    capsys.readouterr()
    assert rc == 4  # inconclusive, not an internal error
    checks = {c["name"]: c for c in json.loads((out / "checks.json").read_text())["checks"]}
    assert checks["stationarity-rate"]["verdict"] == "inconclusive"
    assert checks["stationarity-rate"]["measured"].startswith("diverged in unit rates at iteration ")
    assert checks["mixing-constants"]["verdict"] == "pass"  # the others' verdicts intact
    assert (out / "report.md").exists()


def test_figures_leave_out_the_experiments_that_failed(tmp_path):
    data = {"rates": {"error": "simulation diverged: node 0 is not finite at iteration 9"}}
    assert plots.figures.usable(data) == {}
    figs = plots.render_all(data, tmp_path)
    assert "stationarity_vs_K" not in figs and "consensus_vs_K" not in figs
    # the control: the same figure with its data present is drawn (mixing_heatmaps needs no data)
    assert "mixing_heatmaps" in figs


def test_a_solver_failure_is_the_worst_case_checks_verdict(tmp_path, capsys):
    pytest.importorskip("cvxpy")
    (tmp_path / "x0.toml").write_text("x0 = 1e100\n")
    out = tmp_path / "o"
    argv = ["verify", "--quick", "--config", str(tmp_path / "x0.toml"), "--only", "worst-case"]
    rc = main(argv + ["--out", str(out), "--no-cache"])
    capsys.readouterr()
    assert rc == 4
    (chk,) = json.loads((out / "checks.json").read_text())["checks"]
    assert chk["verdict"] == "inconclusive" and "failed in unit worstcase" in chk["measured"]


def test_magnitudes_beyond_float64_are_refused_before_the_work(tmp_path, capsys):
    (tmp_path / "s.toml").write_text("sigma = 1e200\n")
    rc = main(["verify", "--quick", "--config", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "sigma must keep" in err and "got 1e+200 (in " in err
    assert not (tmp_path / "o").exists()
    with pytest.raises(ValueError, match="sigma must keep"):
        sv.problems.QuadraticCosine(4, 3, sigma=1e200)
    # the documented bound itself is accepted, a hair above it is not
    bound = (np.finfo(float).max / 160) ** 0.5
    assert check_magnitude("sigma", bound, 160) == bound
    with pytest.raises(ValueError):
        check_magnitude("sigma", bound * (1 + 1e-12), 160)


def test_a_plan_that_cannot_fit_in_memory_is_refused_with_its_estimate(tmp_path, capsys, monkeypatch):
    (tmp_path / "k.toml").write_text("Ks = [256, 100000000000000000]\n")
    rc = main(["verify", "--quick", "--config", str(tmp_path / "k.toml"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "the plan's longest run needs about" in err and "K = 100000000000000000" in err
    monkeypatch.setenv("SGPVERIFY_MEMORY", "1e8")
    argv = ["simulate", "--problem", "quadratic-cosine", "--dim", "10", "--nodes", "1000000"]
    rc = main(argv + ["--topology", "ring", "--iters", "5", "--step-size", "0.1"])
    err = capsys.readouterr().err
    assert rc == 2 and "simulate needs about" in err and "more than the 100 MB available" in err
    with pytest.raises(ValueError, match="simulate needs about"):
        sv.simulate(sv.problems.QuadraticCosine(10**5, 10), sv.graphs.ring(10**5), step_size=0.1, n_iter=2)
    monkeypatch.setenv("SGPVERIFY_MEMORY", "1e10")  # the control: the same run fits a larger machine
    sv.simulate(sv.problems.QuadraticCosine(10**4, 10), sv.graphs.ring(10**4), step_size=0.1, n_iter=2)


@pytest.mark.parametrize("tau, topo", [(0, "exponential"), (2, "random_peer")])
def test_the_memory_estimate_bounds_what_a_run_allocates(tau, topo):
    n, d, R, K = 4000, 20, 2, 10
    prob = sv.problems.QuadraticCosine(n, d)
    t = sv.graphs.exponential(n) if topo == "exponential" else sv.graphs.random_peer(n, seed=0)
    sv.simulate(prob, t, step_size=0.01, n_iter=2, replicas=R, tau=tau)  # compiled kernels, caches: not the run's
    tracemalloc.start()
    sv.simulate(prob, t, step_size=0.01, n_iter=K, replicas=R, tau=tau)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    est = sv.engine.memory_estimate(n, d, replicas=R, n_iter=K, tau=tau)
    assert peak <= est  # refusing by it never lets a run start that then cannot fit ...
    assert est <= 6 * peak  # ... and it refuses nothing a machine six times smaller could run


def test_a_run_diverging_to_finite_values_exits_2_naming_the_iteration(capsys):
    argv = ["simulate", "--problem", "quadratic-cosine", "--dim", "10", "--nodes", "8", "--topology", "exponential"]
    rc = main(argv + ["--iters", "60", "--step-size", "80", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "past any plausible range" in err and "at iteration 6" in err
    rc = main(argv + ["--iters", "60", "--step-size", "0.05", "--no-progress"])  # the control: an honest run
    assert rc == 0


def test_the_guides_faulty_examples_print_what_the_guide_shows(capsys, monkeypatch):
    from pathlib import Path

    examples = Path(__file__).resolve().parent.parent / "docs" / "examples"
    guide = (examples.parent / "guide.md").read_text()
    monkeypatch.chdir(examples)
    monkeypatch.syspath_prepend(str(examples))
    argv = ["simulate", "--dim", "5", "--nodes", "8", "--topology", "exponential", "--iters", "500"]
    for name in ("flat", "raises"):
        rc = main(argv + ["--step-size", "0.05", "--problem", f"faulty:{name}"])
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert rc == 2 and last in guide, last
