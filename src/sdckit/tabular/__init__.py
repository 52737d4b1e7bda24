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
"""

from sdckit.tabular.audit import AuditResult, audit, audit_pattern
from sdckit.tabular.cta import AdjustmentResult, adjust_table
from sdckit.tabular.hierarchy import Hierarchy, as_hierarchy
from sdckit.tabular.linked import (LinkedSuppressionResult, LinkedTables, adjust_linked, audit_linked,
                                   link_tables, suppress_linked)
from sdckit.tabular.rules import (PQ, Dominance, GroupDisclosure, Manual, MinFrequency, PPercent, Rule, RuleSet,
                                  Sensitivity, sensitivity)
from sdckit.tabular.rounding import RoundingAudit, RoundingResult, audit_rounding, round_table
from sdckit.tabular.suppress import SuppressionResult, suppress
from sdckit.tabular.table import Table
from sdckit.tabular.modular import audit_primaries, suppress_modular
from sdckit.tabular.ptable import ptable, read_ptable, write_ptable
from sdckit.tabular.cellkey import CellKeyMeasures, cell_key_counts, cell_key_measures, record_keys

__all__ = ["AdjustmentResult", "AuditResult", "RoundingAudit", "RoundingResult", "adjust_table", "audit_rounding",
           "round_table", "Dominance", "Hierarchy", "Manual", "MinFrequency", "PPercent", "PQ", "Rule",
           "RuleSet", "Sensitivity", "SuppressionResult", "Table", "as_hierarchy", "audit", "audit_pattern",
           "sensitivity", "suppress", "LinkedSuppressionResult", "LinkedTables", "audit_linked", "link_tables",
           "suppress_linked", "adjust_linked",
           "GroupDisclosure", "audit_primaries", "suppress_modular",
           "ptable", "read_ptable", "write_ptable", "record_keys", "cell_key_counts", "cell_key_measures",
           "CellKeyMeasures"]
