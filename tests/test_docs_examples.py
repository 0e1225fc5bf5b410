"""The guide's property-testing example runs as the guide says and passes, and it can fail."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "test_my_matrices.py"


def _pytest(path: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header", str(path)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=path.parent)


def test_property_testing_example_passes():
    proc = _pytest(EXAMPLE)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "2 passed" in proc.stdout


def test_property_testing_example_catches_a_transposed_step(tmp_path):
    """Control: the same tests on a step that mixes with P^T (row- instead of column-stochastic,
    a classic push/pull mix-up) fail on mass conservation."""
    planted = tmp_path / "test_planted.py"
    text = EXAMPLE.read_text(encoding="utf-8")
    assert "return P @ x, P @ w" in text
    planted.write_text(text.replace("return P @ x, P @ w", "return P.T @ x, P.T @ w"), encoding="utf-8")
    proc = _pytest(planted)
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "FAILED" in proc.stdout and "test_my_gossip_conserves_mass" in proc.stdout
