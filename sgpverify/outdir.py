"""The user's files are never deleted: output directories that sgpverify owns, and locations
checked before any work.

A report directory (``verify --out``) carries, in its ``manifest.json``, the list of the files
sgpverify wrote there (``"files"``). :func:`check_out_dir` refuses, before any work, a directory
that holds anything else (the user's files), unless ``force``; and always refuses the working
directory, a parent of it, the home directory and the root. :func:`replace_own_files` moves
the new files in one by one (each write atomic: a rename in the same file system) and removes
only the files the previous manifest listed that the new report does not write again: never a
file sgpverify did not write, never a directory, never through a symbolic link.
:func:`check_writable_dir` checks that a directory can be created and written (``--out``,
``--cache``), in well under a second, so that nothing fails after the work for want of it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

__all__ = ["MANIFEST", "check_out_dir", "check_writable_dir", "owned_files", "replace_own_files"]

#: The file of a report directory that lists sgpverify's own files there (key ``"files"``).
MANIFEST = "manifest.json"
#: The files of a report written before manifests listed them (a manifest with sgpverify's
#: ``versions`` and no ``"files"``): the report, its data and the figures of that time.
LEGACY_FILES = frozenset(
    ["report.md", "data.json", "checks.json"]
    + [
        f"{name}.png"
        for name in (
            "stationarity_vs_K", "speedup_vs_n", "consensus_vs_K", "delays", "graph_families", "pushsum_weights",
            "mixing_heatmaps", "mixing_constants", "topologies", "iteration_complexity", "tightness",
        )
    ]
)  # fmt: skip


def _show(path: str | os.PathLike[str]) -> str:
    return repr(str(path))


def check_writable_dir(path: str | os.PathLike[str] | None, option: str) -> Path:
    """``path`` as a Path, or a ValueError naming ``option`` and the path where it cannot be a
    directory this process creates and writes: an empty name, an existing file (or a path through
    one), a directory without write permission (or whose nearest existing parent has none)."""
    if path is None or str(path).strip() == "":
        raise ValueError(f"{option} must name a directory, got {_show(path or '')}")
    p = Path(path)
    probe = p
    while not probe.exists():
        if probe.is_symlink():  # a dangling link
            raise ValueError(f"{option} must be a directory, got a broken symbolic link {_show(probe)} in {_show(p)}")
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        what = "an existing file" if probe == p else f"a path through the file {_show(probe)}"
        raise ValueError(f"{option} must be a directory, got {what}: {_show(p)}")
    if probe.exists() and not os.access(probe, os.W_OK | os.X_OK):
        where = "" if probe == p else f" (its parent {_show(probe)} is not writable)"
        raise ValueError(f"{option} must be a directory this process can write, got {_show(p)}{where}")
    return p


def owned_files(outdir: str | os.PathLike[str]) -> set[str]:
    """The names of the files sgpverify wrote in ``outdir`` (its manifest's ``"files"``, and the
    manifest itself); empty where there is no readable manifest of ours."""
    m = Path(outdir) / MANIFEST
    try:
        man = json.loads(m.read_text())
        files = man.get("files")
    except (OSError, ValueError, AttributeError):
        return set()
    if files is None and isinstance(man.get("versions"), dict) and "sgpverify" in man["versions"]:
        return (LEGACY_FILES & set(os.listdir(outdir))) | {MANIFEST}  # a report of an earlier version
    if not isinstance(files, list) or not all(isinstance(f, str) and "/" not in f and f for f in files):
        return set()
    return set(files) | {MANIFEST}


def _forbidden(p: Path) -> str | None:
    """Why ``p`` may never be an output directory, or None."""
    r = p.resolve()
    cwd = Path.cwd().resolve()
    if r == cwd or r in cwd.parents:
        return "the working directory or one of its parents"
    if r == Path.home().resolve() or r == Path(r.anchor):
        return "the home directory or the root"
    return None


def check_out_dir(outdir: str | os.PathLike[str], force: bool = False, option: str = "--out") -> Path:
    """Check, before any work, that ``outdir`` may receive a report; return it as a Path.

    Refused (ValueError naming ``option``, the path and the reason): what
    :func:`check_writable_dir` refuses; the working directory, one of its parents, the home
    directory or the root (even with ``force``); an existing directory that holds anything
    sgpverify did not write (not listed by its manifest), unless ``force``: then the report's
    files are written beside the user's, which stay untouched.

    Examples
    --------
    >>> check_out_dir(".")
    Traceback (most recent call last):
    ...
    ValueError: --out must not be the working directory or one of its parents (it holds your files), got '.'
    """
    p = check_writable_dir(outdir, option)
    why = _forbidden(p)
    if why:
        raise ValueError(f"{option} must not be {why} (it holds your files), got {_show(outdir)}")
    if p.is_dir():
        foreign = sorted(set(os.listdir(p)) - owned_files(p))
        if foreign and not force:
            shown = ", ".join(repr(f) for f in foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise ValueError(
                f"{option} {_show(outdir)} holds {len(foreign)} file(s) sgpverify did not write ({shown}): choose "
                f"another directory, or pass --force to write the report beside them (only sgpverify's own "
                f"files are then replaced)"
            )
    return p


def replace_own_files(staged: str | os.PathLike[str], outdir: str | os.PathLike[str], manifest: dict) -> list[str]:
    """Move every file of the directory ``staged`` into ``outdir`` (created if needed), remove the
    files of ``outdir``'s previous manifest that are not written again, and write ``manifest``
    (with ``"files"``: the names written) last; return the names. ``staged`` must be on the same
    file system (a sibling temporary directory): each move is a rename."""
    staged, outdir = Path(staged), Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    before = owned_files(outdir)
    names = sorted(f.name for f in staged.iterdir() if f.is_file() and f.name != MANIFEST)
    for name in names:
        os.replace(staged / name, outdir / name)
    for name in sorted(before - set(names) - {MANIFEST}):
        stale = outdir / name
        if stale.is_symlink() or stale.is_file():  # a link itself, never what it points to
            stale.unlink(missing_ok=True)
    manifest = dict(manifest, files=names)
    fd, tmp = tempfile.mkstemp(prefix=".manifest-", dir=outdir)
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps(manifest, indent=1))
    os.replace(tmp, outdir / MANIFEST)
    return names
