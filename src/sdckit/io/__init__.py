"""Reading and writing microdata files (CSV/TSV, Parquet, Stata, SPSS, SAS, DuckDB)."""

from sdckit.core.lazy import lazy_exports

__all__ = ["FORMATS", "MAX_COLUMNS", "WRITABLE", "detect_format", "read", "sniff_delimiter", "write", "write_text_atomic"]

#: Where each public name lives; it is imported on first use (issue 28 item 4, start-up).
__getattr__, __dir__ = lazy_exports(__name__, {
    "FORMATS": "sdckit.io.files",
    "MAX_COLUMNS": "sdckit.io.files",
    "WRITABLE": "sdckit.io.files",
    "detect_format": "sdckit.io.files",
    "read": "sdckit.io.files",
    "sniff_delimiter": "sdckit.io.files",
    "write": "sdckit.io.files",
    "write_text_atomic": "sdckit.core.atomic",
})
