"""The paper's experiment in miniature (sgpverify.distributed.paper), short: 4 gloo ranks, 3 epochs.

About 35 s on a quiet 2-core machine (two process start-ups, fourteen trainings of 66 steps). The
accuracy margins are stated against the test set's size (360 images: one image is 0.28 points).
"""

import pytest

pytest.importorskip("torch", reason="torch not installed: pip install torch==2.13.0 'sgpverify[distributed]'")
pytest.importorskip("sklearn", reason="scikit-learn not installed: pip install 'sgpverify[study]'")

from sgpverify.distributed import paper  # noqa: E402

#: Round-off of a difference of two float32 accuracies in [0, 1] (a few float32 eps).
F32_SLACK = 4 * 2.0**-23


@pytest.fixture(scope="module")
def short():
    return paper.paper_study(epochs=3, slow_sleep=0.01, link_delay=0.03, target=0.9)


@pytest.fixture(scope="module")
def fixed():
    """The same with 1-OSGP's messages folded exactly one step after they were sent (``delay="fixed"``):
    reproducible. With "asap", the paper's, 1-OSGP's accuracy depends on when messages arrive: its gap to
    AllReduce read 3 to 13 images of 360 over four runs on a quiet machine, and 19 in a test-suite run
    beside other work (2026-12-05); with "fixed", 7 images in each of three runs."""
    return paper.paper_study(
        epochs=3, slow_sleep=0.01, link_delay=0.03, target=0.9, delay="fixed", algorithms=("allreduce", "sgp", "osgp")
    )


def _row(res, scenario, alg):
    return next(r for r in res["rows"] if r["scenario"] == scenario and r["algorithm"] == alg)


def test_every_run_is_reported(short):
    assert [(r["scenario"], r["algorithm"]) for r in short["rows"]] == [
        (s, a) for s in ("no faults", "straggler+slow-link") for a in paper.PAPER_ALGORITHMS
    ]
    for r in short["rows"]:
        assert len(r["final_accuracy"]) == 4 and all(0.0 <= a <= 1.0 for a in r["final_accuracy"])
    table = paper.paper_table(short)
    assert table.count("\n") == 1 + len(short["rows"])


@pytest.mark.slow  # 8 s of its own fixture; test_every_run_is_reported runs the study
def test_sgp_learns_as_well_as_allreduce(short, fixed):
    for scenario in ("no faults", "straggler+slow-link"):
        # the asynchronous 1-OSGP learns at all (its accuracy depends on message timing, see ``fixed``)
        assert _row(short, scenario, "osgp")["averaged_accuracy"] > 0.8
        ar = _row(fixed, scenario, "allreduce")
        assert ar["averaged_accuracy"] > 0.8  # the digits are learnt at all (chance: 0.1)
        for alg in ("sgp", "osgp"):
            # stated margin: 5 points (18 test images); the paper: within 1.2 points at 32 nodes
            # accuracies are float32 fractions of 360 images: 18 images is 0.05 only to float32's rounding
            # (18 / 360 in float32 reads 0.050000012), so the margin carries a few float32 eps
            assert _row(fixed, scenario, alg)["gap_to_allreduce"] <= 0.05 + F32_SLACK
            assert min(_row(fixed, scenario, alg)["final_accuracy"]) >= ar["averaged_accuracy"] - 0.05 - F32_SLACK


def test_faults_cost_allreduce_more_than_sgp(short):
    steps = short["setup"]["steps"]
    ar = _row(short, "straggler+slow-link", "allreduce")
    # the injection is real: every AllReduce step waits for the straggler and the slow link
    assert ar["seconds"] >= steps * (0.01 + 0.03)
    # gossip does not wait for the whole world: SGP and 1-OSGP finish sooner under the same faults
    for alg in ("sgp", "osgp"):
        assert _row(short, "straggler+slow-link", alg)["seconds"] < ar["seconds"]


def test_bad_arguments_are_refused_before_any_process_starts():
    with pytest.raises(ValueError, match="algorithms must be among"):
        paper.paper_study(algorithms=("adam",))
    with pytest.raises(ValueError, match="scenarios must be among"):
        paper.paper_study(scenarios=("rain",))
    with pytest.raises(ValueError, match="nproc must be an integer >= 2, got 1"):
        paper.paper_study(nproc=1)
    with pytest.raises(ValueError, match="batch must be <= the shard size"):
        paper.paper_study(batch=10_000)
    with pytest.raises(ValueError, match="delay must be one of 'asap', 'fixed', got 'later'"):
        paper.paper_study(delay="later")


def test_cli_study_paper_writes_table_json_and_figure(tmp_path):
    pytest.importorskip("matplotlib")
    import io

    from sgpverify.cli import main

    out = io.StringIO()
    rc = main(["distributed", "--study", "paper", "--nproc", "2", "--epochs", "1", "--out", str(tmp_path)], out=out)
    assert rc == 0
    for name in ("paper-table.txt", "paper.json", "paper-accuracy-vs-time.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert "| no faults | sgp |" in out.getvalue() and "1.2%" in out.getvalue()
