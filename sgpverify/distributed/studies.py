"""Studies on real processes: an MLP trained on non-IID shards, and wall clock under stragglers."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import graphs, problems
from ..validation import check_choice
from .config import DistributedError, RunConfig, available
from .runner import launch, start_method
from .transport import free_port, init_gloo

if TYPE_CHECKING:
    from .runner import DistributedResult

__all__ = ["train_mlp", "straggler_study"]


def _mlp_rank(rank, nproc, algorithm, steps, lr, seed, outdir, port, tau=1, timeout=60.0):
    """Train a small MLP on this rank's non-IID shard (label-sorted split); write accuracy."""
    import torch

    dist = init_gloo(rank, nproc, port, timeout)
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
    from .optimizer import SGPOptimizer

    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True)
    if algorithm != "allreduce":  # the two-line change
        opt = SGPOptimizer(opt, graphs.exponential(nproc), tau=tau if algorithm == "osgp" else 0, timeout=timeout)
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
        opt.close()  # fold in the messages still in flight
    with torch.no_grad():
        acc = float((model(Xall).argmax(1) == yall).float().mean())
    (Path(outdir) / f"acc{rank}.json").write_text(json.dumps({"accuracy": acc}))
    dist.barrier()
    dist.destroy_process_group()


def _mlp_entry(rank, nproc, algorithm, steps, lr, seed, outdir, port):
    _mlp_rank(rank, nproc, algorithm, steps, lr, seed, outdir, port)


def train_mlp(nproc: int = 4, algorithm: str = "sgp", steps: int = 300, lr: float = 0.05, seed: int = 0) -> list[float]:
    """Train an MLP with :class:`SGPOptimizer` around Nesterov SGD (or AllReduce SGD) on non-IID shards;
    return the accuracy of every rank's model on the whole data set."""
    ok, why = available()
    if not ok:
        raise DistributedError(why)
    import torch.multiprocessing as mp

    check_choice("algorithm", algorithm, ("sgp", "osgp", "allreduce"))
    with tempfile.TemporaryDirectory(prefix="sgpverify-mlp-") as tmp:
        try:
            mp.start_processes(
                _mlp_entry,
                args=(nproc, algorithm, steps, lr, seed, tmp, free_port()),
                nprocs=nproc,
                join=True,
                start_method=start_method(),
            )
        except (mp.ProcessExitedException, mp.ProcessRaisedException) as exc:
            raise DistributedError(f"rank {exc.error_index} failed: {str(exc).strip().splitlines()[-1]}") from None
        return [json.loads((Path(tmp) / f"acc{r}.json").read_text())["accuracy"] for r in range(nproc)]


def _xbar_over_time(res: DistributedResult) -> tuple[np.ndarray, np.ndarray]:
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
    nproc: int = 4,
    iters: int = 200,
    slow_sleep: float = 0.02,
    link_delay: float = 0.02,
    tau: int = 2,
    target_ratio: float = 0.05,
    seed: int = 0,
    topology: str = "exponential",
    problem: str = "quadratic-cosine",
    dim: int = 10,
    step_size: float = 0.05,
    timeout: float = 120.0,
) -> dict[str, Any]:
    """Wall-clock comparison under a slow node (sleep per step on rank 0) and slow
    links (delay per message on the links out of rank 1).

    Returns ``{"rows": [{"algorithm", "time_to_target", "iters_per_second", "final_value", ...}],
    "curves": {algorithm: (times, values)}, "grad_curves": {algorithm: (times, ||grad f(xbar)||^2)},
    "target": ...}``. The target is
    ``target_ratio * ||grad f(x0)||^2``; ``time_to_target`` is the first wall time at
    which ``||grad f(xbar(t))||^2 <= target``, with ``xbar(t)`` the average of every
    node's latest numerator plus the mass in flight (None if never reached).
    """
    prob = problems.by_name(problem, nproc, dim, seed=seed)
    x0 = np.full(dim, 1.0)
    target = target_ratio * float(np.sum(prob.full_grad(x0) ** 2))
    slow_links = tuple((1, j) for j in range(nproc) if j != 1)
    rows, curves, grad_curves = [], {}, {}
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
        grad_curves[alg] = (times.tolist(), g2.tolist())
    return {
        "rows": rows,
        "curves": curves,
        "grad_curves": grad_curves,
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
