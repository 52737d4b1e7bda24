"""The Release screen's calls: where the release goes (checked before anything is written), the
session saved as a recipe with its seed file beside it, and that recipe run as `sdckit protect`
runs it; a recipe opened to continue a session (issue 31, screen 6)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdckit.app.jobs import Job
from sdckit.app.protect import add_step, recipe_params
from sdckit.app.session import Loaded, Session, check_roles, open_path
from sdckit.core.errors import DataError, ParameterError
from sdckit.core.method import Method
from sdckit.core.tomlfile import toml_value
from sdckit.io import read
from sdckit.io.files import WRITABLE
from sdckit.recipe import load_recipe, run_recipe


def recipe_text(input_path: Path, roles: Mapping[str, str], methods: list[Method], seed_file: str,
                fmt: str, name: str, options: Mapping[str, Any] | None = None) -> str:
    """The session as a recipe TOML (:mod:`sdckit.recipe`): input (with the reader's
    ``options``: a tau-ARGUS file's ``rda``), schema roles, the steps in order, the output
    beside the recipe; the seed is in ``seed_file``, never in the recipe."""
    lines = ["# Saved by the sdckit workbench: `sdckit protect` on this file reproduces its release.",
             f"seed_file = {json.dumps(seed_file)}  # secret: keep it, never publish it", "",
             "[input]", f"path = {json.dumps(str(input_path))}"]
    lines += [f"{k} = {json.dumps(str(v))}" for k, v in (options or {}).items()]
    lines += ["", "[schema]"]
    for role in ("identifier", "quasi", "confidential", "non_confidential"):
        names = [n for n, r in roles.items() if r == role]
        if names:
            lines.append(f"{role} = {toml_value(names)}")
    for m in methods:
        lines += ["", "[[method]]", f"name = {json.dumps(m.name)}"]
        lines += [f"{k} = {toml_value(v)}" for k, v in recipe_params(m).items()]
    lines += ["", "[output]", 'dir = "."', f"format = {json.dumps(fmt)}", f"name = {json.dumps(name)}", ""]
    return "\n".join(lines)


def write_secret(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (mode 0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


@dataclass(frozen=True)
class ReleasePlan:
    """Where a release goes, checked: the folder (absolute), the data format, the input file."""

    folder: Path
    format: str
    source: Path
    options: Mapping[str, Any] = field(default_factory=dict)  # the reader's (a tau-ARGUS file's rda)


def release_session(session: Session, folder: str, fmt: str, input_path: str | None = None,
                    job: Job | None = None) -> dict[str, str]:
    """:func:`write_release` of :func:`release_plan`: the whole release in one call."""
    return write_release(session, release_plan(session, folder, fmt, input_path), job)


def release_plan(session: Session, folder: str, fmt: str, input_path: str | None = None) -> ReleasePlan:
    """Check where the session's release would go, before anything is written (one-line
    refusals): ``folder`` a full path, not a file, not the input's folder; ``fmt`` writable;
    the input the path the data set was opened from, or ``input_path``, which must hold the
    same data (an uploaded data set has no path on the machine)."""
    loaded = session.data
    if loaded is None or not session.confirmed:
        raise ParameterError("Open a data set and confirm its roles first.")
    if not session.steps:
        raise ParameterError("Apply at least one step on the Protect screen before releasing.")
    if fmt not in WRITABLE:
        raise ParameterError(f"Output format {fmt!r} is not writable; choose one of {', '.join(WRITABLE)}.")
    text = (folder or "").strip()
    if not text:
        raise ParameterError("Give the folder to write the release into (a full path on this machine).")
    out = Path(text).expanduser()
    if not out.is_absolute():
        raise ParameterError(f"The folder {text!r} is not a full path; give one such as /home/me/release.")
    if out.exists() and not out.is_dir():
        raise ParameterError(f"{text!r} is a file, not a folder; give a folder for the release.")
    given = (input_path or "").strip()
    source = Path(given).expanduser().resolve() if given else loaded.source
    if source is None:
        raise ParameterError("The data set was uploaded: give the path of its file on this machine, "
                             "which the recipe names as its input.")
    if not source.is_file():
        raise ParameterError(f"No file at {str(source)!r}; give the path of the data set's file.")
    if source != loaded.source and not read(source).equals(loaded.frame):
        raise DataError(f"The file {str(source)!r} does not hold the data set open in the workbench; "
                        "give the path of the file you opened.")
    out = out.resolve()
    if source.parent == out:
        raise ParameterError(f"The folder {str(out)!r} holds the input file; choose another folder, "
                             "so that nothing overwrites the original.")
    return ReleasePlan(out, fmt, source, loaded.options if source == loaded.source else {})


def write_release(session: Session, plan: ReleasePlan, job: Job | None = None) -> dict[str, str]:
    """Write the session's release as ``plan`` says: the session saved as a recipe
    (``<stem>.recipe.toml``) with its seed in ``<stem>.seed`` beside it (mode 0600), then the
    recipe run by :func:`sdckit.recipe.run_recipe` — the call ``sdckit protect`` makes — which
    writes the data, the manifest and the HTML report. Returns the paths by kind. ``job``
    follows the progress and may cancel the run: nothing is then left in the folder."""
    out, fmt, source = plan.folder, plan.format, plan.source
    out.mkdir(parents=True, exist_ok=True)
    stem = source.name.split(".")[0] + "_protected"
    methods = [s.method for s in session.steps]
    recipe_path, seed_path = out / f"{stem}.recipe.toml", out / f"{stem}.seed"
    text = recipe_text(source, session.roles, methods, seed_path.name, fmt, stem, plan.options)  # refuses before writing
    total = len(methods) + 4  # the steps, then the report's stages (as `sdckit protect` counts them)

    def report(done: int, stage: str) -> None:
        if job is not None:
            job.update(done, total, stage)

    try:
        write_secret(seed_path, f"{session.seed}\n")
        recipe_path.write_text(text, encoding="utf-8")
        recipe = load_recipe(recipe_path)
        if list(recipe.methods) != methods:  # the recipe must say exactly what the session did
            raise ParameterError("The steps could not be saved as a recipe exactly; write the recipe by hand.")
        result = run_recipe(recipe, progress=lambda done, _t, m: report(done, f"applying {m.name}"),
                            report_progress=lambda done, _t, *rest: report(len(methods) + done, "the report"))
    except BaseException:
        recipe_path.unlink(missing_ok=True)
        seed_path.unlink(missing_ok=True)
        raise
    session.released = {"data": str(result.data_path), "manifest": str(result.manifest_path),
                        "report": "" if result.report_path is None else str(result.report_path),
                        "recipe": str(recipe_path), "seed": str(seed_path),
                        "verdict": "" if result.verdict is None else result.verdict.text}
    return session.released


@dataclass(frozen=True)
class RecipePlan:
    """A recipe read and checked to continue a session (:func:`recipe_plan`): its input opened,
    its schema's roles checked on it, its seed and its methods."""

    loaded: Loaded
    roles: dict[str, str]
    seed: int | str | None
    methods: tuple[Method, ...]


def recipe_plan(path: str) -> RecipePlan:
    """Read the recipe at ``path`` to continue a session: its input opened (by
    :func:`~sdckit.app.session.open_path`) and its schema's roles checked on it (weight,
    household and strata roles are not in a recipe: mark them again); one-line refusals. Nothing
    of a session changes: :func:`continue_recipe` applies the plan."""
    text = (path or "").strip()
    if not text:
        raise ParameterError("Give the path of a recipe (a .toml file) on this machine.")
    recipe = load_recipe(Path(text).expanduser())
    loaded = open_path(recipe.input_path, rda=recipe.input_options.get("rda"))
    roles = {str(n): r for r in ("identifier", "quasi", "confidential", "non_confidential")
             for n in recipe.schema.get(r, ())}
    return RecipePlan(loaded, check_roles(loaded.frame, roles), recipe.seed, tuple(recipe.methods))


def continue_recipe(session: Session, plan: RecipePlan, job: Job | None = None) -> None:
    """Continue ``session`` from ``plan``: its data set opened, its roles confirmed, its seed
    taken and its methods applied again as the steps (:func:`~sdckit.app.protect.add_step`,
    each measured as on the Protect screen; the long part, run as a job). The steps are applied
    on a scratch session first: a cancel or a refusal leaves ``session`` as it was."""
    scratch = Session(id="", csrf="", seed=session.seed if plan.seed is None else plan.seed)
    scratch.open(plan.loaded)
    scratch.confirm(plan.roles)
    for method in plan.methods:
        add_step(scratch, method, job)
    session.open(plan.loaded)
    session.confirm(plan.roles)
    session.seed, session.steps = scratch.seed, scratch.steps


def open_recipe(session: Session, path: str) -> None:
    """Continue a session from a recipe in one call: :func:`continue_recipe` of
    :func:`recipe_plan`."""
    continue_recipe(session, recipe_plan(path))
