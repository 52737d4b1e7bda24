"""``sdckit assess`` and ``sdckit verify-record``: the permutation paradigm from the shell."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from sdckit.cli.app import app
from sdckit.cli.common import console, print_result, progress_bar
from sdckit.core.defaults import N_RANDOM
from sdckit.core.errors import DataError


def parse_columns(text: Optional[str]) -> Optional[list[str]]:
    """``"a,b"`` -> ``["a", "b"]``; ``None`` stays ``None``."""
    if text is None:
        return None
    names = [c.strip() for c in text.split(",")]
    if not all(names):
        raise DataError(f"Bad --columns {text!r}: give column names separated by commas.")
    return names


def parse_orders(items: Optional[list[str]]) -> Optional[dict[str, list[str]]]:
    """``["grade=low|mid|high"]`` -> ``{"grade": ["low", "mid", "high"]}`` (category orders)."""
    if not items:
        return None
    orders: dict[str, list[str]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        categories = [v.strip() for v in values.split("|")]
        if not sep or not name.strip() or len(categories) < 2 or not all(categories):
            raise DataError(
                f"Bad --order {item!r}: write 'column=first|second|...' with at least two "
                "categories, lowest first."
            )
        orders[name.strip()] = categories
    return orders


SEED = typer.Option("--seed", help="Seed for ties and random records (reproducible output).")
RANDOM = typer.Option("--random", help="Number of random records for the verification.")
JSON = typer.Option("--json", help="Write the full result as JSON here.")
COLUMNS = typer.Option("--columns", help="Columns to use, comma-separated (default: all).")
ORDER = typer.Option("--order", help="Category order of an ordinal column, lowest first: "
                     "'grade=low|mid|high' (repeat for several columns).")


@app.command()
def assess(
    original: Annotated[Path, typer.Argument(help="The original data file.")],
    released: Annotated[Path, typer.Argument(help="The released (protected) data file.")],
    columns: Annotated[Optional[str], COLUMNS] = None,
    n_random: Annotated[int, RANDOM] = N_RANDOM,
    null: Annotated[str, typer.Option("--null", help="Null model: copula (default) or independent.")] = "copula",
    order: Annotated[Optional[list[str]], ORDER] = None,
    seed: Annotated[Optional[int], SEED] = None,
    json_out: Annotated[Optional[Path], JSON] = None,
    html_out: Annotated[Optional[Path], typer.Option("--html", help="Also write the self-contained HTML report (risk, utility, transparency) here.")] = None,
    manifest: Annotated[Optional[Path], typer.Option("--manifest", help="The release's <stem>.manifest.json: its schema and methods go into the HTML report.")] = None,
    weight: Annotated[Optional[str], typer.Option("--weight", help="Sampling-weight column of the release, for the HTML report's re-identification risk section.")] = None,
    household: Annotated[Optional[str], typer.Option("--household", help="Household-id column of the release, for the report's household risk.")] = None,
    records: Annotated[Optional[int], typer.Option("--records", help="Assess a simple random sample of this many record pairs (large files; the summary states it).")] = None,
) -> None:
    """Verify a release as a maximum-knowledge intruder would (permutation paradigm)."""
    from sdckit.io import read
    from sdckit.permutation.assess import assess as assess_release

    x, y = read(original), read(released)
    recorded = _read_manifest(manifest) if manifest is not None else None
    with progress_bar("assessing", 1) as advance:
        result = assess_release(x, y, parse_columns(columns), null=null, n_random=n_random,
                                schema=parse_orders(order), seed=seed, records=records,
                                progress=advance)
    print_result(result, f"Permutation assessment of {released.name}", json_out, show_header=False)
    if html_out is not None:
        from sdckit.report.assess import assess_report, schema_from_manifest

        schema = schema_from_manifest(recorded, y) if recorded is not None else None
        with progress_bar("writing the report", 5) as advance:
            assess_report(x, y, html_out, schema=schema, manifest=recorded, columns=parse_columns(columns),
                          null=null, n_random=n_random, seed=seed, progress=advance,
                          inputs=(original, released), weight=weight, household=household)
        console.print(f"report: {html_out}  (open it in a browser)")


def _read_manifest(path: Path) -> dict:
    import json

    if not path.is_file():
        raise DataError(f"Manifest file not found: {str(path)!r}; give the <stem>.manifest.json written with the release.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"Manifest {str(path)!r} is not valid JSON: {exc}.") from None
    if not isinstance(data, dict):
        raise DataError(f"Manifest {str(path)!r} must hold a JSON object.")
    return data


@app.command("verify-record")
def verify_record(
    released: Annotated[Path, typer.Argument(help="The released data file.")],
    record: Annotated[str, typer.Option("--record", help="Your record: 'col=value,col=value'.")],
    permutation: Annotated[bool, typer.Option("--permutation", help="The release is a pure permutation: also test whether your match is plausibly random.")] = False,
    n_random: Annotated[int, RANDOM] = N_RANDOM,
    order: Annotated[Optional[list[str]], ORDER] = None,
    seed: Annotated[Optional[int], SEED] = None,
    json_out: Annotated[Optional[Path], JSON] = None,
) -> None:
    """Check, as a data subject, how well the release hides YOUR record."""
    from sdckit.io import read
    from sdckit.permutation.subject import parse_record, verify_subject

    result = verify_subject(parse_record(record), read(released), permutation=permutation,
                            n_random=n_random, schema=parse_orders(order), seed=seed)
    print_result(result, "Your record against the release", json_out, show_header=False)
