"""Tests of the sgpverify command: output, JSON keys, exit codes, one-line errors."""

import io
import json
import subprocess
import sys

import numpy as np
import pytest
from _tolerances import roundoff

from sgpverify.cli import main

REPORT_KEYS = [
    "column_stochastic",
    "nonnegative",
    "min_positive_entry",
    "B",
    "diameter",
    "q",
    "C",
    "q_theory",
    "C_theory",
    "weight_min",
    "period",
    "period_product_error",
]


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_mixing_json_has_report_keys():
    code, out, err = run(["mixing", "--topology", "exponential", "--nodes", "16", "--horizon", "40", "--json"])
    assert code == 0, err
    d = json.loads(out)
    for k in REPORT_KEYS:
        assert k in d
    # exact, not round-off: the shares are 1/2 and every product of n = 16 a multiple of 1/16 (dyadic)
    assert d["B"] == 4 and d["period"] == 4 and d["period_product_error"] == 0.0


def test_mixing_table_mentions_measured_values():
    code, out, _ = run(["mixing", "--topology", "ring", "--nodes", "8", "--horizon", "30"])
    assert code == 0
    assert "B " in out and "diameter" in out and "all mixing assumptions hold" in out


def test_mixing_with_delays_and_faults():
    code, out, err = run(
        [
            "mixing",
            "--topology",
            "random-peer",
            "--nodes",
            "8",
            "--tau",
            "2",
            "--delay",
            "random",
            "--drop-prob",
            "0.2",
            "--horizon",
            "60",
            "--json",
        ]
    )
    assert code == 0, err
    d = json.loads(out)
    assert d["rows"] == 24 and d["tau"] == 2 and d["column_stochastic"]


def test_mixing_columns_option():
    argv = ["mixing", "--topology", "random-peer", "--nodes", "600", "--horizon", "20"]
    code, out, err = run(argv)
    assert code == 0, err
    assert "products tracked        256 of 600 columns from 4 starts" in out
    code, out, err = run(argv + ["--columns", "40", "--json"])
    assert code == 0, err
    assert json.loads(out)["contraction_columns"] == 40
    code, out, err = run(argv + ["--columns", "0"])
    assert code == 2 and out == ""
    assert "columns must be an integer >= 1, got 0" in err


def test_violation_exits_1(tmp_path):
    # a valid column-stochastic matrix whose self-weights are zero: an assumption the report measures
    f = tmp_path / "p.csv"
    np.savetxt(f, np.array([[0.0, 1.0], [1.0, 0.0]]), delimiter=",")
    code, out, _ = run(["mixing", "--matrix", str(f), "--horizon", "5"])
    assert code == 1
    assert "self-weights must be > 0" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["mixing", "--topology", "exponential", "--nodes", "0"], "nodes must be an integer >= 1, got 0"),
        (
            ["mixing", "--topology", "exponential", "--nodes", "8", "--peers", "8"],
            "peers must be an integer in [1, nodes - 1]",
        ),
        (["mixing", "--topology", "ring", "--nodes", "8", "--tau", "-1"], "tau must be an integer >= 0, got -1"),
        (["mixing", "--topology", "bogus", "--nodes", "8"], "invalid choice: 'bogus'"),
        (["mixing", "--topology", "ring"], "--nodes is required"),
        (["mixing", "--topology", "ring", "--nodes", "x"], "invalid int value: 'x'"),
        (["mixing", "--topology", "hypercube", "--nodes", "6"], "nodes must be a power of two for a hypercube, got 6"),
        (["mixing", "--topology", "ring", "--nodes", "4", "--horizon", "0"], "horizon must be an integer >= 1, got 0"),
        (
            ["mixing", "--topology", "ring", "--nodes", "4", "--drop-prob", "2"],
            "--drop-prob must be a number in [0.0, 1.0], got 2.0",
        ),
        (["mixing", "--matrix", "/nonexistent.csv"], "--matrix must name an existing file"),
        (["nonsense"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_exit_2(argv, message):
    code, out, err = run(argv)
    assert code == 2
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert out == ""


@pytest.mark.parametrize(
    "rows, message",
    [
        ("0.5,0.5\n0.5,0.5\n0.1,0.1\n", "P must be a square matrix, got shape (3, 2)"),
        ("0.5,-0.2\n0.5,1.2\n", "P must be non-negative, got P[0, 1] = -0.2"),
        ("0.5,nan\n0.5,1\n", "P must be finite, got P[0, 1] = nan"),
    ],
)
def test_bad_matrix_file(tmp_path, rows, message):
    f = tmp_path / "m.csv"
    f.write_text(rows)
    code, _, err = run(["mixing", "--matrix", str(f)])
    assert code == 2 and message in err and str(f) in err


def test_console_script_runs_without_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "sgpverify.cli", "mixing", "--topology", "ring", "--nodes", "-3"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "sgpverify mixing: error: --nodes must be an integer >= 1, got -3"


def test_simulate_json_has_final_values_and_series():
    code, out, err = run(
        [
            "simulate",
            "--problem",
            "quadratic-cosine",
            "--topology",
            "random-peer",
            "--nodes",
            "8",
            "--dim",
            "3",
            "--iters",
            "50",
            "--step-size",
            "0.1",
            "--tau",
            "1",
            "--delay",
            "random",
            "--record-every",
            "10",
            "--json",
        ]
    )
    assert code == 0, err
    d = json.loads(out)
    for k in ["consensus", "grad_norm_sq", "value", "mass_error", "weight_error"]:
        assert k in d and k in d["series"] and len(d["series"][k]) == 6
    assert d["iterations"] == [0, 10, 20, 30, 40, 50]
    # the mass sums n nodes over K steps, at the size of the largest numerator
    assert d["mass_error"] <= roundoff(1 + d["state_max"], 50 * 8) and d["tau"] == 1


def test_simulate_table_and_baselines():
    for alg in ["sgp", "dpsgd", "allreduce", "local-sgd"]:
        code, out, err = run(
            [
                "simulate",
                "--problem",
                "double-well",
                "--topology",
                "ring-bidir",
                "--nodes",
                "6",
                "--dim",
                "2",
                "--iters",
                "20",
                "--step-size",
                "0.1",
                "--algorithm",
                alg,
            ]
        )
        assert code == 0, err
        assert "consensus" in out and alg in out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--step-size", "0"], "--step-size must be a number > 0.0, got 0.0"),
        (["--step-size", "100", "--iters", "400"], "simulation diverged: node"),
        (["--step-size", "0.1", "--nodes", "0"], "nodes must be an integer >= 1, got 0"),
        (["--step-size", "0.1", "--dim", "-2"], "dim must be an integer >= 1, got -2"),
        (["--step-size", "0.1", "--algorithm", "dpsgd", "--tau", "2"], "tau applies to algorithm 'sgp' only"),
        (["--step-size", "0.1", "--problem", "nope"], "--problem must be one of quadratic-cosine"),
    ],
)
def test_simulate_bad_input(extra, message):
    base = {"--problem": "quadratic-cosine", "--topology": "ring", "--nodes": "4", "--dim": "2", "--iters": "10"}
    argv = ["simulate"]
    for k, v in base.items():
        if k not in extra:
            argv += [k, v]
    argv += extra
    code, out, err = run(argv)
    assert code == 2 and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
