"""Atomic writes: nothing is ever half-written (DESIGN.md section 2).

Output goes to a temporary file in the target's directory and is renamed into place only when
complete; on any error the temporary file is removed and the target is untouched.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from sdckit.core.errors import DataError

#: Files read by :func:`sdckit.read` in this process; writes refuse to replace them.
_INPUTS: set[Path] = set()


def remember_input(path: Path) -> None:
    """Record ``path`` as an input so that no write replaces it."""
    _INPUTS.add(Path(path).resolve())


def refuse_input_overwrite(target: Path, inputs: tuple[Path, ...] = ()) -> None:
    """Raise :class:`DataError` if ``target`` is an input file (given or read by sdckit)."""
    resolved = Path(target).resolve()
    protected = _INPUTS | {Path(p).resolve() for p in inputs}
    if resolved in protected:
        raise DataError(
            f"Refusing to overwrite the input file {str(target)!r}; write the release to "
            "another path or directory."
        )


def output_directory(target: Path) -> Path:
    """The folder ``target`` is written into, created (with its parents) if missing."""
    directory = Path(target).parent if str(Path(target).parent) else Path(".")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"Cannot create the output directory {str(directory)!r}: {exc.strerror}.") from None
    return directory


@contextlib.contextmanager
def atomic_path(target: Path, *, copy_existing: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` on success.

    With ``copy_existing`` the temporary file starts as a copy of ``target`` (for formats
    such as DuckDB where a write adds a table to an existing file).
    """
    target = Path(target)
    directory = output_directory(target)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if copy_existing and target.exists():
            tmp.write_bytes(target.read_bytes())
        else:
            tmp.unlink()  # writers create the file themselves
        yield tmp
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        # a DuckDB write may leave a write-ahead log beside the temporary file
        with contextlib.suppress(FileNotFoundError):
            Path(str(tmp) + ".wal").unlink()


def write_text_atomic(target: Path, text: str, inputs: tuple[Path, ...] = ()) -> None:
    """Write ``text`` (UTF-8) to ``target`` atomically, never over an input file."""
    refuse_input_overwrite(target, inputs)
    with atomic_path(Path(target)) as tmp:
        tmp.write_text(text, encoding="utf-8")


def open_private(path: Path, flags: int = os.O_RDWR | os.O_CREAT) -> int:
    """``os.open`` of ``path``, created readable by its owner only (mode 0600: a umask can only take
    bits away) — for the privacy ledger's lock and the query service's files. An existing file keeps
    the mode its owner gave it (an office may share a ledger with its group)."""
    return os.open(path, flags, 0o600)


def make_private_dir(path: Path) -> None:
    """Create ``path`` (and parents) for private files; a folder created here is 0700."""
    if not path.exists():
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):
            os.chmod(path, 0o700)


def write_private(target: Path, text: str | bytes) -> None:
    """Write ``text`` (UTF-8; or bytes as they are) to ``target`` atomically (:func:`atomic_path`)
    and durably (fsync), with the mode of the file it replaces, else 0600 (owner only) whatever
    the umask."""
    target = Path(target)
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o600
    with atomic_path(target) as tmp:
        fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        os.fchmod(fd, mode)
        handle = os.fdopen(fd, "wb") if isinstance(text, bytes) else os.fdopen(fd, "w", encoding="utf-8")
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
