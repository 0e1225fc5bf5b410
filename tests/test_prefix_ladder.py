"""A ladder of a step that does not fall with K as one run (suite.runs.run_ladder).

The constant-step control's runs differ only in their length: a run of K steps is the first K steps
of the ladder's longest run. In a settling round the suite runs the longest one and summarises its
prefixes. The second computation here is the ladder one run at a time (run_one per K)."""

import dataclasses

import numpy as np
import pytest
from test_metric_sample import RowProblem  # a finite-sum problem as a user writes it

import sgpverify as sv
from sgpverify.suite import QUICK
from sgpverify.suite.claims import BY_NAME
from sgpverify.suite.departures import NONE
from sgpverify.suite.runs import prefix_ladder, run_ladder, run_one
from sgpverify.suite.setting import realisations

CONSTANT = BY_NAME["stationarity-rate"].control.variant
assert CONSTANT.step == "constant"

#: Keys whose values take the whole run's round-off scale (its largest state), not the prefix's
SCALE_KEYS = ("mass_tol",)


def _close(a, b, key):
    """Equal up to the round-off of a sum of up to 2^12 terms (the same numbers summed; a numpy
    reduction over a prefix may block the sum differently from one over a whole array)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, key
    tol = 64 * np.finfo(float).eps * np.maximum(np.abs(a), np.abs(b)) + 1e-300
    assert np.all(np.abs(a - b) <= tol), (key, a, b)


def _compare(lad, one):
    assert lad.keys() == one.keys()
    for key in lad:
        if key in SCALE_KEYS:
            assert lad[key] >= one[key] * (1 - 1e-12), key  # the whole run's scale: never tighter
        elif isinstance(lad[key], (str, type(None), int)) and not isinstance(lad[key], bool):
            assert lad[key] == one[key], key
        else:
            _close(lad[key], one[key], key)


ROUND = dataclasses.replace(QUICK, n=6, d=3, noise_stream=3)
CASES = {
    "shared schedule, every step": (dict(), dict(replicas=4)),
    "sampled metrics": (dict(metric_samples=64), dict(replicas=4)),
    "random delays": (dict(), dict(replicas=3, tau=2, delay="random")),
    "weight floor regime": (dict(), dict(replicas=3, regime=True)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_constant_step_ladder_in_a_round_is_its_longest_run_s_prefixes(case):
    """Every K's summary from the one run is that of the run of K steps alone: the same
    stationarity (each K's own sample of steps where sampled), consensus, ends, weights and
    curves; only mass_tol takes the whole run's round-off scale (no tighter)."""
    over, kw = CASES[case]
    cfg = dataclasses.replace(ROUND, **over)
    prob, topo = RowProblem(), sv.graphs.erdos_renyi(6, 0.5, seed=1)
    Ks = (64, 128, 256)
    assert prefix_ladder(cfg, CONSTANT)
    lad = run_ladder(cfg, prob, topo, Ks, 5, CONSTANT, **kw)
    assert [r["K"] for r in lad] == list(Ks)
    for r, K in zip(lad, Ks):
        _compare(r, run_one(cfg, prob, topo, K, 5, CONSTANT, **kw))
    if over.get("metric_samples"):
        assert "metric_samples" not in lad[0] and lad[-1]["metric_samples"] == 64


def test_own_realisations_of_a_random_schedule_too():
    cfg = ROUND
    prob = RowProblem()
    own = realisations(lambda n, s: sv.graphs.erdos_renyi(n, 0.5, seed=s), 6, 2, 3)
    assert own is not None
    lad = run_ladder(cfg, prob, own, (32, 64), 2, CONSTANT, replicas=3)
    for r, K in zip(lad, (32, 64)):
        _compare(r, run_one(cfg, prob, own, K, 2, CONSTANT, replicas=3))


def test_a_falling_step_or_a_planned_run_runs_each_K_alone():
    """gamma = sqrt(n/K) changes with K: no prefix is a shorter run. The planned run (noise stream
    0) keeps the runs one at a time, whose records its bits are promised to (mass_tol included)."""
    prob, topo = RowProblem(), sv.graphs.erdos_renyi(6, 0.5, seed=1)
    assert not prefix_ladder(ROUND, NONE)
    planned = dataclasses.replace(ROUND, noise_stream=0)
    assert not prefix_ladder(planned, CONSTANT)
    for cfg, variant in ((ROUND, NONE), (planned, CONSTANT)):
        lad = run_ladder(cfg, prob, topo, (64, 128), 1, variant, replicas=2)
        assert lad == [run_one(cfg, prob, topo, K, 1, variant, replicas=2) for K in (64, 128)]
    # the honest step differs between the Ks; the constant one does not
    assert lad[0]["gamma"] == lad[1]["gamma"]
    honest = run_ladder(ROUND, prob, topo, (64, 128), 1, NONE, replicas=2)
    assert honest[0]["gamma"] > honest[1]["gamma"]


def test_progress_ticks_once_per_K_in_order():
    prob, topo = RowProblem(), sv.graphs.erdos_renyi(6, 0.5, seed=1)
    for cfg in (ROUND, dataclasses.replace(ROUND, noise_stream=0)):
        seen = []
        run_ladder(cfg, prob, topo, (32, 64, 128), 1, CONSTANT, replicas=2, progress=seen.append)
        assert seen == [32, 64, 128]


@pytest.mark.parametrize("key", ["rates", "delays"])
def test_a_round_s_constant_step_control_costs_what_the_engine_runs(monkeypatch, key):
    """Independent count: the steps x replicas of every engine call of the control's experiment in a
    round, against the cost model's runs of that control (experiment_runs with the variant): the
    longest K of each ladder once, and the delays' control without tau = 0."""
    from sgpverify.suite import EXPERIMENTS
    from sgpverify.suite import runs as runs_mod
    from sgpverify.suite.cost import experiment_runs

    variant = BY_NAME["stationarity-rate" if key == "rates" else "delay-rate"].control.variant
    cfg = dataclasses.replace(
        QUICK, n=6, d=3, Ks=(32, 64, 128), delay_Ks=(32, 64), taus=(0, 1, 2), rate_replicas=3, delay_replicas=2
    )
    cfg = dataclasses.replace(cfg, topologies=cfg.topologies[:1])
    seen = []
    real = runs_mod.simulate_run

    def counted(cfg_, prob, topo, K, seed, gamma, replicas, **kw):
        seen.append(K * replicas)
        return real(cfg_, prob, topo, K, seed, gamma, replicas, **kw)

    monkeypatch.setattr(runs_mod, "simulate_run", counted)
    for stream in (1, 0):
        seen.clear()
        sub = dataclasses.replace(cfg, noise_stream=stream)
        data = EXPERIMENTS[key](sub, 0, variant)
        recs = EXPERIMENTS[key].runs(data)
        assert sorted({r["K"] for r in recs}) == [32, 64, 128]
        if stream:
            assert sum(seen) == sum(K * R for K, R, _ in experiment_runs(sub, key, variant=variant))
        else:  # the planned run: every K alone, as its records say
            assert sum(seen) == sum(r["K"] * len(r["stationarity"]) for r in recs)
    assert sum(seen) > sum(K * R for K, R, _ in experiment_runs(cfg, key, variant=variant))


def test_a_one_run_ladder_is_costed_at_the_union_of_its_samples(monkeypatch):
    """Independent count: the steps the engine is asked to evaluate per replica (the metric_mask it
    gets) against the cost model's upper estimate, sum_K min(K, metric_samples): no more, and not
    loose (at least half); the longest K's own sample alone would be too few."""
    from sgpverify.suite import runs as runs_mod
    from sgpverify.suite.cost import prefix_samples

    cfg = dataclasses.replace(ROUND, Ks=(128, 256, 512, 1024), metric_samples=64)
    masks = []
    real = runs_mod.simulate_run

    def caught(cfg_, prob, topo, K, seed, gamma, replicas, **kw):
        masks.append(np.asarray(kw["metric_mask"]))
        return real(cfg_, prob, topo, K, seed, gamma, replicas, **kw)

    monkeypatch.setattr(runs_mod, "simulate_run", caught)
    run_ladder(cfg, RowProblem(), sv.graphs.erdos_renyi(6, 0.5, seed=1), cfg.Ks, 0, CONSTANT, replicas=3)
    ((mask,),) = [masks]
    per_replica = mask.sum(axis=0)
    est = prefix_samples(cfg, "rates", CONSTANT).metric_samples
    assert est == 4 * 64
    assert np.all(per_replica <= est) and np.all(per_replica >= est / 2), (per_replica, est)
    assert np.all(per_replica > 1.5 * 64)
    # the runs one at a time (a planned run, a falling step, another experiment): the configuration as it is
    assert prefix_samples(cfg, "rates", NONE) is cfg
    assert prefix_samples(cfg, "speedup", CONSTANT) is cfg
    assert prefix_samples(dataclasses.replace(cfg, metric_samples=0), "rates", CONSTANT).metric_samples == 0
