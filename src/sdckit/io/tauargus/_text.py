"""Reading tau-ARGUS text files: existence checks, decoding, numbered lines, one-line errors.

tau-ARGUS writes its files on Windows, so a file that is not UTF-8 is read as Windows-1252
(every byte decodes); line ends may be CRLF. Every failure is a :class:`DataError` that names
the file and, where there is one, the line — never a data value.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from sdckit.core.errors import DataError


def fail(path: Path, line: int | None, message: str) -> DataError:
    """The one-line error for ``message`` at ``line`` (1-based) of ``path``."""
    where = f"{str(path)!r} line {line}" if line is not None else repr(str(path))
    return DataError(f"{where}: {message}")


def read_text(path: str | Path, what: str) -> tuple[Path, str]:
    """The decoded text of the tau-ARGUS ``what`` file at ``path`` (``.gz`` is decompressed)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{what} file not found: {str(path)!r}.")
    if path.is_dir():
        raise DataError(f"{str(path)!r} is a directory, not a {what} file.")
    raw = path.read_bytes()
    if path.suffix.lower() == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError):
            raise DataError(f"{str(path)!r} is not a valid gzip file.") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
    if not text.strip():
        raise DataError(f"{what} file {str(path)!r} is empty.")
    return path, text


def numbered_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` for every line of ``text`` that is not blank, line ends removed."""
    lines = text.split("\n")
    return [(n, line.rstrip("\r")) for n, line in enumerate(lines, start=1) if line.strip()]
