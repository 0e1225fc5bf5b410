"""Exact worst cases of SGP on a given schedule, by performance estimation (PEP).

With the mixing matrices of a schedule fixed, every iterate of SGP (and of
tau-OSGP through the delay-augmented matrices) is a known linear combination
of the start ``x0`` and of the gradients the nodes evaluate: the push-sum
weights are numbers, so ``z_i = x_i / w_i`` is linear too. The worst case of
``(1/K) sum_{k<K} ||grad f(xbar^k)||^2`` over a class of functions is then a
small semidefinite program over the Gram matrix of those vectors
(Drori-Teboulle; Taylor-Hendrickx-Glineur), which :func:`worst_case` builds
and solves.

The class (docs/tightness.md states it in full):

* each ``f_i`` is L-smooth, not necessarily convex (the interpolation
  conditions of PEPit's ``SmoothFunction``, Taylor-Hendrickx-Glineur 2017,
  Theorem 3.10), between every pair of points where ``f_i`` is evaluated;
* ``f(xbar^0) - f_* <= delta``, with ``f_*`` modelled by ``fstar``:
  ``"stationary"`` (default): a point ``x_*`` where ``grad f`` vanishes and
  whose value lies below ``f`` at every evaluated point ``xbar^k`` (``k <=
  K``); ``"last"``: as PEPit's nonconvex examples do, the last iterate
  stands for it, ``f(xbar^0) - f(xbar^K) <= delta``. The first class is
  contained in the second, so its worst case is the smaller;
* heterogeneity ``(1/n) sum_i ||grad f_i(y) - grad f(y)||^2 <= zeta2`` at
  every point ``y`` where all ``f_i`` are evaluated (``xbar^k`` and ``x_*``):
  a relaxation of the global assumption, which holds everywhere;
* optionally a gradient size ``(1/n) sum_i ||g_i^k||^2 <= G2sq`` at every
  step (the quantity the consensus bound (b2) of docs/theory.md uses).

Only the deterministic case ``sigma2 = 0`` is expressed: an additive noise
with second-moment constraints in expectation has no faithful Gram model of
a single run, and is left out (the function refuses ``sigma2 > 0``).

The SDP is built from the coefficient vectors directly (one vectorised
constraint block, ``engine="direct"``) or through PEPit's API
(``engine="pepit"``), from the same recursion; both need the optional
``pep`` extra: ``pip install 'sgpverify[pep]'``.

Symmetric schedules (every matrix of a period invariant under a group of node
permutations the package knows: cyclic, Z_2^k, products of cyclic groups)
are solved in the symmetry-reduced form by default (``symmetry="auto"``): an
invariant Gram matrix, block-diagonal over the group's real characters, and
the interpolation conditions of node 0 only (:mod:`.symmetry`,
:mod:`.reduced`). The group average of a worst case is a worst case, so the
reduced SDP has the full one's value.

Layout: :mod:`.formulation` (the symbolic run), :mod:`.solve` (the full SDP),
:mod:`.symmetry` (groups, detection, characters), :mod:`.reduced` (the
reduced SDP), :mod:`.lowrank` (the reduced SDP by factors and constraint generation, with a
lower and a certified upper bound: ``solver="lowrank"``), :mod:`.readback` (the worst-case functions), :mod:`.worstcase`
(the entry point and its record).
"""

from __future__ import annotations

import importlib  # noqa: F401 - the extra's check goes through importlib.import_module

from .extra import has_pep, require_pep
from .readback import WorstCaseProblem
from .symmetry import NodeGroup, detect_symmetry
from .worstcase import ENGINES, FSTAR_MODELS, MEASURES, SYMMETRIES, WorstCase, worst_case

__all__ = [
    "WorstCase",
    "WorstCaseProblem",
    "worst_case",
    "MEASURES",
    "FSTAR_MODELS",
    "ENGINES",
    "SYMMETRIES",
    "NodeGroup",
    "detect_symmetry",
    "require_pep",
    "has_pep",
]
