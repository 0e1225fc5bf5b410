"""The release metadata agree: the version in sgpverify/version.py, pyproject.toml and
CITATION.cff, and the MIT license in pyproject.toml, LICENSE and CITATION.cff.

CITATION.cff is read without a YAML parser (none is a dependency): its top-level
``version:`` and ``license:`` lines."""

import pathlib
import re
import tomllib

from sgpverify.version import __version__

REPO = pathlib.Path(__file__).resolve().parents[1]


def _cff_top_level(key):
    text = (REPO / "CITATION.cff").read_text(encoding="utf-8")
    values = re.findall(rf'^{key}:\s*"?([^"\n]*?)"?\s*$', text, flags=re.MULTILINE)
    assert len(values) == 1, f"CITATION.cff has {len(values)} top-level {key!r} lines"
    return values[0]


def test_one_version_everywhere():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["version"] == __version__
    assert _cff_top_level("version") == __version__


def test_the_license_is_mit_and_shipped():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT"
    assert "LICENSE" in project["license-files"]
    assert (REPO / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")
    assert _cff_top_level("license") == "MIT"
    assert _cff_top_level("cff-version") == "1.2.0"
