"""The records' cheaper forms for small states: the deferred records' sums by columns
(:func:`sgpverify.engine.trace.sum_last`) and node sums. Each must give the bits of the
general path it replaces."""

from __future__ import annotations

import numpy as np
import pytest

import sgpverify as sv
import sgpverify.engine.trace as trace
from sgpverify.engine.trace import sum_last


def _wide(rng, shape):
    """Entries over most of the float64 range, subnormal halves included."""
    return rng.standard_normal(shape) * 10.0 ** rng.integers(-310, 300, shape)


@pytest.mark.parametrize("m", list(range(1, 19)) + [23, 24, 31, 40, 127, 128, 129, 200])
def test_sum_last_equals_numpy_sum(m):
    rng = np.random.default_rng(m)
    for A in (_wide(rng, (3, 5, m)), _wide(rng, (1, m)), -np.zeros((2, 3, m)), np.zeros((0, m))):
        got = sum_last(A)
        assert got.shape == A.shape[:-1]
        assert got.tobytes() == A.sum(axis=-1).tobytes()


def test_sum_last_of_a_strided_array_is_numpys():
    A = _wide(np.random.default_rng(1), (6, 20))[:, ::2]  # not contiguous: numpy's own sum
    assert sum_last(A).tobytes() == A.sum(axis=-1).tobytes()


def test_sum_last_falls_back_when_the_probe_differs(monkeypatch):
    # a numpy whose row sums ran in another order: the probe sends every call to numpy's sum
    monkeypatch.setattr(trace, "_PAIRWISE_ROWS", {})
    real = trace._pairwise_columns

    def skewed(A):
        out = real(A)
        out *= 1.0 + 2.0**-40  # another rounding
        return out

    monkeypatch.setattr(trace, "_pairwise_columns", skewed)
    A = _wide(np.random.default_rng(2), (50, 10))
    assert sum_last(A).tobytes() == A.sum(axis=-1).tobytes()
    assert trace._PAIRWISE_ROWS == {10: False}


def _runs(monkeypatch, n, d, R, topo, **kw):
    prob = sv.problems.QuadraticCosine(n, d, sigma=0.1, seed=0)
    args = dict(step_size=0.05, n_iter=23, replicas=R, seed=3, **kw)
    deferred = sv.simulate(prob, topo, **args)
    monkeypatch.setattr(trace, "DEFER_ELEMS", 0)  # every record's arithmetic at once (the general path)
    direct = sv.simulate(prob, topo, **args)
    return deferred, direct


@pytest.mark.parametrize("d", [1, 3, 10, 17])
@pytest.mark.parametrize("R", [1, 2, 8])
@pytest.mark.parametrize("tau", [0, 2])
def test_deferred_records_equal_the_direct_records(monkeypatch, d, R, tau):
    n = 12
    topo = sv.graphs.exponential(n) if tau == 0 else sv.graphs.random_peer(n, seed=1)
    a, b = _runs(monkeypatch, n, d, R, topo, tau=tau, delay="random" if tau else "fixed")
    for f in ("consensus", "grad_norm_sq", "value", "mass_error", "weight_error", "step_sq", "state_max"):
        assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True), f


@pytest.mark.parametrize("tau,R", [(1, 1), (2, 3), (4, 8)])
def test_records_skip_the_zeroed_slot_with_the_same_bits(monkeypatch, tau, R):
    # the records' sums in flight without the slot that the rotation just zeroed, against all slots
    n, d = 9, 3
    prob = sv.problems.QuadraticCosine(n, d, sigma=0.1, seed=0)
    args = dict(step_size=0.05, n_iter=31, replicas=R, seed=3, tau=tau, delay="random")
    topo = sv.graphs.random_peer(n, seed=1)
    skipping = sv.simulate(prob, topo, **args)
    monkeypatch.setattr(trace, "_in_flight", lambda slots, empty: slots)
    every = sv.simulate(prob, topo, **args)
    for f in ("mass_error", "weight_error", "consensus", "grad_norm_sq", "value", "state_max"):
        assert np.array_equal(getattr(skipping, f), getattr(every, f), equal_nan=True), f
    assert np.all(skipping.mass_error < 1e-12) and np.all(skipping.weight_error < 1e-12)
