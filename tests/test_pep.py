"""sgpverify.pep: the exact worst case of SGP, held against known answers before any use.

* n = 1 is gradient descent on L-smooth functions: PEPit's own example and its tight rate 4L/(3N);
* a schedule that averages exactly (P = J) is centralised gradient descent on f;
* an independent Gram-matrix SDP, written here in cvxpy by hand for n = 2, K = 2 on a
  column-stochastic matrix whose push-sum weights move, agrees to 1e-6 (held out: it shares no
  code with sgpverify.pep);
* the worst-case functions read back from the solution, run through ``simulate``, reproduce it.

Solver tolerance: Clarabel stops at relative gap and feasibility 1e-8; a worst case of a Gram
matrix of side m <= 100 is then accurate to about m * 1e-8 <= 1e-6 relative (``RTOL``).
"""

import math

import numpy as np
import pytest

pytest.importorskip("cvxpy")
pytest.importorskip("clarabel")
pytest.importorskip("PEPit")

import cvxpy as cp  # noqa: E402

import sgpverify as sv  # noqa: E402
from sgpverify import pep  # noqa: E402

RTOL = 1e-6


def _gd(K, **kw):
    return pep.worst_case(sv.graphs.complete(1), K, L=1.0, step_size=1.0, **kw)


@pytest.mark.parametrize("N", [1, 2, 4])
def test_n1_is_pepits_gradient_descent_example(N):
    from PEPit.examples.nonconvex_optimization.gradient_descent import wc_gradient_descent

    # PEPit's example: min_{k <= N} ||g_k||^2 with f(x_0) - f(x_N) <= 1: ours with K = N + 1, fstar="last"
    ref, rate = wc_gradient_descent(1.0, 1.0, N, wrapper="cvxpy", solver="CLARABEL", verbose=-1)
    got = _gd(N + 1, measure="min", fstar="last")
    assert got.value == pytest.approx(ref, rel=RTOL)
    assert got.value == pytest.approx(4 / (3 * N), rel=RTOL)  # the tight rate 4L/(3N) at gamma = 1/L
    assert rate == pytest.approx(4 / (3 * N))
    assert got.status == "optimal"


def test_engines_agree_and_models_nest():
    top = sv.graphs.irregular_exponential(4)
    kw = dict(L=1.5, step_size=0.5, zeta2=0.5)
    d = pep.worst_case(top, 3, **kw)
    p = pep.worst_case(top, 3, engine="pepit", **kw)
    assert d.value == pytest.approx(p.value, rel=RTOL)
    last = pep.worst_case(top, 3, fstar="last", **kw)
    # the stationary-point class is contained in the last-iterate class
    assert d.value <= last.value * (1 + RTOL)
    # the worst case is the average of its per-step values, read from the Gram matrix
    assert np.mean(d.grad_norm_sq) == pytest.approx(d.value, rel=RTOL)
    assert np.all(np.linalg.eigvalsh(d.gram) >= -RTOL * np.abs(d.gram).max())


@pytest.mark.parametrize("fstar", ["stationary", "last"])
def test_exact_averaging_is_centralised_gradient_descent(fstar):
    kw = dict(L=2.0, step_size=0.4, fstar=fstar)
    gd = pep.worst_case(sv.graphs.complete(1), 4, **kw)
    for zeta2 in (None, 0.3):
        avg = pep.worst_case(sv.graphs.complete(3), 4, zeta2=zeta2, **kw)
        assert avg.value == pytest.approx(gd.value, rel=RTOL)
        assert np.max(avg.consensus) <= RTOL * avg.value
    # and a schedule that does not average exactly is worse with heterogeneity
    ring = pep.worst_case(sv.graphs.ring(3), 4, zeta2=0.3, **kw)
    assert ring.value > gd.value * (1 + 100 * RTOL)


def _held_out_n2_k2(P, gamma, L, zeta2):
    """The worst case of SGP, n = 2, K = 2, written out by hand: vectors named, iterates expanded."""
    names = ["x0"]
    for k in (0, 1):
        names += [f"gz{i}{k}" for i in (0, 1)]  # f_i at z_i^k (z_i^0 = x0 = xbar^0: also f_i at xbar^0)
    names += [f"gb{i}{k}" for k in (1, 2) for i in (0, 1)]  # f_i at xbar^1, xbar^2
    names += ["xs", "h"]  # x_*, grad f_0(x_*) = h = -grad f_1(x_*)
    idx = {s: j for j, s in enumerate(names)}
    m = len(names)

    def vec(**c):
        v = np.zeros(m)
        for s, a in c.items():
            v[idx[s]] += a
        return v

    w1 = P @ np.ones(2)
    # x_i^1 = sum_j P_ij (x0 - gamma g_j^0), z_i^1 = x_i^1 / w_i^1
    z1 = [vec(x0=w1[i], gz00=-gamma * P[i, 0], gz10=-gamma * P[i, 1]) / w1[i] for i in (0, 1)]
    xb1 = vec(x0=1.0, gz00=-gamma / 2, gz10=-gamma / 2)
    xb2 = xb1 + vec(gz01=-gamma / 2, gz11=-gamma / 2)
    x0 = vec(x0=1.0)
    pts = {  # per function: (point, gradient, value name)
        i: [
            (x0, vec(**{f"gz{i}0": 1.0}), f"f{i}_0"),
            (z1[i], vec(**{f"gz{i}1": 1.0}), f"f{i}_z1"),
            (xb1, vec(**{f"gb{i}1": 1.0}), f"f{i}_b1"),
            (xb2, vec(**{f"gb{i}2": 1.0}), f"f{i}_b2"),
            (vec(xs=1.0), vec(h=1.0 if i == 0 else -1.0), f"f{i}_s"),
        ]
        for i in (0, 1)
    }
    G = cp.Variable((m, m), PSD=True)
    fv = {nm: cp.Variable() for i in (0, 1) for _, _, nm in pts[i]}

    def ip(a, b):
        return a @ G @ b

    cons = []
    for i in (0, 1):
        for xa, ga, fa in pts[i]:
            for xb, gb, fb in pts[i]:
                if fa == fb:
                    continue
                dx, dg = xa - xb, ga - gb
                cons.append(fv[fa] - fv[fb] >= -L / 4 * ip(dx, dx) + 0.5 * ip(ga + gb, dx) + 1 / (4 * L) * ip(dg, dg))
    gbar = [
        (vec(gz00=1.0) + vec(gz10=1.0)) / 2,
        (vec(gb01=1.0) + vec(gb11=1.0)) / 2,
        (vec(gb02=1.0) + vec(gb12=1.0)) / 2,
    ]
    parts = [
        (vec(gz00=1.0), vec(gz10=1.0)),
        (vec(gb01=1.0), vec(gb11=1.0)),
        (vec(gb02=1.0), vec(gb12=1.0)),
        (vec(h=1.0), vec(h=-1.0)),
    ]
    for a, b in parts:  # (1/2) sum_i |g_i - gbar|^2 = |a - b|^2 / 4
        cons.append(ip(a - b, a - b) / 4 <= zeta2)
    fbar = [(fv["f0_0"] + fv["f1_0"]) / 2, (fv["f0_b1"] + fv["f1_b1"]) / 2, (fv["f0_b2"] + fv["f1_b2"]) / 2]
    fstar = (fv["f0_s"] + fv["f1_s"]) / 2
    cons += [fstar <= f for f in fbar] + [fbar[0] - fstar <= 1.0]
    obj = cp.Maximize((ip(gbar[0], gbar[0]) + ip(gbar[1], gbar[1])) / 2)
    prob = cp.Problem(obj, cons)
    prob.solve(solver="CLARABEL")
    return prob.value


def test_held_out_gram_sdp_n2_k2():
    P = np.array([[0.5, 1 / 3], [0.5, 2 / 3]])  # column-stochastic, not doubly: the weights move
    ref = _held_out_n2_k2(P, gamma=0.6, L=1.5, zeta2=0.4)
    got = pep.worst_case(P, 2, L=1.5, step_size=0.6, zeta2=0.4)
    assert got.value == pytest.approx(ref, rel=RTOL, abs=RTOL)
    assert got.gram_size == 11  # x0, 2 x 2 gradients at z^0, z^1, 2 x 2 at xbar^1,2, x_*, h


@pytest.mark.filterwarnings("ignore::sgpverify.errors.EffectiveStepWarning")
@pytest.mark.parametrize("tau", [0, 1])
def test_read_back_worst_case_through_simulate(tau):
    top = sv.graphs.irregular_exponential(4)
    gamma = 0.5
    wc = pep.worst_case(top, 3, L=1.5, step_size=gamma, zeta2=0.5, tau=tau)
    prob = wc.problem()
    tr = sv.simulate(prob, top, step_size=gamma, n_iter=3, x0=prob.x0, tau=tau, record_every=1)
    gns = np.asarray(tr.grad_norm_sq)[:3]
    scale = float(np.max(np.diag(wc.gram)))
    tol = 64 * np.finfo(float).eps * wc.gram_size * scale + 1e-9 * scale  # round-off of the factor
    assert np.allclose(gns, wc.grad_norm_sq, rtol=0, atol=tol)
    assert np.allclose(np.asarray(tr.consensus)[:3], wc.consensus, rtol=0, atol=tol)
    assert float(np.mean(gns)) == pytest.approx(wc.value, rel=RTOL)
    # the read-back function refuses points it does not know
    with pytest.raises(ValueError, match="known only at the points"):
        prob.grad(np.zeros((4, prob.dim)) + 123.0)


def test_bad_input_names_the_parameter():
    top = sv.graphs.ring(3)
    with pytest.raises(ValueError, match="n_iter must be an integer >= 1, got 0"):
        pep.worst_case(top, 0, L=1.0, step_size=0.1)
    with pytest.raises(ValueError, match="L must be"):
        pep.worst_case(top, 2, L=-1.0, step_size=0.1)
    with pytest.raises(ValueError, match="sigma2 must be 0"):
        pep.worst_case(top, 2, L=1.0, step_size=0.1, sigma2=1.0)
    with pytest.raises(ValueError, match="fstar must be one of"):
        pep.worst_case(top, 2, L=1.0, step_size=0.1, fstar="inf")
    with pytest.raises(ValueError, match="n_iter must be >= 2 with fstar='last'"):
        pep.worst_case(top, 1, L=1.0, step_size=0.1, fstar="last")


def test_missing_extra_names_it(monkeypatch):
    import importlib

    real = importlib.import_module

    def fake(name, *a, **k):
        if name == "cvxpy":
            raise ImportError("No module named 'cvxpy'")
        return real(name, *a, **k)

    monkeypatch.setattr(pep.importlib, "import_module", fake)
    with pytest.raises(ImportError, match=r"sgpverify\[pep\]"):
        pep.worst_case(sv.graphs.ring(3), 2, L=1.0, step_size=0.1)
    assert not pep.has_pep()


def test_gradient_size_constraint_binds():
    top = sv.graphs.irregular_exponential(4)
    free = pep.worst_case(top, 3, L=1.5, step_size=0.5, zeta2=0.5)
    cap = float(np.max(free.step_sq)) / 4
    capped = pep.worst_case(top, 3, L=1.5, step_size=0.5, zeta2=0.5, G2sq=cap)
    assert np.max(capped.step_sq) <= cap * (1 + RTOL)
    assert capped.value < free.value
    assert math.isfinite(capped.value)
