"""Leaving on Ctrl-C: one line on stderr, exit status 130 (128 + SIGINT), no traceback.

Imports only the standard library, so the console script can use it before anything else loads.
"""

from __future__ import annotations

import os
import sys

#: What the user reads when a run is interrupted.
MESSAGE = "sdckit: interrupted; nothing was written."


def leave_interrupted() -> None:
    """Print :data:`MESSAGE` and end the process at once with status 130.

    ``os._exit`` rather than ``sys.exit``: interpreter shutdown could crash in a worker thread
    still running native code (e.g. a KD-tree query pool); every atomic write has already been
    unwound by the exception, so nothing half-written is left.
    """
    print(MESSAGE, file=sys.stderr)
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(130)
