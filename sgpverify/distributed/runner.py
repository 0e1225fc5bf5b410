"""One rank of a :class:`~sgpverify.distributed.RunConfig` run, and :func:`launch`, which spawns them all.

:func:`run_rank` is the per-process entry point (also under ``torchrun``);
:func:`launch` spawns ``cfg.nproc`` processes on localhost and assembles their
records into a :class:`DistributedResult`.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..mixing import metropolis_matrix
from .config import DistributedError, RunConfig, available
from .transport import free_port, init_gloo

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["run_rank", "launch", "spawn", "DistributedResult"]


def run_rank(rank: int | None, cfg: RunConfig, outdir: str | os.PathLike[str], port: int | None = None) -> None:
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
    dist = init_gloo(rank, cfg.nproc, port, cfg.timeout)
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


def _run(rank: int, cfg: RunConfig, outdir: Path, dist: ModuleType) -> None:
    import torch

    n, d = cfg.nproc, cfg.dim
    prob, topo = cfg.build()
    rng = np.random.default_rng(np.random.SeedSequence(cfg.seed).spawn(1)[0])
    x = cfg.start()[rank].copy()
    w = 1.0
    applied = np.zeros(d)
    rec_k, rec_t, rec_x, rec_w, rec_mass = [], [], [], [], []
    opt = p = None
    if cfg.algorithm in ("sgp", "osgp"):
        from .optimizer import SGPOptimizer, SimulatorSGD

        # one float64 parameter holding z; the inner step runs on x with the gradient at z
        p = torch.nn.Parameter(torch.from_numpy(x.copy()))
        opt = SGPOptimizer(
            SimulatorSGD([p], lr=cfg.step_size),
            topo,
            tau=cfg.tau,
            timeout=cfg.timeout,
            delay=cfg.delay,
            update="numerator",
            link_delay={e: cfg.link_delay for e in cfg.slow_links} if cfg.link_delay else None,
        )

    dist.barrier()  # the clock starts when every rank is ready (set-up excluded)
    t0 = time.perf_counter()

    def record(k):
        rec_k.append(k)
        rec_t.append(time.perf_counter() - t0)
        rec_x.append(x.copy())
        rec_w.append(w)
        if opt is not None:  # this rank's share of the total: x + sent - received
            rec_mass.append(opt.mass().numpy().copy())
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
        z = p.detach().numpy().copy() if opt is not None else x / w
        g = _grad(prob, z, rank, rng)
        applied += g
        if opt is not None:
            p.grad = torch.from_numpy(g)
            opt.step()
            x, w = opt.numerator.numpy().copy(), float(opt.weight)
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
    if opt is not None:
        opt.close()
        x, w = opt.numerator.numpy().copy(), float(opt.weight)
        sent, consumed = opt.sent.numpy().copy(), opt.received.numpy().copy()
    record(k_done)
    # global totals after the drain: every message sent has been folded in
    tot = torch.from_numpy(
        np.concatenate([x, [w], applied, sent if opt else np.zeros(d + 1), consumed if opt else np.zeros(d + 1)])
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


def _spawn_entry(rank, cfg, outdir, port):
    run_rank(rank, cfg, outdir, port)


def launch(cfg: RunConfig, outdir: str | os.PathLike[str] | None = None) -> DistributedResult:
    """Spawn ``cfg.nproc`` processes on localhost, run, and collect the results.

    Returns a :class:`DistributedResult`. Raises :class:`DistributedError` if a
    rank fails, dies or times out (the other ranks are terminated: no hang, no
    orphan processes).
    """
    ok, why = available()
    if not ok:
        raise DistributedError(why)

    tmp = tempfile.mkdtemp(prefix="sgpverify-dist-") if outdir is None else str(outdir)
    try:
        port = free_port()
        t0 = time.perf_counter()
        _start(_spawn_entry, (cfg, tmp, port), cfg.nproc)
        wall = time.perf_counter() - t0
        return _collect(cfg, Path(tmp), wall)
    finally:  # on every path: success, a failed or dead rank, a timeout, Ctrl-C
        if outdir is None:
            shutil.rmtree(tmp, ignore_errors=True)


@dataclasses.dataclass(frozen=True)
class DistributedResult:
    """Per-rank records, assembled: ``z[k_index, rank, :]``, times, totals."""

    config: RunConfig
    iterations: np.ndarray
    times: np.ndarray  # (records, n) wall time of each rank's record
    x: np.ndarray  # (records, n, d)
    w: np.ndarray  # (records, n)
    mass: np.ndarray  # (records, n, d+1): x + sent - received per rank
    totals: dict[str, Any]
    wall_seconds: float

    @property
    def z(self) -> np.ndarray:
        return self.x / self.w[:, :, None]

    def consensus(self) -> np.ndarray:
        """(1/n) sum_i ||z_i - xbar||^2 at each record (xbar from the mass incl. in flight)."""
        xbar = self.mass[:, :, : self.x.shape[2]].sum(axis=1) / self.x.shape[1]
        return np.mean(np.sum((self.z - xbar[:, None, :]) ** 2, axis=2), axis=1)

    def to_dict(self) -> dict[str, Any]:
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


def _call_entry(rank, fn, nproc, args, tmp, port, timeout, backend="gloo"):
    import pickle

    if backend == "gloo":
        dist = init_gloo(rank, nproc, port, timeout)
    else:  # a device backend (NCCL): one device a rank
        import datetime

        import torch
        import torch.distributed as dist

        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["MASTER_PORT"] = str(port)
        torch.cuda.set_device(rank % torch.cuda.device_count())
        dist.init_process_group(backend, rank=rank, world_size=nproc, timeout=datetime.timedelta(seconds=timeout))
    try:
        out = fn(rank, nproc, *args)
        (Path(tmp) / f"out{rank}.pkl").write_bytes(pickle.dumps(out))
        dist.barrier()
    finally:
        try:
            dist.destroy_process_group()
        except Exception:  # pragma: no cover - best effort at exit
            pass


def spawn(fn: Any, nproc: int, args: tuple = (), timeout: float = 60.0, backend: str = "gloo") -> list[Any]:
    """Run ``fn(rank, nproc, *args)`` in ``nproc`` processes joined in a process group on
    localhost; return the ranks' return values (picklable), in rank order.

    ``backend`` is "gloo" (CPU, any tensors staged through the host) or a device
    backend such as "nccl" (rank r uses CUDA device ``r mod device_count``).

    ``fn`` must be importable by name (a module-level function). Raises
    :class:`DistributedError` naming the rank that failed or died (the others
    are stopped).

    Examples
    --------
    >>> def hello(rank, world):  # doctest: +SKIP
    ...     return rank
    >>> spawn(hello, 4)  # doctest: +SKIP
    [0, 1, 2, 3]
    """
    import pickle

    from ..validation import check_float, check_int

    check_int("nproc", nproc, min_value=1)
    check_float("timeout", timeout, low=0.0, low_open=True)
    if not isinstance(backend, str) or not backend:
        raise ValueError(f"backend must be a backend name such as 'gloo' or 'nccl', got {backend!r}")
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    ok, why = available()
    if not ok:
        raise DistributedError(why)

    with tempfile.TemporaryDirectory(prefix="sgpverify-spawn-") as tmp:
        _start(_call_entry, (fn, nproc, tuple(args), tmp, free_port(), timeout, backend), nproc)
        return [pickle.loads((Path(tmp) / f"out{r}.pkl").read_bytes()) for r in range(nproc)]


def _quiet(rank: int, logdir: str, entry: Any, *args: Any) -> None:
    """``entry(rank, *args)`` with the rank's standard error (torch's and gloo's C++ log lines)
    going to ``logdir/rank{rank}.log`` instead of the terminal."""
    fd = os.open(os.path.join(logdir, f"rank{rank}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 2)
    os.close(fd)
    entry(rank, *args)


def verbose() -> bool:
    """Whether the ranks' own log lines (torch, gloo) reach the terminal: ``SGPVERIFY_VERBOSE=1``
    (``sgpverify distributed --verbose``); else they are kept out of the one-line errors."""
    return os.environ.get("SGPVERIFY_VERBOSE", "") not in ("", "0")


def _start(entry: Any, args: tuple, nproc: int) -> None:
    """Run ``entry(rank, *args)`` on ``nproc`` processes and wait for them; a rank that dies or
    raises is named in a :class:`DistributedError` (the others are stopped).

    torch's error files and the ranks' logs go to a private temporary directory, removed on
    every path; the ranks' standard error and torch's warnings about stopping them are kept out
    of the terminal unless :func:`verbose`."""
    import logging

    import torch.multiprocessing as mp

    private = tempfile.mkdtemp(prefix="sgpverify-ranks-")
    saved_tempdir, log = tempfile.tempdir, logging.getLogger("torch.multiprocessing.spawn")
    saved_level = log.level
    loud = verbose()
    try:
        tempfile.tempdir = private  # where torch writes its error files
        if not loud:
            log.setLevel(logging.ERROR)
            entry, args = _quiet, (private, entry) + tuple(args)
        _join(mp, entry, args, nproc)
    finally:
        tempfile.tempdir = saved_tempdir
        log.setLevel(saved_level)
        shutil.rmtree(private, ignore_errors=True)


def _join(mp: Any, entry: Any, args: tuple, nproc: int) -> None:
    try:
        mp.start_processes(entry, args=args, nprocs=nproc, join=True, start_method=start_method())
    except mp.ProcessExitedException as exc:
        raise DistributedError(
            f"rank {exc.error_index} died (exit code {exc.exit_code}); the other ranks were stopped"
        ) from None
    except mp.ProcessRaisedException as exc:
        last = str(exc).strip().splitlines()[-1]
        raise DistributedError(f"rank {exc.error_index} failed: {last}; the other ranks were stopped") from None


def start_method() -> str:
    """How the ranks are started: ``fork`` where the platform has it (no
    re-import of torch in every child: seconds saved per launch), else ``spawn``.
    A parent that has initialised CUDA gets ``spawn``. The environment variable
    ``SGPVERIFY_START_METHOD`` overrides it."""
    import multiprocessing

    env = os.environ.get("SGPVERIFY_START_METHOD")
    methods = multiprocessing.get_all_start_methods()
    if env:
        if env not in methods:
            raise ValueError(f"SGPVERIFY_START_METHOD must be one of {methods}, got {env!r}")
        return env
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "spawn"  # CUDA does not survive a fork
    return "fork" if "fork" in methods else "spawn"
