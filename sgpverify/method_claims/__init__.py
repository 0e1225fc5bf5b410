"""The built-in claims of a method other than SGP, checked when asked for (``verify --method NAME``).

Each method's claims are a claims file of the package (:mod:`sgpverify.declare`: a ``CLAIMS``
list), loaded by the same path as a user's ``verify --claims FILE.py``: registered beside the
suite's checks, run, cached, controlled, settled and reported as they are. Ours are not special.

Examples
--------
>>> sorted(METHOD_CLAIMS)
['push-diging']
>>> path("push-diging").endswith("push_diging.py")
True
"""

from __future__ import annotations

import pathlib

__all__ = ["METHOD_CLAIMS", "path", "paths", "check_method", "load", "unload"]

_HERE = pathlib.Path(__file__).resolve().parent

#: The methods with built-in claims: name -> the claims file's name in this package.
METHOD_CLAIMS = {"push-diging": "push_diging.py"}


def check_method(name: str) -> str:
    """``name`` if it is a method with built-in claims; else ValueError naming it."""
    if not isinstance(name, str) or name not in METHOD_CLAIMS:
        raise ValueError(f"method must be one of {', '.join(METHOD_CLAIMS)}, got {name!r}")
    return name


def path(name: str) -> str:
    """The claims file of method ``name``."""
    return str(_HERE / METHOD_CLAIMS[check_method(name)])


def paths(name: str | None) -> list[str]:
    """The claims files of method ``name`` (none for None): what ``verify --method`` loads."""
    return [] if name is None else [path(name)]


def load(name: str) -> list:
    """Register the built-in claims of method ``name`` (a second load keeps them); returns them.
    They stay registered for the rest of the process, as a ``--claims`` file's do (:func:`unload`)."""
    from ..suite.claims import load_file

    return load_file(path(name))


def unload(name: str) -> None:
    """Remove the built-in claims of method ``name`` from the suite, where they are registered."""
    from ..suite.claims import BY_NAME

    for c in load(name):
        if c.name in BY_NAME:
            c.unregister()
