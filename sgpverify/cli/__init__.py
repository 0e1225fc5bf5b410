"""The ``sgpverify`` command.

User mistakes (bad arguments, invalid matrices, bad config keys) print one
line naming the option (or key, and file), the constraint and the value and
exit with status 2, without a traceback, before any work and without writing
anything. A ``simulate`` run that diverges (a state or a recorded measurement
not finite, at any number of iterations) is one line naming the iteration,
status 2 as well: the input (step size, schedule) cannot be run. A mistake in the
user's own code (an exception raised in a problem's ``grad``, ``full_grad`` or
``value``, a factory or a schedule callable, or an output of the wrong shape or
type) prints the user's traceback and one line naming the method ("raised in
your problem's grad"), status 2.

Exit status: 0 success; 1 a check failed (a mixing assumption is violated, or
a verification check, or a negative control was not detected); 2 bad input, or
a simulation that diverged, or a mistake in the user's code; 3 internal error (a bug:
traceback shown; or, in one line, a worker process that died while running a unit of
verify/run: rerun to resume from the cache);
4 (verify) no check failed but some are inconclusive.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from .. import engine
from ..errors import SGPVerifyError, UserCodeError, WorkerDiedError
from ..usercode import user_error
from .commands import UsageError, load_matrix
from .parser import build_parser

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main", "build_parser", "load_matrix", "UsageError"]


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Entry point of the ``sgpverify`` command; returns the exit status."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        engine.check_kernels_setting()  # a bad SGPVERIFY_KERNELS is named before any work starts
        return args.func(args, out, err)
    except UsageError as exc:
        err.write(f"{exc}\n")
        return 2
    except UserCodeError as exc:  # the user's code raised, or returned what the protocol refuses
        return _user_code(exc, args, err)
    except WorkerDiedError as exc:  # not a user mistake, not a bug here: one line, status 3
        err.write(f"sgpverify {args.command}: error: {exc}\n")
        return 3
    except (ValueError, TypeError, SGPVerifyError) as exc:  # includes DistributedError, ClusterError
        if user_error(exc) is not None:  # a ValueError raised inside the user's own code
            return _user_code(user_error(exc), locals().get("args"), err)
        cmd = getattr(locals().get("args"), "command", None)
        prefix = f"sgpverify {cmd}" if cmd else "sgpverify"
        err.write(f"{prefix}: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        err.write("sgpverify: interrupted\n")
        return 130
    except Exception as exc:  # a bug, not a user mistake: show it, with a distinct status
        import traceback

        if user_error(exc) is not None:  # ... unless it was raised inside the user's code
            return _user_code(user_error(exc), locals().get("args"), err)

        traceback.print_exc(file=err)
        err.write("sgpverify: internal error (please report it with the command above)\n")
        return 3


def _user_code(exc: UserCodeError, args: object, err: TextIO) -> int:
    """Status 2 for a mistake in the user's code: their own traceback (where there is one), then
    one line naming the method."""
    cmd = getattr(args, "command", None)
    if exc.user_traceback:
        err.write(exc.user_traceback.rstrip("\n") + "\n")
    err.write(f"sgpverify{' ' + cmd if cmd else ''}: error: {exc}\n")
    return 2
