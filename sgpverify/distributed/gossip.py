"""SGP as a torch optimizer: :class:`GossipSGD` trains a ``torch.nn.Module`` in any torch.distributed program."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..validation import check_float, check_int
from .config import DistributedError
from .transport import PushSumChannel

if TYPE_CHECKING:
    import torch

    from ..graphs import Topology

__all__ = ["GossipSGD"]


class GossipSGD:
    """Train a ``torch.nn.Module`` with SGP: one instance per process.

    The module's parameters always hold the de-biased point ``z = x / w``
    (forward and backward run there); :meth:`step` takes the local gradient
    step on the numerator ``x`` (float64) with local momentum (never
    communicated), then pushes shares of ``(x, w)`` to this step's
    out-neighbours and folds in what has arrived, blocking only for messages
    more than ``tau`` steps old (docs/theory.md section 1b, "Algorithm 1 (SGP)"
    and "Delays and the augmented matrix").

    Parameters
    ----------
    module : torch.nn.Module
    topology : Topology
        The same schedule on every rank (e.g. ``graphs.exponential(world_size)``).
    lr : float
    momentum : float
        Local heavy-ball momentum in [0, 1).
    nesterov : bool
    weight_decay : float
    tau : int
        0 for synchronous SGP, >= 1 for tau-OSGP.
    timeout : float
        Seconds to wait for an overdue message before raising DistributedError.

    Notes
    -----
    Call :meth:`finish` at the end: it folds in the messages still in flight,
    so that the total mass is accounted for.
    """

    def __init__(
        self,
        module: torch.nn.Module,
        topology: Topology,
        lr: float,
        momentum: float = 0.0,
        nesterov: bool = False,
        weight_decay: float = 0.0,
        tau: int = 0,
        timeout: float = 60.0,
    ) -> None:
        import torch
        import torch.distributed as dist
        from torch.nn.utils import parameters_to_vector

        if not dist.is_initialized():
            raise DistributedError("GossipSGD needs torch.distributed to be initialised (init_process_group)")
        self.torch = torch
        self.module = module
        self.params = [p for p in module.parameters() if p.requires_grad]
        self.rank, self.n = dist.get_rank(), dist.get_world_size()
        if topology.n != self.n:
            raise ValueError(f"topology has {topology.n} nodes but the world size is {self.n}")
        self.lr = check_float("lr", lr, low=0.0, low_open=True)
        self.momentum = check_float("momentum", momentum, low=0.0, high=1.0, high_open=True)
        self.nesterov = bool(nesterov)
        self.weight_decay = check_float("weight_decay", weight_decay, low=0.0)
        self.timeout = timeout
        self.x = parameters_to_vector(self.params).detach().to(torch.float64).numpy().copy()
        self.w = 1.0
        self.u = np.zeros_like(self.x)
        self.k = 0
        self.chan = PushSumChannel(self.rank, self.n, topology, check_int("tau", tau, min_value=0), self.x.size)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def _write_params(self):
        from torch.nn.utils import vector_to_parameters

        z = self.torch.from_numpy(self.x / self.w)
        with self.torch.no_grad():
            vector_to_parameters(z.to(self.params[0].dtype), self.params)

    def step(self) -> None:
        from torch.nn.utils import parameters_to_vector

        g = (
            parameters_to_vector([p.grad if p.grad is not None else self.torch.zeros_like(p) for p in self.params])
            .detach()
            .to(self.torch.float64)
            .numpy()
        )
        if self.weight_decay:
            g = g + self.weight_decay * (self.x / self.w)
        if self.momentum:
            self.u = self.momentum * self.u + g
            g = g + self.momentum * self.u if self.nesterov else self.u
        y = self.x - self.lr * g
        self.x, self.w = self.chan.send_and_keep(self.k, y, self.w)
        self.x, self.w = self.chan.receive(self.k, self.x, self.w, self.timeout)
        self.k += 1
        self._write_params()

    def finish(self) -> None:
        """Fold in every message still in flight; parameters hold the final z."""
        self.x, self.w = self.chan.drain(self.x, self.w, self.timeout)
        self._write_params()
