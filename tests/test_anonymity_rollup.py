"""Issue 18: frequency tables rolled up from finer nodes equal those counted from the records;
the search on a frequency table given from outside finds what the search on the records finds;
the compiled pieces against brute force."""

from __future__ import annotations

from collections import Counter
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit import DataError, ParameterError
from sdckit.anonymity import (
    DistinctLDiversity,
    FullDomainGeneralization,
    Hierarchy,
    KAnonymity,
    TCloseness,
    search_frequencies,
)
from sdckit.anonymity.frequencies import evaluator_for
from sdckit.anonymity.lattice import Lattice, encode
from sdckit.anonymity.rollup import dense_ids, records_in_small_classes, rollup_group
from sdckit.core.hierarchy import factorize

ADULT = Path(__file__).parent / "data" / "adult"


def random_case(rng, n_quasi=3, n=60):
    """Random data, random hierarchies (each level a function of the one below) and a sensitive column."""
    frame, hierarchies = {}, {}
    for j in range(n_quasi):
        values = [f"v{j}_{i}" for i in range(int(rng.integers(2, 9)))]
        columns, current = [values], values
        for level in range(int(rng.integers(1, 4))):
            groups = max(1, len(set(current)) - int(rng.integers(1, 3)))
            parent = {v: f"g{j}_{level}_{rng.integers(groups)}" for v in sorted(set(current))}
            current = [parent[v] for v in current]
            columns.append(current)
        hierarchies[f"q{j}"] = Hierarchy(list(zip(*columns)), add_top=True)
        frame[f"q{j}"] = rng.choice(values, n)
    frame["s"] = rng.choice(["a", "b", "c"], n)
    return pd.DataFrame(frame), hierarchies


def counted_from_records(frame, hierarchies, node, sensitive):
    """The oracle: generalize the strings, count the combinations."""
    cols = [hierarchies[q].generalize(frame[q], level, q) for q, level in zip(hierarchies, node)]
    cols += [frame[s].to_numpy() for s in sensitive]
    return Counter(zip(*cols))


def as_counter(ev, table):
    quasi = [ev.enc.hierarchies[j].labels(level)[table.columns[j]] for j, level in enumerate(table.node)]
    sens = [s.labels[table.sens[i]] for i, s in enumerate(ev.enc.sensitive)]
    return Counter({key: int(c) for key, c in zip(zip(*(quasi + sens)), table.counts)})


@pytest.mark.parametrize("with_sensitive", [False, True])
def test_rolled_up_tables_equal_the_tables_counted_from_the_records(with_sensitive):
    rng = np.random.default_rng(18)
    for _ in range(8):
        frame, h = random_case(rng)
        criteria = (KAnonymity(2), DistinctLDiversity(2, "s")) if with_sensitive else (KAnonymity(2),)
        ev = evaluator_for(encode(frame, h, criteria), 2, criteria[1:], 0)
        sensitive = ["s"] if with_sensitive else []
        lattice = Lattice(ev.enc.heights)
        for fine in lattice.nodes[rng.choice(len(lattice), 4)]:
            coarse = np.maximum(fine, lattice.nodes[rng.integers(len(lattice))])
            fine, coarse = tuple(int(x) for x in fine), tuple(int(x) for x in coarse)
            finer = ev.roll(ev.bottom, fine)[1]
            rolled = ev.roll(finer, coarse)[1]  # from the finer node's table, not the records
            assert as_counter(ev, rolled) == counted_from_records(frame, h, coarse, sensitive)
            assert as_counter(ev, finer) == counted_from_records(frame, h, fine, sensitive)
        # and whatever cached table the evaluator picks as the source
        for node in lattice.nodes[rng.permutation(len(lattice))[:12]]:
            node = tuple(int(x) for x in node)
            assert as_counter(ev, ev.table(node)) == counted_from_records(frame, h, node, sensitive)


def test_the_bottom_table_counts_every_record_once():
    frame = pd.DataFrame({"a": ["x", "y", "x", "x"], "b": [1, 2, 1, 2]})
    h = {"a": Hierarchy([["x", "*"], ["y", "*"]]), "b": Hierarchy([["1", "*"], ["2", "*"]])}
    enc = encode(frame, h, [KAnonymity(2)])
    # by hand: (x,1) twice, (y,2) once, (x,2) once; records point at their row
    table = {(int(a), int(b)): int(c) for a, b, c in zip(*enc.bottom.columns, enc.bottom.counts)}
    assert table == {(0, 0): 2, (1, 1): 1, (0, 1): 1}
    assert [table[(int(enc.bottom.columns[0][r]), int(enc.bottom.columns[1][r]))] for r in enc.records] == [2, 1, 2, 1]


def frequency_table(frame, hierarchies, sensitive=()):
    """What another engine would compute: hierarchy rows of the values, grouped and counted."""
    cols = {q: hierarchies[q].index_of(frame[q], q) for q in hierarchies}
    labels = {}
    for s in sensitive:
        labels[s] = np.sort(frame[s].unique())
        cols[s] = np.searchsorted(labels[s], frame[s])
    grouped = pd.DataFrame(cols).value_counts().reset_index()
    return grouped[list(cols)].to_numpy(), grouped["count"].to_numpy(), labels


@pytest.mark.parametrize("criteria", [(), (DistinctLDiversity(2, "s"),), (TCloseness(0.5, "s"),)])
def test_search_on_a_given_frequency_table_matches_the_search_on_records(criteria):
    rng = np.random.default_rng(7)
    for _ in range(6):
        frame, h = random_case(rng, n=80)
        sup = float(rng.choice([0.0, 0.1]))
        try:
            expected = FullDomainGeneralization(2, h, max_suppression=sup, criteria=criteria).search(frame)
        except DataError:
            continue
        codes, counts, labels = frequency_table(frame, h, ["s"] if criteria else [])
        found = search_frequencies(codes, counts, h, 2, int(np.floor(sup * len(frame) + 1e-9)), criteria,
                                   labels or None)
        assert found.node == expected.node and set(found.minimal) == set(expected.minimal)
        assert found.metrics == pytest.approx(expected.metrics)


def test_search_frequencies_on_adult_finds_arx_optimum():
    # ARX 3.9 (Flash, loss) on Adult's 8 quasi-identifiers, k=5, MaxSup=5%: the node the golden
    # test of test_anonymity_search checks through the records.
    qi = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]
    frame = pd.read_csv(ADULT / "adult.csv.gz", sep=";")
    h = {q: Hierarchy.from_csv(ADULT / f"adult_hierarchy_{q}.csv.gz") for q in qi}
    codes, counts, _ = frequency_table(frame, h)
    doubled = np.concatenate([codes, codes]), np.concatenate([counts, counts])  # repeated rows add up
    found = search_frequencies(*doubled, h, 10, int(0.05 * 2 * len(frame)))
    records = FullDomainGeneralization(5, h, max_suppression=0.05).search(frame)
    assert found.node == records.node


def test_search_frequencies_refuses_bad_tables():
    h = {"a": Hierarchy([["x", "*"], ["y", "*"]])}
    with pytest.raises(DataError, match="1 code columns"):
        search_frequencies(np.zeros((2, 2), int), np.ones(2, int), h, 2)
    with pytest.raises(DataError, match="column 'a' holds a code outside 0..1, first at row 1"):
        search_frequencies(np.array([[0], [2]]), np.ones(2, int), h, 2)
    with pytest.raises(DataError, match="count at row 0 is below 1"):
        search_frequencies(np.array([[0], [1]]), np.array([0, 3]), h, 2)
    with pytest.raises(DataError, match="integers"):
        search_frequencies(np.array([[0.0], [1.0]]), np.ones(2, int), h, 2)
    with pytest.raises(ParameterError, match="'max_suppressed'"):
        search_frequencies(np.array([[0], [1]]), np.ones(2, int), h, 2, -1)
    with pytest.raises(ParameterError, match="'algorithm'"):
        search_frequencies(np.array([[0], [1]]), np.ones(2, int), h, 2, algorithm="flash")
    with pytest.raises(ParameterError, match="labels of 's'"):
        search_frequencies(np.array([[0], [1]]), np.ones(2, int), h, 2, criteria=[DistinctLDiversity(2, "s")])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=8, max_size=8), min_size=1, max_size=40),
       st.sampled_from([8, 2**10, 2**16]))
def test_grouping_matches_numpy_unique_even_past_64_bits(rows, size):
    # eight columns of up to 2**16 codes each: their mixed-radix key needs 128 bits, so the
    # kernel must re-number it on the way; numpy's unique of the rows is the oracle
    codes = np.array(rows, dtype=np.int64) * ((size - 2) // 3) + np.arange(8) % 2  # below size
    columns = np.ascontiguousarray(codes.T)
    counts = np.arange(1, len(rows) + 1, dtype=np.int64)
    parent = np.zeros((8, 1, size), dtype=np.int32)  # no levels; the width covers the codes
    zeros = np.zeros(8, dtype=np.int64)
    inverse, grouped, sums = rollup_group(columns, counts, parent, zeros, zeros, np.full(8, size, dtype=np.int64))
    uniq, inv = np.unique(codes, axis=0, return_inverse=True)
    assert len(grouped[0]) == len(uniq)
    assert (grouped.T[inverse] == codes).all()  # each row's group holds its codes
    assert sorted(sums.tolist()) == sorted(np.bincount(inv.ravel(), weights=counts).astype(int).tolist())


def test_early_exit_stops_past_the_limit():
    sizes = np.array([1, 9, 2, 3, 1, 1], dtype=np.int64)
    assert records_in_small_classes(sizes, 3, 100) == 5  # 1 + 2 + 1 + 1, all counted
    assert records_in_small_classes(sizes, 3, 2) == 3  # stops at 1 + 2 > 2


def test_dense_ids_in_order_of_first_appearance():
    assert dense_ids(np.array([7, 3, 7, 0, 3])).tolist() == [0, 1, 0, 2, 1]
    assert dense_ids(np.array([2**40, 5, 2**40])).tolist() == [0, 1, 0]


def test_minimal_nodes_by_brute_force():
    rng = np.random.default_rng(3)
    lat = Lattice([2, 1, 3])
    for _ in range(30):
        passing = rng.random(len(lat)) < 0.3
        expected = [i for i in range(len(lat)) if passing[i] and not any(
            passing[o] and o != i and (lat.nodes[o] <= lat.nodes[i]).all() for o in range(len(lat)))]
        assert np.flatnonzero(lat.minimal(passing)).tolist() == expected


@pytest.mark.parametrize("series", [
    pd.Series([5, 3, 5, 10**6, 3]),
    pd.Series([2**62, -5, 2**62]),
    pd.Series(["b", "a", "b", "", "é"], dtype="str"),
    pd.Series(["b", "a", "b", "c", "a"], dtype="str").iloc[1:],
    pd.Series(["b", None, "b"], dtype="str"),
    pd.Series([1.5, np.nan, 1.5]),
    pd.Series(["x", 3, "x"], dtype=object),
])
def test_factorize_pairs_codes_and_values_like_pandas(series):
    codes, uniques = factorize(series)
    pd_codes, pd_uniques = pd.factorize(series, use_na_sentinel=False)
    assert len(uniques) == len(pd_uniques)
    ours = pd.Series(uniques.to_numpy(dtype=object)[codes])
    theirs = pd.Series(np.asarray(pd_uniques, dtype=object)[pd_codes])
    pd.testing.assert_series_equal(ours, theirs, check_dtype=False)


def test_exhaustive_and_optimal_agree_on_every_tiny_lattice():
    # a quarter of the data sets of 4 records over two 2-value attributes (flat hierarchies)
    h = {"a": Hierarchy([["0", "*"], ["1", "*"]]), "b": Hierarchy([["0", "*"], ["1", "*"]])}
    for bits in list(product([0, 1], repeat=8))[::4]:
        frame = pd.DataFrame({"a": [str(x) for x in bits[:4]], "b": [str(x) for x in bits[4:]]})
        for sup in (0.0, 0.25):
            params = dict(max_suppression=sup)
            best = FullDomainGeneralization(2, h, **params).search(frame)
            oracle = FullDomainGeneralization(2, h, algorithm="exhaustive", **params).search(frame)
            assert best.node == oracle.node and set(best.minimal) == set(oracle.minimal)


def test_guide_frequency_table_example_runs_as_written(capsys):
    guide = (Path(__file__).parents[1] / "docs" / "reference" / "microdata-guide.md").read_text()
    section = guide[guide.index("### Searching a frequency table computed elsewhere"):]
    code = section[section.index("```python") + len("```python"): section.index("```", section.index("```python") + 9)]
    exec(compile(code, "docs/reference/microdata-guide.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "(0, 1)"
