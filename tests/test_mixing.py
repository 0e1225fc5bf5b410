"""Tests of sgpverify.mixing: push and Metropolis weights, validation of user
matrices, delay models and the delay augmentation of docs/theory.md section 1b.

The central check compares the augmented recursion with an independent,
message-by-message simulation of delayed push-sum (a Python loop over nodes
and messages with an explicit in-flight queue).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sgpverify import graphs, mixing
from sgpverify.testing import strategies as sgst

EPS = np.finfo(float).eps


# --------------------------------------------------------------------------
# independent references
# --------------------------------------------------------------------------


def reference_augment(P, D, tau):
    """docs/theory.md section 1b ("Delays and the augmented matrix"), entry by entry (dense, explicit loops)."""
    P = np.asarray(P, dtype=float)
    n = P.shape[0]
    N = n * (tau + 1)
    E = np.zeros((N, N))
    for j in range(n):
        for i in range(n):
            if P[i, j] == 0:
                continue
            if i == j:
                E[i, i] += P[i, i]
            else:
                E[int(D[i, j]) * n + i, j] += P[i, j]
    for r in range(1, tau + 1):
        for i in range(n):
            E[(r - 1) * n + i, r * n + i] = 1.0
    return E


def direct_simulation(P_seq, D_seq, G, x0, gamma):
    """Delayed push-sum, one message at a time.

    At step k node j forms y_j = x_j - gamma g_j^k, keeps P[j, j] * (y_j, w_j)
    and sends P[i, j] * (y_j, w_j) to i, arriving at step k + 1 + D^(k)[i, j]
    (a queue keyed by arrival step). Returns, after each step, the real
    nodes' x and w and a snapshot of the messages still in flight.
    """
    n, _ = x0.shape
    x = x0.copy()
    w = np.ones(n)
    queue = {}  # arrival step -> [(receiver, x share, w share)]
    history = []
    for k, (P, D) in enumerate(zip(P_seq, D_seq)):
        new_x = np.zeros_like(x)
        new_w = np.zeros(n)
        for j in range(n):
            y = x[j] - gamma * G[k][j]
            for i in range(n):
                share = P[i, j]
                if share == 0.0:
                    continue
                if i == j:
                    new_x[j] += share * y
                    new_w[j] += share * w[j]
                else:
                    delay = int(D[i, j])
                    queue.setdefault(k + 1 + delay, []).append((i, share * y, share * w[j]))
        for i, xs, ws in queue.pop(k + 1, []):
            new_x[i] += xs
            new_w[i] += ws
        x, w = new_x, new_w
        history.append((x.copy(), w.copy(), {a: list(m) for a, m in queue.items()}))
    return history


def in_flight_totals(queue, d):
    xs = np.zeros(d)
    ws = 0.0
    for msgs in queue.values():
        for _, xm, wm in msgs:
            xs = xs + xm
            ws += wm
    return xs, ws


# --------------------------------------------------------------------------
# push matrices and Metropolis weights
# --------------------------------------------------------------------------


@given(topo=sgst.topologies(max_n=48), k=st.integers(0, 10**6))
def test_push_matrix_column_sums_within_tolerance(topo, k):
    P = mixing.push_matrix(topo, k)
    assert P.format == "csr"
    colsum = np.asarray(P.sum(axis=0)).ravel()
    tol = mixing.column_sum_tolerance(P)
    nnz_per_col = np.bincount(P.indices, minlength=topo.n)
    assert tol == 4 * EPS * max(1, int(nnz_per_col.max()))
    assert np.abs(colsum - 1.0).max() <= tol
    # the package's own validator accepts it and returns it unchanged
    M = mixing.check_column_stochastic(P)
    np.testing.assert_array_equal(M.toarray(), P.toarray())


def test_column_sum_tolerance_formula():
    P = np.array([[0.5, 0.0, 1 / 3], [0.5, 1.0, 1 / 3], [0.0, 0.0, 1 / 3]])
    assert mixing.column_sum_tolerance(P) == 4 * EPS * 3
    assert mixing.column_sum_tolerance(np.eye(4)) == 4 * EPS


@given(topo=sgst.topologies(max_n=48), k=st.integers(0, 10**6))
def test_metropolis_symmetric_doubly_stochastic(topo, k):
    W = mixing.metropolis_matrix(topo, k)
    assert W.format == "csr"
    A = W.toarray()
    n = topo.n
    np.testing.assert_array_equal(A, A.T)
    assert np.all(A >= 0) and np.all(np.diag(A) > 0)
    tol = 4 * EPS * n
    assert np.abs(A.sum(axis=0) - 1).max() <= tol
    assert np.abs(A.sum(axis=1) - 1).max() <= tol
    # off-diagonal entries from the undirected degrees, computed by a loop
    und = set()
    for s, d in topo.edges(k).tolist():
        und |= {(s, d), (d, s)}
    deg = [0] * n
    for s, _ in und:
        deg[s] += 1
    for i in range(n):
        for j in range(n):
            if i != j:
                expected = 1.0 / (1 + max(deg[i], deg[j])) if (i, j) in und else 0.0
                assert A[i, j] == expected


def test_metropolis_rejects_asymmetric_without_symmetrize():
    with pytest.raises(ValueError, match="not symmetric at step 0"):
        mixing.metropolis_matrix(graphs.ring(4), 0, symmetrize=False)
    W = mixing.metropolis_matrix(graphs.ring(4, bidirectional=True), 0, symmetrize=False)
    np.testing.assert_allclose(W.toarray(), mixing.metropolis_matrix(graphs.ring(4), 0).toarray())


# --------------------------------------------------------------------------
# check_column_stochastic
# --------------------------------------------------------------------------


@given(P=sgst.column_stochastic_matrices(max_n=12), sparse_in=st.booleans())
def test_check_column_stochastic_accepts_valid(P, sparse_in):
    M = mixing.check_column_stochastic(sp.csr_array(P) if sparse_in else P)
    assert sp.issparse(M) and M.format == "csr"
    np.testing.assert_array_equal(M.toarray(), P)


@pytest.mark.parametrize(
    "P, shape",
    [
        (np.ones((2, 3)) / 2, "(2, 3)"),
        (sp.csr_array(np.ones((3, 2)) / 3), "(3, 2)"),
        (np.ones(3), "(3,)"),
    ],
)
def test_check_column_stochastic_rejects_non_square(P, shape):
    with pytest.raises(ValueError, match=re.escape(shape)):
        mixing.check_column_stochastic(P)


@given(
    P=sgst.column_stochastic_matrices(max_n=10, positive_diagonal=False),
    data=st.data(),
    bad=st.sampled_from([np.nan, np.inf, -np.inf]),
)
def test_check_column_stochastic_rejects_non_finite_naming_entry(P, data, bad):
    n = P.shape[0]
    r, c = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, n - 1))
    P = P.copy()
    P[r, c] = bad
    with pytest.raises(ValueError) as info:
        mixing.check_column_stochastic(P, name="W")
    msg = str(info.value)
    assert "finite" in msg and f"W[{r}, {c}] = {bad}" in msg, msg


@given(P=sgst.column_stochastic_matrices(max_n=10, positive_diagonal=False), data=st.data())
def test_check_column_stochastic_rejects_negative_naming_entry(P, data):
    n = P.shape[0]
    r, c = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, n - 1))
    P = P.copy()
    P[r, c] = -0.25
    with pytest.raises(ValueError) as info:
        mixing.check_column_stochastic(sp.csr_array(P))
    msg = str(info.value)
    assert "non-negative" in msg and f"P[{r}, {c}] = -0.25" in msg, msg


@given(P=sgst.column_stochastic_matrices(max_n=10), data=st.data())
def test_check_column_stochastic_rejects_bad_column_sum(P, data):
    n = P.shape[0]
    c = data.draw(st.integers(0, n - 1))
    original = P
    P = P.copy()
    P[:, c] *= 1.01
    with pytest.raises(ValueError) as info:
        mixing.check_column_stochastic(P)
    msg = str(info.value)
    assert re.match(rf"column {c} of P sums to 1\.01", msg), msg
    tol = mixing.column_sum_tolerance(P)
    assert f"atol = {tol:.1e}" in msg
    # a perturbation well inside the tolerance is accepted, one well outside is not
    Q = original.copy()
    Q[c, c] += tol / 4
    mixing.check_column_stochastic(Q)
    Q[c, c] += 4 * tol
    with pytest.raises(ValueError, match=rf"column {c} of P"):
        mixing.check_column_stochastic(Q)


def test_check_column_stochastic_rejects_zero_diagonal():
    P = np.array([[0.5, 1.0, 0.0], [0.5, 0.0, 0.5], [0.0, 0.0, 0.5]])
    with pytest.raises(ValueError, match=re.escape("positive diagonal, got P[1, 1] = 0")):
        mixing.check_column_stochastic(P)
    M = mixing.check_column_stochastic(P, require_positive_diagonal=False)
    np.testing.assert_array_equal(M.toarray(), P)


# --------------------------------------------------------------------------
# augment
# --------------------------------------------------------------------------


@st.composite
def matrix_and_delays(draw, max_n=10, max_tau=4):
    P = draw(sgst.column_stochastic_matrices(max_n=max_n, sparse=draw(st.booleans())))
    tau, D = draw(sgst.delay_patterns(P, max_tau=max_tau))
    return P, tau, D


@given(pd=matrix_and_delays())
def test_augment_matches_definition(pd):
    P, tau, D = pd
    Pd = P.toarray() if sp.issparse(P) else P
    n = Pd.shape[0]
    N = n * (tau + 1)
    Pt = mixing.augment(P, D, tau)
    assert sp.issparse(Pt) and Pt.format == "csr" and Pt.shape == (N, N)
    A = Pt.toarray()
    np.testing.assert_array_equal(A, reference_augment(Pd, D, tau))
    assert np.all(A >= 0)
    mixing.check_column_stochastic(Pt, require_positive_diagonal=False)
    # rows 0..n-1 are the real nodes: they hold the self shares and the
    # undelayed messages; the chain feeds them from buffer 1
    real = np.where(D == 0, Pd, 0.0)
    np.fill_diagonal(real, np.diag(Pd))
    np.testing.assert_array_equal(A[:n, :n], real)
    if tau >= 1:
        np.testing.assert_array_equal(A[:n, n : 2 * n], np.eye(n))


@given(pd=matrix_and_delays(), data=st.data())
def test_augment_ignores_delay_diagonal_and_reads_sparse_missing_as_zero(pd, data):
    P, tau, D = pd
    n = D.shape[0]
    ref = mixing.augment(P, D, tau).toarray()
    # arbitrary diagonal (negative, above tau, non-integer): ignored
    D2 = D.astype(float)
    np.fill_diagonal(D2, data.draw(st.sampled_from([-3.0, tau + 5.0, 0.5])))
    np.testing.assert_array_equal(mixing.augment(P, D2, tau).toarray(), ref)
    np.testing.assert_array_equal(mixing.augment(P, sp.csr_array(D2), tau).toarray(), ref)
    # sparse delays that leave out some entries: those mean delay 0
    keep = np.asarray(data.draw(st.lists(st.booleans(), min_size=n * n, max_size=n * n)))
    keep = keep.reshape(n, n)
    Dsub = np.where(keep, D, 0)
    rows, cols = np.nonzero(keep & (D > 0))
    Dsp = sp.coo_array((D[rows, cols], (rows, cols)), shape=(n, n))
    np.testing.assert_array_equal(mixing.augment(P, Dsp, tau).toarray(), mixing.augment(P, Dsub, tau).toarray())
    # no delays at all: None and the empty sparse matrix mean zero everywhere
    zero = mixing.augment(P, np.zeros((n, n), dtype=int), tau).toarray()
    np.testing.assert_array_equal(mixing.augment(P, None, tau).toarray(), zero)
    np.testing.assert_array_equal(mixing.augment(P, sp.csr_array((n, n), dtype=np.int64), tau).toarray(), zero)


def test_augment_tau0_is_P_and_docstring_example():
    P = np.array([[0.5, 0.5], [0.5, 0.5]])
    np.testing.assert_array_equal(mixing.augment(P, None, 0).toarray(), P)
    A = mixing.augment(P, np.array([[0, 1], [0, 0]]), tau=1).toarray()
    np.testing.assert_array_equal(A, [[0.5, 0, 1, 0], [0.5, 0.5, 0, 1], [0, 0.5, 0, 0], [0, 0, 0, 0]])


@pytest.mark.parametrize(
    "D, value",
    [
        (np.array([[0, 3], [0, 0]]), "3"),
        (np.array([[0, -1], [0, 0]]), "-1"),
        (np.array([[0, 0.5], [0, 0]]), "0.5"),
    ],
)
def test_augment_rejects_bad_delays(D, value):
    P = np.array([[0.5, 0.5], [0.5, 0.5]])
    for delays in (D, sp.csr_array(D)):
        with pytest.raises(ValueError) as info:
            mixing.augment(P, delays, tau=2)
        msg = str(info.value)
        assert "delays" in msg and re.search(rf"got {re.escape(value)}\b", msg), msg
    with pytest.raises(ValueError, match="delays must have the shape of P"):
        mixing.augment(P, np.zeros((3, 3), dtype=int), tau=2)


@st.composite
def matrix_sequences(draw, max_n=8, max_tau=3, max_len=8):
    n = draw(st.integers(1, max_n))
    tau = draw(st.integers(0, max_tau))
    length = draw(st.integers(1, max_len))
    seq = []
    for _ in range(length):
        P = draw(sgst.column_stochastic_matrices(min_n=n, max_n=n))
        seq.append((P, draw(sgst.delay_patterns(P, tau=tau))[1]))
    return n, tau, seq


@given(nts=matrix_sequences(), seed=st.integers(0, 2**32 - 1))
def test_augmented_mass_and_weight_conservation(nts, seed):
    n, tau, seq = nts
    N = n * (tau + 1)
    rng = np.random.default_rng(seed)
    d = 3
    gamma = 0.1
    X = np.zeros((N, d))
    X[:n] = rng.standard_normal((n, d))
    w = np.zeros(N)
    w[:n] = 1.0
    mass = X.sum(axis=0)
    scale = np.abs(X).sum()
    for k, (P, D) in enumerate(seq):
        Pt = mixing.augment(P, D, tau)
        v = rng.standard_normal(N)
        assert abs((Pt @ v).sum() - v.sum()) <= 8 * EPS * N * np.abs(v).sum()
        G = np.zeros((N, d))
        G[:n] = rng.standard_normal((n, d))
        X = Pt @ (X - gamma * G)
        w = Pt @ w
        mass = mass - gamma * G.sum(axis=0)
        scale += gamma * np.abs(G).sum()
        assert np.all(w >= 0)
        assert abs(w.sum() - n) <= 8 * EPS * N * (k + 1) * n
        assert np.abs(X.sum(axis=0) - mass).max() <= 8 * EPS * N * (k + 1) * scale


@given(pd=matrix_and_delays(max_n=9), data=st.data())
def test_augment_commutes_with_relabelling(pd, data):
    P, tau, D = pd
    Pd = P.toarray() if sp.issparse(P) else P
    n = Pd.shape[0]
    perm = data.draw(sgst.permutations(n))
    Pi = np.zeros((n, n))
    Pi[perm, np.arange(n)] = 1.0
    Pp = Pi @ Pd @ Pi.T
    Dp = (Pi @ D @ Pi.T).round().astype(np.int64)
    big = np.kron(np.eye(tau + 1), Pi)
    A = mixing.augment(Pd, D, tau).toarray()
    B = mixing.augment(Pp, Dp, tau).toarray()
    np.testing.assert_array_equal(B, big @ A @ big.T)
    # and the recursion driven by it: relabelled state = permuted state
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = np.zeros(n * (tau + 1))
    x[:n] = rng.standard_normal(n)
    xa, xb = x.copy(), big @ x
    for _ in range(2 * tau + 2):
        xa, xb = A @ xa, B @ xb
    np.testing.assert_allclose(xb, big @ xa, rtol=0, atol=16 * EPS * (2 * tau + 2) * np.abs(x).sum())


# --------------------------------------------------------------------------
# THE KEY CHECK: augmented recursion == direct simulation of delayed messages
# --------------------------------------------------------------------------

N_NODES = 8
TOPOLOGIES = {
    "random-peer": lambda: graphs.random_peer(N_NODES, seed=11),
    "erdos-renyi": lambda: graphs.erdos_renyi(N_NODES, 0.3, seed=12),
    # periodic and non-regular: exercises the schedule's cache of a period
    "exp-stragglers": lambda: graphs.with_stragglers(graphs.exponential(N_NODES), [0, 3], every=3),
}


def _run_key_check(topo, tau, delay_kind, steps, seed, d=3, gamma=0.1):
    n = topo.n
    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal((n, d))
    G = rng.standard_normal((steps, n, d))
    # the delays, chosen as the user would, and read back independently
    if delay_kind == "fixed":
        spec, dseed = "fixed", None
    elif delay_kind == "random":
        spec, dseed = "random", seed + 1000
    else:
        link = rng.integers(0, tau + 1, size=(n, n))
        spec, dseed = link, None
    S = mixing.mixing_schedule(topo, tau=tau, delay=spec, seed=dseed)
    N = n * (tau + 1)
    assert S.n == n and S.N == N
    P_seq, D_seq = [], []
    model = mixing.delay_model("random", tau, seed=dseed) if delay_kind == "random" else None
    for k in range(steps):
        Pk = mixing.push_matrix(topo, k)
        P_seq.append(Pk.toarray())
        if delay_kind == "fixed":
            D = np.full((n, n), tau)
        elif delay_kind == "random":
            D = mixing.delay_matrix(Pk, model, k).toarray() if tau > 0 else np.zeros((n, n), int)
            assert D.min() >= 0 and D.max() <= tau
        else:
            D = link
        D_seq.append(D)
    history = direct_simulation(P_seq, D_seq, G, x0, gamma)

    X = np.zeros((N, d))
    X[:n] = x0
    w = np.zeros(N)
    w[:n] = 1.0
    applied = np.zeros(d)
    abs_scale = np.abs(x0).sum()
    w_moved = 0.0
    for k in range(steps):
        Pt = S.matrix(k)
        assert Pt.shape == (N, N)
        Gt = np.zeros((N, d))
        Gt[:n] = G[k]
        X = Pt @ (X - gamma * Gt)
        w = Pt @ w
        applied += G[k].sum(axis=0)
        abs_scale += gamma * np.abs(G[k]).sum()
        x_dir, w_dir, queue = history[k]
        rtol = 64 * EPS * (k + 1)
        xs = max(1.0, np.abs(X).max())
        np.testing.assert_allclose(X[:n], x_dir, rtol=0, atol=rtol * xs, err_msg=f"x, step {k}")
        np.testing.assert_allclose(w[:n], w_dir, rtol=0, atol=rtol * max(1.0, w.max()), err_msg=f"w, step {k}")
        # buffer r holds exactly the messages that arrive r steps from now
        assert all(k + 2 <= a <= k + 1 + tau for a in queue)
        for r in range(1, tau + 1):
            bx = np.zeros((n, d))
            bw = np.zeros(n)
            for i, xm, wm in queue.get(k + 1 + r, []):
                bx[i] += xm
                bw[i] += wm
            np.testing.assert_allclose(X[r * n : (r + 1) * n], bx, rtol=0, atol=rtol * xs)
            np.testing.assert_allclose(w[r * n : (r + 1) * n], bw, rtol=0, atol=rtol * max(1.0, w.max()))
        # mass: real rows + buffers (augmented) or + in flight (direct)
        expected = x0.sum(axis=0) - gamma * applied
        mtol = 64 * EPS * (k + 1) * max(1.0, abs_scale)
        assert np.abs(X.sum(axis=0) - expected).max() <= mtol
        fx, fw = in_flight_totals(queue, d)
        assert np.abs(x_dir.sum(axis=0) + fx - expected).max() <= mtol
        assert abs(w.sum() - n) <= 64 * EPS * (k + 1) * n
        assert abs(w_dir.sum() + fw - n) <= 64 * EPS * (k + 1) * n
        w_moved = max(w_moved, np.abs(w_dir - 1.0).max())
    return w_moved, D_seq


@pytest.mark.parametrize("tau", [0, 1, 2, 3])
@pytest.mark.parametrize("delay_kind", ["fixed", "random", "link"])
@pytest.mark.parametrize("topo_kind", sorted(TOPOLOGIES))
def test_augmented_recursion_equals_direct_delayed_simulation(topo_kind, delay_kind, tau):
    topo = TOPOLOGIES[topo_kind]()
    w_moved, D_seq = _run_key_check(topo, tau, delay_kind, steps=16, seed=7)
    # the schedule is non-regular: push-sum weights really move
    assert w_moved > 0.1
    if tau > 0 and delay_kind != "fixed":
        # delays really vary across messages
        off = ~np.eye(N_NODES, dtype=bool)
        assert len(np.unique(np.concatenate([D[off] for D in D_seq]))) >= 2


@settings(max_examples=15)
@given(
    n=st.integers(1, 7),
    kind=st.sampled_from(["random-peer", "erdos-renyi"]),
    tau=st.integers(0, 3),
    delay_kind=st.sampled_from(["fixed", "random", "link"]),
    seed=st.integers(0, 2**31),
)
def test_augmented_recursion_equals_direct_simulation_property(n, kind, tau, delay_kind, seed):
    topo = graphs.random_peer(n, seed=seed) if kind == "random-peer" else graphs.erdos_renyi(n, 0.5, seed=seed)
    _run_key_check(topo, tau, delay_kind, steps=10, seed=seed)


# --------------------------------------------------------------------------
# delay models
# --------------------------------------------------------------------------


@given(P=sgst.column_stochastic_matrices(max_n=12), tau=st.integers(0, 5), k=st.integers(0, 10**6))
def test_fixed_delay_everywhere(P, tau, k):
    model = mixing.FixedDelay(tau)
    assert model.tau == tau
    src = np.arange(5)
    d = model.edge_delays(k, src, src[::-1])
    assert d.dtype.kind == "i" and d.tolist() == [tau] * 5
    D = mixing.delay_matrix(P, model, k).toarray()
    off = (P != 0) & ~np.eye(len(P), dtype=bool)
    assert np.all(D[off] == tau)
    assert np.all(D[~off] == 0)
    assert mixing.delay_model("fixed", tau).edge_delays(k, src, src).tolist() == [tau] * 5


@given(tau=st.integers(0, 5), seed=st.integers(0, 2**32 - 2), k=st.integers(0, 10**6))
def test_random_delay_range_and_reproducibility(tau, seed, k):
    m = 400
    src = np.arange(m) % 20
    dst = (src + 1) % 20
    a = mixing.RandomDelay(tau, seed=seed)
    d = a.edge_delays(k, src, dst)
    assert len(d) == m and d.min() >= 0 and d.max() <= tau
    assert set(d.tolist()) == set(range(tau + 1))  # every value 0..tau occurs in 400 draws
    np.testing.assert_array_equal(mixing.RandomDelay(tau, seed=seed).edge_delays(k, src, dst), d)
    np.testing.assert_array_equal(mixing.delay_model("random", tau, seed=seed).edge_delays(k, src, dst), d)
    if tau > 0:
        assert not np.array_equal(a.edge_delays(k + 1, src, dst), d)
        assert not np.array_equal(mixing.RandomDelay(tau, seed=seed + 1).edge_delays(k, src, dst), d)


def test_link_delay_reads_receiver_sender_and_ignores_diagonal():
    D = np.array([[-7, 1, 2], [0, 9, 3], [2, 1, 0]])  # diagonal ignored, even if bad
    model = mixing.LinkDelay(D, tau=3)
    assert model.tau == 3
    src = np.array([1, 2, 0, 1])
    dst = np.array([0, 1, 2, 2])
    assert model.edge_delays(0, src, dst).tolist() == [1, 3, 2, 1]
    assert mixing.LinkDelay(D).tau == 3  # default tau: largest off-diagonal delay
    # sparse input with missing entries: delay 0
    Dsp = sp.csr_array(([2], ([1], [0])), shape=(3, 3))
    assert mixing.LinkDelay(Dsp, tau=2).edge_delays(0, np.array([0, 1]), np.array([1, 0])).tolist() == [2, 0]


@pytest.mark.parametrize(
    "D, tau, pattern",
    [
        (np.array([[0, -1], [0, 0]]), 2, r"delays must be >= 0, got -1"),
        (np.array([[0, 3], [0, 0]]), 2, r"delays must be <= tau = 2, got 3"),
        (np.array([[0, 1.5], [0, 0]]), 2, r"delays must .*integer.*1\.5"),
        (np.ones((2, 3), dtype=int), 2, r"delays must be a square matrix, got shape \(2, 3\)"),
    ],
    ids=["negative", "above-tau", "non-integer", "non-square"],
)
def test_link_delay_rejects_bad_entries(D, tau, pattern):
    with pytest.raises(ValueError, match=pattern):
        mixing.LinkDelay(D, tau)
    with pytest.raises(ValueError, match=pattern):
        mixing.delay_model(D, tau)


def test_delay_model_dispatch_and_errors():
    assert isinstance(mixing.delay_model("fixed", 2), mixing.FixedDelay)
    assert isinstance(mixing.delay_model("random", 2, seed=0), mixing.RandomDelay)
    assert isinstance(mixing.delay_model(np.zeros((3, 3), int), 2), mixing.LinkDelay)
    with pytest.raises(ValueError, match=r"delay must be one of 'fixed', 'random', got 'uniform'"):
        mixing.delay_model("uniform", 2)
    with pytest.raises(ValueError, match=r"tau must be an integer >= 0, got -1"):
        mixing.delay_model("fixed", -1)
    with pytest.raises(ValueError, match=r"exceeds tau = 1"):
        mixing.delay_model(mixing.FixedDelay(3), 1)


@pytest.mark.parametrize(
    "topo",
    [
        graphs.erdos_renyi(5, 0.0, seed=0),  # every step has no edge
        graphs.with_link_failures(graphs.ring(5), 1.0, seed=0),  # every message dropped
        graphs.random_peer(1, seed=0),
    ],
    ids=["erdos-renyi-p0", "all-links-failed", "one-node"],
)
def test_link_delay_on_a_step_without_messages(topo):
    """A step with no message (all links failed, isolated nodes) must still mix:
    every node keeps its mass and the buffers shift. Per-link delays crash here."""
    n = topo.n
    D = np.ones((n, n), dtype=int)
    S = mixing.mixing_schedule(topo, tau=2, delay=D)
    expected = mixing.augment(np.eye(n), None, 2).toarray()
    np.testing.assert_array_equal(S.matrix(0).toarray(), expected)
    empty = np.zeros(0, dtype=np.int64)
    assert mixing.LinkDelay(D, tau=2).edge_delays(0, empty, empty).tolist() == []


def test_components_with_one_seed_draw_independent_streams():
    # a topology and a delay model built with the same seed must not share bits
    topo = graphs.random_peer(256, seed=5)
    model = mixing.RandomDelay(3, seed=5)
    offs, dels = [], []
    for k in range(20):
        e = topo.edges(k)
        offs.append((e[:, 1] - e[:, 0]) % 256)
        dels.append(model.edge_delays(k, e[:, 0], e[:, 1]))
    r = np.corrcoef(np.concatenate(offs), np.concatenate(dels))[0, 1]
    # independent: |r| ~ 1/sqrt(5120) = 0.014; shared streams gave 0.97
    assert abs(r) < 0.06


def test_random_delay_does_not_depend_on_edge_order():
    model = mixing.RandomDelay(3, seed=2)
    src = np.array([0, 0, 1, 2, 3, 3])
    dst = np.array([1, 2, 0, 3, 0, 1])
    perm = np.array([5, 2, 0, 4, 1, 3])
    a = model.edge_delays(7, src, dst)
    b = model.edge_delays(7, src[perm], dst[perm])
    assert np.array_equal(a[perm], b)


# ---------------------------------------------------------------- random delays: one stream per block of steps


def _block_stream(seed, tau, k, m):
    """The delays of step k for m canonical edges, written out from the definition
    (RandomDelay's docstring): entry [j, k % 64] of block k // 64's (m, 64) draw."""
    from sgpverify.validation import STREAM, seed_sequence

    b, r = divmod(k, 64)
    gen = np.random.Generator(np.random.PCG64(seed_sequence(seed, STREAM["delay"], b)))
    dtype = np.uint8 if tau < 256 else np.int64
    return gen.integers(0, tau + 1, size=(m, 64), dtype=dtype)[:, r].astype(np.int64)


@pytest.mark.parametrize("tau", [1, 3, 300])
def test_random_delay_stream_is_one_draw_per_block_of_64_steps(tau):
    model = mixing.RandomDelay(tau, seed=11)
    for k in (0, 1, 63, 64, 65, 200):
        for m in (1, 7, 40):
            src = np.arange(m)
            d = model.edge_delays(k, src, (src + 1) % (m + 1))
            assert d.dtype == np.int64
            np.testing.assert_array_equal(d, _block_stream(11, tau, k, m))


def test_random_delay_does_not_depend_on_the_order_of_the_queries():
    """The block is cached and grows when a step has more messages than any asked
    for before: every step's answer must be the one a fresh model gives."""
    rng = np.random.default_rng(3)
    queries = [(int(k), int(m)) for k, m in zip(rng.integers(0, 200, 120), rng.integers(1, 300, 120))]
    model = mixing.RandomDelay(2, seed=4)
    for k, m in queries:  # one model for all, in a random order of steps and sizes
        src = np.arange(m)
        got = model.edge_delays(k, src, src + 1)
        fresh = mixing.RandomDelay(2, seed=4).edge_delays(k, src, src + 1)
        np.testing.assert_array_equal(got, fresh)
        np.testing.assert_array_equal(model.sorted_edge_delays(k, m), fresh)


def test_random_delay_steps_of_a_block_draw_independent_delays():
    # steps sharing a block read different entries of its draw: neighbouring steps
    # (same block) and the same position in the next block are uncorrelated
    model = mixing.RandomDelay(3, seed=0)
    m = 4000
    d = np.array([model.sorted_edge_delays(k, m) for k in range(130)], dtype=float)
    for a, b in ((0, 1), (5, 6), (0, 64), (63, 64)):
        r = np.corrcoef(d[a], d[b])[0, 1]
        assert abs(r) < 0.08  # independent: |r| ~ 1/sqrt(4000) = 0.016
    assert abs(d.mean() - 1.5) < 0.05 and set(np.unique(d)) == {0.0, 1.0, 2.0, 3.0}
