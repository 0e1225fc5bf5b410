"""The transport: the push-sum channel of one rank, the gloo process group, a free port.

:class:`PushSumChannel` exchanges push-sum messages point to point with
``torch.distributed`` (``isend``/``irecv`` tagged by iteration; the numerator
share and the weight travel together in one tensor), folds in what has arrived,
and blocks only for messages more than ``tau`` iterations old (docs/theory.md
section 1b, "Delays and the augmented matrix"). Messages are tensors on the
communication device: the state's device for NCCL and other device backends;
the host for gloo, which sends CPU tensors only (a CUDA state is staged through
host memory there). torch is imported inside the functions that use it.
"""

from __future__ import annotations

import datetime
import os
import queue
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

from .config import DistributedError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import ModuleType

    from ..graphs import Topology

__all__ = ["PushSumChannel", "DELAYS", "init_gloo", "free_port", "average_gradients"]

#: How a tau-OSGP rank folds messages in: "asap" folds every message that has
#: arrived and blocks only for one more than tau steps old; "fixed" folds the
#: message of step s exactly at the end of step s + tau (the simulator's
#: ``delay="fixed"``: reproducible, for bit-for-bit comparisons).
DELAYS = ("asap", "fixed")


class _Future:
    """The outcome of one ``work.wait()`` run on a pool thread: ``done()`` and ``result()``."""

    __slots__ = ("_event", "_exc")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._exc: BaseException | None = None

    def done(self) -> bool:
        return self._event.is_set()

    def result(self) -> None:
        if self._exc is not None:
            raise self._exc


class _DaemonPool:
    """A few **daemon** threads that run ``work.wait()`` for gloo's point-to-point work objects.

    ``concurrent.futures`` threads are joined at interpreter exit: a thread blocked in gloo's wait
    for a dead or frozen peer then holds the process until gloo's own timeout. Daemon threads do
    not, so a rank that raised :class:`DistributedError` can exit at once.
    """

    def __init__(self, max_workers: int, name: str) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._max, self._name, self._busy = max_workers, name, 0
        self._lock = threading.Lock()

    def submit(self, fn: Any) -> _Future:
        fut = _Future()
        with self._lock:
            self._busy += 1  # waits queued or running: a thread each, up to max_workers
            if self._busy > len(self._threads) and len(self._threads) < self._max:
                t = threading.Thread(target=self._loop, name=f"{self._name}-{len(self._threads)}", daemon=True)
                self._threads.append(t)
                t.start()
        self._queue.put((fn, fut))
        return fut

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            fn, fut = item
            try:
                fn()
            except BaseException as exc:  # handed to the caller through result()
                fut._exc = exc
            finally:
                with self._lock:
                    self._busy -= 1
                fut._event.set()

    def shutdown(self) -> None:
        for _ in self._threads:
            self._queue.put(None)


class PushSumChannel:
    """Push-sum message exchange of one rank (torch tensors, any device).

    Parameters
    ----------
    rank : int
        This rank's index in ``group`` (= its node in ``topology``).
    topology : Topology
        The schedule, the same on every rank.
    tau : int
        Messages sent at step s are folded in by the end of step s + tau.
    numel : int
        Length of a message (numerator entries + 1 for the weight).
    dtype, device : torch.dtype, torch.device
        The state's; messages travel in this dtype.
    group : ProcessGroup, optional
        The process group (default: the world).
    delay : {"asap", "fixed"}
        See :data:`DELAYS`.
    link_delay : mapping (src, dst) -> seconds, optional
        Fault injection for studies: messages from this rank to ``dst`` are held
        back that many seconds before they are sent.

    Notes
    -----
    gloo's point-to-point work objects make progress only inside ``wait()``
    (``is_completed()`` stays False until then), so with gloo each send and
    receive is waited on by a small thread pool and a finished future means a
    finished transfer; other backends are polled with ``is_completed()``.
    ``sent`` and ``consumed`` are the running sums of the messages sent and
    folded in (the mass bookkeeping: this rank's share of the total is
    ``state + sent - consumed``).
    """

    def __init__(
        self,
        rank: int,
        topology: Topology,
        tau: int,
        numel: int,
        dtype: Any,
        device: Any,
        group: Any = None,
        delay: str = "asap",
        link_delay: Mapping[tuple[int, int], float] | None = None,
    ) -> None:
        import torch
        import torch.distributed as dist

        self.torch, self.dist = torch, dist
        self.rank, self.topo, self.tau, self.numel, self.group = rank, topology, tau, numel, group
        self.delay = delay
        self.dtype, self.device = dtype, torch.device(device)
        backend = str(dist.get_backend(group))
        self.gloo = backend == "gloo"
        # gloo sends host tensors: a device state is staged through host memory
        self.comm_device = torch.device("cpu") if self.gloo else self.device
        self.pool = _DaemonPool(16, f"sgp-rank{rank}") if self.gloo else None
        self.pending: list[tuple[int, int, Any, Any]] = []  # (step, src, handle, buffer)
        self.sends: list[tuple[Any, Any, int, int]] = []  # (handle, buffer, dst, step) kept alive until completed
        self.last_heard: dict[int, int] = {}  # peer -> step of its last message folded in here
        self.sent = torch.zeros(numel, dtype=dtype, device=self.device)
        self.consumed = torch.zeros(numel, dtype=dtype, device=self.device)
        self.link_delay = {(int(a), int(b)): float(t) for (a, b), t in (link_delay or {}).items()}
        self._held: list[tuple[float, int, int, Any]] = []  # (release time, dst, step, buffer)

    # ranks: node i of the topology is rank i of the group
    def _peer(self, i: int) -> int:
        return i if self.group is None else self.dist.get_global_rank(self.group, i)

    def neighbours(self, k: int) -> tuple[list[int], list[int]]:
        """``(out, in)``: the ranks this rank sends to and receives from at step k (sorted)."""
        e = self.topo.edges(k)
        out = sorted(e[e[:, 0] == self.rank, 1].tolist())
        inn = sorted(e[e[:, 1] == self.rank, 0].tolist())
        return out, inn

    def _handle(self, work):
        return self.pool.submit(work.wait) if self.gloo else work

    def _heard(self, peer: int) -> str:
        """``"its last message folded here: iteration 17"``, or that none was."""
        s = self.last_heard.get(peer)
        return "no message from it folded here yet" if s is None else f"its last message folded here: iteration {s}"

    def _post(self, op: str, peer: int, k: int, buf: Any) -> Any:
        """``dist.isend``/``dist.irecv`` of step k's message to/from ``peer``; a failure names the peer."""
        fn = self.dist.isend if op == "send" else self.dist.irecv
        try:
            if op == "send":
                return self._handle(fn(buf, dst=self._peer(peer), group=self.group, tag=k))
            return self._handle(fn(buf, src=self._peer(peer), group=self.group, tag=k))
        except Exception as exc:
            what = "sending the message of iteration {} to" if op == "send" else "receiving iteration {} from"
            raise DistributedError(
                f"rank {self.rank}: {what.format(k)} rank {peer} failed (rank {peer} dead? {self._heard(peer)}): "
                f"{_first_line(exc)}"
            ) from None

    @staticmethod
    def _done(h) -> bool:
        return h.done() if hasattr(h, "done") else h.is_completed()

    def _finish(self, h) -> None:
        if hasattr(h, "result"):
            h.result()
        else:
            h.wait()

    def exchange(self, k: int, state: Any) -> None:
        """Step k's gossip, in place on ``state`` (numerator and weight, one tensor):
        keep the self share, send the shares to this step's out-neighbours, and
        post the receives of step k (folded in later by :meth:`fold`)."""
        torch = self.torch
        out, inn = self.neighbours(k)
        for src in inn:  # post the receives of step k first (the tag identifies the step)
            buf = torch.empty(self.numel, dtype=self.dtype, device=self.comm_device)
            self.pending.append((k, src, self._post("recv", src, k, buf), buf))
        state.mul_(1.0 / (len(out) + 1.0))  # the share of every receiver, this rank's included
        for dst in out:
            buf = state.to(self.comm_device, copy=True)
            wait = self.link_delay.get((self.rank, dst), 0.0)
            if wait > 0:
                self._held.append((time.perf_counter() + wait, dst, k, buf))
            else:
                self.sends.append((self._post("send", dst, k, buf), buf, dst, k))
            self.sent += state
        self._release()

    def _release(self, force: bool = False) -> None:
        """Send the held-back messages that are due (all of them when ``force``); reap finished sends."""
        now = time.perf_counter()
        keep = []
        for t, dst, k, buf in self._held:
            if force or t <= now:
                if t > now:
                    time.sleep(t - now)
                    now = time.perf_counter()
                self.sends.append((self._post("send", dst, k, buf), buf, dst, k))
            else:
                keep.append((t, dst, k, buf))
        self._held = keep
        alive = []
        for h, b, dst, s in self.sends:
            if self._done(h):
                try:
                    self._finish(h)
                except Exception as exc:
                    raise DistributedError(
                        f"rank {self.rank}: sending the message of iteration {s} to rank {dst} failed (rank {dst} "
                        f"dead? {self._heard(dst)}): {_first_line(exc)}"
                    ) from None
            else:
                alive.append((h, b, dst, s))
        self.sends = alive

    def fold(self, k: int, state: Any, timeout: float, upto: int | None = None) -> None:
        """Fold arrived messages into ``state`` at the end of step k, in (step, sender)
        order; block for those of steps <= ``k - tau`` ("asap"), or fold exactly the
        messages of step ``k - tau`` ("fixed"). ``upto`` forces every message of the
        steps <= upto (a flush). Raises :class:`DistributedError` naming the rank
        whose message is overdue or failed."""
        self._release()
        last = k - self.tau if upto is None else upto
        deadline = time.perf_counter() + timeout
        keep = []
        for s, src, h, buf in sorted(self.pending, key=lambda p: (p[0], p[1])):
            if s <= last:
                while not self._done(h):
                    self._release()
                    if time.perf_counter() > deadline:
                        raise DistributedError(
                            f"rank {self.rank}: message from rank {src} of iteration {s} not received within "
                            f"{timeout:g} s (rank {src} dead, frozen or too slow; {self._heard(src)})"
                        )
                    time.sleep(0.0001)
            elif not (upto is None and self.delay == "asap" and self._done(h)):
                keep.append((s, src, h, buf))
                continue
            try:
                self._finish(h)
            except Exception as exc:
                raise DistributedError(
                    f"rank {self.rank}: receiving the message of iteration {s} from rank {src} failed "
                    f"(rank {src} dead? {self._heard(src)}): {_first_line(exc)}"
                ) from None
            m = buf if buf.device == state.device else buf.to(state.device)
            state += m
            self.consumed += m
            self.last_heard[src] = max(s, self.last_heard.get(src, -1))
        self.pending = keep

    def flush(self, k: int, state: Any, timeout: float) -> None:
        """Send every held-back message and fold in every message of the steps < k
        (nothing is left in flight to this rank); wait for this rank's sends."""
        self._release(force=True)
        self.fold(k, state, timeout, upto=k - 1)
        deadline = time.perf_counter() + timeout
        for h, _, dst, s in self.sends:
            while not self._done(h):
                if time.perf_counter() > deadline:
                    raise DistributedError(
                        f"rank {self.rank}: the message of iteration {s} to rank {dst} was not taken within "
                        f"{timeout:g} s (rank {dst} dead, frozen or too slow; {self._heard(dst)})"
                    )
                time.sleep(0.0001)
            self._finish(h)
        self.sends = []

    def close(self) -> None:
        """Stop the waiting threads (after a :meth:`flush`; daemon threads, so a rank whose peer
        died exits at once even without it)."""
        if self.pool is not None:
            self.pool.shutdown()


def _first_line(exc: BaseException) -> str:
    """The first line of an exception's message (torch's carry C++ log lines after it)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def average_gradients(parameters: Any, world: int) -> None:
    """AllReduce SGD's communication: replace every gradient by its average over the ranks, in one
    bucket (one ``all_reduce`` of the concatenated gradients, as DistributedDataParallel does).

    A CUDA bucket is staged through host memory on gloo, which reduces CPU tensors only.
    """
    import torch
    import torch.distributed as dist

    grads = [p.grad for p in parameters]
    flat = torch.cat([g.reshape(-1) for g in grads])
    if flat.is_cuda and dist.get_backend() == "gloo":
        host = flat.cpu()
        dist.all_reduce(host)
        flat.copy_(host)
    else:
        dist.all_reduce(flat)
    flat /= world
    off = 0
    for g in grads:
        g.copy_(flat[off : off + g.numel()].view_as(g))
        off += g.numel()


def init_gloo(rank: int, world: int, port: int | None, timeout: float) -> ModuleType:
    """Join the gloo process group (rendezvous on ``MASTER_ADDR``, default 127.0.0.1, and ``port``
    or ``MASTER_PORT``); one torch thread. Returns ``torch.distributed``."""
    import torch
    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if port is not None:
        os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=timeout))
    return dist


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (for the rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
