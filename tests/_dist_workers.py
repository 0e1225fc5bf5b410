"""Per-rank bodies of the SGPOptimizer tests (run by ``sgpverify.distributed.spawn``, one process a rank).

Each returns plain numpy values for the test process to compare; module-level so that they can be
started by ``spawn`` as well as by ``fork``.
"""

import numpy as np
import torch

from sgpverify import graphs, problems
from sgpverify.distributed import DistributedError, SGPOptimizer, SimulatorSGD


def problem_run(rank, world, spec):
    """SGP on a test problem with a given inner optimizer: z of this rank before every step and
    after the last, its mass share (x, w + sent - received) after every step, and the gradients.

    spec keys: iters, seed, step_size, tau, delay, update, inner ("simulator-sgd", "sgd", "adam"),
    param_dtype, state_dtype, device, topology, x0_spread, link_delay, dim."""
    iters, seed, lr = spec["iters"], spec["seed"], spec["step_size"]
    dim = spec.get("dim", 10)
    prob = problems.QuadraticCosine(world, dim, seed=seed)
    topo = graphs.by_name(spec.get("topology", "exponential"), world, seed=seed)
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])  # the simulator's stream
    spread = spec.get("x0_spread", 1.0)
    x0 = np.full(dim, 1.0) + spread * (rank - (world - 1) / 2.0)
    pdt = getattr(torch, spec.get("param_dtype", "float64"))
    sdt = spec.get("state_dtype")
    dev = torch.device(spec.get("device", "cpu"))
    p = torch.nn.Parameter(torch.tensor(x0, dtype=pdt, device=dev))
    inner = {
        "simulator-sgd": lambda: SimulatorSGD([p], lr=lr),
        "sgd": lambda: torch.optim.SGD([p], lr=lr),
        "adam": lambda: torch.optim.Adam([p], lr=lr),
    }[spec.get("inner", "simulator-sgd")]()
    slow = spec.get("link_delay")
    opt = SGPOptimizer(
        inner,
        topo,
        tau=spec.get("tau", 0),
        delay=spec.get("delay", "asap"),
        update=spec.get("update", "numerator"),
        dtype=None if sdt is None else getattr(torch, sdt),
        link_delay=None if slow is None else {(rank, j): slow for j in range(world) if rank == 1 and j != 1},
    )
    zs, masses, grads, nodes = [], [], [], []
    for _ in range(iters):
        z = p.detach().to("cpu", torch.float64).numpy().copy()
        zs.append(z)
        g = np.asarray(prob.grad(np.tile(z, (world, 1)), rng), dtype=float)[rank]
        grads.append(g)
        p.grad = torch.from_numpy(g).to(dev, pdt)
        opt.step()
        masses.append(opt.mass().to("cpu", torch.float64).numpy().copy())
        nodes.append(np.append(opt.numerator.to("cpu", torch.float64).numpy(), float(opt.weight)))
    zs.append(p.detach().to("cpu", torch.float64).numpy().copy())
    opt.close()
    after = opt.mass().to("cpu", torch.float64).numpy().copy()
    return {
        "z": np.array(zs),
        "mass": np.array(masses),
        "nodes": np.array(nodes),
        "grads": np.array(grads),
        "mass_after_flush": after,
        "x_after_flush": opt.numerator.to("cpu", torch.float64).numpy().copy(),
        "w_after_flush": float(opt.weight),
        "is_optimizer": isinstance(opt, torch.optim.Optimizer),
        "x_device": str(opt.numerator.device),
        "x_dtype": str(opt.numerator.dtype),
    }


def problem_runs(rank, world, specs):
    """:func:`problem_run` for each spec in turn, in the same processes (one start-up for all)."""
    return {name: problem_run(rank, world, spec) for name, spec in specs.items()}


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.Linear(16, 3)
        )

    def forward(self, x):
        return self.body(x)


def _data(rank, n=64):
    g = torch.Generator().manual_seed(100 + rank)
    X = torch.randn(n, 8, generator=g, dtype=torch.float64)
    y = (X[:, 0] > 0).long() + (X[:, 1] > 0.5).long()
    return X, y


def training_loop(rank, world, phase, steps, ckpt, tau=0, delay="fixed", restore="all", gossip_buffers=True):
    """The standard torch training loop with SGP (the two-line change), an lr scheduler and a
    checkpoint. phase "full": ``steps`` steps, a checkpoint (state_dict) at steps // 2, the rest;
    "first": the first half, then save to ``ckpt`` + rank; "resume": new processes load the
    checkpoint (``restore``: "all", or "model" only as a negative control) and run the second half.
    Returns the final parameters and buffers, the losses and the lr seen."""
    torch.manual_seed(0)  # the same initial model on every rank
    model = _Net().double()
    X, y = _data(rank)
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)
    opt = SGPOptimizer(
        opt, graphs.exponential(world), tau=tau, delay=delay, buffers=model.buffers() if gossip_buffers else ()
    )
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
    half = steps // 2
    start, stop = (half, steps) if phase == "resume" else (0, half if phase == "first" else steps)
    if phase == "resume":
        sd = torch.load(f"{ckpt}{rank}.pt", weights_only=False)
        model.load_state_dict(sd["model"])
        if restore == "all":
            opt.load_state_dict(sd["opt"])
            sched.load_state_dict(sd["sched"])
    losses, lrs = [], []
    for k in range(start, stop):
        if k == half and phase == "full":
            opt.state_dict()  # the checkpoint of the uninterrupted run (it flushes the messages in flight)
        i = torch.arange(8) + 8 * (k % 8)
        opt.zero_grad()
        loss = loss_fn(model(X[i]), y[i])
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss))
        lrs.append(opt.param_groups[0]["lr"])
    if phase == "first":
        sd = {"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict()}
        torch.save(sd, f"{ckpt}{rank}.pt")
    opt.close()
    flat = torch.cat([t.detach().reshape(-1) for t in [*model.parameters(), *model.buffers()] if t.is_floating_point()])
    return {
        "flat": flat.numpy().copy(),
        "losses": losses,
        "lrs": lrs,
        "running_mean": model.body[1].running_mean.numpy().copy(),
        "is_optimizer": isinstance(opt, torch.optim.Optimizer),
        "inner_lr": opt.optim.param_groups[0]["lr"],
    }


def bad_input(rank, world):
    """The errors of SGPOptimizer's bad inputs, each as (type name, message)."""
    p = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    sgd = torch.optim.SGD([p], lr=0.1)
    cases = {
        "n != world": lambda: SGPOptimizer(sgd, graphs.exponential(world + 1)),
        "tau = -1": lambda: SGPOptimizer(sgd, graphs.exponential(world), tau=-1),
        "tau = 1.5": lambda: SGPOptimizer(sgd, graphs.exponential(world), tau=1.5),
        "not an optimizer": lambda: SGPOptimizer([p], graphs.exponential(world)),
        "not a topology": lambda: SGPOptimizer(sgd, "exponential"),
        "delay": lambda: SGPOptimizer(sgd, graphs.exponential(world), delay="late"),
        "timeout": lambda: SGPOptimizer(sgd, graphs.exponential(world), timeout=0),
        "dtype": lambda: SGPOptimizer(sgd, graphs.exponential(world), dtype=torch.float16),
        "numerator float64 state on float32": lambda: SGPOptimizer(
            torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=0.1),
            graphs.exponential(world),
            update="numerator",
            dtype=torch.float64,
        ),
    }
    out = {}
    for name, make in cases.items():
        try:
            make()
            out[name] = None
        except Exception as exc:  # the test checks the type and the message
            out[name] = (type(exc).__name__, str(exc))
    return out


def silent_rank(rank, world, silent, timeout):
    """Rank ``silent`` never steps; the others must raise DistributedError naming it."""
    p = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    opt = SGPOptimizer(torch.optim.SGD([p], lr=0.1), graphs.exponential(world), timeout=timeout)
    if rank == silent:
        return "silent"
    try:
        for _ in range(3):
            p.grad = torch.ones(3, dtype=torch.float64)
            opt.step()
    except DistributedError as exc:
        return str(exc)
    return "no error"


def grad_scaler(rank, world, steps):
    """torch.amp.GradScaler around SGPOptimizer; rank 1's gradients are inf at step 1 (the scaler
    skips its inner step there, the gossip goes on). Returns the scale history and z."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = SGPOptimizer(torch.optim.SGD(model.parameters(), lr=0.05), graphs.exponential(world), timeout=20)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8)
    X = torch.randn(16, 4, generator=torch.Generator().manual_seed(rank))
    scales = []
    for k in range(steps):
        opt.zero_grad()
        loss = ((model(X) - 1.0) ** 2).mean()
        if rank == 1 and k == 1:
            loss = loss * float("inf")
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    opt.close()
    z = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return {"scales": scales, "k": opt.k, "z": z.numpy().copy(), "w": float(opt.weight)}


def sgp_until_error(rank, world, port, tau, timeout, queue):
    """SGPOptimizer steps until an error: reports ("started", rank) after 50 steps, then
    ("error", rank, time, message) when a peer dies or freezes, and exits with status 1."""
    import time

    import torch

    from sgpverify import graphs
    from sgpverify.distributed import SGPOptimizer
    from sgpverify.distributed.transport import init_gloo

    init_gloo(rank, world, port, 600.0)  # gloo's own timeout far beyond the test's: the exit must not wait for it
    p = torch.nn.Parameter(torch.ones(4))
    opt = SGPOptimizer(torch.optim.SGD([p], lr=0.01), graphs.exponential(world), tau=tau, timeout=timeout)
    try:
        for k in range(10**7):
            opt.zero_grad()
            (p**2).sum().backward()
            opt.step()
            if k == 50:
                queue.put(("started", rank))
    except Exception as exc:
        queue.put(("error", rank, time.time(), f"{type(exc).__name__}: {exc}"))
        raise SystemExit(1) from None
