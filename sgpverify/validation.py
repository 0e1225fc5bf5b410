"""Argument validation shared by every module (one error grammar)."""

from __future__ import annotations

import difflib
import numbers
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

if TYPE_CHECKING:
    import os
    from collections.abc import Collection, Iterable

_T = TypeVar("_T")


def _fmt(value):
    return repr(value) if isinstance(value, str) else str(value)


def check_int(name: str, value: object, *, min_value: int | None = None, max_value: int | None = None) -> int:
    """Return ``value`` as a Python int or raise a ValueError/TypeError.

    The message names the parameter, the constraint and the value.
    """
    if min_value is not None and max_value is not None:
        constraint = f"an integer in [{min_value}, {max_value}]"
    elif min_value is not None:
        constraint = f"an integer >= {min_value}"
    elif max_value is not None:
        constraint = f"an integer <= {max_value}"
    else:
        constraint = "an integer"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be {constraint}, got {_fmt(value)}")
    value = int(value)
    if (min_value is not None and value < min_value) or (max_value is not None and value > max_value):
        raise ValueError(f"{name} must be {constraint}, got {value}")
    return value


def check_float(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite float within the given interval."""
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    if low is not None and high is not None:
        constraint = f"a number in {lo}{low}, {high}{hi}"
    elif low is not None:
        constraint = f"a number {'>' if low_open else '>='} {low}"
    elif high is not None:
        constraint = f"a number {'<' if high_open else '<='} {high}"
    else:
        constraint = "a finite number"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {constraint}, got {_fmt(value)}")
    value = float(value)
    bad = not np.isfinite(value)
    if low is not None:
        bad |= value <= low if low_open else value < low
    if high is not None:
        bad |= value >= high if high_open else value > high
    if bad:
        raise ValueError(f"{name} must be {constraint}, got {value}")
    return value


def real_matrix(name: str, P: Any) -> Any:
    """``P`` (an array or a scipy sparse matrix), its real part where it is complex with every
    imaginary part zero; a complex ``P`` with an imaginary part is refused, naming ``name`` (numpy
    would drop it with only a ComplexWarning)."""
    data = P.data if hasattr(P, "tocsr") else P
    try:
        if not np.iscomplexobj(data):
            return P
        imag = np.abs(np.imag(np.asarray(data)))
    except Exception:  # not an array numpy reads: the caller's conversion names it
        return P
    if imag.size and float(imag.max()) != 0.0:
        raise ValueError(f"{name} must be a real matrix, got complex entries (largest imaginary part {imag.max():.3g})")
    return P.real if hasattr(P, "tocsr") else np.real(np.asarray(P))


def check_choice(name: str, value: _T, choices: Collection[_T]) -> _T:
    if value not in choices:
        opts = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {opts}, got {_fmt(value)}")
    return value


def check_seed(name: str, seed: object) -> int | np.random.SeedSequence | None:
    """Accept None, a non-negative int, or a numpy SeedSequence."""
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return seed
    return check_int(name, seed, min_value=0)


def resolve_seed(name: str, seed: object) -> int | np.random.SeedSequence:
    """Validate ``seed`` and turn None into fresh, then fixed, entropy.

    Random schedules need random access by step, so the entropy is fixed once
    at construction: the same object always answers the same for step k.
    """
    seed = check_seed(name, seed)
    if seed is None:
        return int(np.random.SeedSequence().entropy)
    if isinstance(seed, np.random.SeedSequence):
        return seed
    return seed


def seed_sequence(seed: int | np.random.SeedSequence | None, *spawn_key: int) -> np.random.SeedSequence:
    """A SeedSequence for ``seed`` with an extra spawn key (random access by step)."""
    if isinstance(seed, np.random.SeedSequence):
        return np.random.SeedSequence(entropy=seed.entropy, spawn_key=tuple(seed.spawn_key) + tuple(spawn_key))
    return np.random.SeedSequence(entropy=0 if seed is None else seed, spawn_key=spawn_key)


#: Stream domains: objects built with the same seed draw independent streams.
STREAM = {
    "erdos-renyi": 1,
    "random-peer": 2,
    "link-failures": 3,
    "delay": 4,
    "columns": 5,
    "message-loss": 6,
    "constants": 7,
}


def rng_for(seed: int | np.random.SeedSequence | None, domain: str, *spawn_key: int) -> np.random.Generator:
    """Generator for ``(seed, domain, *spawn_key)``: random access by step.

    ``domain`` (a key of :data:`STREAM`) separates the streams of different
    components built with one seed (a topology and a delay model, say).
    """
    return np.random.Generator(np.random.PCG64(seed_sequence(seed, STREAM[domain], *spawn_key)))


def unknown_key(what: str, key: str, valid: Iterable[str], where: str | os.PathLike[str] | None = None) -> ValueError:
    """ValueError naming an unknown key and, when one is close, the valid name meant.

    Examples
    --------
    >>> str(unknown_key("config keys", "seeed", ["seed", "figures"], "c.toml"))
    "config keys must be one of the known names, got unknown seeed (did you mean 'seed'?) (in c.toml)"
    """
    close = difflib.get_close_matches(key, list(valid), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else f" (valid: {', '.join(sorted(valid))})"
    return ValueError(
        f"{what} must be one of the known names, got unknown {key}{hint}" + (f" (in {where})" if where else "")
    )


def read_toml(path: str | os.PathLike[str], name: str = "config") -> dict[str, Any]:
    """The table of a TOML file; ValueError naming ``name`` if it is missing or invalid."""
    import tomllib
    from pathlib import Path

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{name} must name an existing TOML file, got {str(path)!r}")
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{name} {str(path)!r} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{name} {str(path)!r} is not valid TOML: not UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset "
            f"{exc.start})"
        ) from None
    except OSError as exc:
        raise ValueError(f"{name} {str(path)!r} cannot be read: {exc.strerror or exc}") from None


#: The largest float64: what a run's sums of squares must stay below.
FLOAT_MAX = float(np.finfo(float).max)


def available_memory() -> int:
    """Bytes of memory this process can still use: ``MemAvailable`` of ``/proc/meminfo`` (the
    physical memory where that cannot be read); ``SGPVERIFY_MEMORY`` (bytes) replaces it, to plan
    for a smaller machine or a share of this one."""
    import os

    env = os.environ.get("SGPVERIFY_MEMORY")
    if env:
        try:
            return int(float(env))
        except ValueError:
            raise ValueError(f"SGPVERIFY_MEMORY must be a number of bytes, got {env!r}") from None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # unknown: nothing is refused
        return 2**62


def format_bytes(n: float) -> str:
    """``"9.4 GB"``: a byte count in decimal units."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def check_memory(what: str, need: float, detail: str) -> float:
    """Raise a ValueError before any work when ``need`` bytes (an estimate of the plan ``what``,
    from ``detail``: the sizes that drive it) exceed the memory available
    (:func:`available_memory`); return ``need``.

    Examples
    --------
    >>> check_memory("simulate", 1e30, "n = 1e29")
    Traceback (most recent call last):
    ...
    ValueError: simulate needs about 1e+18 TB of memory (n = 1e29), more than the ... available here ...
    """
    have = available_memory()
    if need > have:
        raise ValueError(
            f"{what} needs about {format_bytes(need)} of memory ({detail}), more than the {format_bytes(have)} "
            f"available here (set SGPVERIFY_MEMORY to plan for another machine): reduce the sizes"
        )
    return need


def check_magnitude(name: str, value: float, count: float, power: int = 2) -> float:
    """Raise a ValueError unless ``count * |value|^power`` (the sum of ``count`` such terms: squared
    norms summed over nodes, coordinates and steps) stays finite in float64; return ``value``.

    Examples
    --------
    >>> check_magnitude("sigma", 1e200, 160)
    Traceback (most recent call last):
    ...
    ValueError: sigma must keep 160 * sigma^2 finite in float64 (|sigma| <= 1.06e+153), got 1e+200
    """
    bound = (FLOAT_MAX / count) ** (1.0 / power)
    if not abs(value) <= bound:
        raise ValueError(
            f"{name} must keep {count:.4g} * {name}^{power} finite in float64 (|{name}| <= {bound:.3g}), "
            f"got {value:.4g}"
        )
    return value
