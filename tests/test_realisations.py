"""Each replica its own realisation of a random schedule: the rate runs on random schedules."""

import math

import numpy as np
import pytest

import sgpverify as sv
from sgpverify import suite
from sgpverify.engine import stack_replicas
from sgpverify.suite.cost import estimate_seconds
from sgpverify.suite.experiments import exp_rates
from sgpverify.suite.runs import step_regime_record
from sgpverify.suite.setting import is_random, realisation_seed, realisations, resolve_topology


def test_stacked_runs_of_one_replica_are_the_replicas_of_one_call_on_a_shared_schedule():
    """A second computation of the replica axis: without noise (sigma = 0) every replica of one call
    is the same run, so R runs of one replica, stacked, must give the call's series and states."""
    prob = sv.problems.QuadraticCosine(n=6, d=3, sigma=0.0, seed=1)
    topo = sv.graphs.erdos_renyi(6, 0.4, seed=3)
    kw = dict(step_size=0.05, n_iter=40, x0=np.ones(3), record_every=1, record_states=5)
    one = sv.simulate(prob, topo, replicas=3, seed=0, **kw)
    st = stack_replicas([sv.simulate(prob, topo, replicas=1, seed=s, **kw) for s in range(3)])
    assert st.replicas == 3
    for name in one.SERIES + ("step_sq",):
        a, b = np.asarray(getattr(one, name)), np.asarray(getattr(st, name))
        assert a.shape == b.shape, name
        scale = 1.0 + float(np.max(np.abs(a)))
        assert np.allclose(a, b, rtol=0, atol=64 * np.finfo(float).eps * scale * prob.n_nodes), name
    for name in ("x", "w", "z", "z_history"):
        a, b = getattr(one, name), getattr(st, name)
        assert a.shape == b.shape and np.allclose(a, b, rtol=1e-12, atol=1e-12), name
    with pytest.raises(ValueError, match="traces must be runs of one replica"):
        stack_replicas([one, one])


def test_a_random_schedule_gets_one_realisation_per_replica_and_a_deterministic_one_none():
    cfg = suite.config_from_dict({"n": 8, "edge_prob": 0.3})
    er = resolve_topology("erdos-renyi", cfg)
    own = realisations(er, 8, 5, 4)
    assert len(own) == 4
    assert np.array_equal(own[0].edges(3), er(8, 5).edges(3))  # replica 0: the realisation the mixing check measures
    assert len({tuple(map(tuple, t.edges(2))) for t in own}) == 4  # distinct graph sequences
    assert len({realisation_seed(5, r) for r in range(64)}) == 64
    assert is_random(resolve_topology("random-peer", cfg), 8)
    for name in ("exponential", "ring", "exponential-irregular"):
        assert realisations(resolve_topology(name, cfg), 8, 5, 4) is None

    class Aperiodic(sv.graphs.Topology):  # no period, but the same steps whatever the seed
        period = None

        def __init__(self, n):
            self.n, self.name = n, f"aperiodic(n={n})"

        def _edges(self, k):
            i = np.arange(self.n)
            return np.column_stack([i, (i + 1 + k % (self.n - 1)) % self.n])

    assert not is_random(lambda n, seed: Aperiodic(n), 8)


def test_the_rate_runs_on_a_random_schedule_vary_the_realisation_across_replicas():
    """Without gradient noise the replicas of one schedule are one run: their spread is zero. On
    Erdos-Renyi each replica runs on its own realisation, so the replicas differ; on a deterministic
    schedule they still agree."""
    base = {"n": 8, "sigma": 0.0, "Ks": [64, 128], "rate_replicas": 3}
    for topology, own, random in (
        ("erdos-renyi", True, True),
        ("exponential", True, False),
        ("erdos-renyi", False, False),  # the default: one graph sequence for every replica
    ):
        cfg = suite.config_from_dict({**base, "topologies": [topology], "own_realisations": own})
        sch = exp_rates(cfg, 0)["schedules"][topology]
        assert sch.get("realisations") == (3 if random else None)
        for r in sch["runs"]:
            spread = np.ptp(r["consensus"]) / max(np.abs(r["consensus"]))
            assert (spread > 1e-3) if random else (spread < 1e-12), (topology, own, r["K"], r["consensus"])
    with pytest.raises(ValueError, match="own_realisations must be true or false, got 'yes'"):
        suite.validate_config(suite.config_from_dict({**base, "own_realisations": "yes"}))


def test_the_step_regime_of_own_realisations_is_judged_replica_by_replica():
    """Replicas below the floor at isolated steps, at different steps: on one shared schedule the
    step's floor is the smallest weight, steps out in a row; as runs of their own each has isolated
    excursions, and the record is the median replica's, not the worst one's."""
    L, gamma = 1.0, 0.5  # out where w < 0.25
    floors = np.ones((3, 100))
    floors[0, 10] = floors[1, 11] = 0.1
    floors[2, 40:43] = 0.1  # one realisation with a stretch of 3
    shared = step_regime_record(floors, gamma, L)
    own = step_regime_record(floors, gamma, L, shared=False)
    assert shared["steps_out_longest"] == 3 and math.isclose(shared["steps_out_share"], 0.05)
    assert own["steps_out_longest"] == 1 and math.isclose(own["steps_out_share"], 0.01)
    floors[1, 12] = 0.1  # two of three realisations with a stretch of 2: the median has it
    assert step_regime_record(floors, gamma, L, shared=False)["steps_out_longest"] == 2
    same = np.tile(floors[2], (4, 1))  # identical replicas: the same record either way
    assert step_regime_record(same, gamma, L, shared=False) == step_regime_record(same, gamma, L)


def test_a_round_on_a_random_schedule_is_costed_as_one_run_per_realisation():
    per_step = (1e-6, 1e-7, 0.0)  # a + b R seconds a step; no connectivity stream
    a, b = per_step[:2]
    for topology, own, random in (
        ("erdos-renyi", True, True),
        ("exponential", True, False),
        ("erdos-renyi", False, False),
    ):
        over = {"n": 8, "topologies": [topology], "Ks": [64, 128], "rate_replicas": 4, "own_realisations": own}
        cfg = suite.config_from_dict(over)
        got = estimate_seconds(cfg, ["consensus-rate"], per_step) - estimate_seconds(cfg, [], per_step)
        want = sum(cfg.Ks) * (4 * (a + b) if random else a + 4 * b)
        assert math.isclose(got, want, rel_tol=1e-9), (topology, got, want)
