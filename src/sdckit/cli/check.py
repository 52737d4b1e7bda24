"""``sdckit check``: does a data set satisfy k-anonymity, l-diversity, t-closeness?"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from sdckit.cli.app import app
from sdckit.cli.common import console, print_result
from sdckit.core.errors import ParameterError


def build_criteria(k: Optional[int], l: Optional[float], l_kind: str, c: Optional[float],  # noqa: E741
                   t: Optional[float], t_distance: str, sensitive: Optional[str],
                   t_hierarchy: Optional[Path] = None) -> list:
    """The criteria the options ask for (at least one)."""
    from sdckit.anonymity.criteria import (
        DistinctLDiversity,
        EntropyLDiversity,
        KAnonymity,
        RecursiveCLDiversity,
        TCloseness,
    )

    criteria = []
    if k is not None:
        criteria.append(KAnonymity(k))
    if (l is not None or t is not None) and not sensitive:
        raise ParameterError("--l and --t need --sensitive COLUMN (the sensitive attribute).")
    if l is not None:
        if l_kind == "distinct":
            criteria.append(DistinctLDiversity(int(l), sensitive))
        elif l_kind == "entropy":
            criteria.append(EntropyLDiversity(float(l), sensitive))
        elif l_kind == "recursive":
            if c is None:
                raise ParameterError("--l-kind recursive needs --c (the c of recursive (c,l)-diversity).")
            criteria.append(RecursiveCLDiversity(float(c), int(l), sensitive))
        else:
            raise ParameterError(f"--l-kind must be distinct, entropy or recursive. Got {l_kind!r} instead.")
    if t is not None:
        if t_distance == "hierarchical" and t_hierarchy is None:
            raise ParameterError("--t-distance hierarchical needs --t-hierarchy FILE (the sensitive "
                                 "attribute's hierarchy, CSV in ARX's layout).")
        hierarchy = str(t_hierarchy) if t_distance == "hierarchical" else None
        criteria.append(TCloseness(float(t), sensitive, distance=t_distance, hierarchy=hierarchy))
    if not criteria:
        raise ParameterError("Give at least one criterion: --k, --l (with --sensitive) or --t (with --sensitive).")
    return criteria


@app.command()
def check(
    data: Annotated[Path, typer.Argument(help="The data set to check (CSV, Parquet, ...).")],
    quasi: Annotated[str, typer.Option("--quasi", "-q", help="Quasi-identifiers, comma-separated.")],
    k: Annotated[Optional[int], typer.Option("--k", help="k of k-anonymity.")] = None,
    l: Annotated[Optional[float], typer.Option("--l", help="l of l-diversity (needs --sensitive).")] = None,  # noqa: E741
    l_kind: Annotated[str, typer.Option("--l-kind", help="distinct, entropy or recursive.")] = "distinct",
    c: Annotated[Optional[float], typer.Option("--c", help="c of recursive (c,l)-diversity.")] = None,
    t: Annotated[Optional[float], typer.Option("--t", help="t of t-closeness (needs --sensitive).")] = None,
    t_distance: Annotated[str, typer.Option("--t-distance", help="equal, ordered or hierarchical ground distance.")] = "equal",
    t_hierarchy: Annotated[Optional[Path], typer.Option("--t-hierarchy", help="Hierarchy of the sensitive attribute (CSV, ARX layout), for --t-distance hierarchical.")] = None,
    sensitive: Annotated[Optional[str], typer.Option("--sensitive", "-s", help="The sensitive attribute.")] = None,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Write the verdict as JSON here.")] = None,
) -> None:
    """Check DATA against k-anonymity / l-diversity / t-closeness, class by class.

    Prints one line per criterion; exits 0 whether or not the criteria hold (the verdict is
    in the output and in --json's "satisfied").
    """
    from sdckit.anonymity.check import check as check_criteria
    from sdckit.io import read

    criteria = build_criteria(k, l, l_kind, c, t, t_distance, sensitive, t_hierarchy)
    frame = read(data)
    names = [q.strip() for q in quasi.split(",") if q.strip()]
    report = check_criteria(frame, names, criteria)
    print_result(report, f"{data.name}: {len(report.classes)} classes over {', '.join(names)}", json_out)
    console.print("All criteria hold." if report.satisfied else "Some criteria are violated.")
