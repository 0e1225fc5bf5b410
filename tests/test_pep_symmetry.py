"""sgpverify.pep's symmetry reduction: detection by exact permutation checks, the real character
basis, and the reduced SDP held against the full one.

Solver tolerance: Clarabel stops at relative gap and feasibility 1e-8; both SDPs here have Gram
matrices of side <= 100, so their values agree to about side * 1e-8 <= 1e-6 relative (``RTOL``,
as in tests/test_pep.py).
"""

import numpy as np
import pytest

pytest.importorskip("cvxpy")
pytest.importorskip("clarabel")

import sgpverify as sv  # noqa: E402
from sgpverify import pep  # noqa: E402
from sgpverify.mixing import LinkDelay, mixing_schedule, push_matrix  # noqa: E402
from sgpverify.pep.symmetry import NodeGroup, is_invariant  # noqa: E402

RTOL = 1e-6

FAMILIES = {
    "exponential": (sv.graphs.exponential, "Z_{n}"),
    "ring": (sv.graphs.ring, "Z_{n}"),
    "hypercube": (sv.graphs.hypercube, "Z_2^{k}"),
    "complete": (sv.graphs.complete, "Z_2^{k}"),
    "torus": (lambda n: sv.graphs.torus(2, n // 2), None),
}


def _matrices(top, period=None):
    return [push_matrix(top, k).toarray() for k in range(period or top.period)]


@pytest.mark.parametrize("n", [4, 8])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_detects_the_familys_group(name, n):
    make, want = FAMILIES[name]
    g = pep.detect_symmetry(mixing_schedule(make(n)), 10)
    assert g is not None and g.n == n
    if want is not None:
        assert g.name == want.format(n=n, k=n.bit_length() - 1)
    # the group found leaves every matrix invariant, and a generator is no identity
    for P in _matrices(make(n)):
        for perm in g.generators():
            assert is_invariant(P, perm)
            assert np.any(perm != np.arange(n))


def _plant(mats, step, j):
    """Move 2^-20 of column j's mass at one step from one entry to another (still stochastic)."""
    bad = [P.copy() for P in mats]
    i = int(np.flatnonzero(bad[step][:, j])[0])
    bad[step][i, j] -= 2.0**-20
    bad[step][j if i != j else (j + 1) % len(bad[step]), j] += 2.0**-20
    return bad


@pytest.mark.parametrize("tau", [0, 1])
def test_planted_asymmetry_switches_the_reduction_off(tau):
    mats = _matrices(sv.graphs.exponential(8))
    assert pep.detect_symmetry(mixing_schedule(mats, tau=tau), 10).name == "Z_8"
    for step in range(len(mats)):
        assert pep.detect_symmetry(mixing_schedule(_plant(mats, step, 3), tau=tau), 10) is None
    # a run of K steps uses the matrices of steps < K only
    bad = _plant(_matrices(sv.graphs.exponential(4)), 1, 2)
    kw = dict(L=1.0, step_size=0.5, zeta2=0.5, tau=tau)
    assert pep.worst_case(bad, 1, **kw).symmetry == "Z_4"
    wc = pep.worst_case(bad, 2, **kw)
    assert wc.symmetry is None and wc.block_sizes == (wc.gram_size,)


def test_delays_must_move_with_their_nodes():
    top = sv.graphs.ring(4, bidirectional=True)
    D = np.zeros((4, 4), dtype=int)
    for i in range(4):
        D[(i + 1) % 4, i] = 1  # every clockwise message one step late: still cyclic
    assert pep.detect_symmetry(mixing_schedule(top, tau=1, delay=LinkDelay(D)), 5).name == "Z_4"
    D[1, 0] = 0  # one link on time: no symmetry
    assert pep.detect_symmetry(mixing_schedule(top, tau=1, delay=LinkDelay(D)), 5) is None


def test_no_symmetry_where_none_is_known():
    assert pep.detect_symmetry(mixing_schedule(sv.graphs.star(4)), 5) is None
    assert pep.detect_symmetry(mixing_schedule(sv.graphs.irregular_exponential(6)), 5) is None


@pytest.mark.parametrize("orders", [(6,), (2, 2, 2), (2, 4), (3, 3)])
def test_character_basis_block_diagonalises_invariant_gram_matrices(orders):
    g = NodeGroup(orders)
    n, T = g.n, 3
    V, blocks = g.real_characters()
    assert np.allclose(V.T @ V, np.eye(n), atol=8 * n * np.finfo(float).eps)
    rng = np.random.default_rng(0)
    Y = rng.standard_normal((T * n, T * n))
    G0 = Y @ Y.T  # (t, i) -> t n + i
    # group average: the orbit of G0 under the group the generators span
    perms, frontier = {tuple(range(n))}, [np.arange(n)]
    while frontier:
        p = frontier.pop()
        for s in g.generators():
            q = tuple(s[list(p)])
            if q not in perms:
                perms.add(q)
                frontier.append(np.array(q))
    assert len(perms) == n  # the action is regular
    G = np.zeros_like(G0)
    for p in perms:
        idx = (np.arange(T)[:, None] * n + np.array(p)[None, :]).ravel()
        G += G0[np.ix_(idx, idx)]
    G /= n
    W = np.kron(np.eye(T), V)
    H = W.T @ G @ W
    scale = np.abs(G).max()
    tol = 64 * n * T * np.finfo(float).eps * scale
    mask = np.zeros_like(H, dtype=bool)
    for kind, cols in blocks:
        coords = [t * n + c for c in cols for t in range(T)]
        mask[np.ix_(coords, coords)] = True
        if kind == "pair":  # [[A, -B], [B, A]], A symmetric, B antisymmetric
            M = H[np.ix_(coords, coords)]
            A, B = M[:T, :T], M[T:, :T]
            assert np.allclose(M[T:, T:], A, atol=tol) and np.allclose(M[:T, T:], -B, atol=tol)
            assert np.allclose(B, -B.T, atol=tol)
    assert np.max(np.abs(H[~mask])) <= tol


def _both(top, K, **kw):
    kw = dict(dict(L=1.5, step_size=0.5, zeta2=0.5), **kw)
    return pep.worst_case(top, K, **kw), pep.worst_case(top, K, symmetry=None, **kw)


CASES = [dict(), dict(fstar="last"), dict(tau=1, G2sq=0.3), dict(measure="min")]


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.parametrize("kw", CASES, ids=["stationary", "last", "tau1-G2", "min"])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_reduced_equals_full_n4(name, kw):
    red, full = _both(FAMILIES[name][0](4), 3, **kw)
    assert red.symmetry is not None and full.symmetry is None
    assert max(red.block_sizes) < full.gram_size
    assert red.value == pytest.approx(full.value, rel=RTOL)
    # the per-step values read back from the full Gram matrix (W Gh W^T) give the value again
    # (only the value is unique: two optimal Gram matrices may spread it over k differently)
    per_step = np.min(red.grad_norm_sq) if kw.get("measure") == "min" else np.mean(red.grad_norm_sq)
    assert per_step == pytest.approx(red.value, rel=RTOL)
    assert np.min(np.linalg.eigvalsh(red.gram)) >= -RTOL * np.abs(red.gram).max()
    if kw.get("fstar", "stationary") == "stationary":  # grad f(x_*) = (1/n) sum_i h_i = 0
        md, _ = red._model
        h = sum(np.pad(ev[-1][1], (0, md.m - ev[-1][1].size)) for ev in md.evals) / md.n
        assert h @ red.gram @ h <= 64 * red.gram_size * np.finfo(float).eps * np.abs(red.gram).max()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.parametrize("kw", CASES[:3], ids=["stationary", "last", "tau1-G2"])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_reduced_equals_full_n8(name, kw):
    red, full = _both(FAMILIES[name][0](8), 3, **kw)
    assert red.symmetry is not None
    assert red.value == pytest.approx(full.value, rel=RTOL)


def _worst_violation(wc, L):
    """The largest ``lhs - rhs`` of every constraint of every node (interpolation of each f_i,
    heterogeneity, f_* and the initial condition), at the worst case's Gram matrix and values."""
    md, _ = wc._model
    G, F, m = wc.gram, md.F, md.m
    worst = -np.inf
    for ev in md.evals:
        X = np.array([np.pad(x, (0, m - x.size)) for x, _, _ in ev])
        Gr = np.array([np.pad(g, (0, m - g.size)) for _, g, _ in ev])
        f = F[[e for _, _, e in ev]]
        a, b = np.nonzero(~np.eye(len(ev), dtype=bool))
        dx, sg, dg = X[a] - X[b], Gr[a] + Gr[b], Gr[a] - Gr[b]

        def ip(u, v):
            return np.einsum("ri,ij,rj->r", u, G, v)

        lhs = f[b] - f[a] - L / 4 * ip(dx, dx) + 0.5 * ip(sg, dx) + ip(dg, dg) / (4 * L)
        worst = max(worst, float(lhs.max()))
    for (terms, lin), rhs in zip(md.quad, md.rhs):
        v = sum(c * np.pad(u, (0, m - u.size)) @ G @ np.pad(w, (0, m - w.size)) for c, u, w in terms)
        worst = max(worst, v + sum(c * F[j] for j, c in lin.items()) - rhs)
    return worst


@pytest.mark.parametrize(
    "top", [sv.graphs.exponential(8), sv.graphs.ring(4), sv.graphs.torus(2, 4)], ids=["Z_8", "Z_4", "Z_2 x Z_4"]
)
def test_reduced_solution_is_feasible_for_every_node(top):
    # the reduced SDP holds node 0's interpolation conditions only; its solution, read back as a
    # full Gram matrix, must satisfy every node's (a point of the full SDP, hence value <= its
    # optimum), to the solver's feasibility tolerance (1e-8) times the side of the Gram matrix
    L = 1.5
    wc = pep.worst_case(top, 4, L=L, step_size=0.5, zeta2=0.5)
    assert wc.symmetry is not None and wc.status == "optimal"
    scale = np.abs(wc.gram).max() + np.abs(wc._model[0].F).max()
    assert _worst_violation(wc, L) <= 1e-8 * wc.gram_size * scale


@pytest.mark.filterwarnings("ignore::sgpverify.errors.EffectiveStepWarning")
@pytest.mark.parametrize("top", [sv.graphs.exponential(4), sv.graphs.hypercube(4)], ids=["Z_4", "Z_2^2"])
@pytest.mark.parametrize("tau", [0, 1])
def test_reduced_worst_case_reads_back_through_simulate(top, tau):
    gamma = 0.5
    wc = pep.worst_case(top, 3, L=1.5, step_size=gamma, zeta2=0.5, tau=tau)
    assert wc.symmetry is not None
    prob = wc.problem()
    tr = sv.simulate(prob, top, step_size=gamma, n_iter=3, x0=prob.x0, tau=tau, record_every=1)
    gns = np.asarray(tr.grad_norm_sq)[:3]
    scale = float(np.max(np.diag(wc.gram)))
    tol = 64 * np.finfo(float).eps * wc.gram_size * scale + 1e-9 * scale
    assert np.allclose(gns, wc.grad_norm_sq, rtol=0, atol=tol)
    assert np.allclose(np.asarray(tr.consensus)[:3], wc.consensus, rtol=0, atol=tol)
    assert float(np.mean(gns)) == pytest.approx(wc.value, rel=RTOL)


def test_symmetry_argument_is_checked():
    with pytest.raises(ValueError, match="symmetry must be 'auto' or None, got 'yes'"):
        pep.worst_case(sv.graphs.ring(4), 2, L=1.0, step_size=0.1, symmetry="yes")
    with pytest.raises(ValueError, match="orders must be integers >= 2"):
        NodeGroup((1, 4))
