"""What the commands share: consoles, progress bars, tables of figures, JSON output, and
:func:`print_result`, the one way a command prints a :class:`~sdckit.core.result.Result`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from sdckit.core.result import Result

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

    from sdckit.core.result import plain

    write_text_atomic(Path(path), json.dumps(plain(payload), indent=2) + "\n")


def print_result(result: Result, title: str, json_out: Path | None = None, *, show_header: bool = True) -> None:
    """Print ``result.summary()`` as a table titled ``title`` (its columns are the result's
    ``summary_columns``) and, with ``json_out`` (the commands' ``--json``), write its ``to_dict()``
    there as JSON."""
    columns = result.summary_columns
    table = Table(title=title, show_header=show_header)
    for i, name in enumerate(columns):
        table.add_column(name, justify="left" if i == 0 or len(columns) > 2 else "right")
    for row in result.summary():
        table.add_row(*row)
    console.print(table)
    if json_out is not None:
        write_json(json_out, result.to_dict())
