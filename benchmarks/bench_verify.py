"""Wall time of `sgpverify verify --quick --controls` with --workers 1 and --workers 2, in one run.

Prints both times and their ratio (target >= 1.6 on 2 cores) for each round, the spread of the
ratios over the rounds, the load average before and after, and checks that every run printed the
same table (the bits do not depend on the number of workers). Every run passes --no-cache (else the
second run would load the first run's units). Rounds alternate the order (1 then 2, 2 then 1) so
that a drift of the machine's load does not favour one setting.

    python benchmarks/bench_verify.py              # 2 rounds, about 16 minutes on 2 cores
    python benchmarks/bench_verify.py --rounds 1
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time


def run(workers, out):
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sgpverify.cli",
            "verify",
            "--quick",
            "--controls",
            "--no-progress",
            "--no-cache",
            "--workers",
            str(workers),
            "--out",
            out,
        ],
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - t0, proc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2, help="pairs of runs (default 2)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be >= 1, got {args.rounds}")
    ratios, tables, ok = [], [], True
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            order = (1, 2) if i % 2 == 0 else (2, 1)
            t = {}
            load0 = os.getloadavg()[0]
            for w in order:
                t[w], p = run(w, f"{tmp}/r{i}w{w}")
                tables.append(p.stdout.splitlines()[:-1])
                ok = ok and p.returncode == 0
                if p.returncode != 0:
                    print(p.stderr[-2000:], file=sys.stderr)
            load1 = os.getloadavg()[0]
            ratios.append(t[1] / t[2])
            print(
                f"round {i + 1} (order {order[0]}, {order[1]}; load {load0:.2f} -> {load1:.2f}): "
                f"workers 1 {t[1]:.1f} s, workers 2 {t[2]:.1f} s, ratio {ratios[-1]:.2f}",
                flush=True,
            )
    same = all(tb == tables[0] for tb in tables)
    print(
        f"ratio workers 1 / workers 2: {min(ratios):.2f}-{max(ratios):.2f} over {len(ratios)} round(s) "
        f"(target >= 1.6 on 2 cores)"
    )
    print(f"same table in every run: {same}")
    return 0 if same and ok else 1


if __name__ == "__main__":
    sys.exit(main())
