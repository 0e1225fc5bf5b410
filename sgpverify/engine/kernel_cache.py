"""Where numba caches the compiled kernels of :mod:`sgpverify.engine.kernels`.

The compiled kernels are cached on disk in a per-user directory, never in the
package's ``__pycache__`` (an installed package may be read-only or shared
between users). :func:`cache_dir` chooses it, in this order: numba's own
``NUMBA_CACHE_DIR`` when it is set (then left to numba, which caches every
numba function of the process there); ``$SGPVERIFY_CACHE_DIR/numba``; the
user's cache directory, ``%LOCALAPPDATA%\\sgpverify\\numba`` on Windows and
``$XDG_CACHE_HOME/sgpverify/numba`` (default ``~/.cache/sgpverify/numba``)
elsewhere. Where that directory cannot be created or written, the kernels
are compiled without a disk cache, afresh in every process (1.5-3 s). The
cache never changes a bit of the results: it only saves the compilation.
"""

from __future__ import annotations

import os
import sys
import tempfile

__all__ = ["cache_dir"]


def _user_cache_root() -> str | None:
    """The per-user cache directory of sgpverify, or None when there is no home directory."""
    root = os.environ.get("SGPVERIFY_CACHE_DIR", "").strip()
    if root:
        return os.path.abspath(os.path.expanduser(root))
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA", "").strip()
        if not base:
            base = os.path.join("~", "AppData", "Local")
    else:
        base = os.environ.get("XDG_CACHE_HOME", "").strip()
        if not os.path.isabs(base):  # unset, empty or relative: ignored, as the XDG specification says
            base = os.path.join("~", ".cache")
    base = os.path.expanduser(base)
    if not os.path.isabs(base):  # no home directory to expand "~" into
        return None
    return os.path.join(base, "sgpverify")


def cache_dir() -> str | None:
    """The directory in which numba caches the compiled kernels, or None (no disk cache).

    ``NUMBA_CACHE_DIR`` when it is set (numba's own setting, used as numba
    uses it); else ``numba`` under ``SGPVERIFY_CACHE_DIR`` when that is set,
    or under the user's cache directory (``%LOCALAPPDATA%\\sgpverify`` on
    Windows, ``$XDG_CACHE_HOME/sgpverify`` or ``~/.cache/sgpverify``
    elsewhere). None when that directory cannot be created or written: the
    kernels are then compiled in every process and cached nowhere, never in
    the package directory. Read when a kernel is first compiled in a process.

    Examples
    --------
    >>> d = cache_dir()
    >>> d is None or os.path.isabs(d) or d == os.environ.get("NUMBA_CACHE_DIR")
    True
    """
    given = os.environ.get("NUMBA_CACHE_DIR", "")
    if given:
        return given
    root = _user_cache_root()
    if root is None:
        return None
    path = os.path.join(root, "numba")
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()  # the check numba itself makes before caching
    except OSError:
        return None
    return path
