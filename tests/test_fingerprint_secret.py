"""No published fingerprint can be computed from the data alone (issue 19 item 1; DESIGN.md §9).

The attack plays the differential-privacy adversary: he knows every record but one person's age,
holds the manifest, and hashes each candidate age (18..99) with the full data. Against the old
manifest (an unkeyed SHA-256 of the input) he recovers the secret age exactly; against sdckit's
manifest he finds no match, whether the input's fingerprint is unpublished (no key) or keyed.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sdckit import AdditiveNoise, protect
from sdckit.core.errors import ParameterError
from sdckit.core.provenance import fingerprint, new_fingerprint_key
from sdckit.core.random import new_seed

SECRET_AGE = 47


def _data() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    ages = rng.integers(18, 100, 60).astype(float)
    ages[0] = SECRET_AGE
    return pd.DataFrame({"age": ages, "income": rng.normal(30_000, 5_000, 60).round()})


def _guess_age(manifest: dict, known: pd.DataFrame) -> int | None:
    """The adversary: every fingerprint in the manifest against every candidate for row 0."""
    published = json.dumps(manifest)
    for age in range(18, 100):
        candidate = known.copy()
        candidate.loc[0, "age"] = float(age)
        if fingerprint(candidate).split(":")[1] in published:
            return age
    return None


def test_the_attack_works_on_an_unkeyed_input_hash():
    """The test can fail: the old manifest's input fingerprint gives the age away."""
    data = _data()
    old_manifest = {"input": {"fingerprint": fingerprint(data)}}
    known = data.assign(age=data["age"].where(data.index != 0, 0.0))
    assert _guess_age(old_manifest, known) == SECRET_AGE


@pytest.mark.parametrize("key", [None, "fresh"])
def test_no_fingerprint_in_the_manifest_reveals_a_record(key):
    data = _data()
    key = new_fingerprint_key() if key == "fresh" else None
    release = protect(data, [AdditiveNoise(alpha=0.1, columns=["income"]), AdditiveNoise(alpha=0.1)],
                      seed=new_seed(), fingerprint_key=key)
    known = data.assign(age=data["age"].where(data.index != 0, 0.0))
    assert _guess_age(release.manifest, known) is None
    assert key is None or key not in json.dumps(release.manifest)


def test_keyed_fingerprint_lets_the_key_holder_prove_the_input():
    data, key = _data(), new_fingerprint_key()
    release = protect(data, [AdditiveNoise(alpha=0.1)], seed=new_seed(), fingerprint_key=key)
    assert release.manifest["input"]["fingerprint"] == fingerprint(data, bytes.fromhex(key))
    assert release.manifest["input"]["fingerprint"].startswith("hmac-sha256:")
    assert release.manifest["input"]["fingerprint"] != fingerprint(data, bytes.fromhex(new_fingerprint_key()))
    # The release is public: its fingerprint is the plain hash anyone can check.
    assert release.manifest["output"]["fingerprint"] == fingerprint(release.data)


@pytest.mark.parametrize("bad", ["not hex", "abcd", 12345, b"short"])
def test_bad_fingerprint_key_is_refused(bad):
    with pytest.raises(ParameterError, match="fingerprint key"):
        protect(_data(), [AdditiveNoise(alpha=0.1)], seed=new_seed(), fingerprint_key=bad)


# --- the recipe: a key file, keyed hash of the input file; names after the stem; SOURCE_DATE_EPOCH

def _project(tmp_path, extra: str = "") -> str:
    _data().to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "r.toml").write_text(
        f'seed = "{"5a" * 16}"\n{extra}\n[input]\npath = "people.csv"\n[schema]\nquasi = ["age"]\n'
        'confidential = ["income"]\n[[method]]\nname = "additive_noise"\nalpha = 0.5\n'
        'columns = ["income"]\n[output]\ndir = "out"\n[report]\nn_random = 500\nn_null = 5\n')
    return str(tmp_path / "r.toml")


def test_recipe_key_file_gives_keyed_hashes_and_never_the_key(tmp_path, cli):
    key = new_fingerprint_key()
    (tmp_path / "fp.key").write_text(key)
    assert cli("protect", _project(tmp_path, 'fingerprint_key_file = "fp.key"'), cwd=tmp_path).returncode == 0
    manifest = json.loads((tmp_path / "out" / "people_protected.manifest.json").read_text())
    assert manifest["input"]["fingerprint"].startswith("hmac-sha256:")
    assert len(manifest["input"]["file_hmac_sha256"]) == 64
    for path in (tmp_path / "out").iterdir():
        assert key not in path.read_text(errors="replace")


def test_recipe_without_key_publishes_no_input_hash(tmp_path, cli):
    assert cli("protect", _project(tmp_path), cwd=tmp_path).returncode == 0
    manifest = json.loads((tmp_path / "out" / "people_protected.manifest.json").read_text())
    assert manifest["input"]["fingerprint"].startswith("not published")
    assert not any(k.startswith("file_") for k in manifest["input"])


@pytest.mark.parametrize("content, message", [(None, "cannot read"), ("zz", "hex"), ("ab12", "128 bits")])
def test_bad_key_file_is_one_line_exit_2(tmp_path, cli, content, message):
    if content is not None:
        (tmp_path / "fp.key").write_text(content)
    result = cli("protect", _project(tmp_path, 'fingerprint_key_file = "fp.key"'), cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert message in result.stderr and not (tmp_path / "out").exists()


def test_two_recipes_in_one_folder_keep_their_own_manifest_and_report(tmp_path, cli):
    recipe = _project(tmp_path)
    other = (tmp_path / "r.toml").read_text().replace('dir = "out"', 'dir = "out"\nname = "second"')
    (tmp_path / "r2.toml").write_text(other)
    assert cli("protect", recipe, cwd=tmp_path).returncode == 0
    assert cli("protect", str(tmp_path / "r2.toml"), cwd=tmp_path).returncode == 0
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["people_protected.csv", "people_protected.manifest.json", "people_protected.report.html",
                     "second.csv", "second.manifest.json", "second.report.html"]


def test_source_date_epoch_gives_byte_identical_outputs(tmp_path, cli):
    recipe = _project(tmp_path)
    outputs = []
    for run in range(2):
        out = tmp_path / f"run{run}"
        result = cli("protect", recipe, "--out", str(out), env_extra={"SOURCE_DATE_EPOCH": "1700000000"})
        assert result.returncode == 0, result.stderr
        outputs.append({p.name: p.read_bytes() for p in out.iterdir()})
    assert outputs[0].keys() == outputs[1].keys() and len(outputs[0]) == 3
    for name in outputs[0]:
        assert outputs[0][name] == outputs[1][name], name
    manifest = json.loads(outputs[0]["people_protected.manifest.json"])
    assert manifest["created"] == "2023-11-14T22:13:20+00:00"
