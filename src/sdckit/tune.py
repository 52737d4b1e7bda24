"""Tuning: the least-perturbing parameter value whose release is plausibly deniable.

The protector's use of the maximum-knowledge intruder (seed 000, end of section 5.2: "the
above assessment by the intruder can also be made by the data protector before releasing the
data, in order to determine the optimum amount of permutation"; seed 001: the administrator
"needs to increase the noise until both distributions are more similar"). For a method with
one numeric parameter — noise ``alpha``, multiplicative noise ``a``, swap ``p``,
microaggregation ``k``, ``epsilon`` — search by bisection, under one fixed seed, for the value
closest to "no protection" whose release passes the verification:

* ``criterion="p_value"``: the verification's sequential test at level ``target`` (default 0.05;
  copula null by default; DESIGN.md section 3) decides that the p-value is above it (a
  "borderline" value, undecided within the replicate budget, does not pass);
* ``criterion="excess_hellinger"``: the Hellinger distance exceeds its null baseline by less
  than ``target``.

Every evaluated value is kept, so that the report can draw the risk curve. Bisection assumes
the verdict is monotone in the parameter; under a fixed seed the answer is reproducible, and
the curve shows where the assumption holds.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sdckit.permutation.verify import N_RANDOM
from sdckit.compare.core import check_settings, evaluate_release
from sdckit.core.errors import ParameterError
from sdckit.core.method import Method
from sdckit.core.params import Interval, Options, check_param
from sdckit.core.random import RandomState, as_generator, derive_seed, renamed_seed
from sdckit.core.result import Result, plain
from sdckit.pipeline import protect


@dataclass(frozen=True)
class Tunable:
    """How one parameter of a method moves protection.

    ``increasing``: larger values perturb more. ``integer``: bisection on integers.
    ``log``: bisection on a log scale (for scale parameters such as a noise variance).
    """

    param: str
    low: float
    high: float
    increasing: bool = True
    integer: bool = False
    log: bool = False


#: The tunable parameter of each method sdckit knows (by registered name), with its range.
TUNABLE: Mapping[str, Tunable] = {
    "additive_noise": Tunable("alpha", 1e-4, 4.0, log=True),
    "correlated_noise": Tunable("alpha", 1e-4, 4.0, log=True),
    "multiplicative_noise": Tunable("a", 1e-3, 0.99, log=True),
    "rank_swapping": Tunable("p", 0.5, 100.0),
    "microaggregation": Tunable("k", 2, 500, integer=True, log=True),
    "k_epsilon_anonymity": Tunable("epsilon", 0.01, 100.0, increasing=False, log=True),
}

Progress = Callable[[int, int, str], Any]
CRITERIA = ("p_value", "excess_hellinger")


@dataclass(frozen=True)
class TuneResult(Result):
    """The chosen value (``None`` if no value in the range passes) and the evaluated curve."""

    method: str
    param: str
    criterion: str
    target: float
    low: float
    high: float
    value: float | None
    curve: tuple[dict[str, float], ...]

    def curve_frame(self) -> pd.DataFrame:
        """The evaluated points, sorted by the parameter."""
        return pd.DataFrame(list(self.curve))

    def to_dict(self) -> dict[str, Any]:
        """The fields, with the search range as ``range`` and whether a value was ``found``."""
        return plain({
            "method": self.method, "param": self.param, "criterion": self.criterion,
            "target": self.target, "range": [self.low, self.high], "value": self.value,
            "found": self.value is not None, "curve": self.curve,
        })


def passes(point: Mapping[str, float], criterion: str, target: float) -> bool:
    """Whether an evaluated release meets the criterion."""
    if criterion == "p_value":
        if "verdict" in point:  # the verification's sequential test at level ``target`` (issue 27)
            return point["verdict"] == "deniable"
        return point["p_value"] >= target
    return point["hellinger"] - point["hellinger_null"] < target


def _spec(method: Method, param: str | None, low: float | None, high: float | None) -> Tunable:
    known = TUNABLE.get(method.name)
    param = param if param is not None else (known.param if known else None)
    if param is None:
        raise ParameterError(
            f"sdckit does not know which parameter of {type(method).__name__} to tune; name it with param= "
            f"(and give low= and high=). Known methods: {', '.join(sorted(TUNABLE))}."
        )
    names = [f.name for f in dataclasses.fields(method)]
    if param not in names or param == "columns":
        raise ParameterError(f"{type(method).__name__} has no tunable parameter {param!r}; its parameters are: {', '.join(n for n in names if n != 'columns')}.")
    current = getattr(method, param)
    if isinstance(current, bool) or not isinstance(current, int | float):
        raise ParameterError(f"The {param!r} parameter of {type(method).__name__} is not numeric ({current!r}); only a numeric parameter can be tuned.")
    if known is not None and known.param == param:
        spec = known
    elif low is None or high is None:
        raise ParameterError(f"Give the search range of {param!r} with low= and high= (sdckit has no default range for it).")
    else:
        spec = Tunable(param, low, high, integer=isinstance(current, int))
    spec = dataclasses.replace(spec, low=spec.low if low is None else low, high=spec.high if high is None else high)
    for name in ("low", "high"):
        check_param("tune", name, getattr(spec, name), Interval(float, None, None))
    if not spec.low < spec.high:
        raise ParameterError(f"The search range of tune must have low < high. Got [{spec.low}, {spec.high}] instead.")
    if spec.log and spec.low <= 0:
        raise ParameterError(f"The 'low' parameter of tune must be > 0 for {param!r} (searched on a log scale). Got {spec.low} instead.")
    return spec


@renamed_seed()
def tune(
    data: pd.DataFrame,
    method: Method | Sequence[Method],
    *,
    step: int | None = None,
    param: str | None = None,
    low: float | None = None,
    high: float | None = None,
    criterion: str = "p_value",
    target: float = 0.05,
    steps: int = 8,
    schema: Any = None,
    columns: Sequence[str] | None = None,
    null: str = "copula",
    n_random: int = N_RANDOM,
    n_null: int = 50,
    utility: str = "il1",
    seed: RandomState = 0,
    progress: Progress | None = None,
) -> TuneResult:
    """Find the least-perturbing value of ``param`` whose release passes the verification.

    Parameters
    ----------
    data : DataFrame
        The original data.
    method : Method or sequence of Method
        The method to tune (its other parameters are kept), or a chain of methods with
        ``step`` the 0-based position of the one to tune (the others are applied unchanged).
    param, low, high : optional
        The parameter and its search range; defaults from :data:`TUNABLE`.
    criterion : {"p_value", "excess_hellinger"}
    target : float in (0, 1)
        The p-value to reach (default 0.05) or the excess Hellinger to stay below.
    steps : int >= 1
        Bisection steps after the two end points (the curve has at most ``steps + 2`` points).
    schema, columns, null, n_random, n_null, utility
        As in :func:`sdckit.compare.compare`.
    seed : int or Generator
        One seed for every evaluation, so that values are compared on the same randomness.
    progress : callable, optional
        ``progress(done, total, label)`` after each evaluated value.
    """
    chain = [method] if isinstance(method, Method) else list(method)
    if not chain or not all(isinstance(m, Method) for m in chain):
        raise ParameterError("tune() needs a method value, or a non-empty list of them.")
    if step is None:
        if len(chain) > 1:
            raise ParameterError(f"tune() got {len(chain)} methods; say which to tune with step= (0-based).")
        step = 0
    check_param("tune", "step", step, Interval(int, 0, len(chain) - 1))
    check_param("tune", "criterion", criterion, Options(CRITERIA))
    check_param("tune", "target", target, Interval(float, 0, 1, closed="neither"))
    check_param("tune", "steps", steps, Interval(int, 1, None))
    check_settings(null=null, n_random=n_random, n_null=n_null, alpha=0.05, utility=utility, seeds=1)
    target_method = chain[step]
    spec = _spec(target_method, param, low, high)
    run_seed = derive_seed(as_generator(seed, secret=False))
    curve: dict[float, dict[str, Any]] = {}
    total = steps + 2

    def evaluate(value: float) -> bool:
        value = int(round(value)) if spec.integer else float(value)
        if value not in curve:
            candidate = dataclasses.replace(target_method, **{spec.param: value})
            methods = [*chain[:step], candidate, *chain[step + 1:]]
            release = protect(data, methods, schema=schema, seed=run_seed)
            point = evaluate_release(data, release.data, columns=columns, null=null, n_random=n_random,
                                     n_null=n_null, utility=utility, schema=release.schema,
                                     alpha=target if criterion == "p_value" else 0.05, seed=run_seed)
            curve[value] = {spec.param: value, **point, "passes": passes(point, criterion, target)}
            if progress is not None:
                progress(len(curve), total, f"{spec.param}={value:g}")
        return bool(curve[value]["passes"])

    weak, strong = (spec.low, spec.high) if spec.increasing else (spec.high, spec.low)
    chosen: float | None
    if evaluate(weak):
        chosen = weak
    elif not evaluate(strong):
        chosen = None
    else:  # invariant: weak fails, strong passes
        for _ in range(steps):
            mid = math.sqrt(weak * strong) if spec.log else (weak + strong) / 2
            if spec.integer:
                mid = int(round(mid))
                if mid in (int(round(weak)), int(round(strong))):
                    break
            if evaluate(mid):
                strong = mid
            else:
                weak = mid
        chosen = strong
    if chosen is not None:
        chosen = int(round(chosen)) if spec.integer else float(chosen)
    points = tuple(sorted(curve.values(), key=lambda p: p[spec.param]))
    return TuneResult(target_method.name, spec.param, criterion, float(target), float(spec.low), float(spec.high),
                      chosen, points)


def tune_report(result: TuneResult):
    """The tuning curve as a report model (rendered with the report's templates)."""
    from sdckit.report import figures
    from sdckit.report.model import Report, Section, svg

    frame = result.curve_frame()
    spec = next((t for t in TUNABLE.values() if t.param == result.param), None)
    figure = figures.curve(frame, x=result.param, ys=["p_value", "hellinger", "hellinger_null"], xlabel=result.param,
                           log_x=bool(spec and spec.log), hline=result.target if result.criterion == "p_value" else None,
                           vline=result.value)
    rows = [(f"{p[result.param]:g}", f"{p['hellinger']:.3f}", f"{p['hellinger_null']:.3f}", f"{p['p_value']:.3f}",
             f"{p['utility_loss']:.4f}", "yes" if p["passes"] else "no") for p in result.curve]
    verdict = (f"{result.param} = {result.value:g} is the least-perturbing value that passes"
               if result.value is not None else f"no value of {result.param} in [{result.low:g}, {result.high:g}] passes")
    section = Section("tune.html", f"Tuning {result.method}: {result.param}", "tune", {
        "figure": svg(figure), "rows": rows, "param": result.param, "verdict": verdict,
        "criterion": result.criterion, "target": result.target,
    })
    return Report(f"sdckit tuning of {result.method}", verdict, (section,), result.to_dict())
