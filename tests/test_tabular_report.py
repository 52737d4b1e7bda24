"""The table report renders through the microdata report's Jinja2 templates (issue 29 item 7): the
shared layout and styles, a section per part, the result's figures as plain JSON, offline."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from sdckit.core.result import plain
from sdckit.tabular.recipe import run_table_recipe
from sdckit.tabular.tablereport import report_html

DATA = Path(__file__).resolve().parent / "data" / "tabular"


@pytest.fixture(scope="module")
def suppression(tmp_path_factory):
    result, paths = run_table_recipe(DATA / "enterprises.toml", tmp_path_factory.mktemp("t") / "o")
    return result, paths["report"].read_text()


def summary(page: str) -> str:
    return re.search(r'<script type="application/json" id="summary">(.*?)</script>', page, re.S).group(1)


def test_the_table_report_uses_the_shared_layout(suppression):
    """The head, styles, header, navigation and sections of the microdata report's layout.html."""
    _, page = suppression
    layout = (Path(__file__).resolve().parents[1] / "src" / "sdckit" / "report" / "templates" / "layout.html").read_text()
    for rule in ("header { background: #24344d;", "section { background: #fff; border: 1px solid #dde2ea;"):
        assert rule in layout and rule in page
    assert '<meta name="generator" content="sdckit' in page
    anchors = re.findall(r'<a href="#([^"]+)">', page)
    assert anchors == re.findall(r'<section id="([^"]+)">', page) == ["protection", "table"]
    assert "<h2>Published table</h2>" in page and "<th>region</th>" in page


def test_the_summary_is_the_results_plain_json(suppression):
    """Parsable as it stands (not HTML-escaped, no NaN, no str() of numpy values) and equal to
    plain(result.to_dict()), the one JSON helper."""
    result, page = suppression
    assert json.loads(summary(page)) == plain(result.to_dict())


def test_the_page_is_offline_and_escapes_what_it_is_given(suppression):
    result, _ = suppression
    page = report_html(result, "<b>title</b>", parameters={"note": "<script>alert(1)</script>"})
    assert "<b>title</b>" not in page and html.escape("<b>title</b>") in page
    assert "<script>alert" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page and page.count("<script") == 1
