"""SGP as a ``torch.optim.Optimizer``: :class:`SGPOptimizer` wraps any torch optimizer.

The module's parameters hold the de-biased point ``z = x / w``; the wrapper
keeps the push-sum numerator ``x`` and weight ``w`` on the parameters' device.
:meth:`SGPOptimizer.step` runs the inner optimizer's step, applies its update to
the numerator, gossips ``(x, w)`` with this step's out-neighbours through
``torch.distributed`` point to point, and writes ``z = x / w`` back
(docs/theory.md section 1b, "Algorithm 1 (SGP)" and "Delays and the augmented
matrix"). This module imports torch: the package :mod:`sgpverify.distributed`
imports it on first use of :class:`SGPOptimizer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from ..graphs import Topology
from ..validation import check_choice, check_float, check_int
from .config import DistributedError
from .transport import DELAYS, PushSumChannel

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

__all__ = ["SGPOptimizer", "SimulatorSGD", "UPDATES"]

#: How the inner optimizer's step reaches the numerator: "delta" runs it on the
#: parameters (at z) and adds its change to x (``x += z_new - z_old``: any
#: optimizer, every term at the de-biased point); "numerator" runs it on x
#: itself, with the gradient taken at z (as the authors' GossipDataParallel does:
#: bit for bit SGP's ``x - gamma grad F(z)`` for plain SGD; weight decay then acts on x).
UPDATES = ("delta", "numerator")


class SGPOptimizer(torch.optim.Optimizer):
    """Stochastic Gradient Push around any ``torch.optim`` optimizer (one per process).

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        The inner (local) optimizer over the module's parameters: SGD with
        Nesterov momentum as in the paper, Adam, any other.
    topology : Topology
        The communication schedule, the same on every rank, with ``n`` equal
        to the size of ``group`` (e.g. ``graphs.exponential(world_size)``).
    tau : int
        0: synchronous SGP (every message folded in at the step it is sent);
        >= 1: tau-OSGP, a message may be folded in up to tau steps late and
        the rank blocks only for one older than that.
    group : ProcessGroup, optional
        The process group; node i of ``topology`` is rank i of the group.
    timeout : float
        Seconds to wait for an overdue message before raising
        :class:`~sgpverify.distributed.DistributedError`, which names the rank.
    delay : {"asap", "fixed"}
        tau-OSGP only: fold a message as soon as it has arrived ("asap"), or
        exactly tau steps after it was sent ("fixed", the simulator's
        ``delay="fixed"``, reproducible).
    update : {"delta", "numerator"}
        See :data:`UPDATES`.
    dtype : torch.dtype, optional
        The dtype of x and w: the parameters' (default), or ``torch.float64``.
    buffers : iterable of tensors, optional
        Floating buffers to gossip with the parameters (``model.buffers()``:
        BatchNorm running statistics); non-floating ones (batch counters)
        stay local. A buffer is gossiped as a parameter is: the change the
        forward passes made to it since the last step is added to its
        numerator, and it is overwritten with its de-biased value.
    link_delay : mapping (src, dst) -> seconds, optional
        Fault injection for studies: this rank's messages to ``dst`` are held
        back that many seconds.

    Notes
    -----
    ``param_groups``, ``state``, ``defaults`` and ``zero_grad`` are the inner
    optimizer's, so lr schedulers act on it. With ``torch.amp.GradScaler``
    the wrapper unscales the gradients itself and, on a step the scaler
    skips (inf or NaN gradients), skips the inner step but still gossips:
    the ranks stay in step. :meth:`state_dict` first folds in every message
    in flight (:meth:`flush`: a collective, every rank must call it at the
    same step), then returns the inner optimizer's state with a
    ``"push_sum"`` entry (x, w, k).

    Examples
    --------
    In a torch.distributed program (one process per rank)::

        opt = SGPOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), graphs.exponential(world))
    """

    _step_supports_amp_scaling = True

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        topology: Topology,
        *,
        tau: int = 0,
        group: Any = None,
        timeout: float = 60.0,
        delay: str = "asap",
        update: str = "delta",
        dtype: Any = None,
        buffers: Iterable[Any] = (),
        link_delay: Mapping[tuple[int, int], float] | None = None,
    ) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer) or isinstance(optimizer, SGPOptimizer):
            raise TypeError(
                f"optimizer must be a torch.optim.Optimizer (not an SGPOptimizer), got {type(optimizer).__name__}"
            )
        if not isinstance(topology, Topology):
            raise TypeError(f"topology must be a sgpverify Topology, got {type(topology).__name__}")
        tau = check_int("tau", tau, min_value=0)
        timeout = check_float("timeout", timeout, low=0.0, low_open=True)
        delay = check_choice("delay", delay, DELAYS)
        update = check_choice("update", update, UPDATES)
        if not dist.is_available() or not dist.is_initialized():
            raise DistributedError("SGPOptimizer needs torch.distributed initialised (init_process_group)")
        world = dist.get_world_size(group)
        if topology.n != world:
            raise ValueError(f"topology.n must equal the world size ({world}), got a topology of {topology.n} nodes")
        params = [p for g in optimizer.param_groups for p in g["params"]]
        if not params:
            raise ValueError("optimizer has no parameters")
        devices = {p.device for p in params}
        dtypes = {p.dtype for p in params}
        if len(devices) != 1 or len(dtypes) != 1 or not next(iter(dtypes)).is_floating_point:
            raise ValueError(
                f"the parameters must share one floating dtype and one device, got dtypes "
                f"{sorted(map(str, dtypes))} on {sorted(map(str, devices))}"
            )
        device, pdtype = params[0].device, params[0].dtype
        if dtype is None:
            dtype = pdtype
        elif dtype not in (pdtype, torch.float64):
            raise ValueError(f"dtype must be None, the parameters' dtype or torch.float64, got {dtype}")
        if update == "numerator" and dtype != pdtype:
            raise ValueError(
                f"update 'numerator' runs the inner step on x in the parameters' dtype: dtype must be "
                f"{pdtype}, got {dtype}"
            )
        bufs = []
        for b in buffers:
            if not isinstance(b, torch.Tensor):
                raise TypeError(f"buffers must be tensors, got {type(b).__name__}")
            if b.is_floating_point():
                if b.device != device:
                    raise ValueError(f"buffers must be on the parameters' device {device}, got one on {b.device}")
                bufs.append(b)
        # the torch.optim.Optimizer surface, shared with the inner optimizer (as PostLocalSGDOptimizer)
        self.optim = optimizer
        self._optimizer_step_pre_hooks: dict = {}
        self._optimizer_step_post_hooks: dict = {}
        self._optimizer_state_dict_pre_hooks: dict = {}
        self._optimizer_state_dict_post_hooks: dict = {}
        self._optimizer_load_state_dict_pre_hooks: dict = {}
        self._optimizer_load_state_dict_post_hooks: dict = {}
        self.topology, self.tau, self.group, self.timeout = topology, tau, group, timeout
        self.update, self.delay = update, delay
        self.rank = dist.get_rank(group)
        self._params, self._buffers = params, bufs
        self._tensors = params + bufs
        self._numels = [t.numel() for t in self._tensors]
        self._np = sum(self._numels[: len(params)])  # numerator entries of the parameters
        self._d = sum(self._numels)
        self.dtype, self.device = dtype, device
        with torch.no_grad():
            xw = torch.empty(self._d + 1, dtype=dtype, device=device)
            torch.cat([t.detach().reshape(-1).to(dtype) for t in self._tensors], out=xw[: self._d])
            xw[self._d] = 1.0
        self._xw = xw  # numerator x (parameters, then buffers) and weight w, one tensor: one message
        self.k = 0
        self._chan = PushSumChannel(
            self.rank, topology, tau, self._d + 1, dtype, device, group, delay=delay, link_delay=link_delay
        )
        self._write()

    # --- the torch.optim.Optimizer surface -----------------------------------------
    # the inner optimizer's, read through (its load_state_dict replaces its param_groups list)
    @property
    def state(self) -> dict:  # type: ignore[override]
        return self.optim.state

    @property
    def param_groups(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return self.optim.param_groups

    @param_groups.setter
    def param_groups(self, value: list[dict[str, Any]]) -> None:
        self.optim.param_groups = value

    @property
    def defaults(self) -> dict[str, Any]:  # type: ignore[override]
        return self.optim.defaults

    @defaults.setter
    def defaults(self, value: dict[str, Any]) -> None:
        self.optim.defaults = value

    def __repr__(self) -> str:
        return f"SGPOptimizer(tau={self.tau}, topology={self.topology.name}, optimizer={self.optim!r})"

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optim.zero_grad(set_to_none=set_to_none)

    def add_param_group(self, param_group: dict) -> None:
        raise NotImplementedError(
            "SGPOptimizer gossips a fixed set of parameters: add the group to the inner optimizer before wrapping it"
        )

    # --- push-sum state ------------------------------------------------------------
    @property
    def numerator(self) -> torch.Tensor:
        """x: the numerators of the parameters, then of the gossiped buffers (flat, a view)."""
        return self._xw[: self._d]

    @property
    def weight(self) -> torch.Tensor:
        """w: the push-sum weight (a 0-d view)."""
        return self._xw[self._d]

    @property
    def sent(self) -> torch.Tensor:
        """Running sum of the messages this rank has sent (numerator entries, then weight)."""
        return self._chan.sent

    @property
    def received(self) -> torch.Tensor:
        """Running sum of the messages this rank has folded in."""
        return self._chan.consumed

    def mass(self) -> torch.Tensor:
        """This rank's share of the total mass, messages in flight included:
        ``(x, w) + sent - folded in`` (flat, numerator entries then the weight).
        Summed over the ranks it is the total of the numerators and weights."""
        return self._xw + self._chan.sent - self._chan.consumed

    def _z_old(self) -> torch.Tensor:
        """What :meth:`_write` put in the tensors (same de-biasing, same rounding)."""
        z = self._debiased()
        off = 0
        for t, m in zip(self._tensors, self._numels):
            if t.dtype != self.dtype:
                z[off : off + m] = z[off : off + m].to(t.dtype)
            off += m
        return z

    def _debiased(self) -> torch.Tensor:
        """z = x * (1 / w): one reciprocal, then a multiplication per entry, as the simulator
        de-biases (``sgpverify.engine.step.debias``), so that plain SGD keeps its bits."""
        return self._xw[: self._d] * (1.0 / self._xw[self._d])

    def _current(self) -> torch.Tensor:
        return torch.cat([t.detach().reshape(-1).to(self.dtype) for t in self._tensors])

    def _write(self) -> None:
        """The tensors (parameters, buffers) get z = x / w."""
        with torch.no_grad():
            z = self._debiased()
            off = 0
            for t, m in zip(self._tensors, self._numels):
                t.copy_(z[off : off + m].view_as(t))
                off += m

    def _unscale(self, grad_scale) -> None:
        for p in self._params:
            if p.grad is not None:
                p.grad.div_(grad_scale.to(p.grad.device, p.grad.dtype))

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:  # type: ignore[override]
        """The inner step on the numerator, then step k's gossip; z = x / w in the parameters.

        Returns what ``closure`` returned (it is called once, with gradients
        enabled, at the current z)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        found_inf = getattr(self, "found_inf", None)  # set by torch.amp.GradScaler.step
        grad_scale = getattr(self, "grad_scale", None)
        skip = found_inf is not None and bool(found_inf.item())
        x = self._xw[: self._d]
        if not skip:
            if grad_scale is not None:
                self._unscale(grad_scale)
            if self.update == "numerator":
                off = 0
                for p, m in zip(self._params, self._numels):
                    p.copy_(x[off : off + m].view_as(p))
                    off += m
                self.optim.step()
                x[: self._np] = torch.cat([p.detach().reshape(-1) for p in self._params])
                if self._buffers:
                    x[self._np :] += self._current()[self._np :] - self._z_old()[self._np :]
            else:
                self.optim.step()
                x += self._current() - self._z_old()
        elif self._buffers:
            x[self._np :] += self._current()[self._np :] - self._z_old()[self._np :]
        self._chan.exchange(self.k, self._xw)
        self._chan.fold(self.k, self._xw, self.timeout)
        self.k += 1
        self._write()
        return loss

    def flush(self) -> None:
        """Fold in every message in flight to this rank (a collective: every rank
        calls it at the same step); the parameters get the new z."""
        with torch.no_grad():
            self._chan.flush(self.k, self._xw, self.timeout)
            self._write()

    def close(self) -> None:
        """:meth:`flush`, then stop the transport's waiting threads."""
        self.flush()
        self._chan.close()

    def state_dict(self) -> dict[str, Any]:  # type: ignore[override]
        """The inner optimizer's state dict plus ``"push_sum"``: x, w, k (after a :meth:`flush`)."""
        self.flush()
        sd = self.optim.state_dict()
        sd["push_sum"] = {
            "x": self._xw[: self._d].detach().clone(),
            "w": self._xw[self._d].detach().clone(),
            "k": self.k,
            "rank": self.rank,
            "n": self.topology.n,
            "tau": self.tau,
        }
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:  # type: ignore[override]
        """Restore what :meth:`state_dict` saved (the same rank, world and model); z = x / w."""
        if "push_sum" not in state_dict:
            raise ValueError("state_dict has no 'push_sum' entry: not an SGPOptimizer state dict")
        sd = dict(state_dict)
        ps = sd.pop("push_sum")
        if ps["x"].numel() != self._d:
            raise ValueError(f"push_sum x has {ps['x'].numel()} entries, this model gossips {self._d}")
        if ps["n"] != self.topology.n or ps["rank"] != self.rank:
            raise ValueError(
                f"push_sum state of rank {ps['rank']} of {ps['n']} cannot be loaded on rank {self.rank} "
                f"of {self.topology.n}"
            )
        self.optim.load_state_dict(sd)
        with torch.no_grad():
            self._xw[: self._d] = ps["x"].to(self.device, self.dtype)
            self._xw[self._d] = ps["w"].to(self.device, self.dtype)
        self.k = int(ps["k"])
        self._write()


class SimulatorSGD(torch.optim.Optimizer):
    """Plain SGD with the simulator's arithmetic: ``p + (-lr) * grad``, two roundings.

    ``torch.optim.SGD`` fuses the multiply-add (``p.add_(g, alpha=-lr)``,
    one rounding), so it differs from :func:`sgpverify.simulate` in the
    last bit of some entries; this one is for bit-for-bit comparisons.
    """

    def __init__(self, params: Iterable[Any], lr: float) -> None:
        super().__init__(params, {"lr": check_float("lr", lr, low=0.0, low_open=True)})

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p.add_((-g["lr"]) * p.grad)
        return loss
