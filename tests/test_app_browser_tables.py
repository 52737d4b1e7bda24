"""The workbench (``sdckit app``, issue 31) in a real browser: the Tables screen, Compare and tune.

How they run: tests/test_app_browser.py's docstring; the shared fixtures: tests/app_browser_support.py.
"""

from __future__ import annotations


import pandas as pd
import pytest

from sdckit.app import jobs
from sdckit.core.errors import ParameterError
from sdckit.core.schema import Schema
from sdckit.pipeline import protect

from app_browser_support import survey, bench, browser, page, unlabelled, shot, open_by_path, apply_step, confirmed_session  # noqa: F401 (fixtures: bench, browser, page)


# --------------------------------------------------------------------------- tables
#: A 3 x 2 frequency table worked by hand: (A, p) holds one record, so MinFrequency(3) makes it
#: primary; a suppressed cell of a 2-D table needs a suppressed partner in its row and in its
#: column, so the cheapest pattern (cost: the cells' values) is a rectangle through (A, p):
#: {(A,p), (A,q), (B,p), (B,q)} costs 1 + 5 + 4 + 6 = 16, {(A,p), (A,q), (C,p), (C,q)} 17; the
#: margins (6, 10, 11, 12, 15, 27) cost more. Everything else is published.
HAND_COUNTS = {("A", "p"): 1, ("A", "q"): 5, ("B", "p"): 4, ("B", "q"): 6, ("C", "p"): 7, ("C", "q"): 4}
HAND_SHOWN = {"Total": ["27", "12", "15"], "A": ["6", "x", "x"], "B": ["10", "x", "x"], "C": ["11", "7", "4"]}
HAND_STATUS = {("A", 1): "primary", ("A", 2): "secondary", ("B", 1): "secondary", ("B", 2): "secondary"}


def hand_table() -> pd.DataFrame:
    rows = [(a, b, 10 * i + 1) for i, ((a, b), n) in enumerate(HAND_COUNTS.items()) for _ in range(n)]
    return pd.DataFrame(rows, columns=["region", "kind", "turnover"])


def test_the_tables_screen_shows_the_hand_worked_pattern_and_verdict(page, bench, tmp_path):
    path = tmp_path / "shops.csv"
    hand_table().to_csv(path, index=False)
    open_by_path(page, bench, path)
    page.click("nav >> text=Tables")
    page.wait_for_url("**/tables")
    assert unlabelled(page) == []
    page.check("input[name=dimension][value=region]")
    page.check("input[name=dimension][value=kind]")
    page.fill("#min_frequency", "3")
    page.select_option("#protection", "suppression-optimal")
    page.click("#protect-table")
    page.wait_for_url("**/tables")
    page.locator("#pattern").wait_for()
    shot(page, "5-tables", at="#pattern-heading")
    rows = page.locator("#pattern tbody tr")
    assert rows.count() == 4
    for i, code in enumerate(HAND_SHOWN):
        row = rows.nth(i)
        assert row.locator("th").inner_text() == code
        cells = row.locator("td")
        assert [cells.nth(j).inner_text() for j in range(3)] == HAND_SHOWN[code]
        for j in range(3):
            assert cells.nth(j).get_attribute("data-status") == HAND_STATUS.get((code, j), "safe")
    assert page.locator("#table-verdict").inner_text() == "safe: 1 of 1 primary cells protected"
    assert page.locator("input[name=dimension][value=region]").is_checked()  # the form keeps what was asked


def test_the_tables_screen_refuses_bad_input_in_one_line_and_keeps_the_form(page, bench, tmp_path):
    path = tmp_path / "shops.csv"
    hand_table().to_csv(path, index=False)
    open_by_path(page, bench, path)
    page.goto(f"{bench.base}/tables")
    page.check("input[name=dimension][value=region]")
    page.fill("#min_frequency", "")
    page.fill("#p_percent", "10")  # a rule on sums, on a table of counts
    page.click("#protect-table")
    error = page.locator("#error")
    assert error.is_visible() and "choose a response column" in error.inner_text()
    assert "\n" not in error.inner_text().strip()
    assert page.locator("#p_percent").input_value() == "10"
    assert page.locator("input[name=dimension][value=region]").is_checked()
    page.select_option("#protection", "rounding")
    page.fill("#p_percent", "")
    page.fill("#base", "1")
    page.click("#protect-table")
    assert "rounding base must be a whole number >= 2" in page.locator("#error").inner_text()
    assert page.locator("#pattern").count() == 0  # nothing was protected


@pytest.mark.parametrize("form, dims, message", [
    ({"protection": "suppression-fast", "min_frequency": "3"}, [], "at least one dimension"),
    ({"protection": "suppression-fast", "min_frequency": "3", "response": "turnover"}, ["region", "turnover"],
     "is a dimension"),
    ({"protection": "suppression-fast", "min_frequency": "3"}, ["nope"], "cannot span"),
    ({"protection": "magic", "min_frequency": "3"}, ["region"], "Unknown protection"),
    ({"protection": "suppression-fast", "min_frequency": "three"}, ["region"], "whole number"),
    ({"protection": "suppression-fast", "min_frequency": "0"}, ["region"], "'n' parameter"),
    ({"protection": "suppression-fast"}, ["region"], "at least one sensitivity rule"),
    ({"protection": "adjustment", "response": "turnover", "dominance_n": "2"}, ["region"], "both n and k"),
    ({"protection": "adjustment", "response": "region", "min_frequency": "3"}, ["kind"], "cannot be summed"),
    ({"protection": "adjustment", "response": "turnover", "min_frequency": "3"}, ["region"] * 5 + ["kind"], None),
])
def test_table_requests_are_checked_in_one_line(form, dims, message):
    from sdckit.app.tables import table_request
    from sdckit.core.errors import SdcError

    frame = hand_table()
    if message is None:
        assert table_request(frame, {}, form, dims).dimensions == ("region", "kind")  # repeats dropped
        return
    with pytest.raises(SdcError, match=message) as caught:
        table_request(frame, {}, form, dims)
    assert "\n" not in str(caught.value)


def test_rounding_and_adjustment_on_the_tables_screen_use_the_library():
    from sdckit.app.tables import pattern, protect_table, table_request

    frame = hand_table()
    rounded = protect_table(frame, table_request(frame, {}, {"protection": "rounding", "base": "5"}, ["region", "kind"]))
    shown = {code: [c.text for c in cells] for code, cells in pattern(rounded)["rows"]}
    for code, cells in shown.items():  # every published count a multiple of 5 and additive
        assert all(int(t) % 5 == 0 for t in cells)
        assert int(cells[0]) == int(cells[1]) + int(cells[2])
    assert [int(a) + int(b) + int(c) for a, b, c in zip(*(shown[k] for k in "ABC"))] == [int(t) for t in shown["Total"]]
    adjusted = protect_table(frame, table_request(frame, {}, {"protection": "adjustment", "min_frequency": "3"},
                                                  ["region", "kind"]))
    cell = {(code, j): c for code, cells in pattern(adjusted)["rows"] for j, c in enumerate(cells)}
    assert cell[("A", 1)].status == "primary" and cell[("A", 1)].text != "1"  # the sensitive count moved
    assert adjusted.safe and adjusted.verdict.startswith("safe")


# --------------------------------------------------------------------------- compare and tune


def test_compare_in_the_browser_shows_the_library_comparison_of_the_kept_candidates(page, bench, tmp_path):
    from sdckit.app import compare as comparing
    from sdckit.compare import Candidate, compare
    from sdckit.masking import AdditiveNoise

    frame = survey()
    path = tmp_path / "survey.csv"
    frame.to_csv(path, index=False)
    open_by_path(page, bench, path)
    page.click("nav >> text=Roles")
    page.select_option("select[data-column=hhid]", "")
    page.select_option("select[data-column=weight]", "")
    page.click("#confirm-roles")
    page.wait_for_url("**/risk")
    page.click("nav >> text=Protect")
    apply_step(page, "additive_noise", alpha="0.05")
    page.click("nav >> text=Compare")
    page.wait_for_url("**/compare")
    assert page.locator("#run-compare").is_disabled()  # fewer than two candidates
    page.click("#keep")  # no name: one line, nothing kept
    assert "Name the candidate" in page.locator("#error").inner_text()
    assert page.locator("#no-candidates").count() == 1
    page.fill("#label", "little noise")
    page.click("#keep")
    page.wait_for_url("**/compare")
    page.fill("#label", "little noise")
    page.click("#keep")
    assert "already named 'little noise'" in page.locator("#error").inner_text()
    page.click("nav >> text=Protect")
    page.click("#undo")
    page.wait_for_url("**/protect")
    apply_step(page, "additive_noise", alpha="2")
    page.click("nav >> text=Compare")
    page.fill("#label", "much noise")
    page.click("#keep")
    page.wait_for_url("**/compare")
    assert unlabelled(page) == []
    page.click("#run-compare")
    page.wait_for_url("**/compare")
    page.locator("#shown-table").wait_for()
    shot(page, "7-compare", at="#shown-heading")
    rows = [[c.inner_text() for c in r.locator("td").all()] for r in page.locator("#shown-table tbody tr").all()]
    assert [r[0] for r in rows] == ["little noise", "much noise"]
    # the figures are sdckit.compare's on the same records and the same stream of the session's seed
    session = bench.app.state.sessions.get(next(c["value"] for c in page.context.cookies()
                                                  if c["name"] == f"sdckit_app_{bench.port}"))
    data, rng = comparing.sample(session)
    expected = compare(data, [Candidate("little noise", (AdditiveNoise(alpha=0.05),)),
                              Candidate("much noise", (AdditiveNoise(alpha=2.0),))],
                       schema=Schema.infer(data, identifier=["person_id"], quasi=["sex", "age_group", "region"],
                                           confidential=["income"]), seed=rng)
    for row, result in zip(rows, expected.results):
        assert row[1:] == [f"{result.hellinger:.3f}", f"{result.hellinger_null:.3f}", f"{result.p_value:.3f}",
                           f"{result.utility_loss:.4f}", "yes" if result.plausibly_deniable else "no"]
    assert float(rows[1][4]) > float(rows[0][4])  # forty times the noise loses more utility
    assert page.get_attribute("#shown-figure", "src").startswith("data:image/svg+xml;base64,")
    # tuning: a bad target is one line, nothing runs
    page.fill("#target", "2")
    page.click("#run-tune")
    assert "target p-value must be a number in (0, 1)" in page.locator("#error").inner_text()
    # a tuning that found alpha = 0.7 (the search itself: test_tuning_runs_sdckit_tune_on_the_sample)
    from sdckit.tune import TuneResult, tune_report

    found = TuneResult("additive_noise", "alpha", "p_value", 0.05, 1e-4, 4.0, 0.7,
                       ({"alpha": 0.7, "hellinger": 0.2, "hellinger_null": 0.2, "p_value": 0.5, "utility_loss": 0.1,
                         "passes": True},))
    figure = tune_report(found).sections[0].context["figure"]
    session.compared = comparing.Shown("alpha = 0.7 passes", ("alpha",), [("0.7",)], comparing.image(figure), 60, 60,
                                       found, 0, tuple(s.method for s in session.steps))
    page.goto(f"{bench.base}/compare")
    page.click("#apply-tuned")
    page.wait_for_url("**/protect")
    assert page.inner_text("#steps li").startswith("additive_noise(alpha=0.7")
    assert session.steps[0].method == AdditiveNoise(alpha=0.7)


def test_a_tuned_value_is_applied_to_its_step_and_the_steps_after_it():
    from sdckit.app import compare as comparing
    from sdckit.app.protect import add_step
    from sdckit.masking import AdditiveNoise
    from sdckit.methods import get_method
    from sdckit.tune import TuneResult

    frame = survey()
    session = confirmed_session(frame)
    first, second = AdditiveNoise(alpha=0.05), get_method("local_suppression", {"k": 2})
    add_step(session, first)
    add_step(session, second)
    found = TuneResult("additive_noise", "alpha", "p_value", 0.05, 1e-4, 4.0, 0.7, ())
    session.compared = comparing.Shown("alpha = 0.7", (), [], "", 60, 60, found, 0, (first, second))
    comparing.apply_tuned(session, comparing.tuned(session))
    assert [s.method for s in session.steps] == [AdditiveNoise(alpha=0.7), second]
    schema = Schema.infer(frame, identifier=["person_id"], quasi=["sex", "age_group", "region"], confidential=["income"])
    expected = protect(frame, [AdditiveNoise(alpha=0.7), second], schema=schema, seed=session.seed).data
    pd.testing.assert_frame_equal(session.steps[-1].release.data, expected)
    assert session.compared is None
    with pytest.raises(ParameterError, match="Tune a step first"):
        comparing.tuned(session)
    session.compared = comparing.Shown("alpha = 0.7", (), [], "", 60, 60, found, 0, (first, second))
    with pytest.raises(ParameterError, match="steps changed since the tuning"):  # they did: alpha is 0.7 now
        comparing.tuned(session)
    nothing = TuneResult("additive_noise", "alpha", "p_value", 0.05, 1e-4, 4.0, None, ())
    session.compared = comparing.Shown("none", (), [], "", 60, 60, nothing, 0, tuple(s.method for s in session.steps))
    with pytest.raises(ParameterError, match="nothing to apply"):
        comparing.tuned(session)


def test_a_cancelled_tuned_apply_keeps_the_steps():
    from sdckit.app import compare as comparing
    from sdckit.app.protect import add_step
    from sdckit.masking import AdditiveNoise
    from sdckit.tune import TuneResult

    session = confirmed_session(survey())
    add_step(session, AdditiveNoise(alpha=0.05))
    before = list(session.steps)
    found = TuneResult("additive_noise", "alpha", "p_value", 0.05, 1e-4, 4.0, 0.7, ())
    session.compared = comparing.Shown("", (), [], "", 60, 60, found, 0, (AdditiveNoise(alpha=0.05),))
    job = jobs.Job("applying", "/protect")
    job.cancel()
    with pytest.raises(jobs.Cancelled):
        comparing.apply_tuned(session, comparing.tuned(session), job)
    assert session.steps == before


def test_tuning_runs_sdckit_tune_on_the_sample_with_k_at_most_the_records(monkeypatch):
    from sdckit.app import compare as comparing
    from sdckit.app.protect import add_step
    from sdckit.methods import get_method
    from sdckit.tune import TuneResult

    session = confirmed_session(survey(30))
    add_step(session, get_method("microaggregation", {"k": 3}))
    calls = []

    def fake_tune(frame, methods, **kwargs):
        calls.append((frame, methods, kwargs))
        return TuneResult("microaggregation", "k", "p_value", kwargs["target"], 2, kwargs["high"], None,
                          ({"k": 2, "hellinger": 0.3, "hellinger_null": 0.1, "p_value": 0.01, "utility_loss": 0.1,
                            "passes": False},))

    monkeypatch.setattr(comparing, "tune", fake_tune)
    shown = comparing.run_tuning(session, 0, 0.05)
    frame, methods, kwargs = calls[0]
    assert kwargs["high"] == 30 and kwargs["step"] == 0 and kwargs["target"] == 0.05  # microaggregation: k <= n
    assert frame.equals(session.data.frame) and methods == [s.method for s in session.steps]
    assert shown.subtitle == "no value of k in [2, 30] passes" and shown.step == 0
    with pytest.raises(ParameterError, match="can be tuned"):
        comparing.run_tuning(session, 1, 0.05)
    with pytest.raises(ParameterError, match=r"in \(0, 1\)"):
        comparing.run_tuning(session, 0, 1.0)
