"""The user's code, named as the user's: what a problem's methods return is checked on a first
call, and an exception raised inside them is told apart from sgpverify's own.

sgpverify calls code it did not write: the Problem protocol's ``grad``, ``full_grad`` and
``value`` (and the factory that builds a problem). A mistake there must read as the user's
mistake, naming the method, before any work where that is possible:

- :func:`check_outputs` calls each method once at the points of a run (``grad`` with a stream
  of its own, so no run's stream moves) and checks the shape and dtype of what comes back:
  a gradient of the wrong shape is never silently reshaped, a ``value`` that returns None is
  refused before any unit runs.
- :func:`user_error` reads an exception's traceback: an exception raised inside the user's
  code (a frame of the user's called from sgpverify) becomes a :class:`UserCodeError` that
  names the method and carries the user's own traceback as text, so that it crosses process
  boundaries (the units of ``verify`` run in worker processes) and the command line prints
  it with exit status 2 instead of "internal error".
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from .errors import UserCodeError

__all__ = ["UserCodeError", "check_outputs", "user_error", "PROTOCOL_METHODS"]

#: The methods of the Problem protocol sgpverify calls (``grad_replicas`` is the optional one).
PROTOCOL_METHODS = ("grad", "full_grad", "value", "grad_replicas")

_OURS = str(Path(__file__).resolve().parent)
#: Libraries whose frames are neither the user's nor ours (called by either).
_LIBRARIES = frozenset(
    {"numpy", "scipy", "sympy", "networkx", "tqdm", "torch", "dask", "distributed", "numba", "cvxpy", "PEPit"}
    | {"clarabel", "matplotlib", "cloudpickle", "_pytest", "pytest", "pluggy", "hypothesis"}
)


def _is_ours(frame) -> bool:
    return str(Path(frame.f_code.co_filename).resolve()).startswith(_OURS)


def _is_library(frame) -> bool:
    top = str(frame.f_globals.get("__name__", "")).split(".")[0]
    return top in _LIBRARIES or top in sys.stdlib_module_names or frame.f_code.co_filename.startswith("<frozen")


def user_error(exc: BaseException) -> UserCodeError | None:
    """The :class:`UserCodeError` for ``exc`` where it was raised inside the user's code, else None.

    The user's code is a frame that sgpverify called directly and that is neither sgpverify's
    nor a library's (numpy, scipy, the standard library, ...): a problem's method, a problem
    factory or a schedule callable. The message names the method when it is one of the
    protocol's (``raised in your problem's grad``), else the function and file; the user's
    traceback, from that frame on, is kept as text.

    Examples
    --------
    >>> user_error(ValueError("ours")) is None
    True
    """
    if isinstance(exc, UserCodeError):
        return exc
    # generated code (a dataclass's __init__, exec'd strings) is neither the user's nor ours: skipped
    frames = [f for f, _ in traceback.walk_tb(exc.__traceback__) if not f.f_code.co_filename.startswith("<")]
    for caller, frame in zip(frames, frames[1:]):
        if _is_ours(caller) and not _is_ours(frame) and not _is_library(frame):
            break
    else:
        return None
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame is not frame:
        tb = tb.tb_next
    name = frame.f_code.co_name
    where = f"{Path(frame.f_code.co_filename).name}:{tb.tb_lineno if tb is not None else frame.f_lineno}"
    method = name if name in PROTOCOL_METHODS else None
    what = f"your problem's {name}" if method else f"your code ({name}, {where})"
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    err = UserCodeError(f"{type(exc).__name__}: {exc} (raised in {what})", method=method, user_traceback=text)
    err.__cause__ = exc
    return err


def _describe(value: Any) -> str:
    if value is None:
        return "None"
    arr = np.asarray(value)
    return f"shape {arr.shape}, dtype {arr.dtype}"


def _checked(method: str, value: Any, shape: tuple[int, ...], how: str, alt: tuple[int, ...] | None = None) -> None:
    """Raise a UserCodeError unless ``value`` is a real array of ``shape`` (or ``alt``)."""
    ok = value is not None
    if ok:
        try:
            arr = np.asarray(value)
        except Exception:  # an object numpy cannot read as an array
            arr = np.asarray(None)
        ok = arr.dtype.kind in "fiu" and arr.shape in (shape, alt)
    if not ok:
        raise UserCodeError(
            f"your problem's {method} must return a real array of shape {shape} when called {how}, "
            f"got {_describe(value)}",
            method=method,
        )


def check_outputs(problem: Any, z: np.ndarray, xbar: np.ndarray, *, fresh: bool = False) -> None:
    """Call ``grad``, ``full_grad`` and ``value`` once, as a run calls them, and check their outputs.

    ``z`` (n, d) are the nodes' points (``grad(z, rng)`` must return (n, d)), ``xbar`` (R, d) the
    averages of R replicas (``full_grad(xbar)``: (R, d), ``value(xbar)``: (R,), or a number when
    R = 1). Each method gets a copy, unless ``fresh`` says that ``z`` is a new array of the
    caller's that ``grad`` may keep or change (no copy of a large state). ``grad`` draws from a
    generator of its own: the run's streams are untouched, but a problem that counts its calls
    sees this one. The built-in problems (:mod:`sgpverify.problems`)
    and the worst-case read-back are not checked (their outputs are the package's tests' business).

    Raises
    ------
    UserCodeError
        Naming the method, the shape expected and what it returned; or an exception the
        method raised (:func:`user_error`).

    Examples
    --------
    >>> class Flat:
    ...     def grad(self, z, rng):
    ...         return z.ravel()
    ...     def full_grad(self, x):
    ...         return x
    ...     def value(self, x):
    ...         return x.sum(-1)
    >>> check_outputs(Flat(), np.zeros((4, 3)), np.zeros((1, 3)))
    Traceback (most recent call last):
    ...
    sgpverify.errors.UserCodeError: your problem's grad must return ... of shape (4, 3) ... got shape (12,), ...
    """
    mod = type(problem).__module__
    if mod == "sgpverify.problems" or mod.startswith("sgpverify.pep"):  # ours, with their own tests
        return
    R, d = xbar.shape
    try:
        g = problem.grad(z if fresh else np.array(z, copy=True), np.random.default_rng(0))
        _checked("grad", g, z.shape, f"with z of shape {z.shape}")
        g = problem.full_grad(np.array(xbar, copy=True))
        _checked("full_grad", g, (R, d), f"with x of shape {xbar.shape}")
        v = problem.value(np.array(xbar, copy=True))
        _checked("value", v, (R,), f"with x of shape {xbar.shape}", () if R == 1 else None)
    except UserCodeError:
        raise
    except Exception as exc:
        err = user_error(exc)
        if err is None:
            raise
        raise err from exc
