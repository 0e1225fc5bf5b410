"""Doctest collection of the package: modules that import an optional dependency at import time
are skipped when it is not installed (the tests of tests/ skip themselves, with the reason)."""

import importlib.util

collect_ignore = []
if importlib.util.find_spec("torch") is None:
    collect_ignore.append("sgpverify/distributed/optimizer.py")
