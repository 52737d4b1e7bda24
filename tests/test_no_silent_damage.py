"""Nothing is silently destroyed (issue 12 sections 2 and 4): bad data is refused with one line
naming the column, warnings reach the user and the manifest, odd inputs are read or refused."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest

from sdckit import AdditiveNoise, DataError, protect, read
from sdckit.core.random import new_seed

RECIPE = """\
seed = "{seed}"
[input]
path = "{data}"
[schema]
confidential = ["income"]
[[method]]
name = "{method}"
{params}
[output]
dir = "out"
[report]
enabled = false
"""


def _recipe(tmp_path, frame_or_text, data="people.csv", method="additive_noise", params="alpha = 0.1"):
    target = tmp_path / data
    if isinstance(frame_or_text, pd.DataFrame):
        frame_or_text.to_csv(target, index=False)
    elif isinstance(frame_or_text, bytes):
        target.write_bytes(frame_or_text)
    else:
        target.write_text(frame_or_text)
    (tmp_path / "r.toml").write_text(RECIPE.format(seed="cd" * 16, data=data, method=method, params=params))
    return str(tmp_path / "r.toml")


def _one_line_exit_2(result):
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    return result.stderr


def _people(n=40):
    rng = np.random.default_rng(2)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "income": rng.normal(30_000, 5_000, n).round(2)})


@pytest.mark.parametrize("bad", ["inf", "-inf", "1e308"])
def test_infinite_or_huge_values_exit_2_naming_the_column(tmp_path, cli, bad):
    frame = _people().astype({"income": object})
    frame.loc[[1, 5, 9], "income"] = bad
    message = _one_line_exit_2(cli("protect", _recipe(tmp_path, frame), cwd=tmp_path))
    assert "'income'" in message and "3 record(s)" in message
    assert not (tmp_path / "out").exists()


def test_duplicate_column_names_are_refused_not_renamed(tmp_path, cli):
    text = "age,income,income\n30,1000,2000\n40,3000,4000\n50,5000,6000\n"
    message = _one_line_exit_2(cli("protect", _recipe(tmp_path, text), cwd=tmp_path))
    assert "duplicate column names" in message and "'income'" in message
    frame = pd.DataFrame([[1, 2.0, 3.0], [2, 4.0, 5.0]], columns=["a", "b", "b"])
    with pytest.raises(DataError, match="duplicate column names"):
        protect(frame, [AdditiveNoise(alpha=0.1)], seed=new_seed())


@pytest.mark.parametrize("frame", [
    pd.DataFrame({"age": [30], "income": [1000.0]}),
    pd.DataFrame({"age": [30] * 5, "income": [1000.0] * 5}),
], ids=["one record", "identical records"])
def test_one_record_or_identical_records_are_refused(frame):
    with pytest.raises(DataError, match="no method can protect it"):
        protect(frame, [AdditiveNoise(alpha=0.1)], seed=new_seed())


def test_a_csv_gz_input_is_simply_read(tmp_path, cli):
    data = gzip.compress(_people().to_csv(index=False).encode())
    result = cli("protect", _recipe(tmp_path, data, data="people.csv.gz"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(pd.read_csv(tmp_path / "out" / "people_protected.csv")) == 40
    assert read(tmp_path / "people.csv.gz").shape == (40, 2)


def test_nested_parquet_columns_are_refused(tmp_path, cli):
    frame = pd.DataFrame({"income": [1.0, 2.0, 3.0], "tags": [[1, 2], [3], []]})
    frame.to_parquet(tmp_path / "nested.parquet")
    (tmp_path / "r.toml").write_text(RECIPE.format(seed="cd" * 16, data="nested.parquet",
                                                   method="additive_noise", params="alpha = 0.1"))
    message = _one_line_exit_2(cli("protect", str(tmp_path / "r.toml"), cwd=tmp_path))
    assert "'tags'" in message and "nested" in message


def test_method_warnings_reach_stderr_once_and_the_manifest_under_their_step(tmp_path, cli):
    params = 'epsilon = 1.0\nbounds = "data"'
    frame = _people()
    (tmp_path / "r.toml").write_text(RECIPE.format(seed="cd" * 16, data="people.csv", method="laplace_noise",
                                                   params=params).replace("[output]", '[budget]\nepsilon = "1"\n[output]'))
    frame.to_csv(tmp_path / "people.csv", index=False)
    result = cli("protect", str(tmp_path / "r.toml"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("sdckit: warning:")]
    assert len(lines) == 1 and "laplace_noise" in lines[0] and "bounds were taken from the data" in lines[0]
    manifest = json.loads((tmp_path / "out" / "people_protected.manifest.json").read_text())
    assert any("bounds were taken from the data" in w for w in manifest["methods"][0]["warnings"])


def test_python_warnings_of_a_method_are_recorded_under_its_step():
    import warnings

    class Chatty(AdditiveNoise):
        def transform(self, frame, columns, schema, rng):
            warnings.warn("k larger than a class", UserWarning)
            warnings.warn("k larger than a class", UserWarning)
            return super().transform(frame, columns, schema, rng)

    release = protect(_people(), [Chatty(alpha=0.1), AdditiveNoise(alpha=0.1)], seed=new_seed())
    assert release.manifest["methods"][0]["warnings"] == ["k larger than a class"]
    assert release.manifest["methods"][1]["warnings"] == []
