"""What every rank runs: :class:`RunConfig`, the algorithms, and whether torch can run them."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from .. import graphs, problems
from ..errors import SGPVerifyError
from ..validation import check_choice, check_float, check_int

if TYPE_CHECKING:
    from ..graphs import Topology
    from ..problems import DoubleWell, NonconvexLogistic, QuadraticCosine

__all__ = ["ALGORITHMS", "DistributedError", "available", "RunConfig"]


ALGORITHMS = ("sgp", "osgp", "dpsgd", "allreduce")


class DistributedError(SGPVerifyError, RuntimeError):
    """A rank failed, died or timed out; the message names it."""


def available() -> tuple[bool, str | None]:
    """``(True, None)`` if torch.distributed with gloo can be used, else ``(False, reason)``."""
    try:
        import torch.distributed as dist
    except ImportError:
        return False, "torch is not installed (pip install 'sgpverify[distributed]' torch==2.13.0)"
    if not dist.is_available() or not dist.is_gloo_available():
        return False, "torch.distributed with the gloo backend is not available in this torch build"
    return True, None


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """What every rank runs (picklable; the same object goes to every process)."""

    nproc: int = 4
    iters: int = 100
    algorithm: str = "sgp"
    tau: int = 0
    delay: str = "asap"
    topology: str = "exponential"
    problem: str = "quadratic-cosine"
    dim: int = 10
    step_size: float = 0.05
    seed: int = 0
    x0: float = 1.0
    x0_spread: float = 0.0
    timeout: float = 60.0
    record_every: int = 1
    slow_rank: int | None = None
    slow_sleep: float = 0.0
    slow_links: tuple[tuple[int, int], ...] = ()
    link_delay: float = 0.0
    fail_rank: int | None = None
    fail_at: int = 0
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        check_int("nproc", self.nproc, min_value=1)
        check_int("iters", self.iters, min_value=0)
        check_choice("algorithm", self.algorithm, ALGORITHMS)
        check_int("tau", self.tau, min_value=0)
        if self.algorithm == "osgp" and self.tau < 1:
            raise ValueError(f"tau must be an integer >= 1 for algorithm 'osgp', got {self.tau}")
        if self.algorithm in ("dpsgd", "allreduce") and self.tau:
            raise ValueError(f"tau applies to 'sgp' and 'osgp' only, got tau = {self.tau} with {self.algorithm!r}")
        check_choice("delay", self.delay, ("asap", "fixed"))
        check_choice("topology", self.topology, graphs.TOPOLOGY_NAMES)
        # a schedule that cannot exist on nproc nodes (a hypercube on 3) is refused here, before any
        # rank starts, not by every rank after the spawn
        graphs.by_name(self.topology, self.nproc, seed=self.seed)
        check_choice("problem", self.problem, problems.PROBLEM_NAMES)
        check_int("dim", self.dim, min_value=1)
        check_float("step_size", self.step_size, low=0.0, low_open=True)
        check_int("seed", self.seed, min_value=0)
        check_float("timeout", self.timeout, low=0.0, low_open=True)
        check_int("record_every", self.record_every, min_value=1)
        if self.slow_rank is not None:
            check_int("slow_rank", self.slow_rank, min_value=0, max_value=self.nproc - 1)
        check_float("slow_sleep", self.slow_sleep, low=0.0)
        check_float("link_delay", self.link_delay, low=0.0)

    def start(self) -> np.ndarray:
        """Initial numerators (n, d): x0, plus ``x0_spread * (i - (n-1)/2)`` on node i."""
        offs = self.x0_spread * (np.arange(self.nproc) - (self.nproc - 1) / 2.0)
        return np.full((self.nproc, self.dim), float(self.x0)) + offs[:, None]

    def build(self) -> tuple[QuadraticCosine | NonconvexLogistic | DoubleWell, Topology]:
        prob = problems.by_name(self.problem, self.nproc, self.dim, seed=self.seed)
        topo = graphs.by_name(self.topology, self.nproc, seed=self.seed)
        return prob, topo
