"""Tables: hierarchies, sensitivity rules, secondary cell suppression and its LP audit, the cell key method
(issue 13; DESIGN.md section 6).

Example::

    from sdckit.tabular import Table, PPercent, MinFrequency, suppress, audit
    table = Table.from_microdata(frame, ["region", "size"], {"region": {"A1": "A", "A": "Total"}},
                                 response="turnover")
    result = suppress(table, [MinFrequency(3), PPercent(10)], method="optimal")
    result.cells            # codes, value, freq, status in {safe, primary, secondary}
    audit(result).safe      # True: every primary meets its protection levels
    round_table(table, 5).cells          # controlled rounding to base 5 (value, rounded)
    adjust_table(table, [PPercent(10)])  # controlled tabular adjustment (value, adjusted, status)
    suppress([table, table2], rules)     # linked tables (shared cells by their codes), protected together
    cell_key_counts(frame, ["region", "size"], "rkey", ptable(D=5, V=3, js=2))  # cell key method
    CellSuppression([MinFrequency(3)], method="fast").apply(table)  # a protection as a value (recipes)

A dimension's code tree is a :class:`DimensionHierarchy` (``as_dimension_hierarchy`` accepts a
mapping or an ``.hrc`` path); ``Hierarchy`` and ``as_hierarchy``, its names before issue 29, still
work for one release with a FutureWarning.
"""

from sdckit.core.lazy import lazy_exports

__all__ = ["AdjustmentResult", "AuditResult", "RoundingAudit", "RoundingResult", "adjust_table", "audit_rounding",
           "round_table", "Dominance", "DimensionHierarchy", "Manual", "MinFrequency", "PPercent", "PQ", "Rule",
           "RuleSet", "Sensitivity", "SuppressionResult", "Table", "as_dimension_hierarchy", "audit", "audit_pattern",
           "sensitivity", "suppress", "LinkedSuppressionResult", "LinkedTables", "audit_linked", "link_tables",
           "suppress_linked", "adjust_linked",
           "GroupDisclosure", "audit_primaries", "suppress_modular",
           "ptable", "ptable_numeric", "cell_key_sums", "CellKeySumParams", "read_ptable", "write_ptable",
           "record_keys", "cell_key_counts", "cell_key_measures",
           "CellKeyMeasures",
           "Protection", "CellSuppression", "ControlledRounding", "TabularAdjustment", "CellKey", "CellKeyTableResult",
           "protections"]

#: Where each public name lives; it is imported on first use (issue 28 item 4, start-up).
__getattr__, __dir__ = lazy_exports(__name__, {
    "AdjustmentResult": "sdckit.tabular.cta",
    "AuditResult": "sdckit.tabular.audit",
    "RoundingAudit": "sdckit.tabular.rounding",
    "RoundingResult": "sdckit.tabular.rounding",
    "adjust_table": "sdckit.tabular.cta",
    "audit_rounding": "sdckit.tabular.rounding",
    "round_table": "sdckit.tabular.rounding",
    "Dominance": "sdckit.tabular.rules",
    "DimensionHierarchy": "sdckit.tabular.hierarchy",
    "Manual": "sdckit.tabular.rules",
    "MinFrequency": "sdckit.tabular.rules",
    "PPercent": "sdckit.tabular.rules",
    "PQ": "sdckit.tabular.rules",
    "Rule": "sdckit.tabular.rules",
    "RuleSet": "sdckit.tabular.rules",
    "Sensitivity": "sdckit.tabular.rules",
    "SuppressionResult": "sdckit.tabular.suppress",
    "Table": "sdckit.tabular.table",
    "as_dimension_hierarchy": "sdckit.tabular.hierarchy",
    "audit": "sdckit.tabular.audit",
    "audit_pattern": "sdckit.tabular.audit",
    "sensitivity": "sdckit.tabular.rules",
    "suppress": "sdckit.tabular.suppress",
    "LinkedSuppressionResult": "sdckit.tabular.linked",
    "LinkedTables": "sdckit.tabular.linked",
    "audit_linked": "sdckit.tabular.linked",
    "link_tables": "sdckit.tabular.linked",
    "suppress_linked": "sdckit.tabular.linked",
    "adjust_linked": "sdckit.tabular.linked",
    "GroupDisclosure": "sdckit.tabular.rules",
    "audit_primaries": "sdckit.tabular.modular",
    "suppress_modular": "sdckit.tabular.modular",
    "ptable": "sdckit.tabular.ptable",
    "ptable_numeric": "sdckit.tabular.ptable",
    "cell_key_sums": "sdckit.tabular.cellkey_sums",
    "CellKeySumParams": "sdckit.tabular.cellkey_sums",
    "read_ptable": "sdckit.tabular.ptable",
    "write_ptable": "sdckit.tabular.ptable",
    "record_keys": "sdckit.tabular.cellkey",
    "cell_key_counts": "sdckit.tabular.cellkey",
    "cell_key_measures": "sdckit.tabular.cellkey",
    "CellKeyMeasures": "sdckit.tabular.cellkey",
    "Protection": "sdckit.tabular.protection",
    "CellSuppression": "sdckit.tabular.protection",
    "ControlledRounding": "sdckit.tabular.protection",
    "TabularAdjustment": "sdckit.tabular.protection",
    "CellKey": "sdckit.tabular.protection",
    "CellKeyTableResult": "sdckit.tabular.protection",
    "protections": "sdckit.tabular.protection",
}, renamed={"Hierarchy": "DimensionHierarchy", "as_hierarchy": "as_dimension_hierarchy"})  # issue 29, one release
