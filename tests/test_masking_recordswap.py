"""Targeted record swapping (issue 30 section 1): what sdcMicro's recordSwap promises, checked
against hand-worked examples and brute-force recounts on generated census-like data."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from sdckit import protect
from sdckit.core.errors import DataError, ParameterError, SchemaError
from sdckit.core.schema import Schema
from sdckit.masking import RecordSwapping
from sdckit.core.household_swap import draws_per_area, first_level_at_risk, swap_plan
from sdckit.masking.recordswap import household_index, household_table

GEO = ("region", "district", "municipality")


def census(households: int = 1500, seed: int = 7) -> pd.DataFrame:
    """Persons in households; 2 regions > 3 districts > 3 municipalities (18 areas); household
    size 1-5; age group, sex and nationality per person (rare nationalities make risk)."""
    rng = np.random.default_rng(seed)
    size = rng.choice([1, 2, 3, 4, 5], households, p=[0.3, 0.3, 0.2, 0.15, 0.05])
    region = rng.integers(0, 2, households)
    district = region * 3 + rng.integers(0, 3, households)
    municipality = district * 3 + rng.integers(0, 3, households)
    hid = np.repeat(np.arange(1000, 1000 + households), size)
    n = len(hid)
    frame = pd.DataFrame({
        "hid": hid,
        "region": np.repeat(region, size).astype(str),
        "district": np.repeat(district, size),
        "municipality": np.repeat(municipality, size),
        "hsize": np.repeat(size, size),
        "tenure": np.repeat(rng.choice(["own", "rent"], households), size),
        "age": rng.choice(["0-17", "18-39", "40-64", "65+"], n),
        "sex": rng.choice(["F", "M"], n),
        "national": rng.choice(["A", "B", "C", "D"], n, p=[0.9, 0.07, 0.02, 0.01]),
        "income": rng.gamma(2.0, 15_000, n).round(),
    })
    return frame


def schema_of(frame: pd.DataFrame) -> Schema:
    return Schema.infer(frame, quasi=[*GEO, "age", "sex", "national"], confidential=["income"])


def swapping(**overrides) -> RecordSwapping:
    params = dict(hid="hid", hierarchy=list(GEO), similar=["hsize"], risk_variables=["age", "national"],
                  k_anonymity=3, swaprate=0.05)
    params.update(overrides)
    return RecordSwapping(**params)


def household_geography(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.groupby("hid", sort=True)[list(GEO)].first()


# ----------------------------------------------------------------------------- hand-worked
def test_risk_and_levels_by_hand():
    """Six persons in four households; risk variable 'nat'; k = 2 (at risk: 1/count > 1/2).
    Region level: nat=B is held once in region r1 (household 3) -> household 3 at level 0.
    District level: in (r0, d1) nat=A is held once (household 2's only member) -> level 1.
    Households 1 and 4: A in (r0, d0) twice (household 1 has two members), A in r1 d2 with
    household 3's first member... see the counts written below."""
    frame = pd.DataFrame({
        "hid":  [1, 1, 2, 3, 3, 4],
        "reg":  ["r0", "r0", "r0", "r1", "r1", "r1"],
        "dis":  ["d0", "d0", "d1", "d2", "d2", "d2"],
        "nat":  ["A", "A", "A", "A", "B", "A"],
    })
    method = RecordSwapping("hid", ["reg", "dis"], [], ["nat"], k_anonymity=2)
    households = household_index(frame, "hid")
    risk = household_table(frame, households, method).risk
    # region counts: (A, r0) = 3, (A, r1) = 2, (B, r1) = 1
    # district counts: (A, r0, d0) = 2, (A, r0, d1) = 1, (A, r1, d2) = 2, (B, r1, d2) = 1
    expected = np.array([[1 / 3, 1 / 2], [1 / 3, 1.0], [1.0, 1.0], [1 / 2, 1 / 2]])
    np.testing.assert_allclose(risk, expected)
    levels = first_level_at_risk(risk, method.threshold)
    assert levels.tolist() == [2, 1, 0, 2]  # 2 = not at risk


def test_no_household_at_risk_when_k_is_zero():
    risk = np.array([[1.0, 1.0], [0.5, 0.2]])
    assert first_level_at_risk(risk, swapping(k_anonymity=0).threshold).tolist() == [2, 2]
    assert first_level_at_risk(risk, swapping(k_anonymity=0, risk_threshold=0.3).threshold).tolist() == [0, 0]


def test_draws_follow_the_swap_rate_and_the_area_sizes():
    area = np.repeat(np.arange(4), [400, 300, 200, 100])  # 1,000 households
    draws = draws_per_area(area, 0.1, np.random.default_rng(1))
    assert draws.sum() == 50  # 1000 * 0.1 / 2 swaps, each moving two households
    np.testing.assert_array_equal(draws, [20, 15, 10, 5])


# ----------------------------------------------------------------------------- invariants
@pytest.fixture(scope="module")
def swapped():
    frame = census()
    result = protect(frame, [swapping()], schema=schema_of(frame), seed=2026)
    return frame, result


def test_only_the_geography_changes_and_whole_households_move(swapped):
    frame, result = swapped
    out = result.data
    assert list(out.columns) == list(frame.columns)
    others = [c for c in frame.columns if c not in GEO]
    pd.testing.assert_frame_equal(out[others], frame[others])
    assert (out.groupby("hid")[list(GEO)].nunique() == 1).all().all()
    before, after = household_geography(frame), household_geography(out)
    moved = (before != after).any(axis=1)
    assert moved.sum() == result.manifest["methods"][0]["info"]["households_swapped"] > 0


def test_every_area_keeps_its_households_and_persons(swapped):
    """Donors have the household's size, so counts of households and persons by any area are
    unchanged, and so is every table of the non-geographic variables (checked above)."""
    frame, result = swapped
    for level in range(1, len(GEO) + 1):
        keys = list(GEO[:level])
        pd.testing.assert_series_equal(result.data.groupby(keys).size(), frame.groupby(keys).size())
        pd.testing.assert_series_equal(result.data.groupby(keys)["hid"].nunique(), frame.groupby(keys)["hid"].nunique())


def test_geography_stays_a_real_combination(swapped):
    frame, result = swapped
    real = set(map(tuple, frame[list(GEO)].drop_duplicates().to_numpy().tolist()))
    assert set(map(tuple, result.data[list(GEO)].drop_duplicates().to_numpy().tolist())) <= real


def test_pairs_are_in_the_same_parent_and_other_areas():
    frame = census(800, seed=3)
    method = swapping(swaprate=0.2)
    households = household_index(frame, "hid")
    plan = swap_plan(household_table(frame, households, method), method.threshold, method.swaprate, np.random.default_rng(5))
    geo = household_geography(frame).to_numpy()
    sizes = households.size
    assert len(plan.pairs) > 0
    for a, b in plan.pairs:
        level = plan.swapped_level[a]
        assert plan.swapped_level[b] == level
        assert tuple(geo[a][:level]) == tuple(geo[b][:level])  # same parent
        assert geo[a][level] != geo[b][level]  # another area at that level
        assert sizes[a] == sizes[b]
    assert len(set(plan.pairs.reshape(-1).tolist())) == 2 * len(plan.pairs)  # swapped once


def brute_force_at_risk(frame: pd.DataFrame, risk_variables, k: int) -> dict[int, int]:
    """Household -> first level at which some member's combination (risk variables + area) is
    held by fewer than k persons (written independently with Counters)."""
    out: dict[int, int] = {}
    for level in range(len(GEO)):
        keys = [tuple(r) for r in frame[[*risk_variables, *GEO[: level + 1]]].itertuples(index=False)]
        counts = Counter(keys)
        for hid, key in zip(frame["hid"], keys, strict=True):
            if counts[key] < k and hid not in out:
                out[hid] = level
        # a household is at risk at its first level only
    return out


def test_every_household_at_risk_is_swapped_or_reported(swapped):
    frame, result = swapped
    info = result.manifest["methods"][0]["info"]
    at_risk = brute_force_at_risk(frame, ["age", "national"], 3)
    assert info["at_risk"] == len(at_risk) > 0
    assert info["at_risk_by_level"] == [sum(1 for v in at_risk.values() if v == lv) for lv in range(3)]
    before, after = household_geography(frame), household_geography(result.data)
    moved = set(before.index[(before != after).any(axis=1)])
    swapped_at_risk = sum(1 for h in at_risk if h in moved)
    assert info["at_risk_swapped"] == swapped_at_risk
    assert info["at_risk_swapped"] + info["at_risk_left"] == info["at_risk"]


def test_swap_rate_reached_without_risk():
    """No household at risk: the swapped households are 2 x the drawn swaps (tolerance: the
    households for which no donor was found, reported)."""
    frame = census(2000, seed=11)
    result = protect(frame, [swapping(k_anonymity=0, swaprate=0.1)], schema=schema_of(frame), seed=4)
    info = result.manifest["methods"][0]["info"]
    assert info["at_risk"] == 0 and info["swaps_drawn"] in (100, 99, 101)
    assert abs(info["households_swapped"] - 2 * info["swaps_drawn"]) <= 2 * info["no_donor"]
    assert abs(info["swap_rate"] - 0.1) <= 0.002 + 2 * info["no_donor"] / 2000


@pytest.mark.parametrize("seed", [0, 3])
def test_swap_rate_reached_when_households_at_risk_fit_in_the_draws(seed):
    """Households at risk (risk-weighted, so donors first) may be taken as donors before their
    own area's turn; they must not then count against that area's draws (sdcMicro's randSample
    counts the ones still unused). With every household at risk at the lowest level, fewer in
    each municipality than its draws, and a donor found for every attempt, the swapped
    households are exactly 2 x the drawn swaps (sdcMicro's recordSwap reaches them exactly
    on such data; before the fix: 442 of 450 here)."""
    frame = census(1500, seed=7)
    at_risk = brute_force_at_risk(frame, ["national"], 2)
    assert at_risk and set(at_risk.values()) == {2}  # the municipality level only
    households = frame.drop_duplicates("hid")
    per_area = households.groupby(list(GEO)).size()
    fewest_draws = int(np.floor(per_area.min() / len(households) * np.floor(len(households) * 0.3 / 2)))
    risky = households[households["hid"].isin(at_risk)].groupby(list(GEO)).size()
    assert risky.max() <= fewest_draws
    result = protect(frame, [swapping(risk_variables=["national"], k_anonymity=2, swaprate=0.3)],
                     schema=schema_of(frame), seed=f"0x{seed:032x}")
    info = result.manifest["methods"][0]["info"]
    assert info["no_donor"] == 0 and info["at_risk_left"] == 0 and info["swaps_drawn"] in (224, 225)
    assert info["households_swapped"] == 2 * info["swaps_drawn"]


def test_same_seed_same_release_other_seed_other_release():
    frame = census(600, seed=1)
    schema = schema_of(frame)
    first = protect(frame, [swapping(swaprate=0.2)], schema=schema, seed=99).data
    again = protect(frame, [swapping(swaprate=0.2)], schema=schema, seed=99).data
    other = protect(frame, [swapping(swaprate=0.2)], schema=schema, seed=100).data
    pd.testing.assert_frame_equal(first, again)
    assert not first.equals(other)


def test_similarity_profiles_are_tried_in_order():
    """k = 2 on 'nat': households 0 and 3 (nat X, alone in their municipality; two in the region)
    are at risk at the municipality level. Profile 1 (tenure) finds no donor for household 0
    (the only owner); profile 2 (household size only) then does. With tenure as the only profile
    household 0 is left, and reported."""
    frame = pd.DataFrame({
        "hid": [1, 2, 3, 4], "region": ["a"] * 4, "municipality": ["m1", "m2", "m2", "m3"],
        "tenure": ["own", "rent", "rent", "rent"], "nat": ["X", "Y", "Y", "X"],
    })
    households = household_index(frame, "hid")
    method = RecordSwapping("hid", ["region", "municipality"], [["tenure"], []], ["nat"], k_anonymity=2)
    plan = swap_plan(household_table(frame, households, method), method.threshold, method.swaprate, np.random.default_rng(0))
    assert plan.at_risk_level.tolist() == [1, 2, 2, 1]
    assert {0, 3} <= set(plan.pairs.reshape(-1).tolist())  # both swapped (perhaps with each other)
    strict = RecordSwapping("hid", ["region", "municipality"], ["tenure"], ["nat"], k_anonymity=2)
    plan = swap_plan(household_table(frame, households, strict), strict.threshold, strict.swaprate, np.random.default_rng(0))
    assert plan.pairs[:, 0].tolist() == [3] and plan.pairs[0, 1] in (1, 2)
    assert plan.report()["at_risk_left"] == 1 and plan.no_donor == 1


def test_manifest_holds_counts_only(swapped):
    _, result = swapped
    info = result.manifest["methods"][0]["info"]
    for key, value in info.items():
        assert isinstance(value, int | float) or (isinstance(value, list) and all(isinstance(v, int) for v in value)), key


# ----------------------------------------------------------------------------- bad input
def test_bad_inputs_are_refused_with_one_line():
    frame = census(50)
    schema = schema_of(frame)
    split = frame.copy()
    split.loc[split.index[1], "region"] = "9" if split.loc[split.index[0], "hid"] == split.loc[split.index[1], "hid"] else split.loc[split.index[1], "region"]
    split.loc[split.index[0], "municipality"] = -1
    with pytest.raises(DataError, match="differs within"):
        protect(split, [swapping()], schema=schema, seed=1)
    missing = frame.astype({"hid": float})
    missing.loc[missing.index[2], "hid"] = np.nan
    with pytest.raises(DataError, match="household id"):
        protect(missing, [swapping()], schema=schema_of(missing), seed=1)
    with pytest.raises(SchemaError, match="nope"):
        protect(frame, [swapping(risk_variables=["nope"])], schema=schema, seed=1)
    for bad in ({"swaprate": 1.5}, {"k_anonymity": -1}, {"similar": [1, 2]}, {"hierarchy": []},
                {"carry_along": ["region"]}, {"risk_threshold": 2.0}):
        with pytest.raises(ParameterError):
            swapping(**bad)
    with pytest.raises(ParameterError, match="'columns' parameter"):
        protect(frame, [swapping(columns=["region", "tenure"])], schema=schema, seed=1)


def test_recipe_name_is_registered():
    from sdckit.core.method import registered

    assert registered()["record_swapping"] is RecordSwapping


def test_hid_must_name_a_column():
    with pytest.raises(ParameterError, match="'hid' parameter"):
        swapping(hid=3)


def test_recipe_reads_record_swapping_like_sdcmicro_parameters(tmp_path):
    from sdckit.recipe import parse_recipe

    data = {
        "input": {"path": "census.csv"},
        "method": [{"name": "record_swapping", "hid": "hid", "hierarchy": list(GEO),
                    "similar": [["hsize", "tenure"], ["hsize"]], "risk_variables": ["age", "national"],
                    "k_anonymity": 3, "swaprate": 0.05}],
    }
    recipe = parse_recipe(data, tmp_path / "recipe.toml")
    method = recipe.methods[0]
    assert isinstance(method, RecordSwapping)
    assert method.profiles == (("hsize", "tenure"), ("hsize",))


def test_assessment_and_risk_measures_run_on_a_swapped_release():
    """Issue 30: the permutation paradigm and the risk measures see a swapped release like any
    other. Swapping moves whole households, so the risk variables' frequencies within the top
    level (regions) are what swaps across regions change; the counts by area are unchanged."""
    from sdckit.permutation import assess
    from sdckit.risk import k_anonymity_violations

    frame = census(120, seed=2)
    release = protect(frame, [swapping(swaprate=0.2)], schema=schema_of(frame), seed=8).data
    assessment = assess(frame, release, seed=7, max_replicates=39)
    assert dict(assessment.summary())["records (original / released)"] == f"{len(frame)} / {len(frame)}"
    assert isinstance(k_anonymity_violations(release, ["region", "age", "sex"], 3), int)


# ----------------------------------------------------------------------------- engines
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_the_duckdb_engine_gives_the_release_in_memory(tmp_path, fmt):
    """Issue 30: the swap runs on a file by households (DuckDB passes, the plan over households,
    the release written by chunks of 700 records so that households straddle chunks) and gives,
    for the same seed, the in-memory release exactly, with the same report; with a row-wise
    step before it, the steps still draw from one generator in order."""
    from sdckit import AdditiveNoise, read
    from sdckit.datasets import make_households
    from sdckit.engine import protect_file

    persons = make_households(households=1500, seed=4)
    source = tmp_path / f"persons.{fmt}"
    persons.to_csv(source, index=False) if fmt == "csv" else persons.to_parquet(source, index=False)
    data = read(source)
    schema = Schema.infer(data, confidential=["income"])
    method = RecordSwapping("hid", ["region", "district", "municipality"], [["hsize", "tenure"], ["hsize"]],
                            ["sex", "nationality"], k_anonymity=3, swaprate=0.1)
    steps = [AdditiveNoise(alpha=0.1, columns=["income"]), method]
    seed = "0x" + "5e" * 16
    memory = protect(data, steps, schema=schema, seed=seed)
    streamed = protect_file(source, tmp_path / "out.parquet", steps, schema=schema, seed=seed, batch_rows=700)
    released = pd.read_parquet(tmp_path / "out.parquet")
    pd.testing.assert_frame_equal(released, memory.data.reset_index(drop=True), check_dtype=False)
    assert streamed.steps[1].info == memory.steps[1].info
    assert memory.steps[1].info["households_swapped"] > 0


def test_the_file_run_refuses_a_household_split_across_areas(tmp_path):
    from sdckit.engine import protect_file

    frame = census(40)
    frame.loc[frame.index[1], "hid"] = frame["hid"].iloc[0]  # records 0 and 1: one household, two areas
    frame.loc[frame.index[1], "municipality"] = -7
    source = tmp_path / "p.parquet"
    frame.to_parquet(source, index=False)
    with pytest.raises(DataError, match="differs within"):
        protect_file(source, tmp_path / "o.parquet", [swapping()], schema=schema_of(frame), seed=1)
