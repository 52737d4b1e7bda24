"""What several table tests build: a small 2-D table from a matrix of interior values, and the
R package cellKey's test data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from sdckit.tabular import Table


def table2d(values) -> Table:
    """A 2-D table (rows r0.., columns c0..) with margins from a matrix of interior values."""
    values = np.asarray(values, float)
    rows = [(f"r{i}", f"c{j}", values[i, j]) for i in range(values.shape[0]) for j in range(values.shape[1])]
    rows += [(f"r{i}", "Total", values[i].sum()) for i in range(values.shape[0])]
    rows += [("Total", f"c{j}", values[:, j].sum()) for j in range(values.shape[1])]
    rows.append(("Total", "Total", values.sum()))
    cells = pd.DataFrame(rows, columns=["r", "c", "value"])
    cells["freq"] = 5
    return Table.from_cells(cells, ["r", "c"])


SDCMICRO_TESTDATA = Path(__file__).parent / "data" / "sdcmicro" / "testdata.csv.gz"


def ck_create_testdata() -> pd.DataFrame:
    """cellKey's ``ck_create_testdata()`` (sdcTools/cellKey 80bb032, R/ck_create_testdata.R) without
    its random ``sampling_weight``: sdcMicro's testdata with ``sex`` labelled male/female, ``age`` cut
    into 6 equal-width groups (R's ``cut(age, 6)``: intervals (a, b], the outer breaks moved out by
    a thousandth of the range) and ``savings``, ``expend``, ``income`` divided by 10,000 and rounded
    (R's ``round``: half to even, as numpy's)."""
    d = pd.read_csv(SDCMICRO_TESTDATA, usecols=["sex", "age", "savings", "expend", "income"])
    age = d["age"].to_numpy(dtype=float)
    lo, hi = age.min(), age.max()
    breaks = np.linspace(lo, hi, 7)
    breaks[0], breaks[-1] = lo - (hi - lo) / 1000, hi + (hi - lo) / 1000
    out = pd.DataFrame({"sex": np.where(d["sex"] == 1, "male", "female"),
                        "age": [f"age_group{g}" for g in np.searchsorted(breaks, age, side="left")]})
    for col in ("savings", "expend", "income"):
        out[col] = np.round(d[col].to_numpy(dtype=float) / 10000)
    return out
