"""Sweeps that fan out: wall times of `verify` and `run` on one core, two local processes and a dask
LocalCluster (2 worker processes, 1 thread each), in one run, with the ratios to one core.

Each line also gives the CPU seconds of the command and its local worker processes (the parallel
overhead is their excess over --workers 1) and the 1-minute load average before and after: on a shared
machine other jobs take cores, and wall-time ratios mean little when the load exceeds the core count.

    python benchmarks/bench_sweep.py                    # about 12 minutes on 2 cores
    python benchmarks/bench_sweep.py --no-cluster       # without dask (the cluster extra)
    python benchmarks/bench_sweep.py --run experiments/delays.toml --verify-args="--quick"

Every run uses --no-cache (nothing is loaded from a previous run) and checks that the outputs are the
same (verify: the table; run: the cached result file, byte for byte).
"""

import argparse
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(args, cwd=None):
    """Wall time, CPU seconds of the command and its local workers (not of dask workers), process."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "sgpverify.cli", *args], capture_output=True, text=True, cwd=cwd)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return time.perf_counter() - t0, cpu, proc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verify-args", default="--quick --controls", help="verify options (default: --quick --controls)")
    ap.add_argument("--run", default="experiments/delays.toml", metavar="CONFIG", help="run config (default delays)")
    ap.add_argument("--no-cluster", action="store_true", help="skip the dask LocalCluster runs")
    a = ap.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}, cpus {os.cpu_count()}")
    execs = [("workers 1", ["--workers", "1"]), ("workers 2", ["--workers", "2"])]
    cluster = None
    if not a.no_cluster:
        from distributed import LocalCluster

        cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None)
        execs.append(("LocalCluster 2x1", ["--scheduler", cluster.scheduler_address]))
    ok = True
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for what in ("verify", "run"):
                times, outs = {}, {}
                for label, ex in execs:
                    out = Path(tmp) / f"{what}-{label.replace(' ', '_')}"
                    if what == "verify":
                        args = ["verify", *shlex.split(a.verify_args), "--no-progress", "--no-cache", "--out", str(out)]
                    else:
                        args = ["run", a.run, "--no-progress", "--cache", str(out / "cache"), "--out", str(out / "f")]
                    load0 = os.getloadavg()[0]
                    t, cpu, proc = timed(args + ex)
                    times[label] = t
                    if what == "verify":
                        outs[label] = proc.stdout.splitlines()[:-1]  # the table (the last line has the time)
                        good = proc.returncode in (0, 1, 4)
                    else:
                        outs[label] = sorted(p.read_bytes() for p in (out / "cache").glob("*.json"))
                        good = proc.returncode == 0 and outs[label]
                    if not good:
                        print(f"{what} {label}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
                        ok = False
                    cpu_text = f"CPU {cpu:.1f} s" if "scheduler" not in ex[0] else "CPU in the dask workers"
                    print(
                        f"{what} {' '.join(args[1:2] if what == 'run' else shlex.split(a.verify_args))} "
                        f"{label}: {t:.1f} s, {cpu_text} (exit {proc.returncode}; load average "
                        f"{load0:.1f} -> {os.getloadavg()[0]:.1f})",
                        flush=True,
                    )
                base = times["workers 1"]
                for label in times:
                    if label != "workers 1":
                        print(f"  ratio workers 1 / {label}: {base / times[label]:.2f}")
                same = all(outs[label] == outs["workers 1"] for label in outs)
                print(f"  same {'table' if what == 'verify' else 'result bytes'} for every executor: {same}")
                ok &= same
    finally:
        if cluster is not None:
            cluster.close()
    print(f"load average at end: {os.getloadavg()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
