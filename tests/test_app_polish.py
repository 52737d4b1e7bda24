"""The workbench's small things (issue 31, review): the Tables screen counts each data set's codes
once, the steps lists show hierarchies and mappings readably, and the Compare table shows the
share of suppressed cells when a candidate suppressed any.

Against the server over HTTP (httpx; the fixtures of tests/app_browser_support.py), or in-process.
"""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd

from sdckit.app import tables as tabulating
from sdckit.app.session import Loaded, Session, check_roles
from sdckit.compare import Candidate, compare
from sdckit.core.schema import Schema
from sdckit.masking import AdditiveNoise, LocalSuppression

from app_browser_support import SURVEY_ROLES, bench, finished, session_client, survey  # noqa: F401 (fixture: bench)

#: A hierarchy of survey()'s regions in ARX's layout (value; group; top): 3 levels, 5 codes.
REGION_HIERARCHY = "north;N-S;*\nsouth;N-S;*\neast;E-W-C;*\nwest;E-W-C;*\ncentre;E-W-C;*\n"


def dimensions(page: str) -> list[str]:
    return re.findall(r'name="dimension" id="dim-\d+" value="([^"]+)"', page)


def test_the_tables_screen_counts_the_codes_once_per_data_set(bench, tmp_path, monkeypatch):
    counted: list[list[str]] = []
    count = tabulating.code_counts

    def counting(frame: pd.DataFrame) -> dict[str, int]:
        counted.append(list(frame.columns))
        return count(frame)

    monkeypatch.setattr(tabulating, "code_counts", counting)  # before: no such function, counted on every visit
    first, second = tmp_path / "s.csv", tmp_path / "t.csv"
    survey().to_csv(first, index=False)
    # a: 3 codes; b: 70 codes (more than MAX_CODES = 60); c: float
    pd.DataFrame({"a": [1, 2, 3] * 70, "b": list(range(70)) * 3, "c": [0.5] * 210}).to_csv(second, index=False)
    client, csrf = session_client(bench)
    try:
        client.post("/open/path", data={"path": str(first), "csrf": csrf})
        client.post("/roles", data={"csrf": csrf, **{f"role-{i}": r for i, r in enumerate(SURVEY_ROLES)}},
                    follow_redirects=False)  # no risk measure (a job) meanwhile
        # by hand: person_id an identifier, income and weight floats (and weight the weight), hhid 30 codes
        expected = ["sex", "age_group", "region", "hhid"]
        assert dimensions(client.get("/tables").text) == dimensions(client.get("/tables").text) == expected
        refused = client.post("/tables", data={"csrf": csrf, "dimension": "sex", "protection": "suppression-optimal"})
        line = re.search(r'id="error"[^>]*>([^<]*)<', refused.text).group(1)
        assert "at least one sensitivity rule" in line, line
        assert refused.status_code == 400 and dimensions(refused.text) == expected
        assert len(counted) == 1  # two visits and a post: counted once
        client.post("/open/path", data={"path": str(second), "csrf": csrf})  # new data: counted anew
        assert dimensions(client.get("/tables").text) == ["a"] and len(counted) == 2
        assert counted[1] == ["a", "b", "c"]
        assert dimensions(client.get("/tables").text) == ["a"] and len(counted) == 2
    finally:
        client.close()


def steps_shown(page: str, list_id: str) -> list[str]:
    """The items (``<li>``) or rows' cells (``<code>``) of the steps list ``list_id``, as text."""
    block = re.search(rf'id="{list_id}">(.*?)</(ol|table)>', page, re.S).group(1)
    return [html.unescape(re.sub(r"<[^>]+>", "", t)) for t in re.findall(r"<(?:li|code)>(.*?)</(?:li|code)>", block, re.S)]


def test_steps_show_a_hierarchy_by_its_file_and_shape_and_a_mapping_as_pairs(bench, tmp_path):
    (tmp_path / "survey.csv").write_text(survey().to_csv(index=False))
    (tmp_path / "region.csv").write_text(REGION_HIERARCHY)
    mapping = '{"<30": "young", "30-49": "young", "50-69": "old", "70+": "old", "80+": "old"}'
    client, csrf = session_client(bench)
    try:
        client.post("/open/path", data={"path": str(tmp_path / "survey.csv"), "csrf": csrf})
        client.post("/roles", data={"csrf": csrf, **{f"role-{i}": r for i, r in enumerate(SURVEY_ROLES)}},
                    follow_redirects=False)  # no risk measure (a job) meanwhile
        for fields in ({"p-columns": "region", "p-hierarchy": "region.csv", "p-level": "1"},
                       {"p-columns": "age_group", "p-mapping": mapping}):
            answer = client.post("/protect", data={"csrf": csrf, "method": "global_recoding", **fields},
                                 follow_redirects=False)
            assert finished(client, answer.headers["location"])["state"] == "done"
        shown = steps_shown(client.get("/protect").text, "steps")
        client.post("/compare/keep", data={"csrf": csrf, "label": "recoded"})
        listed = steps_shown(client.get("/compare").text, "candidates")
    finally:
        client.close()
    assert len(shown) == 2 and listed == ["; ".join(shown)]
    # before: hierarchy={'class': 'Hierarchy', 'source': '/tmp/.../region.csv', 'levels': 3, ..., 'sha256': ...}
    assert "hierarchy=region.csv: 3 levels, 5 codes" in shown[0] and "sha256" not in shown[0]
    assert "columns=['region']" in shown[0] and "level=1" in shown[0]
    # before: mapping={'<30': 'young', ...} in full; now 4 pairs and how many more
    assert "mapping=<30 -> young, 30-49 -> young, 50-69 -> old, 70+ -> old, ... (1 more)" in shown[1]
    assert "80+" not in shown[1] and "{" not in shown[1]


def test_the_compare_table_shows_the_suppressed_share_only_when_a_candidate_suppressed():
    from sdckit.app import compare as comparing

    # ages as numbers (an ordered key the verification ranks; survey()'s key variables are nominal)
    frame = survey().drop(columns=["age_group", "weight", "hhid"])
    frame.insert(2, "age", np.random.default_rng(3).choice([25, 35, 45, 55, 65], len(frame)))
    session = Session("s", "c")
    session.open(Loaded("ages.csv", frame))
    session.confirm(check_roles(frame, {"person_id": "identifier", "sex": "quasi", "age": "quasi", "region": "quasi",
                                        "income": "confidential"}))
    session.candidates = [Candidate("suppress k=3", (LocalSuppression(k=3),)),
                          Candidate("noise", (AdditiveNoise(alpha=0.5),))]
    shown = comparing.run_comparison(session)
    data, rng = comparing.sample(session)
    schema = Schema.infer(data, identifier=["person_id"], quasi=["sex", "age", "region"], confidential=["income"])
    expected = compare(data, list(session.candidates), schema=schema, seed=rng)
    assert shown.headings[-1] == "cells suppressed" and len(shown.headings) == 7  # before: 6, no share
    assert [row[-1] for row in shown.rows] == [f"{r.suppressed:.2%}" for r in expected.results]
    assert 0 < expected.results[0].suppressed < 1 and shown.rows[1][-1] == "0.00%"
    session.candidates = [Candidate("little noise", (AdditiveNoise(alpha=0.1),)),
                          Candidate("noise", (AdditiveNoise(alpha=0.5),))]
    plain = comparing.run_comparison(session)
    assert "cells suppressed" not in plain.headings and all(len(row) == 6 for row in plain.rows)


def test_a_hierarchy_built_in_memory_is_listed_by_its_shape_and_a_short_mapping_in_full():
    from sdckit.app.protect import listed_value
    from sdckit.core.hierarchy import Hierarchy

    assert listed_value(Hierarchy([["a", "x", "*"], ["b", "x", "*"], ["c", "y", "*"]])) == "hierarchy: 3 levels, 3 codes"
    assert listed_value({"a": "b", "c": "d"}) == "a -> b, c -> d"
    assert listed_value((0, 30, 120)) == "[0, 30, 120]"  # anything else as before: its plain value
