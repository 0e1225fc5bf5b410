"""Sphinx extension: write ``claims.md`` from the suite's claim records at build time.

Each entry of :data:`sgpverify.suite.CLAIMS` gives the paper's statement, the experiments,
the statistic, the criterion, the negative control and where the check is in the code. The
suite is not run at build time (a run takes minutes): the latest default verdicts are in the
README's table, printed by ``sgpverify verify --quick``.
"""

from __future__ import annotations

import os

HEADER = """\
# Claims catalogue

Every claim that `sgpverify verify` checks, as recorded in
`sgpverify.suite.CLAIMS` (this page is generated from those records when the
site is built). Each claim names the paper's statement, the experiments whose
data it reads, the statistic computed, the criterion for `pass`, `fail` or
`inconclusive`, and the negative control: a departure from the setting on which
the check must fail.

The verdicts themselves are not computed here (the suite takes minutes): the
latest default verdicts are the table of the README, printed by
`sgpverify verify --quick`; how to read them is in the
[user guide](guide.md#reading-the-verdicts).

"""


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

    out = [HEADER]
    out.append("| claim | experiments | control |\n|---|---|---|\n")
    for c in CLAIMS:
        out.append(f"| [{c.name}](#{c.name}) | {', '.join(c.experiments)} | `{c.control.name}` |\n")
    out.append("\n")
    for c in CLAIMS:
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
