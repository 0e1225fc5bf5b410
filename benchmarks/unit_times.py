"""CPU seconds of each unit of `sgpverify verify --quick --controls`, run one at a time in this process.

The figures behind ``suite._COSTS`` (the order in which units are handed to the workers: longest
first; never a result). Set ``SGPVERIFY_KERNELS=numpy`` for the path the main job runs.

    SGPVERIFY_KERNELS=numpy python benchmarks/unit_times.py     # about 2.5 minutes
"""

import time

from sgpverify.suite import NONE, QUICK, _suite_unit, plan_units
from sgpverify.sweep import run_units

units = plan_units(QUICK, controls=True)
mix = run_units([_suite_unit(QUICK, 0, "mixing", NONE, None, None, None)])[0]
out = []
for k, v in units:
    if k == "mixing" and v == NONE:
        continue
    t = time.process_time()
    run_units([_suite_unit(QUICK, 0, k, v, mix, None, None)])
    out.append((time.process_time() - t, k, v.name))
for t, k, v in sorted(out, reverse=True):
    print(f"{t:6.1f} s  {k:12s} {v}")
print(f"total {sum(t for t, _, _ in out):.1f} s")
