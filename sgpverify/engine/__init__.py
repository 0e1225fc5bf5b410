"""Vectorised multi-node simulation of SGP, tau-OSGP and baselines.

All nodes (and all replicas) advance together: the state is one array, the
gossip step one sparse product, with no Python loop over nodes or edges.

State layout: numerators ``X`` of shape ``(n, R, d)`` (C-contiguous, so that
``X.reshape(n, R*d)`` is a view and one CSR product mixes every replica at
once); push-sum weights ``w`` of shape ``(n, R)``. Messages in flight live in
an inbox ring of ``tau + 1`` slots, slot ``(k + 1 + r) mod (tau + 1)`` holding
the mass that arrives at step ``k + 1 + r``: the state memory is
``(tau + 2) n R d`` numbers, and the recursion is exactly the augmented one of
docs/theory.md section 1b, "Delays and the augmented matrix" (row ``r*n + i`` of the augmented state = slot of arrival
step ``k + 1 + r``).

Small states avoid numpy call overhead without changing a bit:
the weight gossip is skipped while every weight is exactly 1 and the step's
matrix is known to map 1 to exactly 1 (measured once per cached step); the
problem gets each replica as a contiguous array and the gradients are stacked
into the state layout in one call; the arithmetic of the recorded metrics
(consensus, squared gradient norm, mass error, step_sq) is deferred and done
for a chunk of records at once, with the same operations in the same order
per record (``benchmarks/engine_bits.py`` compares every Trace field with the
previous engine).

With numba installed (the ``fast`` extra), the SGP step runs as compiled
kernels (:mod:`sgpverify.engine.kernels`): without delays the weights' gossip, then
in one pass the update, the gossip of the values, the node sum of the mass
tracking and the next de-biasing ``z = x * (1 / w)``; with delays on a topology the
update and the gossip of values and weights into the inbox slots. Each does the
numpy path's operations in the numpy path's order, so that the bits do not depend on it (``tests/test_kernels.py``).
``SGPVERIFY_KERNELS=numpy`` runs the numpy path; :func:`check_kernels_setting`
validates the variable.

The submodules, each importing only those above it:

- :mod:`~sgpverify.engine.kernels`: the compiled step (numba, optional);
- :mod:`~sgpverify.engine.mixers`: each step's gossip matrices (:class:`~sgpverify.engine.mixers.Mixer`),
  the state with its inbox ring and the gossip into it;
- :mod:`~sgpverify.engine.step`: one iteration's direction and update (:class:`~sgpverify.engine.step.Stepper`);
- :mod:`~sgpverify.engine.trace`: the result, :class:`Trace`, and its recording;
- :mod:`~sgpverify.engine.simulation`: :func:`simulate`, the setup and the loop.

Beside them, :mod:`~sgpverify.engine.methods`: the Method protocol and the built-in methods,
one file each (SGP, D-PSGD, AllReduce, local SGD, Push-DIGing). ``simulate`` runs a method
through the fused step above where the method names one (SGP, D-PSGD, AllReduce, local SGD),
else through the protocol's generic loop.
"""

from __future__ import annotations

from .kernels import check_kernels_setting
from .simulation import ALGORITHMS, effective_step_message, memory_estimate, simulate
from .trace import Trace, stack_replicas

__all__ = [
    "simulate",
    "Trace",
    "stack_replicas",
    "ALGORITHMS",
    "check_kernels_setting",
    "memory_estimate",
    "effective_step_message",
]
