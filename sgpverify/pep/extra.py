"""The optional ``pep`` extra (cvxpy, Clarabel, PEPit): whether it is installed, and the error
that names it."""

from __future__ import annotations

import importlib

_EXTRA = "pip install 'sgpverify[pep]'"


def require_pep(engine: str = "direct") -> None:
    """Raise ImportError naming the ``pep`` extra unless its packages import
    (cvxpy and Clarabel; PEPit too for ``engine="pepit"``)."""
    mods = ["cvxpy", "clarabel"] + (["PEPit"] if engine == "pepit" else [])
    for mod in mods:
        try:
            importlib.import_module(mod)
        except ImportError as exc:
            raise ImportError(f"sgpverify.pep needs the pep extra ({_EXTRA}): {mod} is not installed ({exc})") from None


def has_pep() -> bool:
    """Whether the ``pep`` extra (PEPit, cvxpy, Clarabel) is installed."""
    try:
        require_pep("pepit")
    except ImportError:
        return False
    return True
