"""The GPU checks of SGPOptimizer in one command: the device tests, then steps/s SGP vs AllReduce.

Usage::

    python benchmarks/gpu_check.py            # needs CUDA; under five minutes on one GPU
    python benchmarks/gpu_check.py --json     # the throughput figures as one JSON object
    python benchmarks/gpu_check.py --cpu      # the same script on the CPU (to check the script itself)
    python benchmarks/gpu_check.py --no-tests # the throughput figure only

1. ``pytest tests/test_distributed_optimizer.py -k cuda``: the device-parametrised tests (plain SGD
   float64 bit-equal to the simulator with the parameters, x and w on the GPU, messages staged
   through the host by gloo). The ranks are started with ``spawn`` (CUDA does not survive a fork).
2. Throughput: the ranks train an MLP (4 x 1024 hidden units, about 3.2 M parameters, batch 64)
   on the GPU for 30 timed steps after 5 warm-up steps, AllReduce SGD (one bucketed all_reduce of
   the gradients a step) against SGP (``SGPOptimizer``, exponential graph), in the same run.
   With two or more GPUs the ranks use NCCL, one GPU each (up to 8 ranks); with one GPU, 4 ranks
   share it and use gloo, which stages every message through host memory.

Exit status: 0 the checks passed, 1 a check failed, 3 no CUDA device (nothing was run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's sgpverify, not another installed copy
NO_GPU = 3


def _throughput_rank(rank, world, device, alg, steps, warmup):
    import torch

    from sgpverify import graphs
    from sgpverify.distributed import SGPOptimizer
    from sgpverify.distributed.transport import average_gradients

    dev = torch.device(device if device == "cpu" else f"cuda:{torch.cuda.current_device()}")
    torch.manual_seed(0)
    layers = [torch.nn.Linear(256, 1024), torch.nn.ReLU()]
    for _ in range(3):
        layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(1024, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True)
    if alg == "sgp":
        opt = SGPOptimizer(opt, graphs.exponential(world), timeout=120)
    X = torch.randn(64, 256, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    import torch.distributed as dist

    def one():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(X), y).backward()
        if alg == "allreduce":
            average_gradients(model.parameters(), world)
        opt.step()

    for _ in range(warmup):
        one()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        one()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    if alg == "sgp":
        opt.close()
    return {"steps_per_second": steps / dt, "params": sum(p.numel() for p in model.parameters())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the throughput figures as one JSON object")
    ap.add_argument("--cpu", action="store_true", help="run on the CPU (checks the script, not a GPU)")
    ap.add_argument("--steps", type=int, default=30, help="timed steps per algorithm (default 30)")
    ap.add_argument("--no-tests", action="store_true", help="the throughput figure only")
    a = ap.parse_args(argv)
    os.environ["SGPVERIFY_START_METHOD"] = "spawn"  # CUDA does not survive a fork
    import torch

    has_cuda = torch.cuda.is_available()
    if not has_cuda and not a.cpu:
        print(
            f"no CUDA device (torch {torch.__version__}, torch.cuda.is_available() is False): "
            f"the GPU checks were NOT run. Exit status {NO_GPU}."
        )
        return NO_GPU
    device = "cpu" if a.cpu else "cuda"
    ngpu = torch.cuda.device_count() if has_cuda else 0
    print(
        f"device: {device}" + (f" ({ngpu} x {torch.cuda.get_device_name(0)})" if device == "cuda" else " (NOT a GPU)")
    )
    t0 = time.perf_counter()
    # 1. the device tests
    k = "cuda" if device == "cuda" else "cpu and bit_equal"
    cmd = [sys.executable, "-m", "pytest", "-q", "tests/test_distributed_optimizer.py", "-k", k]
    if not a.no_tests:
        print("+", " ".join(cmd), flush=True)
    rc = 0 if a.no_tests else subprocess.run(cmd, cwd=ROOT, env=dict(os.environ), timeout=240).returncode
    if rc != 0:
        print(f"device tests failed (pytest exit status {rc})")
        return 1
    # 2. throughput, SGP against AllReduce, in the same run
    from sgpverify.distributed import spawn

    # two or more GPUs: NCCL, one GPU a rank; else 4 ranks share the device over gloo (host staging)
    nccl = device == "cuda" and ngpu >= 2
    world, backend = (min(ngpu, 8), "nccl") if nccl else (4, "gloo")
    res = {}
    for alg in ("allreduce", "sgp"):
        outs = spawn(_throughput_rank, world, (device, alg, a.steps, 5), timeout=240, backend=backend)
        res[alg] = min(o["steps_per_second"] for o in outs)  # the slowest rank sets the pace
    params = outs[0]["params"]
    ratio = res["sgp"] / res["allreduce"]
    summary = {
        "device": device,
        "gpus": ngpu,
        "backend": backend,
        "world": world,
        "params": params,
        "steps_per_second": res,
        "sgp_over_allreduce": ratio,
        "seconds": time.perf_counter() - t0,
    }
    if a.json:
        print(json.dumps(summary))
    else:
        print(f"{world} ranks, {backend}, MLP of {params} parameters, batch 64, {a.steps} timed steps:")
        for alg, v in res.items():
            print(f"  {alg:<10} {v:8.1f} steps/s (slowest rank)")
        print(f"  SGP / AllReduce: {ratio:.2f}x; total {summary['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
