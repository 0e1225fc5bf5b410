"""Sampled metrics of long runs: simulate's ``metric_mask`` and the suite's ``metric_samples``.

A run whose ``full_grad`` costs more than a step (a user's finite-sum problem) spends most of a long
run evaluating it at every step; settling rounds evaluate it at one step per block and replica and
estimate the stationarity average from those (stratified sampling of the run's own steps)."""

import dataclasses
import math

import numpy as np
import pytest

import sgpverify as sv
from sgpverify.suite import QUICK
from sgpverify.suite.config import validate_config
from sgpverify.suite.cost import step_seconds
from sgpverify.suite.runs import metric_sample, run_one
from sgpverify.suite.settle import ROUND_METRIC_SAMPLES, round_config


class RowProblem:
    """A finite-sum problem as a user writes it (no ``batch_metrics``): least squares with a bounded
    nonconvex part, one row of 8 per node and step."""

    def __init__(self, n=6, d=3, seed=0):
        rng = np.random.default_rng(seed)
        self.A = rng.standard_normal((n, 8, d)) / math.sqrt(d)
        self.b = rng.standard_normal((n, 8))
        self.n_nodes, self.dim = n, d
        self.L, self.sigma2, self.zeta2, self.f_lower = 8.0, 20.0, 20.0, 0.0

    def _rows(self, a, b, z):
        t = np.sum(a * z[..., None, :], axis=-1) - b
        return ((np.tanh(t))[..., None] * a).mean(axis=-2)

    def grad(self, z, rng):
        idx = rng.integers(8, size=z.shape[:-1] + (1,))
        nodes = np.arange(self.n_nodes)[:, None]
        return self._rows(self.A[nodes, idx], self.b[nodes, idx], z)

    def full_grad(self, x):
        t = np.einsum("imk,...k->...im", self.A, np.asarray(x)) - self.b
        return np.mean(np.mean(np.tanh(t)[..., None] * self.A, axis=-2), axis=-2)

    def value(self, x):
        t = np.einsum("imk,...k->...im", self.A, np.asarray(x)) - self.b
        return np.mean(np.mean(np.log(np.cosh(t)), axis=-1), axis=-1)


PROBLEMS = {
    "user's, no batch_metrics": lambda: RowProblem(),
    "built-in, batch_metrics": lambda: sv.problems.QuadraticCosine(n=6, d=3, seed=0),
}


@pytest.mark.parametrize("R", [1, 5])
@pytest.mark.parametrize("which", sorted(PROBLEMS))
def test_a_masked_run_is_the_same_run_with_the_unevaluated_metrics_nan(which, R):
    """The second computation: the full run. Where the mask is True the masked run's grad_norm_sq and
    value are the full run's bits; elsewhere NaN; every other series and the final state are equal."""
    prob, K = PROBLEMS[which](), 300
    topo = sv.graphs.erdos_renyi(6, 0.5, seed=1)
    args = dict(step_size=0.05, n_iter=K, replicas=R, seed=4)
    full = sv.simulate(prob, topo, **args)
    mask = np.random.default_rng(2).random((K + 1, R)) < 0.3
    part = sv.simulate(prob, topo, metric_mask=mask, **args)
    for name in ("grad_norm_sq", "value"):
        a, b = (np.asarray(getattr(t, name)).reshape(K + 1, R) for t in (full, part))
        assert np.array_equal(a[mask], b[mask]), name
        assert np.all(np.isnan(b[~mask])), name
    for name in ("consensus", "weight_min", "mass_error", "step_sq", "z", "x", "w"):
        assert np.array_equal(getattr(full, name), getattr(part, name)), name


def test_a_mask_of_the_wrong_shape_or_kind_is_refused_naming_it():
    prob, topo = RowProblem(), sv.graphs.erdos_renyi(6, 0.5, seed=1)
    shape = r"metric_mask must have shape \(records, replicas\) = \(11, 2\), got \(10, 2\)"
    with pytest.raises(ValueError, match=shape):
        sv.simulate(prob, topo, step_size=0.1, n_iter=10, replicas=2, metric_mask=np.ones((10, 2), bool))
    with pytest.raises(TypeError, match="metric_mask must be an array of bool, got dtype float64"):
        sv.simulate(prob, topo, step_size=0.1, n_iter=10, metric_mask=np.ones(11))
    with pytest.raises(ValueError, match="metric_mask applies to the algorithms of the fused step only"):
        sv.simulate(prob, topo, step_size=0.1, n_iter=10, algorithm="push-diging", metric_mask=np.ones(11, bool))


def test_the_sample_takes_one_step_of_each_block_per_replica_and_both_ends():
    K, R, S = 1000, 7, 64  # blocks of 15 and 16 steps
    mask, steps, lengths = metric_sample(K, R, S, seed=3)
    assert lengths.sum() == K and set(lengths.tolist()) == {15, 16}
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    assert np.all(steps >= starts) and np.all(steps < starts + lengths)
    assert mask.shape == (K + 1, R) and mask[0].all() and mask[K].all()
    assert np.all(mask[steps, np.arange(R)[:, None]])  # every drawn step is in the mask, and nothing else
    assert np.all(mask[1:K].sum(axis=0) == (steps > 0).sum(axis=1))
    again = metric_sample(K, R, S, seed=3)
    assert all(np.array_equal(u, v) for u, v in zip((mask, steps, lengths), again))
    assert not np.array_equal(metric_sample(K, R, S, seed=3, stream=1)[1], steps)
    assert len({tuple(s) for s in steps}) == R  # each replica its own draw


def test_the_sampled_average_is_unbiased_for_the_run_average():
    """Over many draws the block-weighted mean of a fixed sequence (a fast transient, then noise)
    averages to its mean: within 4 standard errors of the draws."""
    K, S = 4096, 64
    rng = np.random.default_rng(0)
    y = 50 * np.exp(-np.arange(K + 1) / 40.0) + rng.exponential(size=K + 1)
    est = []
    for seed in range(400):
        _, steps, lengths = metric_sample(K, 1, S, seed=seed)
        est.append(float((y[steps[0]] * lengths).sum() / K))
    est = np.asarray(est)
    se = est.std(ddof=1) / math.sqrt(est.size)
    assert abs(est.mean() - y[:K].mean()) < 4 * se
    assert se > 0


def test_a_sampled_run_of_the_suite_estimates_the_same_stationarity():
    """run_one with metric_samples: f(xbar^0) and f(xbar^K) and the consensus are the full run's,
    the stationarity average of each replica within a few per cent of the full run's (1/2 of the
    steps evaluated), and the record says it was sampled."""
    prob, topo = RowProblem(), sv.graphs.erdos_renyi(6, 0.5, seed=1)
    cfg = dataclasses.replace(QUICK, n=6, d=3)
    full = run_one(cfg, prob, topo, 256, 0, replicas=4)
    part = run_one(dataclasses.replace(cfg, metric_samples=128), prob, topo, 256, 0, replicas=4)
    for key in ("f0", "fK", "consensus", "weight_min"):
        assert full[key] == part[key], key
    rel = np.abs(np.log(np.asarray(part["stationarity"]) / np.asarray(full["stationarity"])))
    assert np.all(rel < 0.05), rel
    assert part["metric_samples"] == 128 and "metric_samples" not in full
    assert np.all(np.isfinite(part["grad_norm_sq_curve"]))
    # a run no longer than metric_samples evaluates every step: the same record
    assert run_one(dataclasses.replace(cfg, metric_samples=256), prob, topo, 256, 0, replicas=4) == full


@pytest.mark.parametrize("bad", [1, 63, -1, 2.5, "many"])
def test_metric_samples_is_zero_or_at_least_64_named_in_the_error(bad):
    with pytest.raises((ValueError, TypeError), match="metric_samples must be"):
        validate_config(dataclasses.replace(QUICK, metric_samples=bad))


def test_a_round_samples_its_metrics_unless_the_user_chose_and_its_cost_says_so():
    sub = round_config(QUICK, (("Ks", (16384, 32768)),))
    assert sub.Ks == (16384, 32768) and sub.metric_samples == ROUND_METRIC_SAMPLES
    mine = round_config(dataclasses.replace(QUICK, metric_samples=128), ())
    assert mine.metric_samples == 128
    per = (1e-4, 1e-4, 0.0, 2e-5, 1e-5)  # the evaluations are most of a step
    exact = step_seconds(QUICK, 65536, 32, per)
    assert exact == pytest.approx(1e-4 + 32e-4)
    sampled = step_seconds(sub, 65536, 32, per)  # s = 8: a 1/8 share of the evaluations
    assert sampled == pytest.approx(2e-5 + 32e-5 + 8e-5 * (1 - (7 / 8) ** 32) + 9e-5 * 32 / 8)
    assert step_seconds(sub, ROUND_METRIC_SAMPLES, 32, per) == exact  # not longer than the sample
    assert step_seconds(sub, 65536, 32, per[:3]) == exact  # an older calibration: the full cost
