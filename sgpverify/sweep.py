"""Independent units of work on any executor: in-process, local processes or a dask cluster.

A :class:`Unit` is a module-level function with its arguments, deterministic in
them (its seed comes from the arguments, never from when or where it runs), so
:func:`run_units` returns the same bits whatever the executor, the number of
workers or the order in which the units finish. Results come back in the order
of the units.

Executors: ``workers=1`` runs in this process; ``workers=N`` on N spawned
local processes; ``scheduler=ADDRESS`` (or a ``distributed.Client``) on an
existing dask.distributed cluster (the ``cluster`` extra:
``pip install 'sgpverify[cluster]'``; dask is imported only then).

A :class:`UnitCache` keeps each finished unit on disk (``DIR/units/``), under a
key (:func:`unit_key`) that hashes the unit's identity (configuration, seed,
experiment, variant) with :func:`environment`: sgpverify's version and source
code, the versions of Python, numpy, scipy, networkx and sympy, and the
numeric fingerprint of the platform (:func:`platform_fingerprint`: the exact
bits of a few BLAS, LAPACK and SIMD operations), so a cache filled on a machine
that rounds differently is not reused there. Entries are written to a
temporary file and renamed, so an entry is whole or absent; an unreadable
entry counts as missing. A rerun after an interruption (a dead worker, Ctrl-C)
loads the finished units and runs only the others.

A dask cluster's workers must run the same code and library versions as this
process (else :class:`~sgpverify.errors.ClusterError`). A worker on another
numeric platform (another CPU or BLAS/LAPACK build: another fingerprint) is
used, with a :class:`~sgpverify.errors.PlatformMismatchWarning`: its results
are valid but may differ from a local run's in the last bits, so the units it
computes are not cached and :func:`run_units` reports them (``foreign``).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
import os
import pickle
import platform
import re
import tempfile
import traceback
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import CacheWarning, ClusterError, PlatformMismatchWarning, WorkerDiedError
from .fingerprint import platform_fingerprint
from .version import __version__

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from distributed import Client

__all__ = [
    "Unit",
    "UnitCache",
    "unit_key",
    "code_fingerprint",
    "run_units",
    "environment",
    "platform_fingerprint",
    "source_hash",
    "CONNECT_TIMEOUT",
]

#: Seconds allowed to connect to a dask scheduler (and for it to have a worker).
CONNECT_TIMEOUT = 10.0


@dataclasses.dataclass(frozen=True)
class Unit:
    """One independent piece of work: ``fn(*args)``.

    ``name`` is what messages show (``"rates (none)"``); ``key`` is the cache key
    (:func:`unit_key`), or None for a unit that is never cached.
    """

    name: str
    fn: Callable[..., Any]
    args: tuple
    key: str | None = None


# ---------------------------------------------------------------- cache keys


@functools.lru_cache(maxsize=1)
def source_hash() -> str:
    """SHA-256 (hex, 16 digits) of every ``.py`` file of the installed sgpverify package.

    Part of the result-cache key: results computed by other code are never
    returned, even under the same version number.
    """
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def environment() -> dict[str, str]:
    """What, besides a unit's identity, decides its bits: code, library versions and numeric platform.

    The one source of the environment part of every cache key (:func:`unit_key`,
    and the whole-result key of :func:`sgpverify.report.run_configs`) and of the
    check of a dask cluster's workers.

    Returns
    -------
    dict
        ``sgpverify`` (version), ``source`` (:func:`source_hash`), ``python``,
        ``numpy``, ``scipy``, ``networkx``, ``sympy`` (versions) and ``numeric``
        (:func:`platform_fingerprint`). A worker that differs in any but
        ``numeric`` is refused; one that differs in ``numeric`` is used with a
        warning and its units are not cached.
    """
    import networkx
    import numpy
    import scipy
    import sympy

    return {
        "sgpverify": __version__,
        "source": source_hash(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "networkx": networkx.__version__,
        "sympy": sympy.__version__,
        "numeric": platform_fingerprint(),
    }


def unit_key(identity: Mapping[str, Any]) -> str:
    """SHA-256 (32 hex digits) of a unit's identity (a JSON-ready dict) and :func:`environment`.

    The identity must hold everything the unit's result depends on besides the
    code: configuration, seed, experiment, variant.
    """
    blob = json.dumps(
        {"format": 1, "environment": environment(), "unit": identity}, sort_keys=True, default=_json_default
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _json_default(obj):
    if isinstance(obj, (tuple, set, frozenset)):
        return list(obj)
    if dataclasses.is_dataclass(obj):
        return dataclasses.asdict(obj)
    raise TypeError(f"not part of a cache key: {obj!r}")


def code_fingerprint(obj: object) -> str | None:
    """SHA-256 of the source file of a module-level function or class, with its name; None otherwise.

    Used for a user's problem or schedule factory, whose code sgpverify's own
    source hash does not cover. Lambdas, local functions, partials and callable
    instances return None (their behaviour is not pinned by a file): units
    using them are not cached. Modules that the file imports are not covered.
    """
    qual = getattr(obj, "__qualname__", None)
    mod = getattr(obj, "__module__", None)
    if not (inspect.isfunction(obj) or inspect.isclass(obj)) or not qual or "<" in qual or not mod:
        return None
    try:
        path = inspect.getsourcefile(obj)
        data = Path(path).read_bytes()
    except (TypeError, OSError):
        return None
    return f"{mod}:{qual}:{hashlib.sha256(data).hexdigest()[:16]}"


# ---------------------------------------------------------------- the cache


#: The first line of a unit cache entry; then the SHA-256 of its key and payload, then the payload.
ENTRY_MAGIC = b"sgpverify-unit 1\n"


def _digest(key: str, payload: bytes) -> str:
    return hashlib.sha256(key.encode() + b"\0" + payload).hexdigest()


def _damaged(path: Path, why: str) -> None:
    warnings.warn(f"damaged cache entry {path} ({why}): not used, recomputed and rewritten", CacheWarning, stacklevel=3)


def write_entry(path: str | os.PathLike[str], key: str, payload: bytes) -> None:
    """Write ``payload`` under ``key`` with its digest to ``path``, atomically (a temporary file in
    the same directory, flushed, then renamed): the entry is whole or absent."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(ENTRY_MAGIC + _digest(key, payload).encode() + b"\n" + payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_entry(path: str | os.PathLike[str], key: str) -> bytes | None:
    """The payload of the entry at ``path`` if it is whole and its digest matches ``key`` and the
    payload; None where there is none. A damaged entry (a flipped byte, a truncation, another
    key) is never returned: a one-line :class:`~sgpverify.errors.CacheWarning` names the file."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _damaged(path, f"unreadable: {exc.strerror or exc}")
        return None
    head, sep, rest = raw.partition(b"\n")
    digest, sep2, payload = rest.partition(b"\n")
    if head + b"\n" != ENTRY_MAGIC or not sep or not sep2:
        _damaged(path, "not a whole entry")
        return None
    if digest.decode("ascii", "replace") != _digest(key, payload):
        _damaged(path, "its digest does not match its key and content")
        return None
    return payload


class UnitCache:
    """Finished units on disk: ``DIR/units/NAME-KEY.pkl``, each written atomically.

    Pickle keeps the results exactly (types included), so a resumed run gives
    the same bits as an uninterrupted one. Every entry carries the SHA-256 of
    its key and payload (:func:`write_entry`), checked before the payload is
    unpickled: a damaged or truncated entry is warned about, naming the file,
    and recomputed, never used. The digest guards against damage, not against
    a forger: pickle runs code when loaded, so keep the cache in a directory
    only you (and machines you trust) write.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory) / "units"

    def path(self, unit: Unit) -> Path:
        safe = re.sub(r"[^A-Za-z0-9=.-]+", "_", unit.name).strip("_")[:80]
        return self.directory / f"{safe}-{unit.key}.pkl"

    def load(self, unit: Unit) -> tuple[bool, Any]:
        """``(True, value)`` for a whole entry of this unit's key, else ``(False, None)``."""
        if unit.key is None:
            return False, None
        p = self.path(unit)
        payload = read_entry(p, unit.key)
        if payload is None:
            return False, None
        try:
            entry = pickle.loads(payload)
        except Exception as exc:  # whole and matching, yet unreadable here (another library version)
            _damaged(p, f"{type(exc).__name__} when read")
            return False, None
        if not isinstance(entry, dict) or entry.get("key") != unit.key:
            _damaged(p, "another unit's entry")
            return False, None
        return True, entry["value"]

    def store(self, unit: Unit, value: Any) -> None:
        """Write the entry to a temporary file in the same directory, then rename it into place."""
        if unit.key is None:
            return
        payload = pickle.dumps({"key": unit.key, "name": unit.name, "value": value}, protocol=pickle.HIGHEST_PROTOCOL)
        write_entry(self.path(unit), unit.key, payload)


# ---------------------------------------------------------------- running


def run_units(
    units: Sequence[Unit],
    *,
    workers: int = 1,
    scheduler: str | Client | None = None,
    cache: UnitCache | None = None,
    progress: Callable[[str], None] | None = None,
    files: Iterable[str | os.PathLike[str]] = (),
    timeout: float = CONNECT_TIMEOUT,
    option_names: tuple[str, str] = ("workers", "scheduler"),
    foreign: dict[str, str] | None = None,
) -> list[Any]:
    """Run ``units`` and return their results, in the order of ``units``.

    Parameters
    ----------
    units : list of Unit
    workers : int
        1: in this process; N > 1: N spawned local processes (at most one per unit).
    scheduler : str or distributed.Client, optional
        Address of a running dask scheduler (``tcp://HOST:8786``) or a client;
        exclusive with ``workers > 1``.
    cache : UnitCache, optional
        Finished units are loaded from it and new ones stored as they finish.
    progress : callable, optional
        Called with ``"NAME"`` (or ``"NAME: cached"``) after each finished unit.
    files : sequence of paths
        Python files uploaded to the dask workers (a user's problem module).
    timeout : float
        Seconds to connect to the scheduler and for it to have a worker.
    option_names : (str, str)
        How errors name the two options (``"--workers"`` from the command line).
    foreign : dict, optional
        Filled with ``{unit name: fingerprint}`` for each unit that a dask worker
        on another numeric platform computed (:func:`platform_fingerprint`
        differs from this process's). Such units are returned but not stored in
        ``cache``: the cache only serves bits of this platform.

    Warns
    -----
    PlatformMismatchWarning
        Some dask workers run on another numeric platform than this process
        (named, with both fingerprints): their results may differ from a local
        run's in the last bits. Workers with other code or library versions
        are refused instead (``ClusterError``).

    Raises
    ------
    WorkerDiedError
        A worker process died while running a unit (named). The units that had
        finished are in the cache, so the same call resumes.
    ClusterError
        No dask, an address that does not lead to a dask scheduler, or workers
        that run other code or library versions than this process.

    Examples
    --------
    >>> from sgpverify.sweep import Unit, run_units
    >>> run_units([Unit("a", divmod, (7, 2)), Unit("b", pow, (2, 10))])
    [(3, 1), 1024]
    """
    from .validation import check_int

    wname, sname = option_names
    workers = check_int(wname, workers, min_value=1)
    if scheduler is not None and workers > 1:
        raise ValueError(
            f"{wname} and {sname} are exclusive (the cluster has its own workers), got "
            f"{wname} = {workers} and {sname} = {scheduler!r}"
        )
    results = {}
    for i, u in enumerate(units):
        if cache is not None:
            hit, value = cache.load(u)
            if hit:
                results[i] = value
                if progress:
                    progress(f"{u.name}: cached")
    todo = [i for i in range(len(units)) if i not in results]

    def done(i, value, fingerprint=None):
        results[i] = value
        if fingerprint is not None and fingerprint != platform_fingerprint():
            if foreign is not None:
                foreign[units[i].name] = fingerprint
        elif cache is not None:
            cache.store(units[i], value)
        if progress:
            progress(units[i].name)

    if scheduler is not None:
        if todo:
            _run_dask(units, todo, done, scheduler, files, timeout, sname)
    elif workers > 1 and len(todo) > 1 and _picklable([units[i] for i in todo]):
        _run_local(units, todo, done, min(workers, len(todo)))
    else:
        for i in todo:
            done(i, units[i].fn(*units[i].args))
    return [results[i] for i in range(len(units))]


def _picklable(objs):
    try:
        pickle.dumps(objs)
        return True
    except Exception:  # lambdas, local functions: run in this process
        return False


# ---------------------------------------------------------------- local processes


class _RemoteTraceback(Exception):
    def __str__(self):
        return self.args[0]


def _worker(conn):
    """Loop of a local worker process: receive (index, fn, args), send (index, ok, value)."""
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        i, fn, args = msg
        try:
            out = (i, True, fn(*args), None)
        except BaseException as exc:  # sent back and re-raised in the parent
            out = (i, False, exc, traceback.format_exc())
        try:
            conn.send(out)
        except Exception:  # an unpicklable result or exception
            conn.send(
                (i, False, RuntimeError(f"unit result could not be sent back: {out[2]!r}"), traceback.format_exc())
            )


_BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _run_local(units, todo, done, workers):
    import multiprocessing as mp
    from multiprocessing.connection import wait

    ctx = mp.get_context("spawn")
    procs = []
    # one BLAS thread per worker process (as dask's workers do), unless the user chose: N workers with
    # multi-threaded BLAS each would oversubscribe the cores (same bits: tests compare with in-process runs)
    saved = {v: os.environ.get(v) for v in _BLAS_THREADS}
    try:
        for v in _BLAS_THREADS:
            os.environ.setdefault(v, "1")
        try:
            for _ in range(workers):
                parent, child = ctx.Pipe()
                p = ctx.Process(target=_worker, args=(child,), daemon=True)
                p.start()
                child.close()
                procs.append((p, parent))
        finally:
            for v, old in saved.items():
                if old is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = old
        queue = list(todo)
        busy = {}  # worker index -> unit index
        dead = []  # (unit index, exit code)
        failure = None

        def assign():
            for w, (_proc, conn) in enumerate(procs):
                if w not in busy and queue and not dead and failure is None:
                    i = queue.pop(0)
                    conn.send((i, units[i].fn, units[i].args))
                    busy[w] = i

        assign()
        while busy:
            ready = wait([procs[w][1] for w in busy] + [procs[w][0].sentinel for w in busy])
            for w in list(busy):
                p, conn = procs[w]
                if conn not in ready and p.sentinel not in ready:
                    continue
                i = busy[w]
                try:
                    has = conn.poll()
                    msg = conn.recv() if has else None
                except (EOFError, OSError):
                    msg = None
                if msg is None:  # the process ended without an answer
                    p.join(5)
                    dead.append((i, p.exitcode))
                    del busy[w]
                    continue
                del busy[w]
                _, ok, value, tb = msg
                if ok:
                    done(i, value)
                elif failure is None:
                    if tb:
                        value.__cause__ = _RemoteTraceback(f'\n"""\n{tb}"""')
                    failure = (i, value)
            assign()  # units still running finish (and are cached) before an error is raised
        if dead:
            i, code = dead[0]
            how = f"exit code {code}" if code is None or code >= 0 else f"killed by signal {-code}"
            raise WorkerDiedError(
                f"a worker process died while running unit {units[i].name} ({how}); the units that finished "
                f"are cached: rerun to resume",
                unit=units[i].name,
            )
        if failure is not None:
            i, exc = failure
            exc.add_note(f"(in unit {units[i].name})")
            raise exc
    finally:
        for _proc, conn in procs:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        for p, conn in procs:
            p.join(2)
            if p.is_alive():
                p.terminate()
                p.join(2)
            conn.close()


# ---------------------------------------------------------------- dask.distributed


def _import_distributed(sname, scheduler):
    try:
        import distributed
    except ImportError:
        raise ClusterError(
            f"{sname} needs dask.distributed, which is not installed: pip install "
            f"'sgpverify[cluster]' (got {sname} = {scheduler!r})"
        ) from None
    return distributed


def connect(scheduler: str | Client, timeout: float = CONNECT_TIMEOUT, sname: str = "scheduler") -> tuple[Client, bool]:
    """A ``distributed.Client`` for ``scheduler`` (an address or a client) with at least one worker.

    Returns ``(client, owned)``; ``owned`` clients are closed by the caller.
    """
    distributed = _import_distributed(sname, scheduler)
    if isinstance(scheduler, distributed.Client):
        return scheduler, False
    bad = (
        f"{sname} must be the address of a running dask scheduler, e.g. tcp://HOST:8786 "
        f"(start one with `dask scheduler`), got {scheduler!r}"
    )
    if not isinstance(scheduler, str) or not scheduler.strip():
        raise ClusterError(bad)
    from distributed.comm import registry
    from distributed.comm.addressing import parse_address, parse_host_port

    address = scheduler.strip()
    try:
        scheme, loc = parse_address(address)
        if scheme not in registry.backends:
            raise ValueError(f"unknown scheme {scheme!r}; known: {', '.join(sorted(registry.backends))}")
        if scheme in ("tcp", "tls"):
            import socket

            host, port = parse_host_port(loc)
            socket.create_connection((host, port), timeout=timeout).close()  # fails fast: nothing listening
        kind = _identity(address, timeout)
        if kind != "Scheduler":
            raise ValueError(f"a dask {kind}, not a scheduler, answered")
    except Exception as exc:
        raise ClusterError(f"{bad} ({_reason(exc)})") from None
    try:
        client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except Exception as exc:
        raise ClusterError(f"{bad} (no dask scheduler answered within {timeout:g} s: {_reason(exc)})") from None
    try:
        client.wait_for_workers(1, timeout=timeout)
    except Exception:
        client.close()
        raise ClusterError(
            f"{sname} {scheduler!r} has no worker after {timeout:g} s: start one with `dask worker {scheduler}`"
        ) from None
    return client, True


def _identity(address, timeout):
    """The type of the dask server at ``address`` ("Scheduler"), asked over dask's protocol before a
    Client exists: a failed Client leaves a background close that prints on exit."""
    import asyncio

    from distributed.core import rpc

    try:
        asyncio.get_running_loop()
        return "Scheduler"  # inside a running event loop (a notebook): the Client itself checks
    except RuntimeError:
        pass

    async def ask():
        r = rpc(address, timeout=timeout)
        try:
            return await asyncio.wait_for(r.identity(), timeout)
        finally:
            await r.close_rpc()

    try:
        ident = asyncio.run(ask())
    except (asyncio.TimeoutError, TimeoutError):
        raise TimeoutError(f"no answer within {timeout:g} s") from None
    return ident.get("type") if isinstance(ident, dict) else type(ident).__name__


def _reason(exc):
    if isinstance(exc, MemoryError):  # dask read a garbage frame length
        return "the server there does not speak dask's protocol"
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) < 200 else text[:197] + "..."


def _check_workers(client, sname, scheduler):
    """Every worker must run the same sgpverify code and libraries (else not the same bits): raises
    ClusterError. Workers on another numeric platform are used, with a PlatformMismatchWarning;
    returns ``{address: fingerprint}`` of those."""
    here = environment()
    try:
        theirs = client.run(environment)
    except Exception as exc:
        raise ClusterError(
            f"{sname} {scheduler!r}: the workers could not run sgpverify ({_reason(exc)}); install "
            f"the same sgpverify on every worker"
        ) from None
    other = {}
    for addr, env in sorted(theirs.items()):
        diff = [f"{k} {env.get(k)} (here {v})" for k, v in here.items() if k != "numeric" and env.get(k) != v]
        if diff:
            raise ClusterError(
                f"{sname} {scheduler!r}: worker {addr} runs other code or libraries than this "
                f"process: {', '.join(diff)}; install the same sgpverify (and versions) on every "
                f"worker"
            )
        if env.get("numeric") != here["numeric"]:
            other[addr] = env.get("numeric")
    if other:
        _warn_platforms(sname, scheduler, other)
    return other


def _warn_platforms(sname, scheduler, other):
    """One-line PlatformMismatchWarning naming the workers ``{address: fingerprint}`` and this process's."""
    names = ", ".join(f"{addr} (fingerprint {fp})" for addr, fp in other.items())
    one = len(other) == 1
    warnings.warn(
        f"{sname} {scheduler!r}: worker{'' if one else 's'} {names} run{'s' if one else ''} on another numeric "
        f"platform (CPU or BLAS/LAPACK build) than this process (fingerprint {platform_fingerprint()}): "
        f"{'its' if one else 'their'} results may differ from a local run's in the last bits, and the units "
        f"{'it computes are' if one else 'they compute are'} not cached",
        PlatformMismatchWarning,
        stacklevel=3,
    )


def _fingerprinted(fn, *args):
    """``(platform_fingerprint(), fn(*args))``: a unit's result with the numeric platform it was computed on."""
    return platform_fingerprint(), fn(*args)


def _run_dask(units, todo, done, scheduler, files, timeout, sname):
    import uuid

    distributed = _import_distributed(sname, scheduler)
    client, owned = connect(scheduler, timeout, sname)
    try:
        for f in files:
            client.upload_file(str(f))
        if not isinstance(scheduler, str):  # a Client: messages name its scheduler's address, not its repr
            scheduler = getattr(getattr(client, "scheduler", None), "address", None) or scheduler
        seen = set(_check_workers(client, sname, scheduler).values()) | {platform_fingerprint()}
        tag = uuid.uuid4().hex[:8]
        futs = {}
        for i in todo:
            u = units[i]
            fut = client.submit(_fingerprinted, u.fn, *u.args, key=f"sgpverify {u.name} {i} {tag}", pure=False)
            futs[fut] = i
        try:
            for fut in distributed.as_completed(list(futs), loop=client.loop):
                i = futs[fut]
                try:
                    fingerprint, value = fut.result()
                except distributed.KilledWorker as exc:
                    raise WorkerDiedError(
                        f"a dask worker died while running unit {units[i].name} ({_reason(exc)}); the units that "
                        f"finished are cached: rerun to resume",
                        unit=units[i].name,
                    ) from None
                except BaseException as exc:
                    if isinstance(exc, Exception):
                        exc.add_note(f"(in unit {units[i].name})")
                    raise
                if fingerprint not in seen:  # a worker that joined after the check
                    seen.add(fingerprint)
                    _warn_platforms(sname, scheduler, {f"running unit {units[i].name}": fingerprint})
                done(i, value, fingerprint)
        finally:
            client.cancel([f for f in futs if not f.done()])
    finally:
        if owned:
            client.close()
