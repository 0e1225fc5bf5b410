"""Bad input, every subcommand: one line naming the option (or key) and the value, exit status 2,
before any work, nothing written (issue 19, parts 3 and 4). Also the inputs that used to be refused
or misread and are now accepted: simulate's shared topology and problem options, a printed default
edge probability, a list of networkx graphs as a schedule, a Topology subclass without a period."""

import io
import json
import sys

import networkx as nx
import numpy as np
import pytest

import sgpverify as sv
from sgpverify.cli import build_parser, main

SIM = ["simulate", "--problem", "quadratic-cosine", "--topology", "ring", "--nodes", "4", "--dim", "2"]
SIM_RUN = SIM + ["--iters", "10", "--step-size", "0.1", "--no-progress"]
MIX = ["mixing", "--topology", "ring", "--nodes", "4", "--horizon", "10"]
VERIFY = ["verify", "--quick", "--no-progress", "--workers", "1", "--out", "{out}", "--cache", "{cache}"]
RUN = ["run", "--out", "{out}", "--cache", "{cache}", "--workers", "1", "--no-progress"]
RATES = 'experiment = "rates"\nseed = 0\nfigures = ["stationarity_vs_K"]\n[config]\nn = 4\nrate_replicas = 3\n'

#: Input files a case needs, by name: written into tmp_path before the command runs.
FILES = {
    "nan.toml": RATES + "Ks = [256, nan]\n",
    "dec.toml": RATES + "Ks = [256, 128]\ntopologies = ['ring']\n",
    "replicas.toml": RATES + "Ks = [64, 128]\nreplicas = nan\n",
    "c.toml": "Ks = [256, nan]\n",
    "topologies.toml": 'topologies = "ring"\n',
    "x0.toml": "x0 = nan\n",
    "descent.toml": "descent_Ks = [0]\n",
    "horizon.toml": "mixing_horizon = 0\n",
    "notcs.npy": np.array([[0.5, 0.3], [0.4, 0.7]]),
    "neg.npy": np.array([[0.5, -0.2], [0.5, 1.2]]),
    "nodiag.npy": np.array([[0.0, 1.0], [1.0, 0.0]]),
    "ok.npy": np.array([[0.5, 0.5], [0.5, 0.5]]),
    "afile": "x",
}

# (id, argv, what the one line must hold: the option or key, the value, and the file where one is named)
CASES = [
    # ---- the rows of the table
    ("mixing-drop-prob-nan", MIX + ["--drop-prob", "nan"], ["--drop-prob", "[0.0, 1.0]", "got nan"]),
    ("run-Ks-nan", RUN + ["{nan.toml}"], ["Ks must be", "nan", "nan.toml"]),
    ("run-Ks-decreasing", RUN + ["{dec.toml}"], ["Ks must be", "increasing", "[256, 128]", "dec.toml"]),
    ("verify-config-Ks-nan", VERIFY + ["--config", "{c.toml}"], ["Ks must be", "nan", "c.toml"]),
    (
        "simulate-diverges-100-iters",
        SIM + ["--iters", "100", "--step-size", "50", "--no-progress"],
        ["simulation diverged", "at iteration 93", "step_size = 50"],
    ),
    (
        "simulate-diverges-1000-iters",
        SIM + ["--iters", "1000", "--step-size", "50", "--no-progress"],
        ["simulation diverged", "at iteration", "step_size = 50"],
    ),
    ("simulate-edge-prob-nan", SIM_RUN + ["--topology", "erdos-renyi", "--edge-prob", "nan"], ["--edge-prob", "nan"]),
    (
        "mixing-matrix-not-column-stochastic",
        ["mixing", "--matrix", "{notcs.npy}"],
        ["--matrix must be a column-stochastic", "column 0 of P sums to 0.9", "notcs.npy"],
    ),
    ("mixing-matrix-negative", ["mixing", "--matrix", "{neg.npy}"], ["--matrix", "P[0, 1] = -0.2", "neg.npy"]),
    # ---- mixing: other options that slipped through or named no option
    ("mixing-seed-negative", MIX + ["--seed", "-1"], ["--seed must be an integer >= 0", "got -1"]),
    ("mixing-rows-zero", MIX + ["--rows", "0"], ["--rows must be an integer >= 1", "got 0"]),
    ("mixing-rows-not-torus", MIX + ["--rows", "2"], ["--rows applies to --topology torus", "--rows 2", "ring"]),
    ("mixing-edge-prob-not-er", MIX + ["--edge-prob", "0.3"], ["--edge-prob applies to", "0.3", "ring"]),
    ("mixing-peers-zero", MIX + ["--peers", "0"], ["--peers must be an integer >= 1", "got 0"]),
    ("mixing-straggle-every-zero", MIX + ["--straggle-every", "0"], ["--straggle-every must be", "got 0"]),
    ("mixing-straggle-every-alone", MIX + ["--straggle-every", "3"], ["--straggle-every applies with", "3"]),
    ("mixing-stragglers-empty", MIX + ["--stragglers", ","], ["--stragglers must list at least one node", "none"]),
    ("mixing-stragglers-not-a-node", MIX + ["--stragglers", "9"], ["--stragglers must list nodes in [0, 3]", "9"]),
    (
        "mixing-envelope-below-horizon",
        MIX + ["--envelope-horizon", "5"],
        ["--envelope-horizon must be an integer >= --horizon (10)", "got 5"],
    ),
    ("mixing-lyapunov-steps-zero", MIX + ["--lyapunov-steps", "0"], ["--lyapunov-steps must be", "got 0"]),
    ("mixing-delay-without-tau", MIX + ["--delay", "random"], ["--delay applies with --tau >= 1", "random"]),
    (
        "mixing-weights-with-matrix",
        ["mixing", "--matrix", "{ok.npy}", "--weights", "metropolis"],
        ["--weights applies to --topology, not --matrix", "metropolis"],
    ),
    (
        "mixing-faults-with-matrix",
        ["mixing", "--matrix", "{ok.npy}", "--drop-prob", "0.1"],
        ["--drop-prob applies to --topology, not --matrix", "0.1"],
    ),
    # ---- simulate
    ("simulate-message-loss-nan", SIM_RUN + ["--message-loss", "nan"], ["--message-loss", "got nan"]),
    ("simulate-step-size-inf", SIM + ["--iters", "10", "--step-size", "inf"], ["--step-size", "got inf"]),
    ("simulate-momentum-nan", SIM_RUN + ["--momentum", "nan"], ["--momentum", "[0.0, 1.0)", "got nan"]),
    ("simulate-nesterov-no-momentum", SIM_RUN + ["--nesterov"], ["--nesterov needs --momentum > 0", "--momentum 0"]),
    ("simulate-iters-negative", SIM + ["--iters", "-1", "--step-size", "0.1"], ["--iters must be", "got -1"]),
    (
        "simulate-matrix-zero-diagonal",
        SIM_RUN[:3] + ["--matrix", "{nodiag.npy}", "--dim", "2"] + SIM_RUN[9:],
        ["--matrix", "positive diagonal", "P[0, 0] = 0", "nodiag.npy"],
    ),
    (
        "simulate-matrix-nodes-mismatch",
        SIM_RUN[:3] + ["--matrix", "{ok.npy}", "--nodes", "3", "--dim", "2"] + SIM_RUN[9:],
        ["--nodes must be the size of the --matrix matrices (2)", "got 3"],
    ),
    (
        "simulate-message-loss-with-matrix",
        SIM_RUN[:3] + ["--matrix", "{ok.npy}", "--dim", "2", "--message-loss", "0.1"] + SIM_RUN[9:],
        ["--message-loss applies to --topology, not --matrix", "0.1"],
    ),
    (
        "simulate-problem-not-importable",
        ["simulate", "--problem", "nosuchmod_h19:make"] + SIM_RUN[3:],
        ["problem", "nosuchmod_h19"],
    ),
    ("simulate-problem-not-a-name", ["simulate", "--problem", "nope"] + SIM_RUN[3:], ["--problem must be", "'nope'"]),
    # ---- verify: options and --config keys (one validation with run)
    ("verify-rows-zero", VERIFY + ["--rows", "0"], ["--rows must be an integer >= 1", "got 0"]),
    ("verify-rows-not-torus", VERIFY + ["--topology", "ring", "--rows", "2"], ["rows applies to torus", "2", "--rows"]),
    ("verify-edge-prob-nan", VERIFY + ["--edge-prob", "nan"], ["--edge-prob", "(0.0, 1.0]", "got nan"]),
    ("verify-nodes-one", VERIFY + ["--nodes", "1"], ["--nodes must be an integer >= 2", "got 1"]),
    (
        "verify-config-list-as-string",
        VERIFY + ["--config", "{topologies.toml}"],
        ["topologies must be a list", "'ring'", "topologies.toml"],
    ),
    ("verify-config-x0-nan", VERIFY + ["--config", "{x0.toml}"], ["x0 must be a finite number", "nan", "x0.toml"]),
    ("verify-config-descent-Ks", VERIFY + ["--config", "{descent.toml}"], ["descent_Ks must be", "[0]", "descent"]),
    (
        "verify-config-mixing-horizon",
        VERIFY + ["--config", "{horizon.toml}"],
        ["mixing_horizon must be an integer >= 1", "got 0", "horizon.toml"],
    ),
    ("verify-out-is-a-file", VERIFY[:-4] + ["--out", "{afile}"], ["--out must be a directory", "afile"]),
    # ---- run
    ("run-replicas-nan", RUN + ["{replicas.toml}"], ["replicas must be an integer >= 3", "nan", "replicas.toml"]),
    ("run-out-is-a-file", RUN[:1] + ["--out", "{afile}"] + RUN[3:] + ["{dec.toml}"], ["--out must be a directory"]),
    # ---- distributed (checked before any process starts)
    ("distributed-seed-negative", ["distributed", "--seed", "-1"], ["--seed must be an integer >= 0", "got -1"]),
    ("distributed-timeout-nan", ["distributed", "--timeout", "nan"], ["--timeout", "got nan"]),
    (
        "distributed-hypercube-on-3",
        ["distributed", "--nproc", "3", "--topology", "hypercube"],
        ["nodes must be a power of two for a hypercube, got 3"],
    ),
    (
        "distributed-check-with-study",
        ["distributed", "--study", "stragglers", "--check", "--out", "{out}"],
        ["--check applies to a single run, not to --study stragglers"],
    ),
    (
        "distributed-epochs-zero",
        ["distributed", "--study", "paper", "--epochs", "0"],
        ["--epochs must be an integer >= 1"],
    ),
    ("distributed-epochs-without-paper", ["distributed", "--epochs", "2"], ["--epochs applies to --study paper only"]),
    ("distributed-delay-unknown", ["distributed", "--tau", "1", "--delay", "late"], ["--delay", "late"]),
]


def _materialize(tmp_path, argv):
    """argv with {name} replaced by tmp_path/name (the input files written, out/cache only named)."""
    made = set()
    out = []
    for a in argv:
        if a.startswith("{") and a.endswith("}"):
            name = a[1:-1]
            path = tmp_path / name
            if name in FILES:
                content = FILES[name]
                if isinstance(content, np.ndarray):
                    np.save(path, content)
                else:
                    path.write_text(content)
                made.add(path)
            a = str(path)
        out.append(a)
    return out, made


@pytest.mark.parametrize("argv, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_naming_the_option_and_the_value_exit_2_nothing_written(
    tmp_path, monkeypatch, argv, expected
):
    monkeypatch.chdir(tmp_path)  # a stray cache or report in the working directory shows too
    argv, made = _materialize(tmp_path, argv)
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err)
    err = err.getvalue()
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"sgpverify {argv[0]}: error: "), err
    for part in expected:
        assert part in err, (part, err)
    assert out.getvalue() == ""
    assert set(tmp_path.iterdir()) == made, "something was written: " + ", ".join(
        p.name for p in set(tmp_path.iterdir()) - made
    )


# ---------------------------------------------------------------- accepted now


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_simulate_takes_the_topology_and_problem_options_of_verify_and_mixing(tmp_path, monkeypatch):
    base = ["simulate", "--problem", "quadratic-cosine", "--dim", "2", "--iters", "20", "--step-size", "0.05"]
    code, out, err = _run(base + ["--topology", "erdos-renyi", "--nodes", "6", "--edge-prob", "0.3", "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert d["topology"] == "erdos-renyi(n=6, p=0.3)" and d["defaults"] == {}
    code, out, err = _run(base + ["--topology", "torus", "--nodes", "8", "--rows", "2", "--json"])
    assert code == 0 and json.loads(out)["topology"].startswith("torus(2x4)"), err
    code, out, err = _run(base + ["--topology", "exponential", "--nodes", "8", "--peers", "2", "--drop-prob", "0.1"])
    assert code == 0 and "link failures p=0.1" in out, err
    np.save(tmp_path / "P.npy", np.full((4, 4), 0.25))
    code, out, err = _run(base + ["--matrix", str(tmp_path / "P.npy"), "--json"])
    assert code == 0 and json.loads(out)["n"] == 4, err
    (tmp_path / "h19_user_problem.py").write_text(
        "import sgpverify as sv\n\ndef make(n, d, seed):\n    return sv.problems.DoubleWell(n, d, seed=seed)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    user = ["simulate", "--problem", "h19_user_problem:make", "--dim", "2", "--iters", "20", "--step-size", "0.05"]
    code, out, err = _run(user + ["--topology", "ring", "--nodes", "4"])
    assert code == 0 and "DoubleWell (n=4, d=2" in out, err
    sys.modules.pop("h19_user_problem", None)


def test_the_default_edge_probability_is_printed_and_in_the_help():
    argv = ["mixing", "--topology", "erdos-renyi", "--nodes", "8", "--horizon", "10", "--lyapunov-steps", "40"]
    code, out, err = _run(argv)
    assert code == 0, err
    assert "default --edge-prob     0.51986   min(1, 2 ln(nodes) / nodes), 1 below 3 nodes" in out
    code, out, _ = _run(argv + ["--json"])
    assert json.loads(out)["defaults"] == {"--edge-prob": pytest.approx(2 * np.log(8) / 8)}
    code, out, _ = _run(argv + ["--edge-prob", "0.5", "--json"])
    assert json.loads(out)["defaults"] == {}
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for cmd in ("mixing", "simulate", "verify"):
        help_text = next(a.help for a in sub.choices[cmd]._actions if a.dest == "edge_prob")
        assert "default: min(1, 2 ln(nodes) / nodes)" in help_text, cmd


def test_every_option_of_every_subcommand_has_a_help_string():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for cmd, p in sub.choices.items():
        for a in p._actions:
            assert a.help and len(a.help) > 5, (cmd, a.dest)
            if a.default not in (None, False, "==SUPPRESS==") and a.option_strings and a.dest != "help":
                assert "default" in a.help, (cmd, a.option_strings, a.default)


def test_the_subcommands_share_one_set_of_topology_options():
    sub = next(a for a in build_parser()._actions if a.dest == "command")

    def opts(cmd):
        return {o for a in sub.choices[cmd]._actions for o in a.option_strings}

    shared = {"--topology", "--nodes", "--peers", "--edge-prob", "--rows"}
    faults = {"--matrix", "--drop-prob", "--stragglers", "--straggle-every"}
    assert shared | faults | {"--problem", "--dim"} <= opts("simulate")
    assert shared | faults <= opts("mixing")
    assert shared | {"--problem", "--dim"} <= opts("verify")


# ---------------------------------------------------------------- the Python API


def test_check_mixing_takes_a_list_of_digraphs_as_a_periodic_schedule():
    g = [
        nx.DiGraph([(0, 1), (1, 2), (2, 3), (3, 0)]),
        nx.DiGraph([(1, 0), (2, 1), (3, 2), (0, 3)]),
        nx.DiGraph([(0, 2), (2, 0), (1, 3), (3, 1)]),
    ]
    r = sv.check_mixing(g, horizon=30)
    same = sv.check_mixing(sv.graphs.from_networkx(g), horizon=30)
    assert r.passed and r.period == 3 and r.B == same.B and r.q == same.q
    topos = sv.check_mixing([sv.graphs.from_networkx(x) for x in g], horizon=30)
    assert topos.period == 3 and topos.B == r.B
    tr = sv.simulate(sv.problems.QuadraticCosine(4, 2), g, step_size=0.1, n_iter=10)
    assert tr.topology.startswith("networkx schedule(n=4, period=3)")
    with pytest.raises(TypeError, match="a non-empty list of matrices, of networkx graphs or of topologies"):
        sv.check_mixing([g[0], "ring"])
    with pytest.raises(ValueError, match=r"graph\[1\] must have the nodes of graph\[0\]"):
        sv.check_mixing([g[0], nx.DiGraph([(0, 1), (1, 0)])])


class _NoPeriod(sv.graphs.Topology):
    """A user topology that sets n and _edges only: period and name are the base class's defaults."""

    def __init__(self, n):
        self.n = n

    def _edges(self, k):
        return [[i, (i + 1 + k % 2) % self.n] for i in range(self.n)]


class _NoNodes(sv.graphs.Topology):
    def _edges(self, k):
        return [[0, 1]]


def test_a_topology_subclass_without_period_is_aperiodic_and_named_after_its_class():
    t = _NoPeriod(5)
    assert t.period is None and t.name == "_NoPeriod(n=5)"
    r = sv.check_mixing(t, horizon=20)
    assert r.passed and r.period is None
    tr = sv.simulate(sv.problems.QuadraticCosine(5, 2), t, step_size=0.1, n_iter=10)
    assert tr.topology == "_NoPeriod(n=5)"
    with pytest.raises(AttributeError, match="_NoNodes must set n, the number of nodes"):
        sv.check_mixing(_NoNodes(), horizon=5)
    with pytest.raises(AttributeError, match="has no attribute 'offsets'"):
        _ = t.offsets


def test_trace_check_finite_catches_measurements_that_overflow():
    prob = sv.problems.QuadraticCosine(n=4, d=2, seed=0)
    with pytest.warns(sv.EffectiveStepWarning):
        tr = sv.simulate(prob, sv.graphs.ring(4), step_size=50, n_iter=100)
    assert np.isfinite(tr.x).all() and not np.isfinite(tr.value[-1])  # the state is finite, f(xbar) is not
    with pytest.raises(sv.SimulationDivergedError, match="at iteration 93") as info:
        tr.check_finite()
    assert info.value.iteration == 93


def test_only_takes_several_checks_after_one_flag_or_the_flag_repeated():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    verify = sub.choices["verify"]
    one = verify.parse_args(["--only", "mass-conservation", "mixing-constants"]).only
    repeated = verify.parse_args(["--only", "mass-conservation", "--only", "mixing-constants"]).only
    assert one == repeated == ["mass-conservation", "mixing-constants"]
