"""What the commands share: consoles, progress bars, tables of figures and JSON output."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console()
err_console = Console(stderr=True)


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Any]:
    """A rich progress bar on stderr; yields ``advance(done, total, *_)`` for library callbacks."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    ) as bar:
        task = bar.add_task(description, total=total)

        def advance(done: int, total_: int, *_: Any) -> None:
            bar.update(task, completed=done, total=total_)

        yield advance


def figures_table(title: str, rows: Iterable[tuple[str, str]] = (), *, show_header: bool = True) -> Table:
    """The two-column table of named figures ("measure", "value") every command prints; more
    rows may be added with ``add_row``."""
    table = Table(title=title, show_header=show_header)
    table.add_column("measure")
    table.add_column("value", justify="right")
    for label, value in rows:
        table.add_row(label, value)
    return table


def write_json(path: Path, payload: Any) -> None:
    """Write ``payload`` as indented JSON, atomically."""
    from sdckit.io import write_text_atomic

    write_text_atomic(Path(path), json.dumps(payload, indent=2, default=str) + "\n")
