"""Real multi-process SGP on torch.distributed (gloo, CPU), checked against the simulator.

One process per node. Messages are point-to-point non-blocking sends
(``isend``/``irecv``, tagged by iteration) carrying the numerator share and the
push-sum weight together; every rank follows the same :class:`~sgpverify.graphs.Topology`
as the simulator. A node keeps computing and folds messages in as they arrive,
blocking only for a message sent more than ``tau`` iterations ago
(THEORY.md section 3): ``tau = 0`` is synchronous SGP, ``tau >= 1`` is
tau-OSGP with real asynchrony. AllReduce SGD (``dist.all_reduce``) and D-PSGD
(Metropolis weights, symmetric exchange) are the baselines.

Requires the ``distributed`` extra (torch). Launch with :func:`launch` (or
``sgpverify distributed --nproc N``), which spawns the processes on localhost;
:func:`run_rank` is the per-process entry point (``run_rank(None, cfg, dir)``
reads ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` as set by
``torchrun``), and :class:`GossipSGD` works in any torch.distributed program.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import socket
import tempfile
import time
from pathlib import Path

import numpy as np

from . import graphs, problems
from ._validate import check_choice, check_float, check_int
from .errors import SGPVerifyError
from .mixing import metropolis_matrix

__all__ = ["RunConfig", "DistributedError", "launch", "run_rank", "GossipSGD", "available", "ALGORITHMS"]

ALGORITHMS = ("sgp", "osgp", "dpsgd", "allreduce")


class DistributedError(SGPVerifyError, RuntimeError):
    """A rank failed, died or timed out; the message names it."""


def available():
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
    slow_links: tuple = ()
    link_delay: float = 0.0
    fail_rank: int | None = None
    fail_at: int = 0
    max_seconds: float | None = None

    def __post_init__(self):
        check_int("nproc", self.nproc, min_value=1)
        check_int("iters", self.iters, min_value=0)
        check_choice("algorithm", self.algorithm, ALGORITHMS)
        check_int("tau", self.tau, min_value=0)
        if self.algorithm == "osgp" and self.tau < 1:
            raise ValueError(f"tau must be an integer >= 1 for algorithm 'osgp', got {self.tau}")
        if self.algorithm in ("dpsgd", "allreduce") and self.tau:
            raise ValueError(f"tau applies to 'sgp' and 'osgp' only, got tau = {self.tau} with {self.algorithm!r}")
        check_choice("topology", self.topology, graphs.TOPOLOGY_NAMES)
        check_choice("problem", self.problem, problems.PROBLEM_NAMES)
        check_int("dim", self.dim, min_value=1)
        check_float("step_size", self.step_size, low=0.0, low_open=True)
        check_float("timeout", self.timeout, low=0.0, low_open=True)
        check_int("record_every", self.record_every, min_value=1)
        if self.slow_rank is not None:
            check_int("slow_rank", self.slow_rank, min_value=0, max_value=self.nproc - 1)
        check_float("slow_sleep", self.slow_sleep, low=0.0)
        check_float("link_delay", self.link_delay, low=0.0)

    def start(self):
        """Initial numerators (n, d): x0, plus ``x0_spread * (i - (n-1)/2)`` on node i."""
        offs = self.x0_spread * (np.arange(self.nproc) - (self.nproc - 1) / 2.0)
        return np.full((self.nproc, self.dim), float(self.x0)) + offs[:, None]

    def build(self):
        prob = problems.by_name(self.problem, self.nproc, self.dim, seed=self.seed)
        topo = graphs.by_name(self.topology, self.nproc, seed=self.seed)
        return prob, topo


# ---------------------------------------------------------------- the push-sum channel


class _Channel:
    """Push-sum message exchange for one rank: sends tagged by iteration, receives
    folded in as they complete, blocking only for messages more than tau late.

    gloo's point-to-point work objects make progress only inside ``wait()``
    (``is_completed()`` stays False until then), so each send and receive is
    waited on by a small thread pool; a finished future means a finished
    transfer."""

    def __init__(self, rank, n, topology, tau, d, slow_links=(), link_delay=0.0):
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

    def neighbours(self, k):
        e = self.topo.edges(k)
        out = e[e[:, 0] == self.rank, 1]
        inn = e[e[:, 1] == self.rank, 0]
        return out, inn

    def send_and_keep(self, k, y, w):
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

    def receive(self, k, x, w, timeout):
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

    def drain(self, x, w, timeout):
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


# ---------------------------------------------------------------- one rank


def _init(rank, world, port, timeout):
    import torch
    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if port is not None:
        os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=timeout))
    return dist


def run_rank(rank, cfg, outdir, port=None):
    """Run one node of ``cfg`` (a :class:`RunConfig`) and write ``outdir/rank{rank}.npz``.

    With ``rank=None`` the rank comes from the ``RANK`` environment variable and
    the rendezvous from ``MASTER_ADDR``/``MASTER_PORT``, as ``torchrun`` sets
    them (``WORLD_SIZE`` must equal ``cfg.nproc``).
    """
    if rank is None:
        rank = int(os.environ["RANK"])
        world = int(os.environ.get("WORLD_SIZE", cfg.nproc))
        if world != cfg.nproc:
            raise DistributedError(f"WORLD_SIZE = {world} but cfg.nproc = {cfg.nproc}")
    dist = _init(rank, cfg.nproc, port, cfg.timeout)
    try:
        _run(rank, cfg, Path(outdir), dist)
    finally:
        try:
            dist.destroy_process_group()
        except Exception:  # pragma: no cover - best effort at exit
            pass


def _grad(prob, z, rank, rng):
    """This node's stochastic gradient, drawing the noise of the whole (n, d) call so
    that the stream is the simulator's (same seed, same bits, row ``rank``)."""
    Z = np.tile(z, (prob.n_nodes, 1))
    return np.asarray(prob.grad(Z, rng), dtype=float)[rank]


def _run(rank, cfg, outdir, dist):
    import torch

    n, d = cfg.nproc, cfg.dim
    prob, topo = cfg.build()
    rng = np.random.default_rng(np.random.SeedSequence(cfg.seed).spawn(1)[0])
    x = cfg.start()[rank].copy()
    w = 1.0
    applied = np.zeros(d)
    t0 = time.perf_counter()
    rec_k, rec_t, rec_x, rec_w, rec_mass = [], [], [], [], []
    chan = None
    if cfg.algorithm in ("sgp", "osgp"):
        chan = _Channel(rank, n, topo, cfg.tau, d, cfg.slow_links, cfg.link_delay)

    def record(k):
        rec_k.append(k)
        rec_t.append(time.perf_counter() - t0)
        rec_x.append(x.copy())
        rec_w.append(w)
        if chan is not None:  # this rank's share of the total: x + sent - received
            rec_mass.append(
                np.concatenate([x + chan.sent[:d] - chan.consumed[:d], [w + chan.sent[d] - chan.consumed[d]]])
            )
        else:
            rec_mass.append(np.concatenate([x, [w]]))

    k_done = cfg.iters
    for k in range(cfg.iters):
        if k % cfg.record_every == 0:
            record(k)
        if cfg.fail_rank == rank and k == cfg.fail_at:
            os._exit(17)  # simulate a crashed peer (tests of clean failure)
        if cfg.slow_rank == rank and cfg.slow_sleep:
            time.sleep(cfg.slow_sleep)
        if cfg.link_delay and cfg.algorithm in ("allreduce", "dpsgd") and cfg.slow_links:
            time.sleep(cfg.link_delay)  # a collective step waits for its slowest link
        z = x / w
        g = _grad(prob, z, rank, rng)
        applied += g
        if cfg.algorithm in ("sgp", "osgp"):
            y = x + (-cfg.step_size) * g
            x, w = chan.send_and_keep(k, y, w)
            x, w = chan.receive(k, x, w, cfg.timeout)
        elif cfg.algorithm == "allreduce":
            y = torch.from_numpy(x + (-cfg.step_size) * g)
            dist.all_reduce(y)
            x = y.numpy() / n
        else:  # dpsgd: x <- W x - gamma g, symmetric exchange
            W = metropolis_matrix(topo, k)
            row = W.getrow(rank) if hasattr(W, "getrow") else W[[rank], :]
            nb = [j for j in row.indices.tolist() if j != rank]
            bufs, works = {}, []
            mine = torch.from_numpy(x.copy())
            for j in nb:
                bufs[j] = torch.empty(d, dtype=torch.float64)
                works.append(dist.irecv(bufs[j], src=j, tag=k))
            for j in nb:
                works.append(dist.isend(mine, dst=j, tag=k))
            for wk in works:
                wk.wait()
            vals = dict(zip(row.indices.tolist(), row.data.tolist()))
            new = vals[rank] * x
            for j in sorted(nb):
                new = new + vals[j] * bufs[j].numpy()
            x = new + (-cfg.step_size) * g
        if cfg.max_seconds is not None and time.perf_counter() - t0 > cfg.max_seconds:
            k_done = k + 1
            break
    if chan is not None:
        x, w = chan.drain(x, w, cfg.timeout)
    record(k_done)
    # global totals after the drain: every message sent has been folded in
    tot = torch.from_numpy(
        np.concatenate(
            [x, [w], applied, chan.sent if chan else np.zeros(d + 1), chan.consumed if chan else np.zeros(d + 1)]
        )
    )
    dist.all_reduce(tot)
    np.savez(
        outdir / f"rank{rank}.npz",
        k=np.array(rec_k),
        t=np.array(rec_t),
        x=np.array(rec_x),
        w=np.array(rec_w),
        mass=np.array(rec_mass),
        totals=tot.numpy(),
        iters_done=k_done,
    )
    dist.barrier()


# ---------------------------------------------------------------- launcher


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn_entry(rank, cfg, outdir, port):
    run_rank(rank, cfg, outdir, port)


def launch(cfg, outdir=None):
    """Spawn ``cfg.nproc`` processes on localhost, run, and collect the results.

    Returns a :class:`DistributedResult`. Raises :class:`DistributedError` if a
    rank fails, dies or times out (the other ranks are terminated: no hang, no
    orphan processes).
    """
    ok, why = available()
    if not ok:
        raise DistributedError(why)
    import torch.multiprocessing as mp

    tmp = tempfile.mkdtemp(prefix="sgpverify-dist-") if outdir is None else str(outdir)
    port = _free_port()
    t0 = time.perf_counter()
    try:
        mp.spawn(_spawn_entry, args=(cfg, tmp, port), nprocs=cfg.nproc, join=True)
    except mp.ProcessExitedException as exc:
        raise DistributedError(
            f"rank {exc.error_index} died (exit code {exc.exit_code}); the other ranks were stopped"
        ) from None
    except mp.ProcessRaisedException as exc:
        last = str(exc).strip().splitlines()[-1]
        raise DistributedError(f"rank {exc.error_index} failed: {last}; the other ranks were stopped") from None
    wall = time.perf_counter() - t0
    res = _collect(cfg, Path(tmp), wall)
    if outdir is None:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return res


@dataclasses.dataclass(frozen=True)
class DistributedResult:
    """Per-rank records, assembled: ``z[k_index, rank, :]``, times, totals."""

    config: RunConfig
    iterations: np.ndarray
    times: np.ndarray  # (records, n) wall time of each rank's record
    x: np.ndarray  # (records, n, d)
    w: np.ndarray  # (records, n)
    mass: np.ndarray  # (records, n, d+1): x + sent - received per rank
    totals: dict
    wall_seconds: float

    @property
    def z(self):
        return self.x / self.w[:, :, None]

    def consensus(self):
        """(1/n) sum_i ||z_i - xbar||^2 at each record (xbar from the mass incl. in flight)."""
        xbar = self.mass[:, :, : self.x.shape[2]].sum(axis=1) / self.x.shape[1]
        return np.mean(np.sum((self.z - xbar[:, None, :]) ** 2, axis=2), axis=1)

    def to_dict(self):
        return {
            "config": dataclasses.asdict(self.config),
            "iterations": self.iterations.tolist(),
            "wall_seconds": self.wall_seconds,
            "totals": self.totals,
        }


def _collect(cfg, tmp, wall):
    parts = [np.load(tmp / f"rank{r}.npz") for r in range(cfg.nproc)]
    m = min(len(p["k"]) for p in parts)
    d = cfg.dim
    tot = parts[0]["totals"]
    totals = {
        "x_sum": tot[:d].tolist(),
        "w_sum": float(tot[d]),
        "applied_sum": tot[d + 1 : 2 * d + 1].tolist(),
        "sent": tot[2 * d + 1 : 3 * d + 2].tolist(),
        "consumed": tot[3 * d + 2 :].tolist(),
        "iters_done": [int(p["iters_done"]) for p in parts],
    }
    return DistributedResult(
        config=cfg,
        iterations=parts[0]["k"][:m],
        times=np.stack([p["t"][:m] for p in parts], axis=1),
        x=np.stack([p["x"][:m] for p in parts], axis=1),
        w=np.stack([p["w"][:m] for p in parts], axis=1),
        mass=np.stack([p["mass"][:m] for p in parts], axis=1),
        totals=totals,
        wall_seconds=wall,
    )


def check_against_simulator(res):
    """Compare a distributed run with :func:`sgpverify.simulate` on the same problem,
    seeds and schedule: ``max_deviation`` of z, ``mass_error``, consensus."""
    from .engine import simulate

    cfg = res.config
    prob, topo = cfg.build()
    alg = {"sgp": "sgp", "osgp": "sgp", "dpsgd": "dpsgd", "allreduce": "allreduce"}[cfg.algorithm]
    tr = simulate(
        prob,
        topo,
        step_size=cfg.step_size,
        n_iter=cfg.iters,
        x0=cfg.start(),
        algorithm=alg,
        seed=cfg.seed,
        record_every=cfg.record_every,
        record_states=True,
    )
    x0_sum = cfg.start().sum(axis=0)
    expected = x0_sum - cfg.step_size * np.asarray(res.totals["applied_sum"])
    mass_error = float(np.max(np.abs(np.asarray(res.totals["x_sum"]) - expected)))
    out = {
        "mass_error": mass_error,
        "weight_error": abs(res.totals["w_sum"] - cfg.nproc),
        "in_flight_at_end": float(np.max(np.abs(np.asarray(res.totals["sent"]) - np.asarray(res.totals["consumed"])))),
        "initial_consensus": float(res.consensus()[0]),
        "final_consensus": float(res.consensus()[-1]),
        "simulator_final_consensus": float(tr.consensus[-1]),
    }
    if cfg.algorithm != "osgp":
        # z of every node at every recorded iteration, distributed vs simulated
        sim = {int(k): tr.z_history[i] for i, k in enumerate(tr.iterations.tolist())}
        devs = [float(np.max(np.abs(sim[int(k)] - res.z[i]))) for i, k in enumerate(res.iterations.tolist())]
        out["max_deviation"] = max(devs)
    else:
        out["max_deviation"] = None  # real asynchrony: no single simulated trajectory to compare
    return out


# ---------------------------------------------------------------- torch.nn.Module wrapper


class GossipSGD:
    """Train a ``torch.nn.Module`` with SGP: one instance per process.

    The module's parameters always hold the de-biased point ``z = x / w``
    (forward and backward run there); :meth:`step` takes the local gradient
    step on the numerator ``x`` (float64) with local momentum (never
    communicated), then pushes shares of ``(x, w)`` to this step's
    out-neighbours and folds in what has arrived, blocking only for messages
    more than ``tau`` steps old (THEORY.md sections 2-3).

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

    def __init__(self, module, topology, lr, momentum=0.0, nesterov=False, weight_decay=0.0, tau=0, timeout=60.0):
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
        self.chan = _Channel(self.rank, self.n, topology, check_int("tau", tau, min_value=0), self.x.size)

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    def _write_params(self):
        from torch.nn.utils import vector_to_parameters

        z = self.torch.from_numpy(self.x / self.w)
        with self.torch.no_grad():
            vector_to_parameters(z.to(self.params[0].dtype), self.params)

    def step(self):
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

    def finish(self):
        """Fold in every message still in flight; parameters hold the final z."""
        self.x, self.w = self.chan.drain(self.x, self.w, self.timeout)
        self._write_params()


def _mlp_rank(rank, nproc, algorithm, steps, lr, seed, outdir, port, tau=1, timeout=60.0):
    """Train a small MLP on this rank's non-IID shard (label-sorted split); write accuracy."""
    import torch

    dist = _init(rank, nproc, port, timeout)
    torch.manual_seed(seed)  # the same initial model on every rank
    prob = problems.NonconvexLogistic(nproc, 10, samples=240 * nproc, split="label", seed=seed)
    a, b = int(prob.offsets[rank]), int(prob.offsets[rank + 1])
    X = torch.from_numpy(np.ascontiguousarray(prob.features[a:b], dtype=np.float32))
    y = torch.from_numpy(((prob.labels[a:b] + 1) // 2).astype(np.int64))
    Xall = torch.from_numpy(np.ascontiguousarray(prob.features, dtype=np.float32))
    yall = torch.from_numpy(((prob.labels + 1) // 2).astype(np.int64))
    model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.Tanh(), torch.nn.Linear(32, 2))
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(seed * 1000 + rank)
    if algorithm == "allreduce":
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True)
    else:
        opt = GossipSGD(
            model,
            graphs.exponential(nproc),
            lr=lr,
            momentum=0.9,
            nesterov=True,
            tau=tau if algorithm == "osgp" else 0,
            timeout=timeout,
        )
    for _ in range(steps):
        idx = torch.randint(0, len(y), (32,), generator=gen)
        opt.zero_grad()
        loss_fn(model(X[idx]), y[idx]).backward()
        if algorithm == "allreduce":
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= nproc
        opt.step()
    if algorithm != "allreduce":
        opt.finish()
    with torch.no_grad():
        acc = float((model(Xall).argmax(1) == yall).float().mean())
    (Path(outdir) / f"acc{rank}.json").write_text(json.dumps({"accuracy": acc}))
    dist.barrier()
    dist.destroy_process_group()


def _mlp_entry(rank, nproc, algorithm, steps, lr, seed, outdir, port):
    _mlp_rank(rank, nproc, algorithm, steps, lr, seed, outdir, port)


def train_mlp(nproc=4, algorithm="sgp", steps=300, lr=0.05, seed=0):
    """Train an MLP with :class:`GossipSGD` (or AllReduce SGD) on non-IID shards;
    return the accuracy of every rank's model on the whole data set."""
    ok, why = available()
    if not ok:
        raise DistributedError(why)
    import torch.multiprocessing as mp

    check_choice("algorithm", algorithm, ("sgp", "osgp", "allreduce"))
    with tempfile.TemporaryDirectory(prefix="sgpverify-mlp-") as tmp:
        try:
            mp.spawn(_mlp_entry, args=(nproc, algorithm, steps, lr, seed, tmp, _free_port()), nprocs=nproc, join=True)
        except (mp.ProcessExitedException, mp.ProcessRaisedException) as exc:
            raise DistributedError(f"rank {exc.error_index} failed: {str(exc).strip().splitlines()[-1]}") from None
        return [json.loads((Path(tmp) / f"acc{r}.json").read_text())["accuracy"] for r in range(nproc)]


# ---------------------------------------------------------------- straggler study


def _xbar_over_time(res):
    """xbar(t) from every rank's latest record (mass incl. in flight) on a merged time grid."""
    d = res.config.dim
    times = np.unique(res.times.ravel())
    n = res.config.nproc
    out = []
    for t in times:
        tot = np.zeros(d)
        for r in range(n):
            i = np.searchsorted(res.times[:, r], t, side="right") - 1
            tot += res.mass[max(i, 0), r, :d]
        out.append(tot / n)
    return times, np.array(out)


def straggler_study(
    nproc=4,
    iters=200,
    slow_sleep=0.02,
    link_delay=0.02,
    tau=2,
    target_ratio=0.05,
    seed=0,
    topology="exponential",
    problem="quadratic-cosine",
    dim=10,
    step_size=0.05,
    timeout=120.0,
):
    """Wall-clock comparison under a slow node (sleep per step on rank 0) and slow
    links (delay per message on the links out of rank 1).

    Returns ``{"rows": [{"algorithm", "time_to_target", "iters_per_second", "final_value", ...}],
    "curves": {algorithm: (times, values)}, "target": ...}``. The target is
    ``target_ratio * ||grad f(x0)||^2``; ``time_to_target`` is the first wall time at
    which ``||grad f(xbar(t))||^2 <= target``, with ``xbar(t)`` the average of every
    node's latest numerator plus the mass in flight (None if never reached).
    """
    prob = problems.by_name(problem, nproc, dim, seed=seed)
    x0 = np.full(dim, 1.0)
    target = target_ratio * float(np.sum(prob.full_grad(x0) ** 2))
    slow_links = tuple((1, j) for j in range(nproc) if j != 1)
    rows, curves = [], {}
    for alg in ("allreduce", "dpsgd", "sgp", "osgp"):
        cfg = RunConfig(
            nproc=nproc,
            iters=iters,
            algorithm=alg,
            tau=tau if alg == "osgp" else 0,
            topology=topology,
            problem=problem,
            dim=dim,
            step_size=step_size,
            seed=seed,
            x0=1.0,
            timeout=timeout,
            slow_rank=0,
            slow_sleep=slow_sleep,
            slow_links=slow_links,
            link_delay=link_delay,
        )
        # gossip delays each message on a slow link; a collective step (allreduce,
        # dpsgd's synchronous exchange) waits for its slowest link: link_delay per step
        res = launch(cfg)
        times, xbar = _xbar_over_time(res)
        g2 = np.sum(prob.full_grad(xbar) ** 2, axis=1)
        vals = prob.value(xbar)
        hit = np.flatnonzero(g2 <= target)
        run_time = float(res.times.max())
        rows.append(
            {
                "algorithm": alg,
                "time_to_target": float(times[hit[0]]) if hit.size else None,
                "iters_per_second": float(np.mean(res.iterations.max() / res.times.max(axis=0))),
                "final_value": float(vals[-1]),
                "final_grad_norm_sq": float(g2[-1]),
                "wall_seconds": run_time,
                "tau": cfg.tau,
            }
        )
        curves[alg] = (times.tolist(), vals.tolist())
    return {
        "rows": rows,
        "curves": curves,
        "target": target,
        "setup": {
            "nproc": nproc,
            "iters": iters,
            "slow_rank": 0,
            "slow_sleep": slow_sleep,
            "slow_links": [list(e) for e in slow_links],
            "link_delay": link_delay,
            "tau": tau,
        },
    }
