"""One name for randomness at the public API: ``seed`` (issue 29 item 6; DESIGN.md section 2).

Every public function and method that draws takes ``seed`` (None, an int, a hex string, a
SeedSequence or a Generator); below the entry only a Generator travels. The old keywords
``random_state=`` (and ``rng=`` on ``Method.apply``/``run`` and the DP mechanisms) still work for
one release with a FutureWarning, through the one decorator ``core.random.renamed_seed``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

import sdckit
from sdckit.core.errors import ParameterError

#: A parameter named ``rng`` may only take a Generator (the layer below the public entry).
GENERATOR_ANNOTATIONS = {"np.random.Generator", "numpy.random.Generator", np.random.Generator}

#: Top-level modules of sdckit that are part of the public API besides the packages.
TOP_MODULES = ("sdckit", "sdckit.pipeline", "sdckit.methods", "sdckit.tune", "sdckit.recipe")


def public_modules() -> list[str]:
    packages = [f"sdckit.{m.name}" for m in pkgutil.iter_modules(sdckit.__path__) if m.ispkg]
    return [*TOP_MODULES, *packages]


def callables_of(obj: Any, name: str) -> Iterator[tuple[str, Callable[..., Any]]]:
    """``obj`` if a function, or the public methods (and constructor) of a class."""
    if inspect.isclass(obj):
        yield f"{name}.__init__", obj.__init__
        for attr, member in inspect.getmembers(obj):
            if not attr.startswith("_") and callable(member) and not inspect.isclass(member):
                yield f"{name}.{attr}", member
    elif callable(obj):
        yield name, obj


def offending(function: Callable[..., Any]) -> list[str]:
    """Parameters named ``random_state``, or ``rng`` accepting more than a Generator."""
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature
        return []
    bad = []
    for p in params:
        if p.name == "random_state" or (p.name == "rng" and p.annotation not in GENERATOR_ANNOTATIONS):
            bad.append(p.name)
    return bad


def test_public_api_names_randomness_seed() -> None:
    found, checked = [], 0
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            for qualified, function in callables_of(obj, f"{module_name}.{name}"):
                checked += 1
                found += [f"{qualified}({p}=)" for p in offending(function)]
    assert checked > 200, checked  # the scan reached the API (lazy imports resolved)
    assert found == [], f"public parameters still named random_state/rng: {found}"


def test_scan_catches_an_old_name() -> None:
    """The oracle: the scan flags a public random_state and a seed-taking rng, not a Generator rng."""
    def old(x: int, random_state: Any = None) -> None: ...
    def wide(x: int, rng: Any = None) -> None: ...
    def below(x: int, rng: np.random.Generator) -> None: ...
    assert offending(old) == ["random_state"]
    assert offending(wide) == ["rng"]
    assert offending(below) == []


# --------------------------------------------------------------------- the deprecated aliases
def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(0)
    original = pd.DataFrame({"a": rng.normal(size=30), "b": rng.normal(size=30)})
    released = original + rng.normal(scale=0.5, size=original.shape)
    return original, released


def _permutation(name: str, **kw: Any) -> Callable[[dict[str, Any]], Any]:
    def call(seed_kw: dict[str, Any]) -> Any:
        import sdckit.permutation as permutation
        o, r = frames()
        return getattr(permutation, name)(o, r, **kw, **seed_kw)
    return call


def _small_table() -> Any:
    """A 2x2 table with margins 'Total' (interior 13, 7 / 22, 4)."""
    from sdckit.tabular import Table
    interior = {("a", "x"): 13.0, ("a", "y"): 7.0, ("b", "x"): 22.0, ("b", "y"): 4.0}
    rows = {r: sum(v for (i, _), v in interior.items() if i == r) for r in "ab"}
    cols = {c: sum(v for (_, j), v in interior.items() if j == c) for c in "xy"}
    cells = {**interior, **{(r, "Total"): v for r, v in rows.items()},
             **{("Total", c): v for c, v in cols.items()}, ("Total", "Total"): sum(interior.values())}
    recs = [{"r": r, "c": c, "value": v, "freq": 5} for (r, c), v in cells.items()]
    return Table.from_cells(pd.DataFrame(recs), ["r", "c"])


FAST = dict(n_random=200, n_null=5)
CALLS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "core.as_generator": lambda s: __import__("sdckit.core.random", fromlist=["x"]).as_generator(
        secret=False, **s).integers(1000),
    "core.ranks": lambda s: __import__("sdckit.core.ranks", fromlist=["x"]).ranks(np.zeros(5), **s),
    "core.sort_order": lambda s: __import__("sdckit.core.ranks", fromlist=["x"]).sort_order(np.zeros(5), **s),
    "core.rank_matrix": lambda s: __import__("sdckit.core.ranks", fromlist=["x"]).rank_matrix(np.zeros((5, 2)), **s),
    "permutation.verify_linkage": _permutation("verify_linkage", **FAST),
    "permutation.assess": _permutation("assess", **FAST),
    "permutation.assign_linkage": _permutation("assign_linkage"),
    "permutation.rank_displacement": _permutation("rank_displacement"),
    "permutation.permutation_distances": _permutation("permutation_distances"),
    "permutation.intruder_linkage": _permutation("intruder_linkage"),
    "permutation.permuted_privacy": _permutation("permuted_privacy", d=3, v=[0.5, 0.5]),
    "permutation.reverse_map": _permutation("reverse_map"),
    "permutation.decompose": _permutation("decompose"),
    "permutation.rank_correlation": _permutation("rank_correlation"),
    "permutation.sample_pairs": _permutation("sample_pairs", records=10),
    "permutation.rank_space": lambda s: __import__("sdckit.permutation.columns", fromlist=["x"]).rank_space(
        *frames(), **s),
    "permutation.verify_subject": lambda s: __import__("sdckit.permutation", fromlist=["x"]).verify_subject(
        frames()[0].iloc[0], frames()[1], n_random=200, **s),
    "risk.distance_linkage": lambda s: __import__("sdckit.risk", fromlist=["x"]).distance_linkage(*frames(), **s),
    "risk.permutation_risk": lambda s: __import__("sdckit.risk", fromlist=["x"]).permutation_risk(
        *frames(), **FAST, **s),
    "utility.pmse": lambda s: __import__("sdckit.utility", fromlist=["x"]).pmse(*frames(), **s),
    "utility.utility_summary": lambda s: __import__("sdckit.utility", fromlist=["x"]).utility_summary(
        *frames(), **s),
    "compare.evaluate_release": lambda s: __import__("sdckit.compare", fromlist=["x"]).evaluate_release(
        *frames(), **FAST, **s),
    "compare.compare": lambda s: __import__("sdckit.compare", fromlist=["x"]).compare(
        frames()[0], [__import__("sdckit.compare", fromlist=["x"]).Candidate(
            "noise", (__import__("sdckit.masking", fromlist=["x"]).AdditiveNoise(alpha=0.5),))],
        **FAST, **s),
    "compare.example_methods": lambda s: __import__("sdckit.compare", fromlist=["x"]).example_methods(
        n=30, seeds=1, **FAST, **s),
    "tune.tune": lambda s: __import__("sdckit.tune", fromlist=["x"]).tune(
        frames()[0], __import__("sdckit.masking", fromlist=["x"]).AdditiveNoise(alpha=0.5), param="alpha",
        low=0.1, high=1.0, steps=1, **FAST, **s),
    "report.build_report": lambda s: __import__("sdckit.report", fromlist=["x"]).build_report(
        *frames(), **FAST, **s),
    "tabular.round_table": lambda s: __import__("sdckit.tabular", fromlist=["x"]).round_table(
        _small_table(), 5, method="random", **s),
}


def method_call(name: str) -> Callable[[dict[str, Any]], Any]:
    def call(s: dict[str, Any]) -> Any:
        from sdckit.masking import AdditiveNoise
        return getattr(AdditiveNoise(alpha=0.5), name)(frames()[0], **s)
    return call


def mechanism_call(cls: str, name: str) -> Callable[[dict[str, Any]], Any]:
    def call(s: dict[str, Any]) -> Any:
        import sdckit.dp as dp
        kw = {"delta": 1e-6} if cls == "Gaussian" else {}
        mech = getattr(dp, cls)(epsilon=1.0, sensitivity=1, **kw)
        return getattr(mech, name)([1, 2, 3], **s) if name == "randomise" else mech.noise(3, **s)
    return call


RNG_CALLS = {f"Method.{n}": method_call(n) for n in ("apply", "run")} | {
    f"{cls}.{n}": mechanism_call(cls, n)
    for cls in ("Laplace", "Geometric", "Gaussian") for n in ("noise", "randomise")
}
OLD = [(name, "random_state") for name in CALLS] + [(name, "rng") for name in RNG_CALLS]


@pytest.mark.parametrize(("entry", "old"), OLD, ids=[e for e, _ in OLD])
def test_old_name_still_works_with_a_future_warning(entry: str, old: str) -> None:
    call = (CALLS | RNG_CALLS)[entry]
    with pytest.warns(FutureWarning, match=rf"{old}= is now seed=; the old name goes in the next release"):
        call({old: 7})
    with pytest.raises(ParameterError, match="Pass seed= only"):
        call({old: 7, "seed": 7})


def test_old_and_new_names_give_the_same_draws() -> None:
    """The alias maps onto seed: the same value gives the same output (no figure changes)."""
    from sdckit.masking import AdditiveNoise
    x = frames()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old = AdditiveNoise(alpha=0.5).apply(x, rng=2**127 + 3)
    pd.testing.assert_frame_equal(old, AdditiveNoise(alpha=0.5).apply(x, seed=2**127 + 3))
    pd.testing.assert_frame_equal(AdditiveNoise(alpha=0.5).apply(x, None, 2**127 + 3), old)


def test_every_renamed_entry_is_wrapped_once() -> None:
    """Each entry point goes through the one decorator, which keeps ``seed`` in the signature."""
    from sdckit.core.method import Method
    from sdckit.core.random import as_generator
    from sdckit.permutation import verify_linkage
    for function, old in ((as_generator, "random_state"), (verify_linkage, "random_state"),
                          (Method.apply, "rng"), (Method.run, "rng")):
        assert function.renamed_seed == old
        assert "seed" in inspect.signature(function).parameters
