"""The tightness table at larger n and K on the exponential graph (docs/tightness.md, "Where the reduction
reaches"): per (n, K), the published Theorem 1 bound, the derived bound (c2), the exact worst case (the
symmetry-reduced SDP beyond n K = 16) and the measured average of the deterministic run, each row from the
worst-case experiment of the suite (``suite.exp_worstcase``) on the default problem, tau = 0, seed 0.

    python benchmarks/tightness_scale.py                    # the table of the docs
    python benchmarks/tightness_scale.py --cases 4:10 8:10  # n:K pairs

Prints one markdown row per case as it finishes, with the seconds of the whole experiment (the run, the
mixing check and the solve).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import warnings

from bench_pep import _pair  # the sibling script (benchmarks/ is the script's directory)

from sgpverify import suite

CASES = [(4, 10), (4, 12), (4, 16), (4, 20), (8, 10), (8, 12), (8, 16), (16, 10), (16, 12), (32, 10), (32, 12)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--cases", nargs="+", type=lambda s: _pair(s, 2), default=CASES, help="n:K pairs (default: the docs' table)"
    )
    pairs = ap.parse_args().cases
    base = suite.config_from_dict({"topologies": ["exponential"], "pep_taus": [0]})
    print(
        "| n | K | gamma | published | derived (c2) | worst case | measured | published / worst | derived / worst "
        "| Theorem 1's threshold | SDP | status | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n, K in pairs:
        cfg = dataclasses.replace(base, pep_n=n, pep_Ks=(K,))
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            (e,) = suite.exp_worstcase(cfg, 0)["entries"]
        s = time.perf_counter() - t0
        wc = e["worst_case"]
        form = f"reduced ({e['reduced']})" if e.get("reduced") else f"full ({e['gram_size']})"
        thr = e.get("threshold")
        print(
            f"| {n} | {K} | {e['gamma']:.3g} | {e['published']:.4g} | {e['derived']:.4g} | {wc:.4g} "
            f"| {e['measured']:.3g} | {e['published'] / wc:.3g} | {e['derived'] / wc:.3g} "
            f"| {'-' if thr is None else f'{thr:.3g}'} | {form} | {e['status']} | {s:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
