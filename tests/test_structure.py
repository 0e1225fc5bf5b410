"""The shape of the package: imports run one way, modules stay small, private names stay private.

An AST walk over every module of ``sgpverify`` (function-level imports included), so that the
checks need nothing beyond the standard library and hold for the source as it is on disk.
"""

import ast
import pathlib

import pytest

import sgpverify

ROOT = pathlib.Path(sgpverify.__file__).resolve().parent
REPO = ROOT.parent
#: The most lines a module may hold (one idea a module; about 700 at the most).
MAX_LINES = 700


def _modules():
    out = {}
    for f in sorted(ROOT.rglob("*.py")):
        rel = f.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (f, is_pkg)
    return out


MODULES = _modules()


def _resolve(module, is_pkg, node):
    """The sgpverify modules an import statement of ``module`` imports."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "sgpverify"]
    if node.level == 0:
        base = node.module or ""
        if base.split(".")[0] != "sgpverify":
            return []
    else:
        pkg = module.split(".") if is_pkg else module.split(".")[:-1]
        pkg = pkg[: len(pkg) - (node.level - 1)]
        base = ".".join(pkg + ([node.module] if node.module else []))
    out = []
    for a in node.names:
        sub = f"{base}.{a.name}"
        out.append(sub if sub in MODULES else base)
    return out


def _imports():
    graph = {}
    for mod, (path, is_pkg) in MODULES.items():
        tree = ast.parse(path.read_text())
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                deps.update(d for d in _resolve(mod, is_pkg, node) if d in MODULES and d != mod)
        graph[mod] = deps
    return graph


def _cycle(graph):
    """A cycle of the import graph as a list of modules, or None."""
    state = {}

    def visit(m, stack):
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                return stack[stack.index(d) :] + [d]
            if d not in state:
                found = visit(d, stack)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m, [])
            if found:
                return found
    return None


def test_the_import_graph_has_no_cycle():
    graph = _imports()
    assert len(graph) > 40  # the walk found the package
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_the_cycle_finder_finds_a_cycle():
    # the check itself can fail: a planted circle report -> suite -> sweep -> report is found
    graph = {"report": {"suite"}, "suite": {"sweep"}, "sweep": {"report"}, "plots": {"suite"}}
    found = _cycle(graph)
    assert found[0] == found[-1] and set(found) == {"report", "suite", "sweep"}
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_layers_run_one_way():
    # lower layers never import upper ones: graphs knows nothing of weights, mixing nothing of
    # gradients, the engine nothing of the suite, plots or reports
    graph = _imports()
    upper = {"sgpverify.suite", "sgpverify.report", "sgpverify.plots", "sgpverify.cli", "sgpverify.sweep"}

    def reaches(mod):
        seen, todo = set(), [mod]
        while todo:
            for d in graph[todo.pop()]:
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return seen

    def top(m):
        return ".".join(m.split(".")[:2])

    for low in ("sgpverify.graphs", "sgpverify.mixing", "sgpverify.assumptions", "sgpverify.engine"):
        mods = [m for m in MODULES if top(m) == low]
        bad = {top(d) for m in mods for d in reaches(m)} & upper
        assert not bad, f"{low} reaches {sorted(bad)}"
    for m in MODULES:
        if top(m) == "sgpverify.graphs":
            assert not {top(d) for d in reaches(m)} & {"sgpverify.mixing", "sgpverify.engine"}, m


@pytest.mark.parametrize("mod", sorted(MODULES))
def test_no_module_is_over_the_line_limit(mod):
    path, _ = MODULES[mod]
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(REPO)} has {n} lines > {MAX_LINES}: split it by idea"


def _private_uses(path):
    """``from X import _name`` of a sgpverify module, a private sgpverify module imported, and
    ``mod._name`` on a name imported from sgpverify."""
    tree = ast.parse(path.read_text())
    imported, out = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            inside = node.level > 0 or (node.module or "").split(".")[0] == "sgpverify"
            for a in node.names:
                if inside:
                    imported.add(a.asname or a.name)
                if inside and a.name.startswith("_") and not a.name.startswith("__"):
                    out.append(f"line {node.lineno}: from {'.' * node.level}{node.module or ''} import {a.name}")
            if inside and node.module and any(p.startswith("_") for p in node.module.split(".")):
                out.append(f"line {node.lineno}: from {'.' * node.level}{node.module} import ... (a private module)")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "sgpverify":
                    imported.add((a.asname or a.name).split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name)
            and node.value.id in imported
        ):
            out.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return out


SHIPPED = sorted(p for _, (p, _) in MODULES.items()) + sorted((REPO / "docs" / "examples").glob("*.py"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO)))
def test_no_private_name_is_used_across_modules(path):
    # what another module needs is public and documented; the shipped examples use public API only
    assert _private_uses(path) == [], path.relative_to(REPO)


def test_the_private_name_check_finds_a_private_use(tmp_path):
    # the check can fail: the uses this refactor removed are all found
    f = tmp_path / "m.py"
    f.write_text(
        "from .engine import _replica_grads, simulate\n"
        "from . import suite\n"
        "import os\n"
        "from ._validate import check_int\n"
        "def f(cfg):\n"
        "    os._exit(0)  # a private name of the standard library is not ours to police\n"
        "    return suite._run_experiments(cfg, 0, ('rates',))\n"
    )
    uses = _private_uses(f)
    assert uses == [
        "line 1: from .engine import _replica_grads",
        "line 4: from ._validate import ... (a private module)",
        "line 7: suite._run_experiments",
    ]


def test_the_suite_keeps_every_name_it_had():
    # sgpverify.suite was one module before it became a package: every public name it defined is
    # still there (the names it had only imported from elsewhere -- np, math, simulate, ... -- are not)
    from sgpverify import suite

    before = [
        "CHECK_NAMES", "CLAIMS", "CRITERIA", "Check", "Claim", "Control", "ENVELOPE_FLOOR", "EPS", "EXPERIMENTS",
        "EXPERIMENT_ORDER", "FULL", "MIXING_FAMILIES", "NONE", "NotApplicable", "PRESETS", "QUICK", "RATE_DELTA",
        "RATE_OMEGA", "RATIO_OMEGAS", "SCALINGS", "SUITE_TOPOLOGIES", "SuiteConfig", "SuiteResult", "Variant",
        "check_baselines", "check_combined_bound", "check_complexity", "check_consensus_bound",
        "check_consensus_rate", "check_delay_consensus", "check_delay_rate", "check_delays", "check_descent",
        "check_linear_speedup", "check_mass", "check_mixing_constants", "check_peers", "check_scaling",
        "check_stationarity_rate", "check_theorem1", "check_topologies", "check_user_problem", "config_from_dict",
        "exit_status", "exp_baselines", "exp_complexity", "exp_delays", "exp_descent", "exp_mixing", "exp_rates",
        "exp_scaling", "exp_speedup", "exp_theorem", "exp_topologies", "exp_weights", "irregular_exponential",
        "plan_units", "product_constants", "resolve_problem", "resolve_topology", "run_suite", "validate_config",
        "verify",
    ]  # fmt: skip
    assert sorted(set(before) - set(dir(suite))) == []
    assert set(suite.__all__) <= set(dir(suite))


def test_every_family_the_suite_and_the_constants_table_name_is_registered():
    # one topology registry: the suite's and the constants table's families are registered names,
    # and every subcommand offers every registered family
    from sgpverify import graphs, suite
    from sgpverify.assumptions import CONSTANTS_FAMILIES
    from sgpverify.cli import build_parser
    from sgpverify.testing.strategies import TOPOLOGY_KINDS

    names = set(graphs.FAMILIES)
    assert set(suite.MIXING_FAMILIES) <= names
    assert {name for _, name, _, _ in CONSTANTS_FAMILIES} <= names
    assert suite.SUITE_TOPOLOGIES == graphs.TOPOLOGY_NAMES == tuple(graphs.FAMILIES)
    assert names <= set(TOPOLOGY_KINDS)
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for cmd in ("mixing", "simulate", "verify", "distributed"):
        topo = next(a for a in sub.choices[cmd]._actions if a.dest == "topology")
        assert tuple(topo.choices) == graphs.TOPOLOGY_NAMES, cmd


def test_every_experiment_a_claim_names_is_registered():
    from sgpverify import suite

    for c in suite.CLAIMS:
        for key in c.experiments + c.control.experiments:
            assert key in suite.EXPERIMENTS, (c.name, key)
    for key, exp in suite.EXPERIMENTS.items():
        assert exp.key == key and set(exp.needs) <= set(suite.EXPERIMENTS), key
        assert len(exp.cost) == 2 and min(exp.cost) > 0, key


def _unannotated(path):
    """Public functions and methods (of public classes) of a module with a parameter or return unhinted."""
    tree = ast.parse(path.read_text())
    out = []

    def public(name):
        return not name.startswith("_") or name in ("__init__", "__call__")

    def visit(body, prefix, in_class):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and public(node.name):
                a = node.args
                args = a.posonlyargs + a.args + a.kwonlyargs
                if in_class and args and args[0].arg in ("self", "cls"):
                    args = args[1:]
                args += [v for v in (a.vararg, a.kwarg) if v is not None]
                hinted = all(v.annotation is not None for v in args)
                if not hinted or (node.returns is None and node.name != "__init__"):
                    out.append(prefix + node.name)
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                visit(node.body, prefix + node.name + ".", True)

    visit(tree.body, "", False)
    return out


PUBLIC_MODULES = [
    p
    for _, (p, _) in sorted(MODULES.items())
    if not any(
        part.startswith("_") and part not in ("__init__.py", "__main__.py") for part in p.relative_to(ROOT).parts
    )
]


@pytest.mark.parametrize("path", PUBLIC_MODULES, ids=lambda p: str(p.relative_to(REPO)))
def test_the_public_api_has_type_hints(path):
    # signatures a user (and the docs site) can read: every public function and method is hinted
    assert _unannotated(path) == [], path.relative_to(REPO)


def test_the_hint_check_finds_a_missing_hint(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        "def ok(x: int) -> int:\n    return x\n"
        "def bare(x):\n    return x\n"
        "def _private(x):\n    return x\n"
        "class A:\n"
        "    def __init__(self, y: int):\n        self.y = y\n"
        "    def m(self, z) -> None:\n        pass\n"
    )
    assert _unannotated(f) == ["bare", "A.m"]
