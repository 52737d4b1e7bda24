"""Hierarchy keys of awkward values (issue 27): classes are formed on exactly the values released.

* An object column holding the number 1 and the text "1": both read "1", so a hierarchy (a table of
  strings) cannot tell them apart and the search would count two classes of 2 as one of 4, while
  the release in memory (and ``check()``) holds two classes. Such a column is refused, naming it.
* Time-zone-aware timestamps in the hour a clock is set back (2021-10-31 02:00-03:00 in
  Europe/Berlin happens twice, at +02:00 and then at +01:00): two instants with the same local
  time. Their keys carry the UTC offset, so they stay two values, and nothing raises pandas'
  "Cannot infer dst time".
"""

from __future__ import annotations

import pandas as pd
import pytest

from sdckit.anonymity import FullDomainGeneralization, Hierarchy, KAnonymity, Mondrian, check
from sdckit.core.errors import DataError
from sdckit.core.hierarchy import value_keys


def _mixed() -> pd.DataFrame:
    return pd.DataFrame({"x": pd.Series([1, 1, "1", "1"], dtype=object), "y": [0, 1, 2, 3]})


def test_the_release_in_memory_has_two_classes_of_two():
    assert not check(_mixed(), ["x"], [KAnonymity(4)]).satisfied  # the truth the search must not contradict


def test_a_column_mixing_1_and_text_1_is_refused_by_full_domain():
    with pytest.raises(DataError, match=r"Column 'x' holds distinct values of different types") as err:
        FullDomainGeneralization(4, {"x": Hierarchy([["1", "*"]])}).run(_mixed())
    assert "\n" not in str(err.value)


def test_a_column_mixing_1_and_text_1_is_refused_by_mondrian():
    with pytest.raises(DataError, match=r"Column 'x' holds distinct values of different types"):
        Mondrian(4, quasi=["x"]).run(_mixed())


def test_one_type_per_column_is_accepted():
    data = _mixed().assign(x=lambda d: d["x"].astype(str))
    out = FullDomainGeneralization(4, {"x": Hierarchy([["1", "*"]])}).run(data)
    assert out.info["node"] == {"x": 0} and check(out.data, ["x"], [KAnonymity(4)]).satisfied


def _fall_back() -> pd.Series:
    """02:30 and 02:45 local time, each before (+02:00) and after (+01:00) the clocks go back."""
    utc = pd.DatetimeIndex(["2021-10-31T00:30:00+00:00", "2021-10-31T01:30:00+00:00",
                            "2021-10-31T00:45:00+00:00", "2021-10-31T01:45:00+00:00"])
    return pd.Series(utc.tz_convert("Europe/Berlin"))


def test_keys_of_the_repeated_hour_carry_the_offset():
    assert value_keys(_fall_back()).tolist() == [
        "2021-10-31T02:30:00+02:00", "2021-10-31T02:30:00+01:00",
        "2021-10-31T02:45:00+02:00", "2021-10-31T02:45:00+01:00"]
    midnight = pd.Series(pd.to_datetime(["2021-10-31", None]).tz_localize("Europe/Berlin"))
    assert value_keys(midnight).tolist() == ["2021-10-31T00:00:00+02:00", None]


def test_dates_hierarchy_and_search_on_the_repeated_hour():
    stamps = _fall_back()
    h = Hierarchy.dates(stamps)
    assert h.level_sizes()[:2] == (4, 1)  # four instants, one month
    data = pd.DataFrame({"t": pd.concat([stamps, stamps], ignore_index=True), "y": range(8)})
    out = FullDomainGeneralization(2, {"t": h}).run(data)  # four classes of 2 at level 0
    assert out.info["node"] == {"t": 0} and out.info["classes"] == 4
    assert check(out.data, ["t"], [KAnonymity(2)]).satisfied
    out = FullDomainGeneralization(3, {"t": h}).run(data)  # classes of 2 at level 0: the month
    assert out.info["node"] == {"t": 1} and set(out.data["t"]) == {"2021-10"}


def test_the_keys_module_split_off_keeps_the_hierarchy_imports_working():
    """core/hierarchy.py was split (issue 29 item 7, files under 500 lines): the keys and codes
    live in core/hierarchy_keys.py and are still importable from core.hierarchy, the same objects."""
    import sdckit.core.hierarchy as hierarchy
    import sdckit.core.hierarchy_keys as keys

    assert hierarchy.value_keys is keys.value_keys and hierarchy.factorize is keys.factorize
    assert set(hierarchy.__all__) >= {"Hierarchy", "value_keys", "factorize", "as_hierarchy", "TOP"}
    for module in (hierarchy, keys):
        assert len(open(module.__file__, encoding="utf-8").read().splitlines()) < 500
