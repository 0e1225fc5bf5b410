"""Test configuration: Hypothesis profiles.

``ci`` (selected when the CI environment variable is set, or with
``HYPOTHESIS_PROFILE=ci``) is derandomised, so a CI run is reproducible;
``dev`` explores new examples on every run.
"""

import importlib.util
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def _missing(module):
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_matplotlib: skipped, with the reason, when matplotlib is missing")


def pytest_collection_modifyitems(config, items):
    """Optional dependencies: tests marked ``needs_matplotlib`` skip (with the
    reason) when it is not installed; every other test still runs."""
    if any(_missing(m) for m in ("cvxpy", "clarabel")):
        skip_pep = pytest.mark.skip(reason="the pep extra is not installed: pip install 'sgpverify[pep]'")
        for item in items:
            if str(getattr(item, "path", "")).endswith(("sgpverify/pep.py", "sgpverify\\pep.py")):
                item.add_marker(skip_pep)  # its doctests solve an SDP
    if not _missing("matplotlib"):
        return
    skip = pytest.mark.skip(reason="matplotlib not installed: pip install 'sgpverify[plot]'")
    for item in items:
        if "needs_matplotlib" in item.keywords:
            item.add_marker(skip)
