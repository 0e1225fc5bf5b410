"""Sphinx extension: write ``claims.md`` from the suite's claim records at build time.

Each entry of :data:`sgpverify.suite.CLAIMS` gives the paper's statement, the experiments,
the statistic, the criterion, the negative control and where the check is in the code. The
suite is not run at build time (a run takes minutes): the latest default verdicts come from
``docs/verdicts.json``, a digest of the ``checks.json`` that ``sgpverify verify --quick
--controls`` writes, refreshed with::

    sgpverify verify --quick --controls && python docs/_ext/claims_catalogue.py sgpverify-out/checks.json

tests/test_suite.py checks that the digest's verdicts are those of a fresh run.
"""

from __future__ import annotations

import json
import os
import sys

VERDICTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "verdicts.json")

HEADER = """\
# Claims catalogue

Every claim that `sgpverify verify` checks, as recorded in
`sgpverify.suite.CLAIMS` (this page is generated from those records when the
site is built). Each claim names the paper's statement, the experiments whose
data it reads, the statistic computed, the criterion for `pass`, `fail` or
`inconclusive`, and the negative control: a departure from the setting on which
the check must fail.

The verdicts are not computed when the site is built (the suite takes
minutes): each claim shows its latest verdict on the built-in defaults, from
`docs/verdicts.json` ({run}); the tests check that those verdicts are the ones a
fresh run gives. How to read them is in the
[user guide](guide.md#reading-the-verdicts).

"""


def digest(checks: dict) -> dict:
    """The part of a ``checks.json`` the catalogue shows: per check its verdict, measured,
    predicted and control, and how the run was made."""
    return {
        "run": {
            "command": "sgpverify verify --quick --controls",
            "preset": checks["config"]["name"],
            "seed": checks["seed"],
            "version": checks["version"],
            "status": checks["status"],
        },
        "checks": {
            c["name"]: {
                "verdict": c["verdict"],
                "measured": c["measured"],
                "predicted": c["predicted"],
                "control": None
                if c.get("control") is None
                else {k: c["control"][k] for k in ("name", "detected", "verdict")},
            }
            for c in checks["checks"]
        },
    }


def load_verdicts() -> dict:
    with open(VERDICTS, encoding="utf-8") as f:
        return json.load(f)


def _verdict_cell(v: dict | None) -> str:
    if v is None:
        return "not in the latest run"
    ctl = v["control"]
    text = f"**{v['verdict']}**"
    if ctl is not None:
        text += f"; control `{ctl['name']}` " + ("detected" if ctl["detected"] else f"NOT detected ({ctl['verdict']})")
    return text


def _module_page(code: str) -> tuple[str, str]:
    """``("sgpverify/suite/claims/bounds.py:18 (check_x)")`` -> (module name, function name)."""
    path = code.split(":", 1)[0]
    module = path[: -len(".py")].replace("/", ".")
    if module.endswith(".__init__"):
        module = module[: -len(".__init__")]
    name = code.rsplit("(", 1)[-1].rstrip(")") if "(" in code else ""
    return module, name


def render() -> str:
    """The catalogue as Markdown."""
    from sgpverify.suite import CLAIMS
    from sgpverify.suite.records import code_of

    latest = load_verdicts()
    run = latest["run"]
    out = [
        HEADER.format(run=f"`{run['command']}`, preset {run['preset']}, seed {run['seed']}, sgpverify {run['version']}")
    ]
    out.append("| claim | experiments | control | latest verdict |\n|---|---|---|---|\n")
    for c in CLAIMS:
        v = latest["checks"].get(c.name)
        out.append(
            f"| [{c.name}](#{c.name}) | {', '.join(c.experiments)} | `{c.control.name}` | {_verdict_cell(v)} |\n"
        )
    out.append("\n")
    for c in CLAIMS:
        v = latest["checks"].get(c.name)
        code = code_of(c.check)
        module, name = _module_page(code)
        out.append(f"(claim-{c.name})=\n## {c.name}\n\n")
        out.append(f"**Statement.** {c.statement}\n\n")
        out.append(f"**Experiments.** {', '.join(f'`{e}`' for e in c.experiments)}\n\n")
        out.append(f"**Statistic.** {c.statistic}\n\n")
        out.append(f"**Criterion.** {c.criterion}\n\n")
        out.append(f"**Control.** `{c.control.name}`: {c.control.description}\n\n")
        if c.uses:
            out.append(f"**Declared constants used.** {', '.join(f'`{u}`' for u in c.uses)}\n\n")
        out.append(f"**Code.** `{code}`; module {{py:mod}}`{module}`\n\n")
        if v is not None:
            out.append(
                f"**Latest default verdict.** {_verdict_cell(v)}. "
                f"Measured: {v['measured']}; predicted: {v['predicted']}.\n\n"
            )
        else:
            out.append("**Latest default verdict.** not in `docs/verdicts.json`: refresh it (see above).\n\n")
    return "".join(out)


def write_catalogue(app) -> None:
    path = os.path.join(app.srcdir, "claims.md")
    text = render()
    old = None
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = f.read()
    if old != text:  # an unchanged file keeps incremental builds incremental
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def setup(app):
    app.connect("builder-inited", write_catalogue)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":  # refresh docs/verdicts.json from a checks.json
    if len(sys.argv) != 2:
        sys.exit("usage: python docs/_ext/claims_catalogue.py sgpverify-out/checks.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        checks = json.load(f)
    if checks["config"]["name"] != "quick" or checks["seed"] != 0 or not checks["controls"]:
        sys.exit(f"{sys.argv[1]} is not a run of the defaults (sgpverify verify --quick --controls, seed 0)")
    with open(VERDICTS, "w", encoding="utf-8") as f:
        json.dump(digest(checks), f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {VERDICTS}")
