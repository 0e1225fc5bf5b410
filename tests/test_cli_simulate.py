"""The simulate and mixing commands: repeatable random seeds, message loss,
one-line warnings and errors (kept apart from test_cli.py's verify tests)."""

import io
import json
import warnings

import pytest
from _tolerances import roundoff

from sgpverify.cli import main

BASE = ["simulate", "--problem", "quadratic-cosine", "--nodes", "8", "--dim", "3", "--iters", "60"]


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_seed_random_is_printed_and_repeats_the_run():
    argv = BASE + ["--topology", "random-peer", "--step-size", "0.01", "--tau", "1", "--delay", "random", "--json"]
    code, out, err = run(argv + ["--seed", "random"])
    assert code == 0, err
    first = json.loads(out)
    assert isinstance(first["seed"], int) and first["seed"] > 2**32
    code, out, _ = run(argv + ["--seed", str(first["seed"])])
    again = json.loads(out)
    assert again["seed"] == first["seed"] and again["final"] == first["final"] and again["series"] == first["series"]
    code, out, _ = run(BASE + ["--topology", "ring", "--step-size", "0.01", "--seed", "random"])
    assert code == 0 and "seed " in out


def test_message_loss_shows_in_the_mass_error():
    argv = BASE + ["--topology", "exponential", "--step-size", "0.01", "--json"]
    _, out, _ = run(argv)
    clean_run = json.loads(out)
    clean = clean_run["final"]
    code, out, err = run(argv + ["--message-loss", "0.05"])
    assert code == 0, err
    lossy_run = json.loads(out)
    lossy = lossy_run["final"]
    # round-off of the mass: n = 8 nodes over K = 60 steps, at the size of the largest numerator
    assert clean["mass_error"] <= roundoff(1 + clean_run["state_max"], 60 * 8) and clean["mass_lost"] == 0
    tol = roundoff(1 + lossy_run["state_max"], 60 * 8)
    assert lossy["mass_error"] > 1e-3 and abs(lossy["mass_error"] - lossy["mass_lost"]) <= tol
    code, out, _ = run(BASE + ["--topology", "exponential", "--step-size", "0.01", "--message-loss", "0.05"])
    assert "lost in flight" in out
    code, _, err = run(argv + ["--message-loss", "2"])
    assert code == 2 and "--message-loss must be a number in [0.0, 1.0], got 2.0" in err and err.count("\n") == 1


def test_effective_step_warning_is_one_line():
    argv = [
        "simulate",
        "--problem",
        "quadratic-cosine",
        "--nodes",
        "16",
        "--dim",
        "3",
        "--iters",
        "200",
        "--topology",
        "random-peer",
        "--step-size",
        "0.1",
    ]
    code, out, err = run(argv)
    assert code == 0
    assert err.startswith("sgpverify simulate: warning: effective step step_size / w_min = ")
    assert err.count("\n") == 1 and "effective step" in out


@pytest.mark.parametrize("content", ["", "\n\n  \n", "# only a comment\n"])
def test_empty_matrix_file_is_one_line_error_without_numpy_warning(tmp_path, content):
    f = tmp_path / "P.csv"
    f.write_text(content)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out, err = run(["mixing", "--matrix", str(f)])
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "--matrix file" in err and str(f) in err


def test_bad_seed_argument():
    code, _, err = run(BASE + ["--topology", "ring", "--step-size", "0.1", "--seed", "abc"])
    assert code == 2 and "expected an integer or 'random', got 'abc'" in err
    code, _, err = run(BASE + ["--topology", "ring", "--step-size", "0.1", "--seed", "-3"])
    assert code == 2 and "seed must be an integer >= 0, got -3" in err
