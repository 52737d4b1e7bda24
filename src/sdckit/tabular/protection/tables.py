"""Cell suppression, controlled rounding and controlled tabular adjustment as protection values
(:mod:`sdckit.tabular.protection.base`): each runs the family's function
(:func:`~sdckit.tabular.suppress.suppress`, :func:`~sdckit.tabular.rounding.round_table`,
:func:`~sdckit.tabular.cta.adjust_table`, and their linked-tables forms) with its fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from sdckit.core.errors import DataError
from sdckit.core.params import Boolean, Interval, IsNone, Options
from sdckit.core.random import check_recipe_seed, seed_provenance
from sdckit.core.result import summary_text
from sdckit.tabular.cta import AdjustmentResult, adjust_table
from sdckit.tabular.linked import LinkedTables, adjust_linked, suppress_linked
from sdckit.tabular.protection.base import RULES, Protection, audit_verdict, register
from sdckit.tabular.rounding import RoundingResult, round_table
from sdckit.tabular.rules import MinFrequency, Rule
from sdckit.tabular.suppress import SuppressionResult, suppress

#: A time limit in seconds: none, or a positive number (``inf``: no limit).
TIME_LIMIT = [IsNone(), Interval(float, 0, None, closed="neither")]
#: A relative MIP gap at which HiGHS stops (:func:`~sdckit.tabular.rounding.check_gap`).
MIP_GAP = Interval(float, 0, 1, closed="left")


def _linked(result: Any) -> str:
    return " (linked tables)" if isinstance(result.table, LinkedTables) else ""


@register
@dataclass(frozen=True)
class CellSuppression(Protection):
    """Primary and secondary cell suppression (:func:`~sdckit.tabular.suppress.suppress`;
    linked tables in one model, :func:`~sdckit.tabular.linked.suppress_linked`).

    Parameters
    ----------
    rules : list of sensitivity rules
        The primary cells and their protection levels.
    method : {"optimal", "fast"}
        Exact MILP with cut generation (Fischetti & Salazar 2001), or the flow heuristic.
    cost : {"value", "freq", "unity"}
        What a suppressed cell costs.
    time_limit : float, optional
        CPU seconds (see :func:`~sdckit.tabular.suppress.suppress`).
    """

    rules: tuple[Rule, ...] = ()
    method: str = "optimal"
    cost: str = "value"
    time_limit: float | None = None

    name: ClassVar[str] = "suppression"
    constraints: ClassVar = {"rules": RULES, "method": Options(("optimal", "fast")),
                             "cost": Options(("value", "freq", "unity")), "time_limit": TIME_LIMIT}
    example: ClassVar = {"rules": (MinFrequency(3),), "method": "fast"}

    def apply(self, table: Any) -> SuppressionResult:
        protect = suppress_linked if isinstance(table, LinkedTables) else suppress
        return protect(table, list(self.rules), method=self.method, cost=self.cost, time_limit=self.time_limit)

    def headline(self, result: SuppressionResult) -> str:
        return f"cell suppression ({result.method}){_linked(result)}"

    def figures(self, result: SuppressionResult) -> list[tuple[str, str]]:
        rows = [("cells", summary_text(len(result.cells)))]
        for r, name in zip(getattr(result, "tables", ()), getattr(result.table, "names", ())):
            rows.append((f"  {name}", f"{len(r.cells):,} cells, {r.primaries:,} primary, {r.secondaries:,} secondary"))
        rows += [("primary cells", summary_text(result.primaries)),
                 ("secondary cells", summary_text(result.secondaries)),
                 ("suppressed value share", f"{result.suppressed_value_share:.3%}")]
        if result.method == "optimal":
            rows.append(("optimality", "proved" if result.optimal else
                         f"gap {result.gap:.2%}" if result.gap is not None else "unknown"))
        rows.append(("audit" + (" (joint)" if _linked(result) else ""), "safe" if result.audit.safe else "UNSAFE"))
        return rows

    def verdict(self, result: SuppressionResult) -> tuple[bool, str]:
        """The audit of the pattern (the joint audit for linked tables)."""
        return audit_verdict(int(result.primaries), int(result.audit.unprotected), "primary cells")


@register
@dataclass(frozen=True)
class ControlledRounding(Protection):
    """Rounding every cell to a multiple of ``base`` (:func:`~sdckit.tabular.rounding.round_table`):
    controlled (additive, the closest in L1; Causey, Cox & Ernst 1985) or random (unbiased, not
    additive). Linked tables are rounded as one table.

    Parameters
    ----------
    base : number > 0
        The rounding base.
    method : {"controlled", "random"}
    rules : list of sensitivity rules, optional
        When given, the result carries the intervals of the sensitive cells.
    mip_gap : float in [0, 1)
        HiGHS's relative gap at which the controlled rounding stops.
    time_limit : float, optional
        Seconds for the MILP.
    seed : hex string or int, optional
        The secret randomness of ``method="random"`` (`sdckit seed` prints one); never written,
        the manifest says where it came from. A weak seed needs ``allow_weak_seed``.
    """

    base: float
    method: str = "controlled"
    rules: tuple[Rule, ...] = ()
    mip_gap: float = 0.01
    time_limit: float | None = None
    seed: int | str | None = field(default=None, repr=False)  # never shown
    allow_weak_seed: bool = False

    name: ClassVar[str] = "rounding"
    released: ClassVar[str] = "rounded table"
    constraints: ClassVar = {"base": Interval(float, 0, None, closed="neither"),
                             "method": Options(("controlled", "random")), "rules": RULES,
                             "mip_gap": MIP_GAP, "time_limit": TIME_LIMIT, "allow_weak_seed": Boolean()}
    secrets: ClassVar = frozenset({"seed", "allow_weak_seed"})
    example: ClassVar = {"base": 5, "rules": (MinFrequency(3),)}

    def check_parameters(self) -> None:
        super().check_parameters()
        check_recipe_seed(self.seed, self.allow_weak_seed)  # never quotes the seed

    def provenance(self) -> dict[str, Any]:
        return seed_provenance(self.seed) if self.method == "random" else {}

    def apply(self, table: Any) -> RoundingResult:
        try:
            return round_table(table, self.base, method=self.method, rules=list(self.rules) or None,
                               seed=self.seed, mip_gap=self.mip_gap, time_limit=self.time_limit)
        except DataError as exc:
            if isinstance(table, LinkedTables) and str(exc).startswith("No zero-restricted"):
                raise DataError(f"No zero-restricted controlled rounding of these {len(table.tables)} linked "
                                f"tables to base {self.base:g} exists (linked tables, like 3-D ones, need not "
                                "have one; Causey, Cox & Ernst 1985). Try another base, or [rounding] method "
                                "= \"random\" (not additive).") from None
            raise

    def headline(self, result: RoundingResult) -> str:
        return f"{result.method} rounding, base {result.base:g}{_linked(result)}"

    def figures(self, result: RoundingResult) -> list[tuple[str, str]]:
        rows = [("cells", summary_text(len(result.cells))), ("cells moved", summary_text(result.cells_moved)),
                ("largest absolute change", f"{result.max_abs_change:g}"),
                ("mean absolute change", f"{result.mean_abs_change:.3g}"),
                ("additive", "yes" if result.additive else f"no ({result.equations_violated} equations broken)")]
        if result.audit is not None:
            a = result.audit
            rows.append(("sensitive cells protected", f"{a.sensitive - a.unprotected:,} of {a.sensitive:,}"))
        return rows

    def verdict(self, result: RoundingResult) -> tuple[bool, str]:
        """The intervals an intruder deduces for the sensitive cells from the rounded table,
        against their protection levels (no rules: no sensitive cell)."""
        if result.audit is None:
            return True, "no sensitive cells (the recipe has no [[rule]])"
        return audit_verdict(int(result.audit.sensitive), int(result.audit.unprotected), "sensitive cells")


@register
@dataclass(frozen=True)
class TabularAdjustment(Protection):
    """Controlled tabular adjustment (:func:`~sdckit.tabular.cta.adjust_table`; Dandekar & Cox
    2002): every sensitive cell moved by its protection level, the table kept additive with the
    smallest weighted change. Linked tables are adjusted as one table.

    Parameters
    ----------
    rules : list of sensitivity rules
        The sensitive cells and their protection levels (required).
    method : {"milp", "fast"}
    cost : {"unity", "inverse"}
        Weight of a unit change: 1, or 1/|value|.
    mip_gap : float in [0, 1)
    time_limit : float, optional
    integer : bool, optional
        Whole-number changes (default: when every value is a whole number).
    """

    rules: tuple[Rule, ...] = ()
    method: str = "milp"
    cost: str = "unity"
    mip_gap: float = 0.0
    time_limit: float | None = None
    integer: bool | None = None

    name: ClassVar[str] = "adjustment"
    released: ClassVar[str] = "adjusted table"
    needs_rules: ClassVar[bool] = True
    constraints: ClassVar = {"rules": RULES, "method": Options(("milp", "fast")),
                             "cost": Options(("unity", "inverse")), "mip_gap": MIP_GAP,
                             "time_limit": TIME_LIMIT, "integer": [IsNone(), Boolean()]}
    example: ClassVar = {"rules": (MinFrequency(3),), "method": "fast"}

    def apply(self, table: Any) -> AdjustmentResult:
        adjust = adjust_linked if isinstance(table, LinkedTables) else adjust_table
        return adjust(table, list(self.rules), method=self.method, cost=self.cost, integer=self.integer,
                      mip_gap=self.mip_gap, time_limit=self.time_limit)

    def headline(self, result: AdjustmentResult) -> str:
        return f"controlled tabular adjustment ({result.method}){_linked(result)}"

    def figures(self, result: AdjustmentResult) -> list[tuple[str, str]]:
        return [("cells", summary_text(len(result.cells))), ("sensitive cells", summary_text(result.sensitive)),
                ("cells adjusted", summary_text(result.cells_adjusted)),
                ("total absolute adjustment", f"{result.total_abs_adjustment:g}"),
                ("largest relative adjustment", f"{result.max_relative_adjustment:.3%}"),
                ("optimality", "proved" if result.optimal else "not proved")]

    def verdict(self, result: AdjustmentResult) -> tuple[bool, str]:
        """Every sensitive cell is moved by its protection level, which
        :func:`~sdckit.tabular.cta.adjust_table` checks before it returns."""
        return True, f"safe: all {int(result.sensitive):,} sensitive cells moved by their protection levels"


__all__ = ["CellSuppression", "ControlledRounding", "TabularAdjustment"]
