"""The table service's sums and hierarchies (issue 30 section 3): POST /v1/table over the real
server on 127.0.0.1 (a free port), ``"measure": "sum:income"`` perturbed by cellKey's flex
function, and a dimension with a declared hierarchy showing the margins at each level.

Checked: the published sums equal :func:`sdckit.tabular.cell_key_sums` on the same records, keys
and parameters (the library's oracle, its p-table and parameters built here, not from the
service's configuration); one cell worked by hand from the p-table's row; the same cell is the
same number in every table; a hierarchy's margin is the cell key perturbation of its records (a
cell of its own), not the sum of its perturbed children; ``.hrc`` and ``{child = parent}`` give
the same; bad measures and configurations are one line naming the culprit.
"""

from __future__ import annotations

import functools

import httpx
import numpy as np
import pandas as pd
import pytest

from query_helpers import SEED, Server, add_analyst
from sdckit.core.errors import DataError, ParameterError
from sdckit.query.config import load_config
from sdckit.query.service import Service
from sdckit.query.limbs import exact_limbs, limbs_to_float
from sdckit.query.tables import CellKeyCube
from sdckit.tabular import Hierarchy, cell_key_counts, cell_key_sums, ptable, ptable_numeric
from sdckit.tabular.cellkey_sums import CellKeySumParams

REGIONS = {"N": "North", "W": "North", "S": "South", "E": "South"}
HRC = "North\n@N\n@W\nSouth\n@S\n@E\n"
#: The one record of cell (E, M): its income and key (worked by hand below).
LONE_INCOME, LONE_KEY = 50, 0.7

SUMS = "D = 5\nV = 3.0\nfp = 100\np_small = 0.2\np_large = 0.05\ntop_k = 2\nepsilon = [1, 0.5]\n"
#: cellKey's simple approach, the published sums rounded to multiples of 5.
SIMPLE = "D = 5\nV = 3.0\np = 0.1\ntop_k = 2\nepsilon = [1, 0.5]\nround_to = 5\n"
TABLE = """[[table]]
name = "{name}"
path = "people.csv"
mode = "tables"
[table.domains]
region = ["N", "S", "E", "W"]
sex = ["F", "M"]
[table.bounds]
income = [-1000, 100000]
{hierarchy}
[table.ckm]
D = 3
V = 2.0
js = 1
record_key = "rkey"
{extra}
"""
MAPPING = '[table.hierarchies]\nregion = {N = "North", W = "North", S = "South", E = "South"}'


def _frame() -> pd.DataFrame:
    """200 records in N, S, W; region E holds three by hand: (E, F) 30 and 0, (E, M) 50 alone."""
    rng = np.random.default_rng(20261129)
    n = 200
    frame = pd.DataFrame({
        "region": rng.choice(["N", "S", "W"], n),
        "sex": rng.choice(["F", "M"], n),
        "income": rng.integers(0, 3000, n) * (rng.random(n) < 0.9),  # some zeros
        "rkey": rng.integers(0, 10**8, n) / 1e8,
    })
    frame.loc[5, "income"] = -400  # a negative contribution
    hand = pd.DataFrame({"region": ["E", "E", "E"], "sex": ["F", "F", "M"], "income": [30, 0, LONE_INCOME],
                         "rkey": [0.25, 0.5, LONE_KEY]})
    return pd.concat([frame, hand], ignore_index=True)


@functools.cache
def _params() -> CellKeySumParams:
    """The flex parameters of SUMS, built directly (the oracle's own path)."""
    return CellKeySumParams(ptab=ptable_numeric(5, 3.0, [1, 5], step=2), fp=100, p_small=0.2, p_large=0.05,
                            top_k=2, epsilon=(1.0, 0.5))


def _write(folder, frame=None, extra_tables: str = ""):
    (frame if frame is not None else _frame()).to_csv(folder / "people.csv", index=False)
    (folder / "region.hrc").write_text(HRC)
    text = "\n".join([
        "[service]", 'state = "state.db"', f'seed = "{SEED}"',
        TABLE.format(name="people", hierarchy=MAPPING, extra="min_count = 1\n[table.ckm.sums]\n" + SUMS),
        TABLE.format(name="fromhrc", hierarchy='[table.hierarchies]\nregion = "region.hrc"',
                     extra="[table.ckm.sums]\n" + SUMS),
        TABLE.format(name="nosums", hierarchy="", extra=""),
        TABLE.format(name="simple", hierarchy=MAPPING, extra="[table.ckm.sums]\n" + SIMPLE),
        extra_tables])
    path = folder / "service.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tablesums")
    config = _write(folder)
    key = add_analyst(config, "ana", "restricted")
    server = Server(config)
    yield {"url": server.url, "key": key, "frame": _frame()}
    server.stop()


def _ask(service, body):
    return httpx.post(service["url"] + "/v1/table", json=body, headers={"Authorization": f"Bearer {service['key']}"},
                      timeout=30)


def _cells(response) -> dict[tuple[str, ...], float | None]:
    assert response.status_code == 200, response.text
    return {tuple(str(c) for c in row[:-1]): row[-1] for row in response.json()["rows"]}


@functools.cache
def _simple(round_to: float | None = 5) -> CellKeySumParams:
    """SIMPLE's parameters, built directly."""
    return CellKeySumParams(ptab=ptable_numeric(5, 3.0, [1, 5], step=2), p=0.1, top_k=2, epsilon=(1.0, 0.5),
                            round_to=round_to)


def _sum_oracle(frame, dims, where=None, column="sum_pert", params=None) -> dict[tuple[str, ...], float]:
    for dim, codes in (where or {}).items():
        frame = frame[frame[dim].isin(codes)]
    hier = {"region": REGIONS} if "region" in dims else None
    ref = cell_key_sums(frame, dims, "rkey", "income", params or _params(), hierarchies=hier)
    return {tuple(str(c) for c in row[:len(dims)]): float(row[-1])
            for row in ref[[*dims, column]].itertuples(index=False)}


# ------------------------------------------------------------------ the numbers
@pytest.mark.parametrize("dims, where", [
    (["region"], None),
    (["sex"], None),
    (["region", "sex"], None),
    (["sex", "region"], None),
    (["sex"], {"region": ["N", "E"]}),
    (["region", "sex"], {"sex": ["M"]}),
])
def test_sums_equal_cell_key_sums(service, dims, where):
    """Every published sum (margins and hierarchy levels included) is cell_key_sums' sum_pert on
    the same records, keys and flex parameters; the table's shape is the hierarchy's."""
    body = {"table": "people", "dimensions": dims, "measure": "sum:income", **({"where": where} if where else {})}
    response = _ask(service, body)
    served = _cells(response)
    ref = _sum_oracle(service["frame"], dims, where)
    assert response.json()["columns"] == [*dims, "sum"] and response.json()["measure"] == "sum:income"
    for cell, value in served.items():
        assert value == pytest.approx(ref.get(cell, 0.0), rel=1e-12, abs=1e-9), cell
    if "region" in dims and not where:
        assert {c[dims.index("region")] for c in served} == {"Total", "North", "South", "N", "S", "E", "W"}
    raw = _sum_oracle(service["frame"], dims, where, "sum")
    assert sum(v != raw.get(c, 0.0) for c, v in served.items()) >= len(served) // 2  # perturbed, not the raw sums


def test_one_cell_by_hand(service):
    """(E, M) holds one record: income 50 < fp = 100, so x_delta = 50 p_small = 10 and the row is
    a = |50 / 10| = 5, the p-table's last row (i = 5); its key 0.7 falls in the interval
    [0.666349, 0.763209) of that row, v = 1.0: published 50 + 10 x 1.0 = 60."""
    pt = ptable_numeric(5, 3.0, [1, 5], step=2)
    row = pt[pt["i"] == 5]
    hit = row[(row["p_int_lb"] <= LONE_KEY) & (LONE_KEY < row["p_int_ub"])]
    assert len(hit) == 1 and float(hit["v"].iloc[0]) == 1.0
    assert (round(float(hit["p_int_lb"].iloc[0]), 6), round(float(hit["p_int_ub"].iloc[0]), 6)) == (0.666349, 0.763209)
    served = _cells(_ask(service, {"table": "people", "dimensions": ["region", "sex"], "measure": "sum:income"}))
    assert served[("E", "M")] == 60.0


def test_same_cell_same_sum_in_every_table(service):
    """(E, M), the margin North and the grand total, each asked for in several tables and under
    where filters keeping the same records: one number each."""
    def ask(dims, where=None):
        body = {"table": "people", "dimensions": dims, "measure": "sum:income", **({"where": where} if where else {})}
        return _cells(_ask(service, body))

    lone = {ask(["region", "sex"])[("E", "M")], ask(["sex", "region"])[("M", "E")],
            ask(["sex"], {"region": ["E"]})[("M",)], ask(["region"], {"sex": ["M"]})[("E",)]}
    north = {ask(["region"])[("North",)], ask(["region", "sex"])[("North", "Total")],
             ask(["sex"], {"region": ["North"]})[("Total",)], ask(["sex"], {"region": ["W", "N"]})[("Total",)],
             ask(["sex", "region"], {"region": ["N", "W", "S"]})[("Total", "North")]}
    total = {ask(["region"])[("Total",)], ask(["sex"])[("Total",)], ask(["sex", "region"])[("Total", "Total")]}
    assert lone == {60.0} and len(north) == 1 and len(total) == 1


def test_hierarchy_margin_is_its_records_perturbation(service):
    """North (N and W) is perturbed as one cell of its records — equal to cell_key_counts /
    cell_key_sums on those records with region recoded to one code — and not the sum of the
    perturbed N and W."""
    frame = service["frame"]
    served_n = _cells(_ask(service, {"table": "people", "dimensions": ["region", "sex"]}))
    served_s = _cells(_ask(service, {"table": "people", "dimensions": ["region", "sex"], "measure": "sum:income"}))
    merged = frame.assign(region=frame["region"].map(REGIONS))
    ref_n = cell_key_counts(merged, ["region", "sex"], "rkey", ptable(3, 2.0, js=1)).set_index(["region", "sex"])
    ref_s = cell_key_sums(merged, ["region", "sex"], "rkey", "income", _params()).set_index(["region", "sex"])
    differs_n = differs_s = 0
    for top, children in (("North", ("N", "W")), ("South", ("S", "E"))):
        for sex in ("F", "M", "Total"):
            assert served_n[(top, sex)] == ref_n.loc[(top, sex), "n_pert"]
            assert served_s[(top, sex)] == pytest.approx(ref_s.loc[(top, sex), "sum_pert"], rel=1e-12)
            differs_n += served_n[(top, sex)] != sum(served_n[(c, sex)] for c in children)
            differs_s += served_s[(top, sex)] != pytest.approx(sum(served_s[(c, sex)] for c in children))
    assert differs_n >= 1 and differs_s >= 1


def test_hrc_file_gives_the_same_tables(service):
    for measure in ("count", "sum:income"):
        for dims in (["region"], ["sex", "region"]):
            a = _ask(service, {"table": "people", "dimensions": dims, "measure": measure}).json()["rows"]
            b = _ask(service, {"table": "fromhrc", "dimensions": dims, "measure": measure}).json()["rows"]
            assert a == b and len(a) == 7 * (1 if dims == ["region"] else 3)


def test_sums_reveal_nothing_but_the_published_sum(service):
    response = _ask(service, {"table": "people", "dimensions": ["region", "sex"], "measure": "sum:income"})
    payload = response.json()
    assert set(payload) == {"table", "measure", "dimensions", "where", "columns", "rows", "suppressed",
                            "min_count", "method"}
    for word in ('"n"', "cell_key", '"pert"', "x_delta", "x_hat", "rkey"):
        assert word not in response.text


# ------------------------------------------------------------------ exact sums
def test_exact_limbs_are_exact_and_order_free():
    """The limbs hold the exact sum: 0.1 + 0.2 - 0.3 is 2**-54 + ..., not 0 or float's 5.55e-17,
    and the same whatever the grouping (cells merged in any order)."""
    from fractions import Fraction

    x = np.array([0.1, 0.2, -0.3, 1e15, 3.5, -1e15, 2.0**-40])
    index = np.array([0, 0, 0, 1, 1, 1, 2])
    limbs, e = exact_limbs(x, index, 3)
    exact = [sum(Fraction(v) for v in x[index == c]) for c in range(3)]
    assert limbs_to_float(limbs, e).tolist() == [float(v) for v in exact]
    whole = limbs_to_float(limbs.sum(axis=0, keepdims=True), e)[0]
    one_cell = limbs_to_float(exact_limbs(x[::-1], np.zeros(7, dtype=np.int64), 1)[0], e)[0]
    assert whole == one_cell == float(sum(Fraction(v) for v in x))


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("body, words", [
    ({"table": "people", "dimensions": ["sex"], "measure": "sum:wage"}, ["'wage'", "not a numeric column", "income"]),
    ({"table": "people", "dimensions": ["sex"], "measure": "sum:region"}, ["'region'", "a dimension"]),
    ({"table": "people", "dimensions": ["sex"], "measure": "sum:rkey"}, ["'rkey'", "not a numeric column"]),
    ({"table": "nosums", "dimensions": ["sex"], "measure": "sum:income"}, ["'nosums'", "[table.ckm.sums]"]),
    ({"table": "people", "dimensions": ["sex"], "measure": {"sum": "income"}}, ["'measure'", "sum:<column>"]),
    ({"table": "people", "dimensions": ["sex"], "where": {"region": ["Total"]}}, ["'Total'"]),
])
def test_bad_measures_are_400_one_line(service, body, words):
    response = _ask(service, body)
    assert response.status_code == 400, response.text
    message = response.json()["error"]
    assert "\n" not in message
    for word in words:
        assert word in message


@pytest.mark.parametrize("old, new, message", [
    ('W = "North", ', "", "'W' of [table.domains] is not in the hierarchy"),
    ('E = "South"}', 'E = "South", X = "South"}', "leaf 'X' is not a code"),
    ('N = "North"', 'N = "North", North = "S"', "'S' is a subtotal"),
    ('region = "region.hrc"', 'region = "nope.hrc"', "no such .hrc file"),
    ("fp = 100\n", "", "needs 'fp'"),
    ("top_k = 2", "top_k = 2\nsalt = 1", "unknown key 'salt'"),
    ("p_small = 0.2", "p_small = 2.0", "'p_small'"),
    ("fp = 100\n", "p = 0.1\n", "not both: found 'p' and 'p_small'"),
    ("top_k = 2", "top_k = 2\np = 0.1", "not both: found 'p' and 'fp'"),
    ("p = 0.1\n", "", "needs 'fp' (cellKey's flex function"),
    ("p = 0.1\n", "p = 0\n", "'p' parameter of CellKey must be None or a float in (0, 1]"),
    ("round_to = 5", "round_to = 0", "'round_to' parameter of CellKey must be None or a finite float > 0"),
    ("round_to = 5", 'round_to = "5"', "'round_to' parameter"),
])
def test_configuration_errors_name_the_key(tmp_path, old, new, message):
    path = _write(tmp_path)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ParameterError) as info:
        load_config(path)
    assert message in str(info.value) and "\n" not in str(info.value) and "table" in str(info.value)


def test_hierarchy_outside_tables_mode_and_bad_values_refuse(tmp_path):
    path = _write(tmp_path, extra_tables="[[table]]\nname = \"sql\"\npath = \"people.csv\"\n[table.domains]\n"
                                         "sex = [\"F\", \"M\"]\n[table.hierarchies]\nsex = {F = \"A\", M = \"A\"}\n")
    with pytest.raises(ParameterError, match=r"\[table.hierarchies\]: is only for a table with mode"):
        load_config(path)
    frame = _frame()
    frame.loc[7, "income"] = 250_000  # above the declared bound: summed exactly, never clipped
    with pytest.raises(DataError, match="'people'.*'income'.*out-of-bounds value at row 7"):
        Service(_write(tmp_path, frame))


# ------------------------------------------------------------------ every type of the flex function
@functools.cache
def _pt(kind: str = "all"):
    return ptable_numeric(5, 3.0, [1, 5], step=2, type=kind)


@pytest.mark.parametrize("kw, supp_freq", [
    ({"type": "top_contr", "top_k": 3, "epsilon": (1.0, 0.6, 0.3), "same_key": False}, None),
    ({"type": "mean"}, None),
    ({"type": "range", "use_zero_rkeys": True}, None),
    ({"type": "sum", "even_odd": True, "mu_c": 2.0}, 3),
])
def test_every_flex_type_equals_cell_key_sums_in_process(kw, supp_freq):
    """The cube (finest cells merged per request) against cell_key_sums on the records, for each
    ``type``, scrambled keys, zero record keys, even/odd p-tables and sensitive cells (mu_c)."""
    frame = _frame()
    kw = dict(kw)
    ptab = {"even": _pt("even"), "odd": _pt("odd")} if kw.pop("even_odd", False) else _pt()
    params = CellKeySumParams(ptab=ptab, fp=100, p_small=0.2, p_large=0.05, **kw)
    domains = {"region": ("N", "S", "E", "W"), "sex": ("F", "M")}
    codes = {d: pd.Categorical(frame[d], categories=list(v)).codes for d, v in domains.items()}
    cube = CellKeyCube.build(domains, codes, frame["rkey"].to_numpy(), ptable(3, 2.0, js=1),
                             hierarchies={"region": Hierarchy.from_parents(REGIONS, name="region", total="Total")},
                             values={"income": (frame["income"].to_numpy(dtype=float), params, supp_freq)})
    for dims, where in ((["region", "sex"], None), (["sex"], {"region": ["North", "E"]})):
        sub = frame if not where else frame[frame["region"].isin(["N", "W", "E"])]
        ref = cell_key_sums(sub, dims, "rkey", "income", params, supp_freq=supp_freq,
                            hierarchies={"region": REGIONS} if "region" in dims else None)
        ref = {tuple(str(c) for c in r[:-1]): r[-1] for r in ref[[*dims, "sum_pert"]].itertuples(index=False)}
        for *cell, value in cube.answer(dims, where, "income")["rows"]:
            assert value == pytest.approx(ref.get(tuple(str(c) for c in cell), 0.0), rel=1e-12, abs=1e-9), cell


def test_configuration_json_shows_the_sums_and_hierarchies(tmp_path):
    ckm = load_config(_write(tmp_path)).tables["fromhrc"].ckm.to_dict()
    assert ckm["sums"] == {"D": 5, "V": 3.0, "fp": 100, "p_small": 0.2, "p_large": 0.05, "epsilon": [1, 0.5],
                           "top_k": 2}
    assert ckm["hierarchies"] == {"region": {"North": "Total", "N": "North", "W": "North", "South": "Total",
                                             "S": "South", "E": "South"}}
    assert "sums" not in load_config(tmp_path / "service.toml").tables["nosums"].ckm.to_dict()


def test_min_count_nulls_the_sums_of_the_cells_it_nulls():
    """With min_count 5 a sum is null exactly where the same cell's perturbed count is 1..4 (a
    function of the published count only); the other sums are as without min_count."""
    frame = _frame()
    domains = {"region": ("N", "S", "E", "W"), "sex": ("F", "M")}
    codes = {d: pd.Categorical(frame[d], categories=list(v)).codes for d, v in domains.items()}
    values = {"income": (frame["income"].to_numpy(dtype=float), _params(), None)}
    hidden, shown = (CellKeyCube.build(domains, codes, frame["rkey"].to_numpy(), ptable(3, 2.0, js=1), min_count=m,
                                       values=values) for m in (5, None))
    counts = hidden.answer(["region", "sex"])["rows"]
    sums, plain = hidden.answer(["region", "sex"], None, "income"), shown.answer(["region", "sex"], None, "income")
    nulls = [c[:2] for c in counts if c[2] is None]
    assert nulls and [s[:2] for s in sums["rows"] if s[2] is None] == nulls and sums["suppressed"] == len(nulls)
    assert all(a == b for a, b in zip(sums["rows"], plain["rows"]) if a[2] is not None)


# ------------------------------------------------------------------ the simple approach, rounded sums
@pytest.mark.parametrize("dims, where", [(["region", "sex"], None), (["sex"], {"region": ["North", "E"]})])
def test_simple_approach_sums_rounded_equal_cell_key_sums(service, dims, where):
    """[table.ckm.sums] with p (cellKey's simple approach) and round_to = 5: every published sum is
    cell_key_sums' sum_pert with CellKeySumParams(p=0.1) rounded by hand to its nearest multiple of 5."""
    served = _cells(_ask(service, {"table": "simple", "dimensions": dims, "measure": "sum:income",
                                   **({"where": where} if where else {})}))
    frame = service["frame"] if not where else service["frame"][service["frame"]["region"].isin(["N", "W", "E"])]
    raw = _sum_oracle(frame, dims, params=_simple(None))
    rounded = {c: float(np.round(v / 5) * 5) for c, v in raw.items()}
    assert served == {c: rounded.get(c, 0.0) for c in served}
    assert sum(v % 5 != 0 for v in raw.values()) >= len(raw) // 2  # the raw perturbed sums are not multiples of 5
    assert served == {c: v for c, v in _sum_oracle(frame, dims, params=_simple()).items() if c in served}


def test_rounded_sums_same_cell_same_value_in_every_table(service):
    """With round_to a cell is still one number in every table and under every filter."""
    def ask(dims, where=None):
        body = {"table": "simple", "dimensions": dims, "measure": "sum:income", **({"where": where} if where else {})}
        return _cells(_ask(service, body))

    north = {ask(["region"])[("North",)], ask(["region", "sex"])[("North", "Total")],
             ask(["sex"], {"region": ["North"]})[("Total",)], ask(["sex"], {"region": ["W", "N"]})[("Total",)],
             ask(["sex", "region"], {"region": ["N", "W", "S"]})[("Total", "North")]}
    cell = {ask(["region", "sex"])[("S", "F")], ask(["sex", "region"])[("F", "S")],
            ask(["sex"], {"region": ["S"]})[("F",)], ask(["region"], {"sex": ["F"]})[("S",)]}
    assert len(north) == 1 and len(cell) == 1 and next(iter(north)) % 5 == 0


def test_round_to_rounds_to_the_nearest_multiple_by_hand():
    """CellKeySumParams.published: ties to even, decimals of round_to kept exact, never -0."""
    pt = _pt()
    assert CellKeySumParams(ptab=pt, fp=1, top_k=1, round_to=0.1).published(0.26) == 0.3
    assert CellKeySumParams(ptab=pt, fp=1, top_k=1, round_to=1000).published(2_345_501.2) == 2_346_000.0
    assert CellKeySumParams(ptab=pt, fp=1, top_k=1, round_to=2).published(5.0) == 4.0  # 2.5 multiples: to even
    assert str(CellKeySumParams(ptab=pt, fp=1, top_k=1, round_to=10).published(-4.0)) == "0.0"
    assert CellKeySumParams(ptab=pt, fp=1, top_k=1).published(12.345) == 12.345  # default: unrounded, as cellKey
