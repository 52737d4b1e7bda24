"""The Tables screen's routes: a table built, protected and shown (issue 31, screen 5; the calls
are in :mod:`sdckit.app.tables`)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import Response

from sdckit.app import jobs, table_form
from sdckit.app import tables as tabulating
from sdckit.app.pages import busy_line, guard, last_values, page, posted, start_job, with_data
from sdckit.app.session import Session
from sdckit.core.errors import DataError, SdcError
from sdckit.tabular.cellkey_sums import TYPES


def register(app: FastAPI) -> None:
    """Attach the Tables screen's routes to ``app``."""

    # ------------------------------------------------------------------ 5. tables
    def tables_page(request: Request, status: int = 200, error: str | None = None,
                    form: dict[str, str] | None = None, dimensions: list[str] | None = None) -> Response:
        session: Session = request.state.session
        frame, roles = session.data.frame, session.roles
        outcome = session.table
        if form is None:  # the form shows what was asked last, or the defaults
            form = tabulating.request_form(outcome.request if outcome is not None else None)
            dimensions = list(outcome.request.dimensions) if outcome is not None else dimensions
        choices = tabulating.dimension_choices(frame, roles, tabulating.loaded_code_counts(session.data))
        return page(request, "tables.html", status, error=error, form=form, chosen=dimensions or [],
                    dimension_choices=choices,
                    response_choices=tabulating.response_choices(frame, roles),
                    weight_choices=tabulating.weight_choices(frame, roles), hierarchy_field=table_form.hierarchy_field,
                    ckm_sum_fields=table_form.CKM_SUM_FIELDS, bool_choices=table_form.BOOL_CHOICES,
                    ckm_types=TYPES, hierarchies_open=any(form.get(table_form.hierarchy_field(d)) for d in choices),
                    protections=tabulating.PROTECTIONS, max_dimensions=tabulating.MAX_DIMENSIONS,
                    outcome=outcome, pattern=tabulating.pattern(outcome) if outcome is not None else None)

    @app.get("/tables")
    @with_data
    def tables_screen(request: Request) -> Response:
        return tables_page(request)

    @app.post("/tables")
    async def tables_protect(request: Request) -> Response:
        fields = await posted(request)
        form = None if fields is None else last_values(fields)
        if (stop := guard(request, form)) is not None:
            return stop
        session: Session = request.state.session
        dimensions = [d for d in fields.get("dimension", []) if d]
        try:
            if (busy := busy_line(session)) is not None:
                raise DataError(busy)
            source = session.data.source  # a relative hierarchy file is beside the data file
            wanted = tabulating.table_request(session.data.frame, session.roles, form, dimensions,
                                              None if source is None else source.parent,
                                              tabulating.loaded_code_counts(session.data))
        except SdcError as exc:
            return tables_page(request, 400, " ".join(str(exc).split()), form, dimensions)
        frame = session.data.frame

        def work_on(job: jobs.Job) -> None:
            session.table = tabulating.protect_table(frame, wanted, job, session.seed)

        return start_job(session, "the table", "/tables", work_on)
