"""The transport: the push-sum channel of one rank, the gloo process group, a free port.

:class:`PushSumChannel` exchanges push-sum messages point to point
(``isend``/``irecv`` tagged by iteration, numerator share and weight together),
folding in what has arrived and blocking only for messages more than ``tau``
iterations late (docs/theory.md section 1b, "Delays and the augmented matrix"). torch is imported inside the functions
that use it.
"""

from __future__ import annotations

import datetime
import os
import socket
import time
from typing import TYPE_CHECKING

import numpy as np

from .config import DistributedError

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from types import ModuleType

    from ..graphs import Topology

__all__ = ["PushSumChannel", "init_gloo", "free_port"]


class PushSumChannel:
    """Push-sum message exchange for one rank: sends tagged by iteration, receives
    folded in as they complete, blocking only for messages more than tau late.

    gloo's point-to-point work objects make progress only inside ``wait()``
    (``is_completed()`` stays False until then), so each send and receive is
    waited on by a small thread pool; a finished future means a finished
    transfer."""

    def __init__(
        self,
        rank: int,
        n: int,
        topology: Topology,
        tau: int,
        d: int,
        slow_links: Iterable[Sequence[int]] = (),
        link_delay: float = 0.0,
    ) -> None:
        from concurrent.futures import ThreadPoolExecutor

        import torch

        self.torch = torch
        self.pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix=f"sgp-rank{rank}")
        self.rank, self.n, self.topo, self.tau, self.d = rank, n, topology, tau, d
        self.pending = []  # (step, src, work, buffer)
        self.sends = []  # (work, buffer) kept alive until completed
        self.sent = np.zeros(d + 1)  # cumulative numerator and weight shares sent
        self.consumed = np.zeros(d + 1)  # cumulative shares received and folded in
        self.slow_links = {tuple(e) for e in slow_links}
        self.link_delay = link_delay
        self._delayed = []  # (release time, dst, step, buffer) for slow links

    def neighbours(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(out, in)``: the ranks this rank sends to and receives from at step k."""
        e = self.topo.edges(k)
        out = e[e[:, 0] == self.rank, 1]
        inn = e[e[:, 1] == self.rank, 0]
        return out, inn

    def send_and_keep(self, k: int, y: np.ndarray, w: float) -> tuple[np.ndarray, float]:
        """Send shares of (y, w) for step k; return the kept self share."""
        import torch.distributed as dist

        out, inn = self.neighbours(k)
        share = 1.0 / (len(out) + 1.0)
        # post the receives of step k first (tags identify the step)
        for src in sorted(inn.tolist()):
            buf = self.torch.empty(self.d + 1, dtype=self.torch.float64)
            self.pending.append((k, src, self.pool.submit(dist.irecv(buf, src=src, tag=k).wait), buf))
        msg = np.empty(self.d + 1)
        msg[: self.d] = share * y
        msg[self.d] = share * w
        for dst in out.tolist():
            buf = self.torch.from_numpy(msg.copy())
            if (self.rank, dst) in self.slow_links and self.link_delay > 0:
                self._delayed.append((time.perf_counter() + self.link_delay, dst, k, buf))
            else:
                self.sends.append((self.pool.submit(dist.isend(buf, dst=dst, tag=k).wait), buf))
            self.sent += msg
        self._flush_delayed()
        return share * y, share * w

    def _flush_delayed(self, force=False):
        import torch.distributed as dist

        now = time.perf_counter()
        keep = []
        for t, dst, k, buf in self._delayed:
            if force or t <= now:
                if t > now:
                    time.sleep(t - now)
                    now = time.perf_counter()
                self.sends.append((self.pool.submit(dist.isend(buf, dst=dst, tag=k).wait), buf))
            else:
                keep.append((t, dst, k, buf))
        self._delayed = keep
        done = [f for f, _ in self.sends if f.done()]
        for f in done:
            f.result()  # re-raise a failed send here
        self.sends = [(f, b) for f, b in self.sends if not f.done()]

    def receive(self, k: int, x: np.ndarray, w: float, timeout: float) -> tuple[np.ndarray, float]:
        """Fold in arrived messages; block for those sent at steps <= k - tau."""
        self._flush_delayed()
        deadline = time.perf_counter() + timeout
        must = [p for p in self.pending if p[0] <= k - self.tau]
        rest = []
        for p in self.pending:
            if p[0] <= k - self.tau:
                continue
            rest.append(p)
        # forced: wait (in sender order within a step, for reproducible sums)
        for s, src, fut, buf in sorted(must, key=lambda p: (p[0], p[1])):
            while not fut.done():
                self._flush_delayed()
                if time.perf_counter() > deadline:
                    raise DistributedError(
                        f"rank {self.rank}: message from rank {src} of iteration {s} not received within "
                        f"{timeout:g} s (peer dead or too slow)"
                    )
                time.sleep(0.0001)
            self._result(fut, s, src)
            x, w = self._fold(x, w, buf)
        remaining = []
        for s, src, fut, buf in sorted(rest, key=lambda p: (p[0], p[1])):
            if fut.done():
                self._result(fut, s, src)
                x, w = self._fold(x, w, buf)
            else:
                remaining.append((s, src, fut, buf))
        self.pending = remaining
        return x, w

    def _result(self, fut, s, src):
        try:
            fut.result()
        except Exception as exc:
            raise DistributedError(
                f"rank {self.rank}: receiving the message of iteration {s} from rank {src} failed: {exc}"
            ) from None

    def _fold(self, x, w, buf):
        m = buf.numpy()
        self.consumed += m
        return x + m[: self.d], w + m[self.d]

    def drain(self, x: np.ndarray, w: float, timeout: float) -> tuple[np.ndarray, float]:
        """Send what is held back, fold in every message still in flight, wait for the sends; stop the pool."""
        self._flush_delayed(force=True)
        x, w = self.receive(10**12, x, w, timeout)
        deadline = time.perf_counter() + timeout
        for fut, _ in self.sends:
            while not fut.done():
                if time.perf_counter() > deadline:
                    raise DistributedError(f"rank {self.rank}: a send was not completed within {timeout:g} s")
                time.sleep(0.0001)
            fut.result()
        self.sends = []
        self.pool.shutdown(wait=False)
        return x, w


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
