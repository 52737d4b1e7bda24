"""Reading and writing microdata files (CSV/TSV, Parquet, Stata, SPSS, SAS, DuckDB)."""

from sdckit.core.atomic import write_text_atomic
from sdckit.io.files import FORMATS, MAX_COLUMNS, WRITABLE, detect_format, read, sniff_delimiter, write

__all__ = ["FORMATS", "MAX_COLUMNS", "WRITABLE", "detect_format", "read", "sniff_delimiter", "write", "write_text_atomic"]
