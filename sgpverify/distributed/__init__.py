"""Real multi-process SGP on torch.distributed (gloo, CPU), checked against the simulator.

One process per node. Messages are point-to-point non-blocking sends
(``isend``/``irecv``, tagged by iteration) carrying the numerator share and the
push-sum weight together; every rank follows the same :class:`~sgpverify.graphs.Topology`
as the simulator. A node keeps computing and folds messages in as they arrive,
blocking only for a message sent more than ``tau`` iterations ago
(docs/theory.md section 1b, "Delays and the augmented matrix"): ``tau = 0`` is synchronous SGP, ``tau >= 1`` is
tau-OSGP with real asynchrony. AllReduce SGD (``dist.all_reduce``) and D-PSGD
(Metropolis weights, symmetric exchange) are the baselines.

Requires the ``distributed`` extra (torch). Launch with :func:`launch` (or
``sgpverify distributed --nproc N``), which spawns the processes on localhost;
:func:`run_rank` is the per-process entry point (``run_rank(None, cfg, dir)``
reads ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` as set by
``torchrun``), and :class:`SGPOptimizer` wraps any ``torch.optim`` optimizer in
any torch.distributed program.

The package's parts: :mod:`~sgpverify.distributed.config` (:class:`RunConfig`,
:data:`ALGORITHMS`, :class:`DistributedError`, :func:`available`),
:mod:`~sgpverify.distributed.transport` (the push-sum channel, the gloo process
group), :mod:`~sgpverify.distributed.runner` (:func:`run_rank`, :func:`launch`,
:class:`DistributedResult`), :mod:`~sgpverify.distributed.checks`
(:func:`check_against_simulator`), :mod:`~sgpverify.distributed.optimizer`
(:class:`SGPOptimizer`, :class:`SimulatorSGD`) and :mod:`~sgpverify.distributed.studies`
(:func:`train_mlp`, :func:`straggler_study`) and :mod:`~sgpverify.distributed.paper`
(:func:`paper_study`: the paper's experiment in miniature on scikit-learn's digits).
torch is imported only when a run starts or :class:`SGPOptimizer` is first used:
importing this package does not need it.
"""

from __future__ import annotations

# public names outside __all__ (the cli and the tests use them) are re-exported by a redundant alias
from .checks import check_against_simulator as check_against_simulator
from .config import ALGORITHMS, DistributedError, RunConfig, available
from .paper import paper_figure as paper_figure
from .paper import paper_study
from .paper import paper_table as paper_table
from .runner import DistributedResult as DistributedResult
from .runner import launch, run_rank, spawn
from .studies import straggler_study as straggler_study
from .studies import train_mlp as train_mlp

__all__ = [
    "RunConfig",
    "DistributedError",
    "launch",
    "run_rank",
    "spawn",
    "SGPOptimizer",
    "SimulatorSGD",
    "available",
    "ALGORITHMS",
    "paper_study",
]


def __getattr__(name: str):
    # the torch classes are made on first use: importing the package does not import torch
    if name in ("SGPOptimizer", "SimulatorSGD"):
        from . import optimizer

        return getattr(optimizer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
