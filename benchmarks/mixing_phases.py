"""Where `check_mixing` spends its time and memory, phase by phase.

Samples the process's resident memory (VmRSS) every 50 ms while one
``check_mixing(by_name(topology, n, seed=0), horizon=...)`` runs on its
defaults, and prints the duration and the peak RSS of each phase between the
entries and exits of its parts (``find_B``, ``union_graph``, ``diameter``,
``deviation_series``, ``lyapunov_rate_of``, ``exact_rho``, wrapped where
check_mixing looks them up: in ``sgpverify.assumptions.check``), then the
process's peak (``ru_maxrss``). Linux only (reads /proc/self/status).

    python benchmarks/mixing_phases.py exponential 1000000     # about 1.5 minutes
    python benchmarks/mixing_phases.py random-peer 1000000     # about 12 minutes
"""

from __future__ import annotations

import argparse
import resource
import threading
import time

import sgpverify as sv
from sgpverify.assumptions import check

PARTS = ("find_B", "union_graph", "diameter", "deviation_series", "lyapunov_rate_of", "exact_rho")


def _rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("topology")
    ap.add_argument("n", type=int)
    ap.add_argument("--horizon", type=int, default=100)
    a = ap.parse_args(argv)
    samples, marks, done = [], [], threading.Event()

    def sampler():
        while not done.is_set():
            samples.append((time.perf_counter(), _rss_mb()))
            time.sleep(0.05)

    for name in PARTS:  # mark the entry and exit of each part
        f = getattr(check, name)

        def wrapped(*args, _f=f, _name=name, **kw):
            marks.append((time.perf_counter(), _name + " in"))
            try:
                return _f(*args, **kw)
            finally:
                marks.append((time.perf_counter(), _name + " out"))

        setattr(check, name, wrapped)
    topo = sv.graphs.by_name(a.topology, a.n, seed=0)
    threading.Thread(target=sampler, daemon=True).start()
    t0 = time.perf_counter()
    r = sv.check_mixing(topo, horizon=a.horizon)
    t1 = time.perf_counter()
    done.set()
    print(
        f"check_mixing({topo.name}, horizon={a.horizon}): {t1 - t0:.1f} s, "
        f"{r.contraction_columns} columns tracked, passed {r.passed}"
    )
    bounds = [(t0, "start")] + sorted(marks) + [(t1, "end")]
    for (ta, na), (tb, nb) in zip(bounds, bounds[1:]):
        s = [m for t, m in samples if ta <= t <= tb]
        if s and tb - ta >= 0.5:
            print(f"   {na:>22} .. {nb:<22} {tb - ta:7.1f} s   peak RSS {max(s)} MiB")
    print(f"   peak RSS of the process (ru_maxrss): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
