"""Wall time of `sgpverify verify --quick --controls` with --workers 1 and --workers 2, in one run.

Prints both times and their ratio (target >= 1.6 on 2 cores), and checks that both runs printed the
same table (the bits do not depend on the number of workers).

    python benchmarks/bench_verify.py
"""

import subprocess
import sys
import tempfile
import time


def run(workers, out):
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "sgpverify.cli", "verify", "--quick", "--controls", "--no-progress",
                           "--workers", str(workers), "--out", out], capture_output=True, text=True)
    return time.perf_counter() - t0, proc


def main():
    with tempfile.TemporaryDirectory() as tmp:
        t1, p1 = run(1, f"{tmp}/w1")
        t2, p2 = run(2, f"{tmp}/w2")
    table1 = p1.stdout.splitlines()[:-1]
    table2 = p2.stdout.splitlines()[:-1]
    print(f"workers 1: {t1:.1f} s (exit {p1.returncode})")
    print(f"workers 2: {t2:.1f} s (exit {p2.returncode})")
    print(f"ratio workers 1 / workers 2: {t1 / t2:.2f} (target >= 1.6 on 2 cores)")
    print(f"same table: {table1 == table2}")
    return 0 if table1 == table2 and p1.returncode == p2.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
