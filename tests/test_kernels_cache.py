"""Where numba caches the compiled kernels (sgpverify.engine.kernels.cache_dir): a
per-user directory, never the package's ``__pycache__``, and no disk cache at all
where that directory cannot be written.

The compiled runs happen in fresh subprocesses, so that the environment variables
are read as a user's process reads them (the kernels are compiled, and their cache
place chosen, once per process)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import sgpverify
from sgpverify.engine import kernels

ROOT = pathlib.Path(sgpverify.__file__).resolve().parents[1]
PACKAGE = pathlib.Path(sgpverify.__file__).resolve().parent

# A tiny run on the compiled step (SGPVERIFY_KERNELS=numba forces it), which prints
# where its kernels module is and where it cached them.
RUN = """
import json, sgpverify as sv
from sgpverify.engine import kernels
prob = sv.problems.QuadraticCosine(n=4, d=3, seed=0)
trace = sv.simulate(prob, sv.graphs.exponential(4), step_size=0.05, n_iter=5, seed=0)
print(json.dumps({"kernels": kernels.__file__, "cache_dir": kernels.cache_dir(), "used": sorted(kernels._jit)}))
"""


def _package_caches():
    """numba's index and data files anywhere under the package directory: name -> mtime."""
    return {str(p): p.stat().st_mtime_ns for p in PACKAGE.rglob("*") if p.suffix in (".nbi", ".nbc")}


def _run(env_extra):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "SGPVERIFY_CACHE_DIR")}
    env.update(env_extra, SGPVERIFY_KERNELS="numba", PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    out = subprocess.run(
        [sys.executable, "-c", RUN], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=True
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # the subprocess ran this checkout's package, whose __pycache__ is the one watched
    assert pathlib.Path(result["kernels"]).resolve() == pathlib.Path(kernels.__file__).resolve()
    assert result["used"], "the run compiled no kernel"
    return result


needs_numba = pytest.mark.skipif(not kernels.available(), reason="numba not installed (the fast extra)")


@needs_numba
def test_kernels_are_cached_under_the_cache_dir_not_in_the_package(tmp_path):
    before = _package_caches()
    result = _run({"SGPVERIFY_CACHE_DIR": str(tmp_path / "user-cache")})
    where = tmp_path / "user-cache" / "numba"
    assert pathlib.Path(result["cache_dir"]) == where
    index = sorted(p.name for p in where.rglob("*.nbi"))
    data = sorted(p.name for p in where.rglob("*.nbc"))
    for name in result["used"]:  # every kernel the run compiled has its index and data files there
        assert any(f.startswith(f"kernels.{name}_py-") for f in index), (name, index)
        assert any(f.startswith(f"kernels.{name}_py-") for f in data), (name, data)
    assert _package_caches() == before, "numba wrote into the package directory"


@needs_numba
def test_an_unwritable_cache_dir_means_no_disk_cache(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    before = _package_caches()
    result = _run({"SGPVERIFY_CACHE_DIR": str(blocker)})
    assert result["cache_dir"] is None
    assert _package_caches() == before, "numba wrote into the package directory"
    assert not list(tmp_path.rglob("*.nb[ic]"))


def test_cache_dir_order(tmp_path, monkeypatch):
    for var in ("NUMBA_CACHE_DIR", "SGPVERIFY_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if sys.platform != "win32":
        # no override: the XDG default under the home directory
        assert kernels.cache_dir() == str(tmp_path / "home" / ".cache" / "sgpverify" / "numba")
        # XDG_CACHE_HOME, when absolute; a relative one is ignored, as the specification says
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert kernels.cache_dir() == str(tmp_path / "xdg" / "sgpverify" / "numba")
        monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")
        assert kernels.cache_dir() == str(tmp_path / "home" / ".cache" / "sgpverify" / "numba")
    # SGPVERIFY_CACHE_DIR before the platform's directory
    monkeypatch.setenv("SGPVERIFY_CACHE_DIR", str(tmp_path / "sv"))
    assert kernels.cache_dir() == str(tmp_path / "sv" / "numba")
    assert (tmp_path / "sv" / "numba").is_dir()
    # numba's own setting before everything, used as it is
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "nb"))
    assert kernels.cache_dir() == str(tmp_path / "nb")
    # a directory that cannot be made: no disk cache
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("SGPVERIFY_CACHE_DIR", str(tmp_path / "file"))
    assert kernels.cache_dir() is None


def test_cache_dir_on_windows(tmp_path, monkeypatch):
    for var in ("NUMBA_CACHE_DIR", "SGPVERIFY_CACHE_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(kernels.sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "Local"))
    assert kernels.cache_dir() == os.path.join(str(tmp_path / "Local"), "sgpverify", "numba")
