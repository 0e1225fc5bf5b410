"""How loose each bound check's bound is on a setting, and how far its control lifts the measurement.

    python benchmarks/bound_slack.py                      # the defaults (quick preset)
    cd docs/examples && python ../../benchmarks/bound_slack.py --problem mymod:make \\
        --topology erdos-renyi --nodes 16 --edge-prob 0.3  # the guide's setting

Prints, for every bound check (``Claim.bound``), the honest largest measured/bound ratio, the ratio on
its control, the lift (their quotient) and how the control was counted: detected, MISSED, or the excuse
it carries (``sgpverify.suite.records.EXCUSES``: undetectable under a loose bound, ``unjudged`` where the
check and its control are both inconclusive; docs/theory.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from sgpverify import suite
from sgpverify.suite.records import excuse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem")
    ap.add_argument("--topology")
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--edge-prob", type=float)
    a = ap.parse_args()
    sys.path.insert(0, os.getcwd())  # a MODULE:ATTR problem in the working directory
    kw = {"edge_prob": a.edge_prob} if a.edge_prob is not None else {}
    names = [c.name for c in suite.CLAIMS if c.bound]
    t0 = time.perf_counter()
    res = suite.verify(a.problem, a.topology, nodes=a.nodes, controls=True, only=names, **kw)
    print(f"{'check':<20} {'verdict':<13} {'ratio':>10} {'control':>10} {'lift':>8}  control counted")
    for c in res.checks:
        s = c.extra.get("slack")
        cs = c.control.get("slack")
        lift = cs / s if s and cs else float("nan")
        how = "detected" if c.control["detected"] else excuse(c.control) or "MISSED"  # or how it is excused
        print(
            f"{c.name:<20} {c.verdict:<13} {s or float('nan'):>10.3g} {cs or float('nan'):>10.3g} {lift:>8.3g}  {how}"
        )
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
