"""The paper's experiment in miniature, on real data: scikit-learn's digits, a small CNN, 4 ranks.

AllReduce SGD, SGP, 1-OSGP and D-PSGD train the same CNN on IID shards of
scikit-learn's ``load_digits`` (1,797 8x8 images shipped inside the package:
nothing is downloaded) with the paper's recipe scaled down: Nesterov momentum
0.9, weight decay, the learning rate scaled linearly with the number of nodes
after a warm-up, and step decays at 1/3, 2/3 and 8/9 of the run (the paper's 30,
60 and 80 of 90 epochs). Each scenario runs with no faults and with an injected
straggler (a sleep per step on rank 0) and slow links (the messages out of rank
1 held back). :func:`paper_study` returns the test accuracy of every rank's
model and of the averaged model, the gap to AllReduce, the wall-clock time to
a target accuracy and its ratio to AllReduce; :func:`paper_figure` draws
accuracy against wall-clock time. Needs the ``distributed`` and ``study``
extras (torch, scikit-learn).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from .. import graphs
from ..mixing import metropolis_matrix
from ..validation import check_choice, check_float, check_int
from .config import DistributedError, available
from .transport import average_gradients

__all__ = ["PAPER_ALGORITHMS", "PAPER_REFERENCE", "paper_study", "paper_figure", "paper_table"]

PAPER_ALGORITHMS = ("allreduce", "sgp", "osgp", "dpsgd")

#: The paper's numbers (ResNet-50 on ImageNet, 10 Gbps Ethernet) the miniature is set beside.
PAPER_REFERENCE = {
    "accuracy_gap": "SGP within 1.2% top-1 of AllReduce SGD at 32 nodes (256 GPUs)",
    "speed": "up to 3x faster than AllReduce SGD; 1.6 h against more than 5 h for 90 epochs at 32 nodes",
}


def _digits(seed: int):
    """Train/test split (80/20, stratified, fixed by ``seed``) of the digits, scaled to [0, 1]."""
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        raise DistributedError(
            "the paper study needs scikit-learn: pip install 'sgpverify[study]' (its load_digits data set)"
        ) from None
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    return train_test_split(X, y.astype(np.int64), test_size=0.2, random_state=seed, stratify=y)


def _cnn():
    import torch.nn as nn

    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 4x4
        nn.Conv2d(16, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 2x2
        nn.Flatten(),
        nn.Linear(128, 10),
    )


def _flat(model):
    import torch

    ts = [p.detach() for p in model.parameters()] + [b for b in model.buffers() if b.is_floating_point()]
    return torch.cat([t.reshape(-1) for t in ts])


def _load_flat(model, flat):
    import torch

    ts = list(model.parameters()) + [b for b in model.buffers() if b.is_floating_point()]
    off = 0
    with torch.no_grad():
        for t in ts:
            m = t.numel()
            t.copy_(torch.as_tensor(flat[off : off + m]).view_as(t))
            off += m


def _dpsgd_mix(dist, torch, flat, topo, k, rank):
    """D-PSGD's gossip: ``x_i <- sum_j W_ij x_j`` with Metropolis weights (symmetric exchange)."""
    W = metropolis_matrix(topo, k)
    row = W[[rank], :]
    idx, vals = row.indices.tolist(), row.data.tolist()
    nb = [j for j in idx if j != rank]
    bufs = {j: torch.empty_like(flat) for j in nb}
    works = [dist.irecv(bufs[j], src=j, tag=k) for j in nb] + [dist.isend(flat, dst=j, tag=k) for j in nb]
    for w in works:
        w.wait()
    out = dict(zip(idx, vals))[rank] * flat
    for j in sorted(nb):
        out = out + dict(zip(idx, vals))[j] * bufs[j]
    return out


def _paper_rank(rank: int, world: int, setup: dict[str, Any]) -> list[dict[str, Any]]:
    """Every (scenario, algorithm) run of the study on this rank: snapshots of its model (flat
    parameters and buffers) with their wall times, taken every ``eval_every`` steps."""
    import torch
    import torch.distributed as dist

    from .optimizer import SGPOptimizer

    Xtr, _, ytr, _ = _digits(setup["seed"])
    shard = np.arange(len(ytr))[rank::world]  # IID shards (the paper's data are IID across nodes)
    X, y = torch.from_numpy(Xtr[shard]), torch.from_numpy(ytr[shard])
    batch, epochs = setup["batch"], setup["epochs"]
    steps_per_epoch = len(y) // batch
    total = steps_per_epoch * epochs
    warm = steps_per_epoch * setup["warmup_epochs"]
    topo = graphs.exponential(world)
    out = []
    for scenario in setup["scenarios"]:
        faults = scenario == "straggler+slow-link"
        slow_sleep = setup["slow_sleep"] if faults else 0.0
        link_delay = setup["link_delay"] if faults else 0.0
        for alg in setup["algorithms"]:
            torch.manual_seed(setup["seed"])  # the same initial model on every rank
            model = _cnn()
            lr = setup["base_lr"] * world  # the linear scaling rule, reached after the warm-up
            opt = torch.optim.SGD(
                model.parameters(), lr=lr, momentum=0.9, nesterov=True, weight_decay=setup["weight_decay"]
            )
            if alg in ("sgp", "osgp"):
                slow = {(1, j): link_delay for j in range(world) if j != 1} if link_delay and rank == 1 else None
                opt = SGPOptimizer(
                    opt,
                    topo,
                    tau=1 if alg == "osgp" else 0,
                    delay=setup["delay"] if alg == "osgp" else "asap",
                    buffers=model.buffers(),
                    timeout=setup["timeout"],
                    link_delay=slow,
                )

            def factor(t, warm=warm, total=total, world=world):
                if t < warm:  # warm-up: from the one-node rate to the scaled one
                    return (1.0 + (world - 1.0) * t / warm) / world
                return 0.1 ** sum(t >= total * f for f in (1 / 3, 2 / 3, 8 / 9))

            sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
            loss_fn = torch.nn.CrossEntropyLoss()
            gen = torch.Generator().manual_seed(setup["seed"] * 1000 + rank)
            snaps = []
            dist.barrier()
            t0 = time.perf_counter()
            for k in range(total):
                if k % setup["eval_every"] == 0:
                    snaps.append((k, time.perf_counter() - t0, _flat(model).numpy().copy()))
                if k % steps_per_epoch == 0:
                    perm = torch.randperm(len(y), generator=gen)
                i = perm[(k % steps_per_epoch) * batch : (k % steps_per_epoch + 1) * batch]
                if slow_sleep and rank == 0:
                    time.sleep(slow_sleep)  # the straggler
                if link_delay and alg in ("allreduce", "dpsgd"):
                    time.sleep(link_delay)  # a synchronous step waits for its slowest link
                opt.zero_grad()
                loss_fn(model(X[i]), y[i]).backward()
                if alg == "allreduce":
                    average_gradients(model.parameters(), world)
                opt.step()
                if alg == "dpsgd":
                    _load_flat(model, _dpsgd_mix(dist, torch, _flat(model), topo, k, rank))
                sched.step()
            if alg in ("sgp", "osgp"):
                opt.close()  # fold in the messages in flight
            snaps.append((total, time.perf_counter() - t0, _flat(model).numpy().copy()))
            out.append({"scenario": scenario, "algorithm": alg, "snapshots": snaps})
            dist.barrier()
    return out


def _accuracy(model, flat, X, y) -> float:
    import torch

    _load_flat(model, flat)
    model.eval()
    with torch.no_grad():
        return float((model(X).argmax(1) == y).float().mean())


def paper_study(
    nproc: int = 4,
    epochs: int = 12,
    batch: int = 16,
    base_lr: float = 0.05,
    weight_decay: float = 1e-4,
    warmup_epochs: int = 2,
    slow_sleep: float = 0.01,
    link_delay: float = 0.02,
    target: float = 0.97,
    eval_every: int | None = None,
    scenarios: tuple[str, ...] = ("no faults", "straggler+slow-link"),
    algorithms: tuple[str, ...] = PAPER_ALGORITHMS,
    seed: int = 0,
    timeout: float = 120.0,
    delay: str = "asap",
) -> dict[str, Any]:
    """Run the miniature of the paper's experiment and evaluate it.

    Parameters
    ----------
    nproc : int
        Ranks (gloo, CPU), one per node.
    epochs, batch : int
        Epochs over each rank's shard; batch size per rank.
    base_lr : float
        The one-node learning rate: after ``warmup_epochs`` it is scaled to
        ``base_lr * nproc`` (the linear scaling rule of the paper's recipe).
    weight_decay : float
    slow_sleep, link_delay : float
        The faults of the "straggler+slow-link" scenario: seconds of sleep per
        step on rank 0; seconds each message out of rank 1 is held back
        (AllReduce and D-PSGD, whose steps are synchronous, wait that long
        every step).
    target : float
        The test accuracy of the averaged model that "time to target" measures.
    eval_every : int, optional
        Steps between snapshots (default: one a half epoch).
    delay : {"asap", "fixed"}
        1-OSGP's delay mode (:class:`SGPOptimizer`'s ``delay``): "asap", the
        paper's, folds a message in once it has arrived, so its accuracy
        depends on when messages arrive (on a loaded machine, on the load);
        "fixed" folds it exactly one step after it was sent: reproducible.

    Returns
    -------
    dict
        ``rows``: one per (scenario, algorithm) with ``final_accuracy`` (of
        every rank's model), ``averaged_accuracy``, ``gap_to_allreduce``
        (AllReduce's averaged accuracy minus this one, points of accuracy),
        ``seconds``, ``time_to_target`` (None if not reached) and
        ``ratio_to_allreduce`` (time to target, AllReduce's over this one's:
        > 1 is faster); ``curves``: per row, wall time and averaged-model
        accuracy at each snapshot; ``setup``.
    """
    check_int("nproc", nproc, min_value=2)
    check_int("epochs", epochs, min_value=1)
    check_int("batch", batch, min_value=1)
    check_float("base_lr", base_lr, low=0.0, low_open=True)
    check_float("weight_decay", weight_decay, low=0.0)
    check_int("warmup_epochs", warmup_epochs, min_value=0)
    check_float("slow_sleep", slow_sleep, low=0.0)
    check_float("link_delay", link_delay, low=0.0)
    check_float("target", target, low=0.0, high=1.0)
    check_choice("delay", delay, ("asap", "fixed"))
    for a in algorithms:
        if a not in PAPER_ALGORITHMS:
            raise ValueError(f"algorithms must be among {PAPER_ALGORITHMS}, got {a!r}")
    for s in scenarios:
        if s not in ("no faults", "straggler+slow-link"):
            raise ValueError(f"scenarios must be among ('no faults', 'straggler+slow-link'), got {s!r}")
    ok, why = available()
    if not ok:
        raise DistributedError(why)
    import torch

    from .runner import spawn

    Xtr, Xte, ytr, yte = _digits(seed)
    per_rank = len(ytr) // nproc
    if per_rank < batch:
        raise ValueError(f"batch must be <= the shard size {per_rank}, got {batch}")
    spe = per_rank // batch
    if eval_every is None:
        eval_every = max(1, spe // 2)
    check_int("eval_every", eval_every, min_value=1)
    setup = {
        "nproc": nproc,
        "epochs": epochs,
        "batch": batch,
        "base_lr": base_lr,
        "weight_decay": weight_decay,
        "warmup_epochs": warmup_epochs,
        "slow_sleep": slow_sleep,
        "link_delay": link_delay,
        "target": target,
        "eval_every": eval_every,
        "scenarios": list(scenarios),
        "algorithms": list(algorithms),
        "seed": seed,
        "timeout": timeout,
        "delay": delay,
        "train_size": len(ytr),
        "test_size": len(yte),
        "steps": spe * epochs,
    }
    torch.set_num_threads(1)
    outs = spawn(_paper_rank, nproc, (setup,), timeout=timeout)
    model = _cnn()
    X, y = torch.from_numpy(Xte), torch.from_numpy(yte)
    rows, curves = [], {}
    for j, run in enumerate(outs[0]):
        per_rank_snaps = [o[j]["snapshots"] for o in outs]
        times = np.array([[s[1] for s in snaps] for snaps in per_rank_snaps]).max(axis=0)  # all ranks there
        avg_acc = [
            _accuracy(model, np.mean([snaps[i][2] for snaps in per_rank_snaps], axis=0), X, y)
            for i in range(len(times))
        ]
        final = [_accuracy(model, snaps[-1][2], X, y) for snaps in per_rank_snaps]
        hit = [i for i, a in enumerate(avg_acc) if a >= target]
        rows.append(
            {
                "scenario": run["scenario"],
                "algorithm": run["algorithm"],
                "final_accuracy": final,
                "averaged_accuracy": avg_acc[-1],
                "seconds": float(times[-1]),
                "time_to_target": float(times[hit[0]]) if hit else None,
            }
        )
        curves[f"{run['scenario']}/{run['algorithm']}"] = {"seconds": times.tolist(), "accuracy": avg_acc}
    for r in rows:
        ref = next((q for q in rows if q["scenario"] == r["scenario"] and q["algorithm"] == "allreduce"), None)
        r["gap_to_allreduce"] = None if ref is None else ref["averaged_accuracy"] - r["averaged_accuracy"]
        ok_t = ref is not None and ref["time_to_target"] is not None and r["time_to_target"] is not None
        r["ratio_to_allreduce"] = ref["time_to_target"] / r["time_to_target"] if ok_t else None
    return {"rows": rows, "curves": curves, "setup": setup, "paper": PAPER_REFERENCE}


def paper_table(res: dict[str, Any]) -> str:
    """The study's table as Markdown (one row per scenario and algorithm)."""

    def pct(v):
        return "-" if v is None else f"{100 * v:.1f}"

    def sec(v):
        return "not reached" if v is None else f"{v:.2f}"

    lines = [
        f"| scenario | algorithm | per-rank accuracy % (min-max) | averaged model % | gap to AllReduce (points) "
        f"| time to {100 * res['setup']['target']:.0f}% (s) | speed-up vs AllReduce | total (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        ratio = "-" if r["ratio_to_allreduce"] is None else f"{r['ratio_to_allreduce']:.2f}x"
        gap = "-" if r["gap_to_allreduce"] is None else f"{100 * r['gap_to_allreduce']:+.1f}"
        lines.append(
            f"| {r['scenario']} | {r['algorithm']} | {pct(min(r['final_accuracy']))}-{pct(max(r['final_accuracy']))} "
            f"| {pct(r['averaged_accuracy'])} | {gap} | {sec(r['time_to_target'])} | {ratio} | {r['seconds']:.2f} |"
        )
    return "\n".join(lines)


def paper_figure(res: dict[str, Any], path: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """Averaged-model test accuracy against wall-clock time, one panel a scenario; saved to ``path``."""
    from ..plots import pyplot, save

    plt = pyplot()
    scen = list(dict.fromkeys(r["scenario"] for r in res["rows"]))
    fig, axes = plt.subplots(1, len(scen), figsize=(5 * len(scen), 3.8), squeeze=False, sharey=True)
    target = res["setup"]["target"]
    for ax, s in zip(axes[0], scen):
        for r in res["rows"]:
            if r["scenario"] == s:
                c = res["curves"][f"{s}/{r['algorithm']}"]
                ax.plot(c["seconds"], c["accuracy"], marker=".", label=r["algorithm"])
        ax.axhline(target, color="k", lw=1.0, ls="--", label=f"target {target:.0%}")
        ax.set_title(s)
        ax.set_xlabel("wall-clock time (s)")
        ax.set_ylim(0.8, 1.0)  # the approach to the target; the first evaluations sit lower
    axes[0][0].set_ylabel("test accuracy, averaged model")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save(fig, path)
    return path
