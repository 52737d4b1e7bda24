"""The one Jinja2 environment of sdckit's HTML pages (issue 29 item 7).

The templates live with the report, in ``sdckit/report/templates``: ``layout.html`` is the page
every report shares (head, styles, header, navigation, one ``<section>`` per section), and each
section has its own template. The microdata report (:mod:`sdckit.report.render`), the comparison
and tuning pages and the table report (:mod:`sdckit.tabular.tablereport`) all render through this
environment, which sits in ``core`` so that a family below the report layer can use it without
importing ``sdckit.report`` (DESIGN.md section 1): the folder is read as package data of
``sdckit``. Autoescape is always on and an undefined name is an error. The pages are
self-contained: styles inline, no script but data, no external resource.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jinja2 is loaded on first use, not with sdckit
    from jinja2 import Environment

#: Where the templates are, inside the ``sdckit`` package.
TEMPLATES = "report/templates"


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The Jinja2 environment: the package's templates, autoescape on, undefined is an error."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    return Environment(
        loader=PackageLoader("sdckit", TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(template: str, **context: Any) -> str:
    """``template`` rendered with ``context`` (HTML text)."""
    return environment().get_template(template).render(**context)
