"""How much departure can the theorem1-bound check see? (numbers quoted in docs/guide.md and docs/theory.md)

Runs the check on the quick preset's exponential graph with gradient noise of 100 sigma^2 (the bound
uses the declared sigma^2) and with a constant gradient bias of norm sigma (the check's control).
Usage: python docs/examples/theorem_noise.py
"""

import warnings

from sgpverify import suite

warnings.simplefilter("ignore")
cfg = suite.config_from_dict({"topologies": ("exponential",)})
base = suite.run_experiments(cfg, 0, ("mixing", "theorem"))
claim = {c.name: c for c in suite.CLAIMS}["theorem1-bound"]
print("declared model:", suite.evaluate(claim, cfg, base)["measured"])
for v in (
    suite.Variant(name="noise-100x", extra_noise=99.0),
    suite.Variant(name="bias-sigma", bias=1.0),
    suite.Variant(name="bias-0.1-sigma", bias=0.1),
    suite.Variant(name="bias-0.2-sigma", bias=0.2),
):
    d = dict(base)
    d.update(suite.run_experiments(cfg, 0, ("theorem",), v, base=base))
    res = suite.evaluate(claim, cfg, d)
    print(f"{v.name}: verdict {res['verdict']}, {res['measured']}")
