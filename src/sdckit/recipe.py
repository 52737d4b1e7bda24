"""Recipes: a TOML file that says what to protect, how, and where the release goes.

The format is a contract the CLI and later features extend::

    seed = "9f3c...32 hex digits..."  # optional, secret: `sdckit seed` prints one; none = OS entropy
    seed_file = "release.seed"        # or: the seed kept in a file beside the recipe (not both)
    allow_weak_seed = false           # optional: accept a seed under 128 bits (tests, teaching)
    fail_unsafe = false               # optional: `sdckit protect` exits 1 unless the report shows the release safe
    fingerprint_key_file = "fp.key"   # optional, secret: keyed fingerprints of the input (none else)
    keep_identifiers = false          # optional
    engine = "memory"                 # optional: "memory", "duckdb" (streamed, out of core) or "dask"
    memory = "2GB"                    # optional: stream row-wise recipes whose input would not fit
    scheduler = "tcp://host:8786"     # optional, engine "dask": a cluster (default a LocalCluster)
    [budget]                          # optional: with differentially private methods
    epsilon = "3"                     # the data set's total budget (default: this recipe's spend)
    delta = 0                         # optional
    ledger = "office-ledger.json"     # optional: the private ledger, one budget per data set
                                      # (default: the per-user one, ~/.local/share/sdckit/ledger.json)
    [input]
    path = "census.csv"               # relative to the recipe file
    format = "csv"                    # optional; from the extension otherwise
    # rda = "job.rda"                 # tau-ARGUS .asc input: its metadata (default: the .rda beside)
    [schema]                          # roles; kinds are inferred unless [schema.kinds] overrides
    identifier = ["ID"]
    quasi = ["AGE", "ZIP"]
    confidential = ["INCOME"]
    [[method]]                        # applied in order
    name = "additive_noise"
    alpha = 0.1
    columns = ["INCOME"]              # optional
    [output]
    dir = "out"
    format = "parquet"                # optional; the input's format otherwise
    [report]                          # optional: the HTML report written beside the release
    enabled = true                    # default true: write <stem>.report.html
    n_random = 20000                  # random records per batch of the verification
    n_null = 50                       # null samples for its baseline and p-value
    null = "copula"                   # or "independent" (seed 000's rule)
    alpha = 0.05                      # level of "plausibly deniable" / "plausibly random"
    interval_p = 10.0                 # interval-disclosure width, percent

The release ``<stem>.<ext>`` (stem: ``[output] name``, else ``<input stem>_protected``) is written
with ``<stem>.manifest.json`` and ``<stem>.report.html`` beside it. Everything is checked — unknown keys, unknown methods, bad parameters — before any data is
read, and nothing is written unless the whole run succeeds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sdckit.core.tomlfile import check_keys, file_error, read_toml, resolve_path_params  # noqa: F401  (read_toml re-exported: compare.recipe)
from sdckit.core.errors import ParameterError, SdcError
from sdckit.core.method import Method
from sdckit.core.provenance import manifest_json, parse_fingerprint_key
from sdckit.core.random import check_recipe_seed, parse_seed
from sdckit.dp.ledger import data_set_key, file_key, ledger_accountant
from sdckit.engine import check_engine, parse_memory, protect_file, should_stream
from sdckit.io import detect_format, read, write, write_text_atomic
from sdckit.io.files import WRITABLE
from sdckit.methods import get_method, method_class
from sdckit.pipeline import ProgressCallback, Release, protect
from sdckit.recipe_budget import holds_budget, ledger_path, parse_budget
from sdckit.report.settings import RULES as REPORT_RULES
from sdckit.report.settings import check_settings

if TYPE_CHECKING:
    from sdckit.report.verdict import Verdict

_TOP_KEYS = {"seed", "seed_file", "allow_weak_seed", "fail_unsafe", "fingerprint_key_file", "keep_identifiers", "input",
             "schema", "method", "output", "report", "budget", "engine", "memory", "scheduler"}
#: The privacy ledger an earlier sdckit kept beside the recipe (now per user: issue 27).
_INPUT_KEYS = {"path", "format", "sep", "encoding", "table", "query", "rda"}
_OUTPUT_KEYS = {"dir", "format", "name", "table"}
_REPORT_KEYS = {"enabled", *REPORT_RULES}
#: The manifest and the report are named after the release's stem, so that two recipes writing
#: into one folder keep theirs apart: ``<stem>.manifest.json``, ``<stem>.report.html``.
MANIFEST_SUFFIX = ".manifest.json"
REPORT_SUFFIX = ".report.html"


@dataclass(frozen=True)
class Recipe:
    """A parsed, checked recipe. Paths are absolute."""

    source: Path
    input_path: Path
    input_options: dict[str, Any]
    schema: dict[str, Any]
    methods: tuple[Method, ...]
    output_dir: Path
    output_format: str | None = None
    output_name: str | None = None
    output_table: str = "data"
    seed: int | str | None = field(default=None, repr=False)  # secret: never shown
    fingerprint_key: str | None = field(default=None, repr=False)  # secret: never shown
    keep_identifiers: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RecipeResult:
    """What running a recipe produced. ``verdict`` is the report's verdict on the release (None
    when no report was computed: ``--no-report``, or a streamed run)."""

    release: Release
    data_path: Path
    manifest_path: Path
    report_path: Path | None = None
    verdict: Verdict | None = None


def load_recipe(path: str | Path, *, allow_weak_seed: bool = False) -> Recipe:
    """Read and check a recipe file (see the module docstring for its format).

    ``allow_weak_seed`` (the CLI's ``--allow-weak-seed``) accepts a seed under 128 bits as the
    recipe's ``allow_weak_seed = true`` does."""
    data, source = read_toml(path)
    if allow_weak_seed:
        data["allow_weak_seed"] = True
    return parse_recipe(data, source)


def _read_seed_file(source: Path, value: Any) -> str:
    """The seed kept in a file (its first line, hex), so that the recipe can be published."""
    path = source.resolve().parent / str(value)
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        raise file_error(source, f"cannot read the seed file '{value}'.") from None
    if not text:
        raise file_error(source, f"the seed file '{value}' is empty (`sdckit seed > {value}` makes one).")
    return text.splitlines()[0].strip()


def _read_fingerprint_key(source: Path, value: Any) -> str | None:
    """The fingerprint key kept in a file beside the recipe (hex), or None."""
    if value is None:
        return None
    path = source.resolve().parent / str(value)
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        raise file_error(source, f"cannot read the fingerprint key file '{value}'.") from None
    try:
        parse_fingerprint_key(text)
    except SdcError as exc:
        raise file_error(source, f"the fingerprint key file '{value}': {exc}") from None
    return text


def parse_data_source(data: Mapping[str, Any], source: Path) -> tuple[int | str | None, Path, dict[str, Any], dict[str, Any]]:
    """The parts every recipe kind shares: ``seed`` (with ``allow_weak_seed``), ``[input]`` (path
    and options) and ``[schema]``, checked; the input path is taken from ``source``'s folder."""
    seed = data.get("seed")
    if "seed_file" in data:
        if seed is not None:
            raise file_error(source, "give 'seed' or 'seed_file', not both.")
        seed = _read_seed_file(source, data["seed_file"])
    try:
        check_recipe_seed(seed, data.get("allow_weak_seed", False))
    except SdcError as exc:
        raise file_error(source, str(exc)) from None
    inp = data.get("input")
    if not isinstance(inp, Mapping) or "path" not in inp:
        raise file_error(source, "the recipe needs an [input] table with a 'path'.")
    check_keys(inp, _INPUT_KEYS, "[input]", source)
    input_path = (source.resolve().parent / str(inp["path"])).resolve()
    input_options = {k: v for k, v in inp.items() if k != "path"}
    if "rda" in input_options:  # tau-ARGUS microdata's metadata, relative to the recipe as the path
        input_options["rda"] = (source.resolve().parent / str(input_options["rda"])).resolve()
    detect_format(input_path, input_options.get("format"))
    schema = data.get("schema", {})
    if not isinstance(schema, Mapping):
        raise file_error(source, "[schema] must be a table.")
    return seed, input_path, input_options, dict(schema)


def parse_recipe(data: Mapping[str, Any], source: Path) -> Recipe:
    """Check a recipe already parsed from TOML; relative paths are taken from ``source``'s folder."""
    base = source.resolve().parent
    check_keys(data, _TOP_KEYS, "the recipe", source)
    seed, input_path, input_options, schema = parse_data_source(data, source)
    keep = data.get("keep_identifiers", False)
    if not isinstance(keep, bool):
        raise file_error(source, f"'keep_identifiers' must be true or false; got {keep!r}.")
    fail_unsafe = data.get("fail_unsafe", False)
    if not isinstance(fail_unsafe, bool):
        raise file_error(source, f"'fail_unsafe' must be true or false; got {fail_unsafe!r}.")

    entries = data.get("method", [])
    if isinstance(entries, Mapping):
        entries = [entries]
    if not entries:
        raise file_error(source, "the recipe applies no method; add at least one [[method]] table.")
    methods = []
    for i, entry in enumerate(entries, start=1):
        if not isinstance(entry, Mapping) or "name" not in entry:
            raise file_error(source, f"[[method]] number {i} needs a 'name'.")
        params = {k: v for k, v in entry.items() if k != "name"}
        try:
            params = resolve_paths(str(entry["name"]), params, base)
            methods.append(get_method(str(entry["name"]), params))
        except SdcError as exc:
            raise file_error(source, f"[[method]] number {i}: {exc}") from None

    out = data.get("output", {})
    if not isinstance(out, Mapping):
        raise file_error(source, "[output] must be a table.")
    check_keys(out, _OUTPUT_KEYS, "[output]", source)
    out_format = out.get("format")
    if out_format is not None:
        out_format = detect_format("x", out_format)
        if out_format not in WRITABLE:
            raise file_error(source, f"sdckit cannot write {out_format}; use one of {', '.join(WRITABLE)}.")
    budget = parse_budget(source, data.get("budget"), methods)
    report = data.get("report", {})
    if not isinstance(report, Mapping):
        raise file_error(source, "[report] must be a table.")
    check_keys(report, _REPORT_KEYS, "[report]", source)
    if not isinstance(report.get("enabled", True), bool):
        raise file_error(source, f"[report] 'enabled' must be true or false; got {report['enabled']!r}.")
    try:
        check_settings(report)
    except SdcError as exc:
        raise file_error(source, f"[report]: {exc}") from None
    try:
        engine = _parse_engine(data)
    except SdcError as exc:
        raise file_error(source, str(exc)) from None
    return Recipe(
        source=source.resolve(),
        input_path=input_path,
        input_options=input_options,
        schema=schema,
        methods=tuple(methods),
        output_dir=(base / str(out.get("dir", "sdckit-out"))).resolve(),
        output_format=out_format,
        output_name=out.get("name"),
        output_table=str(out.get("table", "data")),
        seed=seed,
        fingerprint_key=_read_fingerprint_key(source, data.get("fingerprint_key_file")),
        keep_identifiers=keep,
        extra={"report": dict(report), "budget": budget, "engine": engine, "fail_unsafe": fail_unsafe},
    )


def _parse_engine(data: Mapping[str, Any]) -> dict[str, Any]:
    """The recipe's ``engine``, ``memory`` (bytes) and ``scheduler``, checked."""
    engine = data.get("engine")
    if engine is not None:
        check_engine(engine)
    memory = data.get("memory")
    scheduler = data.get("scheduler")
    if scheduler is not None and not isinstance(scheduler, str):
        raise ParameterError(f"'scheduler' must be an address such as 'tcp://host:8786'; got {scheduler!r}.")
    return {"engine": engine, "memory": None if memory is None else parse_memory(memory), "scheduler": scheduler}


def resolve_paths(name: str, params: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """``params`` with the method's path parameters made absolute from the recipe folder ``base``.

    A path parameter holds a path string or a mapping whose string values are paths (e.g.
    ``hierarchies = { age = "age.csv" }``); other values (built objects) are left as they are.
    """
    cls = method_class(name)
    return dict(params) if cls is None else resolve_path_params(params, cls.path_params, base)


def run_recipe(
    recipe: Recipe,
    *,
    output_dir: str | Path | None = None,
    output_format: str | None = None,
    progress: ProgressCallback | None = None,
    report: bool | None = None,
    report_progress: Callable[[int, int, str], Any] | None = None,
    engine: str | None = None,
    memory: str | int | None = None,
    scheduler: str | None = None,
    engine_progress: Callable[[int, int, str], Any] | None = None,
    ledger: str | Path | None = None,
) -> RecipeResult:
    """Read the input, protect it, and write the release, ``manifest.json`` and ``report.html``.

    ``output_dir`` and ``output_format`` override the recipe's. The release is written in the
    input's format unless one is given (SAS input is written as Parquet: SAS cannot be written).
    ``report`` overrides the recipe's ``[report] enabled`` (default: write the report); the
    report's settings come from ``[report]``; ``report_progress(done, total, label)`` follows
    its steps. The report's randomness is derived from the recipe's seed (never shown).

    ``engine``, ``memory`` and ``scheduler`` override the recipe's (DESIGN.md section 8): with
    ``"duckdb"`` or ``"dask"``, or when a budget ``memory`` is given and the input would not fit
    in it, a recipe of row-wise methods is streamed from the input file to the release (Parquet
    or CSV) with bounded memory; ``engine_progress(done, total, label)`` follows it. A streamed
    release has no HTML report (``report_path`` is None, and the manifest says why) and its
    ``release.data`` is None: the data is in the file.

    A recipe with a privacy budget charges the ledger :func:`~sdckit.recipe_budget.ledger_path` names (``ledger``
    overrides the recipe's), under the data set's key computed from its records
    (:func:`~sdckit.dp.ledger.data_set_key`).
    """
    settings_engine = recipe.extra.get("engine") or {}
    engine = check_engine(engine) if engine is not None else settings_engine.get("engine")
    memory_bytes = parse_memory(memory) if memory is not None else settings_engine.get("memory")
    scheduler = scheduler if scheduler is not None else settings_engine.get("scheduler")
    fmt_in = detect_format(recipe.input_path, recipe.input_options.get("format"))
    if engine in ("duckdb", "dask") or (engine is None and recipe.extra.get("budget") is None
                                        and should_stream(recipe.input_path, fmt_in, recipe.methods, memory_bytes)):
        return _run_streamed(recipe, engine or "duckdb", output_dir, output_format, scheduler, engine_progress)
    budget = recipe.extra.get("budget")
    book = ledger_path(recipe.extra.get("budget") or {}, recipe.source, ledger) if budget is not None else None
    frame = read(recipe.input_path, **recipe.input_options)
    with contextlib.ExitStack() as stack:
        methods = list(recipe.methods)
        if budget is not None:  # one budget per data set, across releases (issue 19 item 8, issue 27)
            accountant = stack.enter_context(ledger_accountant(
                book, data_set_key(frame), budget["epsilon"], budget["delta"],
                label=recipe.input_path.name, aliases=[file_key(recipe.input_path)]))
            methods = [dataclasses.replace(m, accountant=accountant) if holds_budget(m) else m for m in methods]
        release = protect(
            frame,
            methods,
            schema=recipe.schema,
            seed=recipe.seed,
            keep_identifiers=recipe.keep_identifiers,
            progress=progress,
            fingerprint_key=recipe.fingerprint_key,
        )
    fmt = output_format or recipe.output_format
    if fmt is None:
        fmt = detect_format(recipe.input_path, recipe.input_options.get("format"))
        if fmt not in WRITABLE:
            fmt = "parquet"
    else:
        fmt = detect_format("x", fmt)
        if fmt not in WRITABLE:
            raise ParameterError(f"sdckit cannot write {fmt}; the writable formats are {', '.join(WRITABLE)}.")
    data_path, manifest_path, report_file = _output_paths(recipe, output_dir, fmt)

    manifest = dict(release.manifest)
    manifest["input"] = {**manifest["input"], "file": recipe.input_path.name}
    if recipe.fingerprint_key is not None:  # keyed: an unkeyed hash of the input can be inverted
        manifest["input"]["file_hmac_sha256"] = hmac.new(
            parse_fingerprint_key(recipe.fingerprint_key), recipe.input_path.read_bytes(), hashlib.sha256
        ).hexdigest()
    manifest["output"] = {**manifest["output"], "file": data_path.name, "format": fmt}
    text = manifest_json(manifest)
    inputs = (recipe.input_path, recipe.source)
    settings = {k: v for k, v in recipe.extra.get("report", {}).items() if k != "enabled"}
    enabled = recipe.extra.get("report", {}).get("enabled", True) if report is None else report
    html = report_path = verdict = None
    if enabled:  # computed before anything is written: nothing is written half
        from sdckit.report.model import build_report
        from sdckit.report.render import render_report

        seed = None if recipe.seed is None else np.random.SeedSequence([parse_seed(recipe.seed), _REPORT_STREAM])
        model = build_report(frame, release.data, schema=release.schema, manifest=manifest,
                             seed=seed, progress=report_progress, **settings)
        html, verdict, report_path = render_report(model), model.verdict, report_file
    write(release.data, data_path, format=fmt, table=recipe.output_table, inputs=inputs)
    try:
        write_text_atomic(manifest_path, text, inputs)
        _write_report(report_file, html, inputs)
    except BaseException:
        data_path.unlink(missing_ok=True)
        manifest_path.unlink(missing_ok=True)
        raise
    final = Release(release.data, release.schema, release.steps, manifest)
    return RecipeResult(final, data_path, manifest_path, report_path, verdict)


def _write_report(path: Path, html: str | None, inputs: tuple[Path, ...]) -> None:
    """Write the release's report, or, for a release without one, remove the report a previous
    run left under the same name: it describes another release."""
    if html is not None:
        write_text_atomic(path, html, inputs)
    else:
        path.unlink(missing_ok=True)


def _output_paths(recipe: Recipe, output_dir: str | Path | None, fmt: str) -> tuple[Path, Path, Path]:
    """The release's data, manifest and report paths."""
    out_dir = Path(output_dir).resolve() if output_dir is not None else recipe.output_dir
    stem = recipe.output_name or f"{recipe.input_path.name.split('.')[0]}_protected"
    return (out_dir / f"{stem}.{_EXTENSION[fmt]}", out_dir / f"{stem}{MANIFEST_SUFFIX}",
            out_dir / f"{stem}{REPORT_SUFFIX}")


def _file_hmac(key: str, path: Path) -> str:
    """HMAC-SHA256 of a file's bytes, read a megabyte at a time."""
    digest = hmac.new(parse_fingerprint_key(key), digestmod=hashlib.sha256)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _run_streamed(recipe: Recipe, engine: str, output_dir: str | Path | None, output_format: str | None,
                  scheduler: str | None, progress: Callable[[int, int, str], Any] | None) -> RecipeResult:
    """Stream a recipe of row-wise methods from its input file to the release (no report)."""
    fmt = output_format or recipe.output_format or detect_format(
        recipe.input_path, recipe.input_options.get("format"))
    fmt = detect_format("x", fmt)
    if fmt not in ("csv", "tsv", "parquet"):
        fmt = "parquet"  # the streamed engines write Parquet or CSV
    data_path, manifest_path, report_path = _output_paths(recipe, output_dir, fmt)
    unknown = sorted(set(recipe.input_options) - {"format", "sep", "encoding"})
    if unknown:
        raise ParameterError(f"[input] option(s) {', '.join(map(repr, unknown))} do not apply to the "
                             f"{engine!r} engine's stream; remove them or use engine = \"memory\".")
    streamed = protect_file(
        recipe.input_path, data_path, recipe.methods, engine=engine, schema=recipe.schema, seed=recipe.seed,
        keep_identifiers=recipe.keep_identifiers, input_format=recipe.input_options.get("format"),
        output_format=fmt, sep=recipe.input_options.get("sep"),
        encoding=recipe.input_options.get("encoding", "utf-8"), scheduler=scheduler, progress=progress,
        inputs=(recipe.source,), fingerprint_key=recipe.fingerprint_key,
    )
    manifest = dict(streamed.manifest)
    manifest["input"] = {**manifest["input"], "file": recipe.input_path.name}
    if recipe.fingerprint_key is not None:
        manifest["input"]["file_hmac_sha256"] = _file_hmac(recipe.fingerprint_key, recipe.input_path)
    manifest["output"] = {**manifest["output"], "file": data_path.name, "format": fmt}
    manifest["report"] = ("not written: the data was streamed by the engine; assess a sample with "
                          "`sdckit assess`")
    try:
        write_text_atomic(manifest_path, manifest_json(manifest), (recipe.input_path, recipe.source))
        _write_report(report_path, None, ())
    except BaseException:
        data_path.unlink(missing_ok=True)
        manifest_path.unlink(missing_ok=True)
        raise
    release = Release(None, streamed.schema, streamed.steps, manifest)  # type: ignore[arg-type]
    return RecipeResult(release, data_path, manifest_path, None)


#: Stream number that separates the report's random draws from the protection's.
_REPORT_STREAM = 72026


_EXTENSION = {
    "csv": "csv",
    "tsv": "tsv",
    "parquet": "parquet",
    "stata": "dta",
    "spss": "sav",
    "duckdb": "duckdb",
}
