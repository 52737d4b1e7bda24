"""The ``sdckit`` command: a thin layer over one library call per command.

Bad input never shows a traceback: an :class:`~sdckit.core.errors.SdcError` is printed as one
line on stderr and the exit status is 2 (typer reports usage errors with status 2 as well).
"""

from __future__ import annotations

import signal
import sys
import warnings

from sdckit.cli.app import app
from sdckit.core.errors import SdcError, SecurityWarning
from sdckit.core.interrupt import leave_interrupted

__all__ = ["app", "main"]

# The command modules attach their commands to ``app`` when imported, each on first use
# (``sdckit.cli.app.COMMANDS``): a new command is a new module and a line there.


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script; exits with 0, 1 (a bug) or 2 (bad input)."""
    # The command line enforces the seed policy itself: a weak release seed is refused unless the
    # user allows it (and the manifest then says so); the library's warning would repeat that.
    warnings.filterwarnings("ignore", category=SecurityWarning)
    previous = signal.signal(signal.SIGINT, _interrupt)
    try:
        app(args=argv, prog_name="sdckit")
    except SdcError as exc:
        fail(str(exc))
    except OSError as exc:  # e.g. disk full or permission denied while writing
        fail(f"{exc.strerror or exc}: {exc.filename or ''}".strip(": "))
    except (KeyboardInterrupt, Interrupted):
        leave_interrupted()  # the exception unwound every atomic write: nothing half-written
    finally:
        signal.signal(signal.SIGINT, previous)


class Interrupted(BaseException):
    """Ctrl-C, raised by our SIGINT handler: a BaseException that click does not turn into an
    ordinary exit, so that :func:`main` can end the process cleanly."""


def _interrupt(signum: int, frame: object) -> None:
    raise Interrupted()


def fail(message: str, status: int = 2) -> None:
    """Print ``message`` as one line on stderr and exit with ``status``."""
    one_line = " ".join(str(message).split())
    print(f"sdckit: error: {one_line}", file=sys.stderr)
    sys.exit(status)
