"""``python -m sdckit`` and the ``sdckit`` console script: the command-line tool.

Ctrl-C is caught from the first instruction: while the commands are still being loaded nothing
has started, so the process leaves at once with 130 (128 + SIGINT) and one line, never a
traceback; :func:`sdckit.cli.main` then installs its own handler for the run itself.
"""

from __future__ import annotations

import signal

from sdckit.core.interrupt import leave_interrupted


def _interrupted_while_loading(signum: int, frame: object) -> None:
    leave_interrupted()


def main() -> None:
    """Entry point of the console script."""
    signal.signal(signal.SIGINT, _interrupted_while_loading)
    from sdckit.cli import main as run

    run()


if __name__ == "__main__":
    main()
