"""Make tests/data/small.sas7bdat, the fixture of the SAS reader test.

pyreadstat reads SAS files but does not expose ReadStat's SAS7BDAT writer; its compiled
extension does contain it, so this one-off script calls ReadStat's C API through ctypes
(readstat_writer_init, readstat_add_variable, readstat_begin_writing_sas7bdat, ...; see
readstat.h in ReadStat / pyreadstat 1.3.7). Run: python tests/data/make_sas7bdat.py
The values written are those the test expects (ID 1..4, AGE, INCOME, REGION).
"""

import ctypes
import glob
import os
from pathlib import Path

import pyreadstat

ROWS = [
    (1.0, 34.0, 52000.5, b"north"),
    (2.0, 45.0, 61000.0, b"south"),
    (3.0, 29.0, 38000.25, b"east"),
    (4.0, 61.0, 75500.0, b"west"),
]
TYPE_STRING, TYPE_DOUBLE = 0, 5
WRITER = ctypes.CFUNCTYPE(ctypes.c_ssize_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)


def main(target: Path) -> None:
    so = glob.glob(os.path.join(os.path.dirname(pyreadstat.__file__), "_readstat_writer*.so"))[0]
    lib = ctypes.CDLL(so)
    lib.readstat_writer_init.restype = ctypes.c_void_p
    lib.readstat_add_variable.restype = ctypes.c_void_p
    lib.readstat_add_variable.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t]
    lib.readstat_insert_double_value.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_double]
    lib.readstat_insert_string_value.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p]
    for name in ("readstat_set_data_writer", "readstat_begin_writing_sas7bdat", "readstat_begin_row",
                 "readstat_end_row", "readstat_end_writing", "readstat_writer_free"):
        getattr(lib, name).restype = ctypes.c_int
    lib.readstat_begin_writing_sas7bdat.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
    for name in ("readstat_begin_row", "readstat_end_row", "readstat_end_writing", "readstat_writer_free"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]

    out = bytearray()

    @WRITER
    def sink(data, length, _ctx):
        out.extend(ctypes.string_at(data, length))
        return length

    writer = lib.readstat_writer_init()
    lib.readstat_set_data_writer.argtypes = [ctypes.c_void_p, WRITER]
    assert lib.readstat_set_data_writer(writer, sink) == 0
    variables = [
        lib.readstat_add_variable(writer, b"ID", TYPE_DOUBLE, 8),
        lib.readstat_add_variable(writer, b"AGE", TYPE_DOUBLE, 8),
        lib.readstat_add_variable(writer, b"INCOME", TYPE_DOUBLE, 8),
        lib.readstat_add_variable(writer, b"REGION", TYPE_STRING, 8),
    ]
    assert lib.readstat_begin_writing_sas7bdat(writer, None, len(ROWS)) == 0
    for row in ROWS:
        assert lib.readstat_begin_row(writer) == 0
        for var, value in zip(variables[:3], row[:3]):
            assert lib.readstat_insert_double_value(writer, var, value) == 0
        assert lib.readstat_insert_string_value(writer, variables[3], row[3]) == 0
        assert lib.readstat_end_row(writer) == 0
    assert lib.readstat_end_writing(writer) == 0
    lib.readstat_writer_free(writer)
    target.write_bytes(bytes(out))


if __name__ == "__main__":
    main(Path(__file__).with_name("small.sas7bdat"))
