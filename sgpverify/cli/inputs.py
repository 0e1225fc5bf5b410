"""What the subcommands build from their options: schedules (a topology or matrix files) and problems.

Every option's own constraint is checked by the parser as it is read
(:mod:`sgpverify.cli.parser`); what depends on several options (``--edge-prob``
with a topology that takes no edge probability, ``--stragglers`` beyond
``--nodes``, a matrix that is not column stochastic) is checked here, before
any work. Each mistake raises :class:`UsageError`: one line naming the option,
the constraint and the value, exit status 2.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import graphs

if TYPE_CHECKING:
    import argparse
    import os

    import scipy.sparse as sp

__all__ = [
    "UsageError",
    "TOPOLOGY_OPTIONS",
    "FAULT_OPTIONS",
    "load_matrix",
    "matrices_from_args",
    "topology_from_args",
    "schedule_from_args",
    "defaults_used",
    "problem_from_args",
]


class UsageError(Exception):
    """Raised for user mistakes; printed in one line, exit status 2."""


#: The options of a topology's parameters: (argparse dest, option, :func:`sgpverify.graphs.by_name` keyword).
TOPOLOGY_OPTIONS = (("peers", "--peers", "peers"), ("edge_prob", "--edge-prob", "p"), ("rows", "--rows", "rows"))
#: The fault options (argparse dest, option): they apply to a topology, not to matrix files.
FAULT_OPTIONS = (("drop_prob", "--drop-prob"), ("stragglers", "--stragglers"), ("straggle_every", "--straggle-every"))


def _error(cmd, message):
    return UsageError(f"sgpverify {cmd}: error: {message}")


def load_matrix(path: str | os.PathLike[str], cmd: str = "mixing") -> np.ndarray | sp.sparray | sp.spmatrix:
    """Load a matrix from .npy, .npz (scipy sparse), .mtx or text (CSV or whitespace).

    Raises
    ------
    UsageError
        Naming ``--matrix`` and the file, if it is missing, empty or unreadable.
    """
    p = Path(path)
    if not p.is_file():
        raise _error(cmd, f"--matrix must name an existing file, got {str(path)!r}")
    try:
        if p.suffix == ".npy":
            return np.load(p, allow_pickle=False)
        if p.suffix == ".npz":
            import scipy.sparse as sp

            return sp.load_npz(p)
        if p.suffix == ".mtx":
            import scipy.io

            return scipy.io.mmread(p)
        text = p.read_text()
        if not text.strip():
            raise _error(cmd, f"--matrix file {str(path)!r} must hold a matrix, got an empty file")
        delim = "," if "," in text else None
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy's "input contained no data" is an error here
            return np.atleast_2d(np.loadtxt(p, delimiter=delim, ndmin=2))
    except UsageError:
        raise
    except Exception as exc:  # unreadable file: a user mistake
        raise _error(cmd, f"--matrix file {str(path)!r} could not be read: {exc}") from None


def _given(a, dest):
    v = getattr(a, dest, None)
    return v is not None and v is not False and v != []


def _refuse_topology_options(a, cmd):
    for dest, opt in [(d, o) for d, o, _ in TOPOLOGY_OPTIONS] + list(FAULT_OPTIONS) + [("weights", "--weights")]:
        if _given(a, dest):
            raise _error(cmd, f"{opt} applies to --topology, not --matrix, got {opt} {_show(getattr(a, dest))}")


def _show(v):
    return ",".join(map(str, v)) if isinstance(v, list) else str(v)


def matrices_from_args(a: argparse.Namespace, cmd: str, *, positive_diagonal: bool) -> list[sp.csr_array]:
    """The ``--matrix`` files as checked CSR matrices, one per file (in order).

    One rule for every file: it must hold a finite, non-negative, square,
    column-stochastic matrix, each column summing to 1 within
    :func:`sgpverify.mixing.column_sum_tolerance` (a multiple of eps and the
    column's size), and with ``positive_diagonal`` a positive diagonal too.
    Anything else is bad input (the message names ``--matrix``, the file and
    the worst column sum or entry), never a report whose constants would be
    measured outside their hypotheses.
    """
    from ..mixing import check_column_stochastic

    _refuse_topology_options(a, cmd)
    mats = []
    for i, f in enumerate(a.matrix):
        name = "P" if len(a.matrix) == 1 else f"P^({i})"
        try:
            mats.append(
                check_column_stochastic(load_matrix(f, cmd), name=name, require_positive_diagonal=positive_diagonal)
            )
        except (ValueError, TypeError) as exc:
            kind = "column-stochastic, non-negative square matrix" + (
                " with a positive diagonal" if positive_diagonal else ""
            )
            raise _error(cmd, f"--matrix must be a {kind}: {exc} (in {f})") from None
    sizes = sorted({M.shape[0] for M in mats})
    if len(sizes) > 1:
        raise _error(cmd, f"--matrix files must all hold matrices of one size, got sizes {sizes}")
    if getattr(a, "nodes", None) is not None and a.nodes != sizes[0]:
        raise _error(cmd, f"--nodes must be the size of the --matrix matrices ({sizes[0]}), got {a.nodes}")
    return mats


def topology_from_args(a: argparse.Namespace, cmd: str, seed: int | None = None) -> graphs.Topology:
    """The ``--topology`` of the options, with its parameters and faults.

    ``--peers``, ``--edge-prob`` and ``--rows`` are refused for a family that
    does not take them (the registry says which do), as are
    ``--straggle-every`` without ``--stragglers`` and a straggler that is not
    a node.
    """
    seed = getattr(a, "seed", None) if seed is None else seed
    if a.nodes is None:
        raise _error(cmd, "--nodes is required with --topology")
    fam = graphs.family(a.topology)
    for dest, opt, param in TOPOLOGY_OPTIONS:
        if _given(a, dest) and not fam.takes(param):
            takers = [f.name for f in graphs.FAMILIES.values() if f.takes(param)]
            raise _error(
                cmd,
                f"{opt} applies to --topology {' or '.join(takers)} only, got {opt} {getattr(a, dest)} "
                f"with --topology {fam.name}",
            )
    try:
        topo = graphs.by_name(a.topology, a.nodes, peers=a.peers or 1, seed=seed, p=a.edge_prob, rows=a.rows)
    except (ValueError, TypeError) as exc:
        raise _error(cmd, str(exc)) from None
    if getattr(a, "drop_prob", None) is not None:
        topo = graphs.with_link_failures(topo, a.drop_prob, seed=seed)
    stragglers = getattr(a, "stragglers", None)
    if getattr(a, "straggle_every", None) is not None and not stragglers:
        raise _error(cmd, f"--straggle-every applies with --stragglers, got --straggle-every {a.straggle_every} alone")
    if stragglers:
        bad = [i for i in stragglers if i >= a.nodes]
        if bad:
            raise _error(cmd, f"--stragglers must list nodes in [0, {a.nodes - 1}] (--nodes {a.nodes}), got {bad[0]}")
        topo = graphs.with_stragglers(topo, stragglers, 2 if a.straggle_every is None else a.straggle_every)
    return topo


def schedule_from_args(
    a: argparse.Namespace, cmd: str, *, positive_diagonal: bool, seed: int | None = None
) -> tuple[Any, int]:
    """``(source, n)``: the topology of ``--topology``, or the checked matrices of ``--matrix``
    (one, or the list cycled through), and the number of nodes."""
    if a.topology is not None:
        topo = topology_from_args(a, cmd, seed)
        return topo, topo.n
    mats = matrices_from_args(a, cmd, positive_diagonal=positive_diagonal)
    return (mats if len(mats) > 1 else mats[0]), mats[0].shape[0]


def defaults_used(a: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The topology parameters the options left to their defaults, with the values used.

    ``{"--edge-prob": {"value": 0.51986, "rule": "min(1, 2 ln(nodes) / nodes), 1 below 3 nodes"}}``
    for ``--topology erdos-renyi --nodes 8`` without ``--edge-prob``: what
    the output prints, so that no default is applied silently.
    """
    out = {}
    if getattr(a, "topology", None) is None or a.nodes is None:
        return out
    fam = graphs.family(a.topology)
    for dest, opt, param in TOPOLOGY_OPTIONS:
        if fam.takes(param) and getattr(a, dest, None) is None:
            q = fam.param(param)
            m = re.search(r"\(default: (.*)\)$", q.constraint)
            value = q.default_for(a.nodes)
            out[opt] = {"value": value, "rule": m.group(1) if m else f"{value}"}
    return out


def problem_from_args(a: argparse.Namespace, n: int, seed: int) -> Any:
    """The problem of ``--problem`` (a built-in name, or ``MODULE:ATTR`` as for ``verify``) on n nodes."""
    from .. import problems

    if ":" not in a.problem:
        return problems.by_name(a.problem, n, a.dim, seed=seed)
    from types import SimpleNamespace

    from ..suite import resolve_problem

    return resolve_problem(a.problem, SimpleNamespace(d=a.dim))(n, seed)
