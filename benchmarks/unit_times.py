"""CPU seconds of each unit of `sgpverify verify --quick --controls`, run one at a time in this process.

The figures behind each experiment's ``cost`` in ``sgpverify.suite.EXPERIMENTS`` (the order in which
units are handed to the workers: longest first; never a result). Set ``SGPVERIFY_KERNELS=numpy`` for
the path the main job runs.

    SGPVERIFY_KERNELS=numpy python benchmarks/unit_times.py     # about 2.5 minutes
"""

import time

from sgpverify.suite import EXPERIMENTS, NONE, QUICK, plan_units, suite_unit
from sgpverify.sweep import run_units

units = plan_units(QUICK, controls=True)
mix = run_units([suite_unit(QUICK, 0, "mixing", NONE, None, None, None)])[0]
out = []
for k, v in units:
    if k == "mixing" and v == NONE:
        continue
    t = time.process_time()
    needed = {need: mix for need in EXPERIMENTS[k].needs} or None  # only the mixing data is needed
    run_units([suite_unit(QUICK, 0, k, v, needed, None, None)])
    out.append((time.process_time() - t, k, v.name))
for t, k, v in sorted(out, reverse=True):
    print(f"{t:6.1f} s  {k:12s} {v}")
print(f"total {sum(t for t, _, _ in out):.1f} s")
