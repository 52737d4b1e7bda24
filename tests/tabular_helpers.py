"""What several table tests build: a small 2-D table from a matrix of interior values."""

from __future__ import annotations

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
