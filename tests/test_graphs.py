"""Tests of sgpverify.graphs: the edge contract, the exponential schedule of
docs/theory.md section 1b, exact averaging, push-matrix stochasticity, relabelling
and the error grammar of docs/contributing.md ("Habits").

Reference values are computed independently of the package (integer
arithmetic, numpy base conversion, networkx edge lists, explicit loops).
"""

from __future__ import annotations

import math
import re

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sgpverify import graphs, mixing
from sgpverify.testing import strategies as sgst

EPS = np.finfo(float).eps

STRATEGY_KINDS = list(sgst.TOPOLOGY_KINDS)
DOUBLY_STOCHASTIC_KINDS = [
    "exponential",
    "exponential-bidir",
    "bipartite-exponential",
    "ring",
    "ring-bidir",
    "complete",
    "hypercube",
    "torus",
]

steps_k = st.integers(0, 10**6)


# --------------------------------------------------------------------------
# helpers (independent of the package)
# --------------------------------------------------------------------------


def assert_edge_contract(e, n):
    """(m, 2) int64, read-only, lexicographically sorted, no loops, no dups, in range."""
    assert isinstance(e, np.ndarray)
    assert e.dtype == np.int64
    assert e.ndim == 2 and e.shape[1] == 2
    assert not e.flags.writeable
    if len(e):
        with pytest.raises(ValueError):
            e[0, 0] = e[0, 0]
    assert np.all((e >= 0) & (e < n)), f"endpoint out of range(0, {n}): {e.min()}..{e.max()}"
    assert not np.any(e[:, 0] == e[:, 1]), "self-loop"
    pairs = [tuple(p) for p in e.tolist()]
    # strictly increasing in lexicographic order <=> sorted and no duplicates
    assert all(a < b for a, b in zip(pairs, pairs[1:])), "not sorted or duplicated"


def dense_push(n, e):
    """Uniform push weights computed by an explicit loop over edges."""
    outdeg = [0] * n
    for s, _ in e.tolist():
        outdeg[s] += 1
    P = np.zeros((n, n))
    for j in range(n):
        P[j, j] = 1.0 / (outdeg[j] + 1)
    for s, d in e.tolist():
        P[d, s] = 1.0 / (outdeg[s] + 1)
    return P


def circulant_edges(n, offsets):
    """Edges i -> (i + o) mod n, loops and duplicates dropped, sorted (pure Python)."""
    return sorted({(i, (i + o) % n) for i in range(n) for o in offsets if (i + o) % n != i})


def as_pairs(e):
    return [tuple(p) for p in np.asarray(e).tolist()]


def period_product(topo, X):
    """Propagate the block X through one period of push matrices (sparse @ dense)."""
    for k in range(topo.period):
        X = mixing.push_matrix(topo, k) @ X
    return X


def second_eigen_modulus(M):
    mods = np.sort(np.abs(np.linalg.eigvals(M)))[::-1]
    return mods[1]


def msg_names(msg, name, value):
    """The message names the parameter and the value as whole tokens."""
    return re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", msg) and re.search(
        rf"(?<![\w.]){re.escape(value)}(?![\w])", msg
    )


# --------------------------------------------------------------------------
# strategies for the fault wrappers and networkx graphs (always applied)
# --------------------------------------------------------------------------


@st.composite
def with_faults(draw, kind):
    base = draw(sgst.topologies(min_n=1, max_n=64, faults=False))
    if kind == "link-failures":
        return graphs.with_link_failures(base, draw(st.floats(0.0, 1.0)), seed=draw(st.integers(0, 2**32 - 1)))
    nodes = draw(st.lists(st.integers(0, base.n - 1), max_size=4))
    return graphs.with_stragglers(base, nodes, every=draw(st.integers(1, 5)))


@st.composite
def nx_graphs(draw, directed):
    n = draw(st.integers(1, 40))
    p = draw(st.floats(0.0, 1.0))
    seed = draw(st.integers(0, 2**31 - 1))
    return nx.gnp_random_graph(n, p, seed=seed, directed=directed)


def topology_source(kind):
    if kind in ("link-failures", "stragglers"):
        return with_faults(kind)
    return sgst.topologies(min_n=1, max_n=64, kinds=[kind])


# --------------------------------------------------------------------------
# edge contract and period, every generator
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", STRATEGY_KINDS + ["link-failures", "stragglers"])
@settings(max_examples=25)
@given(data=st.data(), ks=st.lists(steps_k, min_size=1, max_size=4))
def test_edges_contract_and_period(kind, data, ks):
    topo = data.draw(topology_source(kind))
    assert topo.n >= 1
    for k in [0, 1, 2] + ks:
        e = topo.edges(k)
        assert_edge_contract(e, topo.n)
        # a pure function of k: asking again (after other steps) answers the same
        topo.edges(k + 1)
        np.testing.assert_array_equal(topo.edges(k), e)
        if topo.period is not None:
            assert isinstance(topo.period, int) and topo.period >= 1
            np.testing.assert_array_equal(topo.edges(k + topo.period), e)
            np.testing.assert_array_equal(topo.edges(k + 7 * topo.period), e)


@pytest.mark.parametrize("directed", [False, True], ids=["Graph", "DiGraph"])
@given(data=st.data())
def test_from_networkx_edges(directed, data):
    g = data.draw(nx_graphs(directed))
    # add a self-loop and relabel to non-integer names: both must be handled
    if g.number_of_nodes():
        g.add_edge(0, 0)
    names = {v: f"node-{v}" for v in g.nodes}
    g = nx.relabel_nodes(g, names)
    topo = graphs.from_networkx(g)
    assert topo.n == g.number_of_nodes()
    assert topo.period == 1
    index = {v: i for i, v in enumerate(g.nodes)}
    expected = set()
    for u, v in g.edges():
        if u != v:
            expected.add((index[u], index[v]))
            if not directed:
                expected.add((index[v], index[u]))
    for k in (0, 1, 5):
        e = topo.edges(k)
        assert_edge_contract(e, topo.n)
        assert as_pairs(e) == sorted(expected)


def test_from_networkx_multigraph_duplicates_removed():
    g = nx.MultiDiGraph()
    g.add_edges_from([(0, 1), (0, 1), (1, 2), (2, 2), (2, 0)])
    e = graphs.from_networkx(g).edges(0)
    assert_edge_contract(e, 3)
    assert as_pairs(e) == [(0, 1), (1, 2), (2, 0)]


# --------------------------------------------------------------------------
# random topologies: reproducible by (seed, k), different across seeds
# --------------------------------------------------------------------------

RANDOM_FACTORIES = {
    "erdos-renyi": lambda n, s: graphs.erdos_renyi(n, 0.5, seed=s),
    "random-peer": lambda n, s: graphs.random_peer(n, seed=s),
    "link-failures": lambda n, s: graphs.with_link_failures(graphs.complete(n), 0.5, seed=s),
    "schedule": lambda n, s: graphs.schedule([(graphs.exponential(n), 2), graphs.random_peer(n, seed=s)]),
    "stragglers": lambda n, s: graphs.with_stragglers(graphs.random_peer(n, seed=s), [0], every=2),
    "relabelled": lambda n, s: graphs.erdos_renyi(n, 0.5, seed=s).relabel(np.arange(n)[::-1]),
}


@pytest.mark.parametrize("kind", sorted(RANDOM_FACTORIES))
@settings(max_examples=20)
@given(n=st.integers(4, 64), seed=st.integers(0, 2**32 - 2), ks=st.lists(steps_k, max_size=5))
def test_random_topologies_reproducible_and_seed_dependent(kind, n, seed, ks):
    make = RANDOM_FACTORIES[kind]
    a, b = make(n, seed), make(n, seed)
    assert a.period is None
    steps = list(range(24)) + ks
    first = {k: a.edges(k) for k in steps}
    for k in reversed(steps):  # another object, other query order: same answer
        np.testing.assert_array_equal(b.edges(k), first[k])
        assert_edge_contract(first[k], n)
    c = make(n, seed + 1)
    assert any(not np.array_equal(c.edges(k), first[k]) for k in range(24)), (
        f"{kind}: seeds {seed} and {seed + 1} give the same 24 steps"
    )


def test_random_topology_without_seed_is_fixed_once():
    a = graphs.random_peer(32)
    b = graphs.random_peer(32)
    e = [a.edges(k) for k in range(10)]
    for k in reversed(range(10)):
        np.testing.assert_array_equal(a.edges(k), e[k])
    assert any(not np.array_equal(b.edges(k), e[k]) for k in range(10))


# --------------------------------------------------------------------------
# semantics of the fault wrappers and schedules
# --------------------------------------------------------------------------


@given(topo=sgst.topologies(max_n=40, faults=False), p=st.floats(0.0, 1.0), seed=st.integers(0, 2**32 - 1), k=steps_k)
def test_link_failures_drop_a_subset(topo, p, seed, k):
    t = graphs.with_link_failures(topo, p, seed=seed)
    base = set(as_pairs(topo.edges(k)))
    kept = set(as_pairs(t.edges(k)))
    assert kept <= base
    assert as_pairs(graphs.with_link_failures(topo, 0.0, seed=seed).edges(k)) == sorted(base)
    assert len(graphs.with_link_failures(topo, 1.0, seed=seed).edges(k)) == 0


@given(topo=sgst.topologies(max_n=40, faults=False), data=st.data(), k=st.integers(0, 200))
def test_stragglers_send_only_every_kth_step(topo, data, k):
    nodes = data.draw(st.lists(st.integers(0, topo.n - 1), max_size=4))
    every = data.draw(st.integers(1, 5))
    t = graphs.with_stragglers(topo, nodes, every=every)
    base = as_pairs(topo.edges(k))
    if k % every == 0:
        expected = base
    else:
        expected = [(s, d) for s, d in base if s not in set(nodes)]
    assert as_pairs(t.edges(k)) == expected
    if topo.period is not None:
        assert t.period == math.lcm(topo.period, every)


@pytest.mark.parametrize("repeat", [True, False])
def test_schedule_switches_parts(repeat):
    n = 12
    e2, e1, rp = graphs.exponential(n, peers=2), graphs.exponential(n), graphs.random_peer(n, seed=3)
    s = graphs.schedule([(e2, 3), (rp, 2), e1], repeat=repeat)
    for k in range(40):
        if repeat:
            pos = k % 6
            part = e2 if pos < 3 else rp if pos < 5 else e1
        else:
            part = e2 if k < 3 else rp if k < 5 else e1
        assert as_pairs(s.edges(k)) == as_pairs(part.edges(k))
    periodic = graphs.schedule([(e2, 3), e1], repeat=True)
    assert periodic.period == math.lcm(4, e2.period, e1.period)


# --------------------------------------------------------------------------
# the exponential schedule (docs/theory.md section 1b)
# --------------------------------------------------------------------------


def test_exponential_one_peer_offsets_match_integer_reference():
    for n in range(1, 301):
        topo = graphs.exponential(n)
        if n == 1:
            assert len(topo.edges(0)) == 0
            continue
        m = (n - 1).bit_length()  # floor(log2(n - 1)) + 1, exactly
        assert topo.period == m
        assert topo.offsets == tuple((1 << i,) for i in range(m))
        src = np.arange(n, dtype=np.int64)
        far = [10**6 + r for r in range(m)] + [2**40 + 3]  # random access, far steps
        for k in list(range(2 * m + 1)) + far:
            dst = (src + (1 << (k % m))) % n
            order = np.lexsort((dst, src))
            expected = np.stack([src[order], dst[order]], 1)
            e = topo.edges(k)
            np.testing.assert_array_equal(e, expected, err_msg=f"n={n}, k={k}")
            # every node sends to and receives from exactly one peer
            assert np.array_equal(np.bincount(e[:, 1], minlength=n), np.ones(n))


def test_exponential_p_peers_offsets_no_self_no_duplicates():
    for n in range(1, 301):
        for p in range(1, min(5, n - 1) + 1):
            rounds = graphs.exponential_rounds(n, peers=p)
            # number of rounds = number of base-(p+1) digits of n - 1 (no logarithm)
            n_rounds = 0 if n == 1 else len(np.base_repr(n - 1, base=p + 1))
            assert len(rounds) == n_rounds, (n, p)
            topo = graphs.exponential(n, peers=p)
            assert topo.period == max(1, n_rounds)
            for i, offs in enumerate(rounds):
                assert 0 not in offs, f"self-peer at n={n}, p={p}, round {i}"
                assert len(set(offs)) == len(offs), f"duplicate peer at n={n}, p={p}"
                expected = {(j * (p + 1) ** i) % n for j in range(1, p + 1)} - {0}
                assert set(offs) == expected, (n, p, i)
                e = topo.edges(i)
                assert as_pairs(e) == circulant_edges(n, expected)
                # circulant: every node has out- and in-degree len(offs)
                assert np.all(np.bincount(e[:, 0], minlength=n) == len(offs))
                assert np.all(np.bincount(e[:, 1], minlength=n) == len(offs))


def test_exponential_rounds_n244_p2_is_six():
    assert 3**5 == 243
    # the defect of docs/theory.md section 1b: a float log gives one round too few
    assert int(math.log(243, 3)) + 1 == 5
    assert len(graphs.exponential_rounds(244, peers=2)) == 6
    assert graphs.exponential(244, peers=2).period == 6
    # last round: offsets 1 * 243 and 2 * 243 = 486 = 242 (mod 244)
    assert graphs.exponential_rounds(244, peers=2)[5] == (243, 486 % 244)


def test_exponential_bidirectional_n8():
    topo = graphs.exponential(8, bidirectional=True)
    assert graphs.exponential_rounds(8, bidirectional=True) == ((1,), (7,), (2,), (6,), (4,))
    assert topo.period == 5
    for k, o in enumerate([1, 7, 2, 6, 4, 1, 7]):
        assert as_pairs(topo.edges(k)) == circulant_edges(8, [o])


# --------------------------------------------------------------------------
# exact averaging over one period
# --------------------------------------------------------------------------


def _is_power(n, b):
    while n % b == 0:
        n //= b
    return n == 1


def test_exponential_period_product_exact_iff_power_of_two():
    rng = np.random.default_rng(0)
    for n in range(1, 1025):
        topo = graphs.exponential(n)
        power = _is_power(n, 2)
        if n <= 256 or power:
            X = np.eye(n)  # the whole product
        else:
            X = rng.standard_normal((n, 4))  # a witness block suffices to refute
        Y = period_product(topo, X)
        target = np.ones((n, 1)) * X.mean(axis=0, keepdims=True)
        err = np.abs(Y - target).max()
        tol = 4.0 * topo.period * EPS * np.abs(X).max()
        if power:
            assert err <= tol, f"n={n}: period product differs from J/n by {err:.2e}"
        else:
            assert err > 1e6 * tol, f"n={n} is not a power of two but averages exactly"


@pytest.mark.parametrize("n, lam", [(6, 0.217), (12, 0.209), (24, 0.207)])
def test_exponential_period_product_second_eigenvalue(n, lam):
    topo = graphs.exponential(n)
    M = period_product(topo, np.eye(n))
    l2 = second_eigen_modulus(M)
    assert abs(l2 - lam) < 5e-4, f"|lambda_2| = {l2:.5f}, expected {lam}"
    # the product is the circulant (1/2^m) sum_{s<2^m} S^s: closed form
    m = topo.period
    closed = abs(math.sin(math.pi * 2**m / n) / math.sin(math.pi / n)) / 2**m
    assert abs(l2 - closed) <= 64 * EPS * n


def test_bidirectional_exponential_exact_for_powers_of_two():
    for b in range(0, 11):
        n = 2**b
        topo = graphs.exponential(n, bidirectional=True)
        Y = period_product(topo, np.eye(n))
        assert np.abs(Y - 1.0 / n).max() <= 4.0 * topo.period * EPS


@pytest.mark.parametrize("n, p", [(9, 2), (27, 2), (81, 2), (16, 3), (64, 3), (25, 4), (36, 5)])
def test_p_peer_exponential_exact_for_powers_of_p_plus_one(n, p):
    topo = graphs.exponential(n, peers=p)
    Y = period_product(topo, np.eye(n))
    assert np.abs(Y - 1.0 / n).max() <= 8.0 * topo.period * (p + 1) * EPS / n
    # and not for a neighbouring n
    other = graphs.exponential(n + 1, peers=p)
    Z = period_product(other, np.eye(n + 1))
    assert np.abs(Z - 1.0 / (n + 1)).max() > 1e-3


# --------------------------------------------------------------------------
# push matrices: column-stochastic, doubly stochastic where regular
# --------------------------------------------------------------------------


@given(topo=sgst.topologies(max_n=64), k=steps_k)
def test_push_matrix_column_stochastic_positive_diagonal(topo, k):
    P = mixing.push_matrix(topo, k)
    assert sp.issparse(P) and P.format == "csr" and P.shape == (topo.n, topo.n)
    A = P.toarray()
    assert np.all(A >= 0)
    assert np.all(np.diag(A) > 0)
    tol = mixing.column_sum_tolerance(P)
    assert tol <= 4 * EPS * topo.n
    assert np.abs(A.sum(axis=0) - 1).max() <= tol
    np.testing.assert_array_equal(A, dense_push(topo.n, topo.edges(k)))


@given(topo=sgst.topologies(max_n=64, kinds=DOUBLY_STOCHASTIC_KINDS, faults=False), k=steps_k)
def test_regular_topologies_doubly_stochastic(topo, k):
    A = mixing.push_matrix(topo, k).toarray()
    tol = 4 * EPS * topo.n
    assert np.abs(A.sum(axis=0) - 1).max() <= tol
    assert np.abs(A.sum(axis=1) - 1).max() <= tol


def test_random_peer_not_row_stochastic():
    found = None
    for seed in range(20):
        A = mixing.push_matrix(graphs.random_peer(8, seed=seed), 0).toarray()
        assert np.abs(A.sum(axis=0) - 1).max() <= 4 * EPS * 8
        if np.abs(A.sum(axis=1) - 1).max() > 0.25:
            found = (seed, A.sum(axis=1))
            break
    assert found is not None, "random_peer(8) was row-stochastic for 20 seeds"
    # rows of a one-peer schedule sum to 1/2 + (in-degree)/2: here they differ
    rows = found[1]
    assert rows.max() - rows.min() >= 0.5 - 8 * EPS


# --------------------------------------------------------------------------
# relabelling
# --------------------------------------------------------------------------


@given(topo=sgst.topologies(max_n=24), data=st.data(), k=st.integers(0, 50))
def test_relabel_conjugates_push_matrices(topo, data, k):
    perm = data.draw(sgst.permutations(topo.n))
    r = topo.relabel(perm)
    assert r.n == topo.n and r.period == topo.period
    e = r.edges(k)
    assert_edge_contract(e, r.n)
    assert as_pairs(e) == sorted((int(perm[a]), int(perm[b])) for a, b in as_pairs(topo.edges(k)))
    Pi = np.zeros((topo.n, topo.n))
    Pi[perm, np.arange(topo.n)] = 1.0  # node i becomes perm[i]
    P = mixing.push_matrix(topo, k).toarray()
    Q = mixing.push_matrix(r, k).toarray()
    np.testing.assert_array_equal(Q, Pi @ P @ Pi.T)


def test_relabel_rejects_non_permutation():
    with pytest.raises(ValueError, match=r"perm must be a permutation of range\(3\)"):
        graphs.ring(3).relabel([0, 0, 1])
    with pytest.raises(ValueError, match="perm"):
        graphs.ring(3).relabel([0, 1])


# --------------------------------------------------------------------------
# the strategy's own contract
# --------------------------------------------------------------------------


@given(topo=sgst.topologies(min_n=10, max_n=12))
def test_topologies_strategy_respects_node_range(topo):
    """The docstring: constrained generators round n to a valid value *in range*."""
    assert 10 <= topo.n <= 12, f"{topo!r} is outside [min_n, max_n] = [10, 12]"


# --------------------------------------------------------------------------
# bad input: one error grammar
# --------------------------------------------------------------------------

BAD_INPUTS = [
    ("exponential(0)", lambda: graphs.exponential(0), ValueError, "nodes", "0"),
    ("exponential(16, peers=16)", lambda: graphs.exponential(16, peers=16), ValueError, "peers", "16"),
    ("exponential(16, peers=0)", lambda: graphs.exponential(16, peers=0), ValueError, "peers", "0"),
    ("exponential(2.5)", lambda: graphs.exponential(2.5), TypeError, "nodes", "2.5"),
    ("exponential(True)", lambda: graphs.exponential(True), TypeError, "nodes", "True"),
    ("hypercube(6)", lambda: graphs.hypercube(6), ValueError, "nodes", "6"),
    ("bipartite_exponential(5)", lambda: graphs.bipartite_exponential(5), ValueError, "nodes", "5"),
    ("bipartite_exponential(0)", lambda: graphs.bipartite_exponential(0), ValueError, "nodes", "0"),
    ("erdos_renyi(4, 1.5)", lambda: graphs.erdos_renyi(4, 1.5), ValueError, "p", "1.5"),
    ("erdos_renyi(4, -0.5)", lambda: graphs.erdos_renyi(4, -0.5), ValueError, "p", "-0.5"),
    ("ring(-3)", lambda: graphs.ring(-3), ValueError, "nodes", "-3"),
    ("torus(0, 3)", lambda: graphs.torus(0, 3), ValueError, "rows", "0"),
    ("torus(3, 0)", lambda: graphs.torus(3, 0), ValueError, "cols", "0"),
    ("random_peer seed", lambda: graphs.random_peer(5, seed=-1), ValueError, "seed", "-1"),
    ("with_stragglers every=0", lambda: graphs.with_stragglers(graphs.ring(4), [0], every=0), ValueError, "every", "0"),
    ("with_stragglers node 7", lambda: graphs.with_stragglers(graphs.ring(4), [7], every=1), ValueError, "nodes", "7"),
    ("with_link_failures p=2", lambda: graphs.with_link_failures(graphs.ring(4), 2.0), ValueError, "p", "2.0"),
    ("from_networkx(empty)", lambda: graphs.from_networkx(nx.Graph()), ValueError, "graph", "0"),
    ("from_networkx(list)", lambda: graphs.from_networkx([(0, 1)]), TypeError, "graph", "list"),
    ("edges(-1)", lambda: graphs.ring(3).edges(-1), ValueError, "k", "-1"),
    ("edges(1.0)", lambda: graphs.ring(3).edges(1.0), TypeError, "k", "1.0"),
    ("schedule([])", lambda: graphs.schedule([]), ValueError, "parts", "0"),
    ("schedule mixed n", lambda: graphs.schedule([graphs.ring(3), graphs.ring(4)]), ValueError, "parts", "4"),
]


@pytest.mark.parametrize("call, exc, name, value", [b[1:] for b in BAD_INPUTS], ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_messages(call, exc, name, value):
    with pytest.raises(exc) as info:
        call()
    msg = str(info.value)
    assert msg_names(msg, name, value), f"message {msg!r} does not name {name} and {value}"


def test_exponential_zero_exact_message():
    with pytest.raises(ValueError, match=r"^nodes must be an integer >= 1, got 0$"):
        graphs.exponential(0)


# ---------------------------------------------------------------- fidelity to the authors' peer schedules
# An independent model of the authors' graph managers (facebookresearch/
# stochastic_gradient_push, gossip/graph_manager.py), written from their
# description: each rank has a "phone book" of peer offsets; step k uses
# entries k*p .. k*p + p - 1 (mod its length) for p peers per step. Compared only
# where the authors' code is free of its known defects (docs/theory.md section 1b):
# no repeated or zero offsets in the book.


def _book(kind, n, peers=1):
    m = 0
    while 2**m <= n - 1:
        m += 1
    if kind == "npeer":  # NPeerDynamicDirectedExponentialGraph
        out, i = [], 0
        while (peers + 1) ** i <= n - 1:
            out += [j * (peers + 1) ** i for j in range(1, peers + 1)]
            i += 1
        return [o % n for o in out]
    if kind == "directed":  # DynamicDirectedExponentialGraph: +2^i, -2^i
        return [s * 2**i % n for i in range(m) for s in (1, -1)]
    if kind == "bipartite":  # DynamicBipartiteExponentialGraph: +-1, +-(1 + 2^i)
        return [s * (1 if i == 0 else 1 + 2**i) % n for i in range(m) for s in (1, -1)]
    if kind == "ring":  # RingGraph
        return [1 % n, -1 % n]
    raise AssertionError(kind)


def _authors_edges(book, peers, n, k):
    L = len(book)
    offs = {book[(k * peers + j) % L] for j in range(peers)}
    return sorted((i, (i + o) % n) for i in range(n) for o in offs)


def _defect_free(book):
    return 0 not in book and len(set(book)) == len(book)


@pytest.mark.parametrize(
    "kind, peers, build",
    [
        ("npeer", 1, lambda n: graphs.exponential(n)),
        ("npeer", 2, lambda n: graphs.exponential(n, peers=2)),
        ("directed", 1, lambda n: graphs.exponential(n, bidirectional=True)),
        ("directed", 2, lambda n: graphs.exponential_two_sided(n)),
        ("bipartite", 1, lambda n: graphs.bipartite_exponential(n)),
        ("ring", 1, lambda n: graphs.ring(n, alternating=True)),
        ("ring", 2, lambda n: graphs.ring(n, bidirectional=True)),
    ],
)
def test_schedules_match_the_authors_step_by_step(kind, peers, build):
    checked = 0
    for n in range(3, 70):
        if kind == "bipartite" and n % 2:
            continue
        book = _book(kind, n, peers)
        if not _defect_free(book) or len(book) % peers:
            continue
        topo = build(n)
        for k in range(2 * len(book) + 3):
            assert topo.edges(k).tolist() == [list(e) for e in _authors_edges(book, peers, n, k)], (n, k)
        checked += 1
    assert checked >= 3  # the comparison is not vacuous


def test_bipartite_pinned_steps_authors_cycle_and_matching():
    cyc = graphs.bipartite_exponential(16)
    mat = graphs.bipartite_exponential(16, matching=True)
    assert cyc.partner_offsets == mat.partner_offsets == (1, 15, 3, 13, 5, 11, 9, 7)
    # authors: every node i -> i + o_k (a directed permutation, even and odd alike)
    assert cyc.edges(0)[:3].tolist() == [[0, 1], [1, 2], [2, 3]]
    assert cyc.edges(2)[:3].tolist() == [[0, 3], [1, 4], [2, 5]]
    assert cyc.edges(1)[:2].tolist() == [[0, 15], [1, 0]]
    # matching: odd i <-> i + o_k only
    assert mat.edges(0)[:3].tolist() == [[0, 15], [1, 2], [2, 1]]
    assert mat.edges(2)[:3].tolist() == [[0, 13], [1, 4], [2, 15]]
    for k in range(8):
        e = cyc.edges(k)
        assert np.all((e[:, 0] + e[:, 1]) % 2 == 1)  # odd <-> even only
        assert sorted(e[:, 0].tolist()) == list(range(16)) == sorted(e[:, 1].tolist())
        m = mat.edges(k)
        assert {tuple(x) for x in m.tolist()} == {(b, a) for a, b in m.tolist()}  # symmetric
    assert graphs.by_name("bipartite-exponential", 16).name == "bipartite-exponential(n=16)"
    assert graphs.by_name("bipartite-matching", 16).name == "bipartite-matching(n=16)"


def test_exponential_base_and_two_sided():
    t = graphs.exponential_base(28, 3)
    assert t.offsets == ((1,), (3,), (9,), (27,)) and t.period == 4
    assert t.edges(2)[:2].tolist() == [[0, 9], [1, 10]]
    # exact integer arithmetic at the boundary b**i = n - 1 (where a float log may round)
    assert graphs.exponential_base(244, 3).period == 6 and graphs.exponential_base(243, 3).period == 5
    assert graphs.exponential_base(126, 5).period == 4 and graphs.exponential_base(125, 5).period == 3
    assert graphs.exponential_base(8, 2).offsets == graphs.exponential(8).offsets
    assert graphs.by_name("exponential-base", 10, base=3).offsets == ((1,), (3,), (9,))
    two = graphs.exponential_two_sided(8)
    assert two.offsets == ((1, 7), (2, 6), (4,))
    assert two.edges(0)[:2].tolist() == [[0, 1], [0, 7]]
    with pytest.raises(ValueError, match="base must be an integer >= 2, got 1"):
        graphs.exponential_base(8, 1)
    for name in ("exponential-two-sided", "exponential-base", "bipartite-matching", "ring-alternating"):
        assert name in graphs.TOPOLOGY_NAMES


def test_message_loss_topology():
    base = graphs.complete(6)
    t = graphs.with_message_loss(base, 0.5, seed=0)
    assert np.array_equal(t.edges(3), base.edges(3))  # every message is sent
    assert t.lost(3).dtype == bool and 0 < t.lost(3).sum() < 30
    assert np.array_equal(t.lost(3), graphs.with_message_loss(base, 0.5, seed=0).lost(3))
    assert not graphs.with_message_loss(base, 0.0, seed=0).lost(3).any()
    assert t.loses_messages and not base.loses_messages and not base.lost(0).any()
    # wrappers keep the mask aligned with their edges
    for w in (
        graphs.with_link_failures(t, 0.3, seed=1),
        graphs.with_stragglers(t, [0, 2], every=2),
        graphs.schedule([t, base]),
    ):
        for k in range(4):
            assert w.lost(k).shape == (len(w.edges(k)),)
    with pytest.raises(ValueError, match="p must be a number in"):
        graphs.with_message_loss(base, 1.5)
    with pytest.raises(TypeError, match="topo must be a Topology"):
        graphs.with_message_loss("ring", 0.1)


@pytest.mark.parametrize("n", [2, 3, 17, 1000, 65537])
def test_random_peer_stream_is_the_int64_draw_of_64_steps_per_block(n):
    # the block of offsets is stored as int32 (half the memory at large n); the
    # stream must stay the one of integers(1, n, size=(64, n)) in int64
    from sgpverify.validation import STREAM, seed_sequence

    topo = graphs.random_peer(n, seed=5)
    for k in (0, 1, 63, 64, 130):
        b, r = divmod(k, 64)
        gen = np.random.Generator(np.random.PCG64(seed_sequence(5, STREAM["random-peer"], b)))
        offs = gen.integers(1, n, size=(64, n))[r]
        e = topo.edges(k)
        assert e.dtype == np.int64
        assert np.array_equal(e[:, 0], np.arange(n))
        assert np.array_equal(e[:, 1], (np.arange(n) + offs) % n)


# ---------------------------------------------------------------- the registry: one source of names
# graphs.FAMILIES declares each family once; by_name, TOPOLOGY_NAMES and the
# strategies read it. These tests hold the declarations against the builders.

# who takes what, written out here (the suite and the CLI rely on it)
TAKES = {
    "peers": {"exponential", "exponential-bidir"},
    "seed": {"erdos-renyi", "random-peer"},
    "p": {"erdos-renyi"},
    "rows": {"torus"},
    "base": {"exponential-base"},
}


def test_registry_is_the_one_source_of_names():
    names = graphs.TOPOLOGY_NAMES
    assert names == tuple(graphs.FAMILIES) == tuple(f.name for f in graphs.FAMILIES.values())
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) for name in names)
    assert names[-1] == "exponential-irregular"  # appended: the others keep their order
    assert sgst.TOPOLOGY_KINDS == names + ("networkx", "schedule")
    with pytest.raises(TypeError):
        graphs.FAMILIES["ring"] = graphs.FAMILIES["star"]  # read-only


@pytest.mark.parametrize("param", sorted(TAKES))
def test_takes_declares_who_takes_each_parameter(param):
    assert {name for name in graphs.TOPOLOGY_NAMES if graphs.takes(name, param)} == TAKES[param]
    for name in graphs.TOPOLOGY_NAMES:
        fam = graphs.family(name)
        assert fam.takes(param) == (param in [q.name for q in fam.params])
        if fam.takes(param):
            assert fam.param(param).name == param
        else:
            with pytest.raises(ValueError, match=f"param must be one of the parameters of {name}"):
                fam.param(param)


def test_registry_defaults_are_by_names_and_the_builders():
    """A declared default is by_name's default and the builder's own; the builder takes exactly the params."""
    import inspect

    by_name_defaults = {k: v.default for k, v in inspect.signature(graphs.by_name).parameters.items()}
    for fam in graphs.FAMILIES.values():
        sig = inspect.signature(fam.build)
        sig.bind(1, **{q.name: q.default for q in fam.params})  # n and the params, nothing else needed
        for q in fam.params:
            assert q.name in TAKES
            assert by_name_defaults[q.name] == q.default, (fam.name, q.name)
            assert sig.parameters[q.name].default == q.default, (fam.name, q.name)
            assert q.constraint and (q.space is None) == (q.name == "seed")
        assert fam.description and fam.nodes


@pytest.mark.parametrize("name", graphs.TOPOLOGY_NAMES)
def test_by_name_builds_every_registered_family(name):
    fam = graphs.family(name)
    for n in range(1, 18):
        if not fam.accepts(n):
            with pytest.raises(ValueError) as info:
                graphs.by_name(name, n, seed=0)
            assert msg_names(str(info.value), "nodes", str(n)), str(info.value)
            continue
        topo = graphs.by_name(name, n, seed=0)
        assert isinstance(topo, graphs.Topology) and topo.n == n
        assert topo.name.startswith(name + "("), topo.name
        for k in range(4):
            assert_edge_contract(topo.edges(k), n)
        # every value of every parameter's space builds
        for q in fam.params:
            if q.space is None:
                continue
            space = q.space(n)
            tried = space.values if isinstance(space, graphs.OneOf) else (space.low, space.high)
            for v in tried:
                assert graphs.by_name(name, n, seed=0, **{q.name: v}).n == n
    assert list(fam.node_sizes(1, 17)) == [n for n in range(1, 18) if fam.accepts(n)]


def test_by_name_passes_each_parameter_to_its_family():
    for r in (1, 2, 3, 4, 6, 12):
        assert as_pairs(graphs.by_name("torus", 12, rows=r).edges(0)) == as_pairs(graphs.torus(r, 12 // r).edges(0))
        assert graphs.by_name("torus", 12, rows=r).name == f"torus({r}x{12 // r})"
    assert graphs.by_name("torus", 12).name == "torus(3x4)"  # largest divisor <= sqrt(12)
    assert graphs.by_name("torus", 7).name == "torus(1x7)"
    with pytest.raises(ValueError, match=r"^rows must divide nodes = 12, got 5$"):
        graphs.by_name("torus", 12, rows=5)
    with pytest.raises(ValueError, match=r"^rows must be an integer >= 1, got 0$"):
        graphs.by_name("torus", 12, rows=0)
    assert graphs.by_name("exponential", 16, peers=3).offsets == graphs.exponential(16, peers=3).offsets
    assert graphs.by_name("exponential-bidir", 9, peers=2).offsets == graphs.exponential(9, 2, True).offsets
    assert graphs.by_name("exponential-base", 30, base=4).offsets == ((1,), (4,), (16,))
    assert graphs.by_name("exponential-base", 30).offsets == ((1,), (3,), (9,), (27,))  # base 3 by default
    for n, p in ((10, 0.3), (10, None), (2, None)):
        t = graphs.by_name("erdos-renyi", n, p=p, seed=4)
        want = p if p is not None else (1.0 if n < 3 else min(1.0, 2 * math.log(n) / n))
        assert t.p == want
        assert all(np.array_equal(t.edges(k), graphs.erdos_renyi(n, want, seed=4).edges(k)) for k in range(5))
    assert np.array_equal(graphs.by_name("random-peer", 9, seed=8).edges(3), graphs.random_peer(9, seed=8).edges(3))
    # p, rows, base and seed are ignored where they do not apply; peers is refused
    assert as_pairs(graphs.by_name("ring", 6, p=0.5, rows=2, base=5, seed=1).edges(0)) == as_pairs(
        graphs.ring(6).edges(0)
    )
    for name in ("ring", "torus", "exponential-irregular"):
        with pytest.raises(
            ValueError, match=rf"^peers applies only to exponential topologies, got peers = 2 for {name}$"
        ):
            graphs.by_name(name, 6, peers=2)


def test_unknown_name_lists_the_registered_names():
    listed = ", ".join(graphs.TOPOLOGY_NAMES)
    for call in (
        lambda: graphs.by_name("wheel", 4),
        lambda: graphs.family("wheel"),
        lambda: graphs.takes("wheel", "p"),
    ):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == f"topology must be one of {listed}, got 'wheel'"
    with pytest.raises(ValueError, match="topology must be one of"):
        graphs.by_name(["ring"], 4)  # unhashable: refused like any other unknown name


@pytest.mark.parametrize("name", graphs.TOPOLOGY_NAMES)
@settings(max_examples=15)
@given(data=st.data())
def test_every_registered_family_is_drawn(name, data):
    topo = data.draw(sgst.topologies(min_n=1, max_n=20, kinds=[name], faults=False))
    assert topo.name.startswith(name + "("), topo.name
    assert 1 <= topo.n <= 20 and graphs.family(name).accepts(topo.n)


@pytest.mark.parametrize("name, low, high", [("hypercube", 5, 7), ("bipartite-matching", 5, 5), ("hypercube", 9, 15)])
@settings(max_examples=10)
@given(data=st.data())
def test_strategy_falls_back_to_a_ring_when_no_size_fits(name, low, high, data):
    topo = data.draw(sgst.topologies(min_n=low, max_n=high, kinds=[name], faults=False))
    assert topo.name == f"ring(n={topo.n})" and low <= topo.n <= high


def test_every_built_in_class_is_canonical():
    """Topology.edges skips validation for the package's own classes only (and for all of them)."""
    from sgpverify.graphs import base

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    ours = {c for c in subclasses(graphs.Topology) if c.__module__.startswith("sgpverify.graphs.")}
    assert len(ours) >= 9  # PeriodicTopology, the random, schedule, fault and relabel classes
    assert all(base.is_canonical(c) for c in ours), [c.__name__ for c in ours if not base.is_canonical(c)]
    assert base.is_canonical(type(graphs.irregular_exponential(6)))

    class Unsorted(graphs.PeriodicTopology):
        def _edges(self, k):
            return np.array([[2, 0], [0, 1]])

    t = Unsorted(3, [[[0, 1]]])
    assert not base.is_canonical(Unsorted)
    assert as_pairs(t.edges(0)) == [(0, 1), (2, 0)]  # validated and sorted, never misread


def test_package_reexports_the_submodules_names():
    import importlib

    mods = ["base", "classic", "exponential_graphs", "random_graphs", "schedules", "faults", "registry"]
    defined = {}
    for m in mods:
        mod = importlib.import_module(f"sgpverify.graphs.{m}")
        for name in mod.__all__:
            assert name not in defined, f"{name} in both {defined.get(name)} and {m}"
            defined[name] = mod
    for name in graphs.__all__:
        assert getattr(graphs, name) is getattr(defined[name], name), name


# ---------------------------------------------------------------- exponential-irregular (moved from the suite)


def _suite_irregular_exponential(n):
    """Frozen copy of the suite's former ``irregular_exponential`` (the reference for the move)."""
    base = graphs.exponential(n)
    i = np.arange(n)
    extra = i[i % 3 == 0]
    steps = []
    for k in range(base.period):
        e = base.edges(k)
        if n > 1:
            e = np.concatenate([e, np.stack([extra, (extra - 1) % n], axis=1)])
        steps.append(e)
    return graphs.PeriodicTopology(n, steps, name=f"exponential-irregular(n={n})")


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6, 8, 16, 17, 33, 64])
def test_exponential_irregular_is_the_suites_schedule(n):
    ref = _suite_irregular_exponential(n)
    for topo in (graphs.by_name("exponential-irregular", n, seed=3), graphs.irregular_exponential(n, seed=7)):
        assert isinstance(topo, graphs.PeriodicTopology)
        assert (topo.n, topo.period, topo.name) == (ref.n, ref.period, f"exponential-irregular(n={n})")
        m = topo.period
        for k in list(range(2 * m + 1)) + [10**6]:
            e = topo.edges(k)
            assert_edge_contract(e, n)
            np.testing.assert_array_equal(e, ref.edges(k))
            # the rule, independently: i -> i + 2^(k mod m), and i -> i - 1 for i % 3 == 0
            rule = {(i, (i + 2 ** (k % m)) % n) for i in range(n)} | {(i, (i - 1) % n) for i in range(0, n, 3)}
            assert as_pairs(e) == sorted((a, b) for a, b in rule if a != b)


@pytest.mark.parametrize("n", [3, 4, 7, 16, 33])
def test_exponential_irregular_moves_push_sum_weights(n):
    topo = graphs.by_name("exponential-irregular", n)
    # in-degrees differ (on a step whose offset is not -1 mod n: there the extra edges repeat)
    unequal = [k for k in range(topo.period) if np.ptp(topo.in_degree(k)) > 0]
    assert unequal and 0 in unequal
    w = np.ones(n)
    spread = 0.0
    for k in range(4 * topo.period):
        w = mixing.push_matrix(topo, k) @ w
        assert abs(w.sum() - n) <= 8 * EPS * n * (k + 1)  # column-stochastic: mass kept
        spread = max(spread, w.max() - w.min())
    assert spread > 0.1 and w.min() > 0.2
