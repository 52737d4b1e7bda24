"""Table protections as values (DESIGN.md section 6), as the microdata methods are: a frozen
dataclass whose fields are its parameters and its manifest, its parameter rules checked in one
place, registered under the name a table recipe's ``[protection] method`` uses.

====================  ======================  ==========================================
recipe name           value                   runs
====================  ======================  ==========================================
``suppression``       :class:`CellSuppression`     :func:`~sdckit.tabular.suppress.suppress`
``rounding``          :class:`ControlledRounding`  :func:`~sdckit.tabular.rounding.round_table`
``adjustment``        :class:`TabularAdjustment`   :func:`~sdckit.tabular.cta.adjust_table`
``cell_key``          :class:`CellKey`             :func:`~sdckit.tabular.cellkey.cell_key_counts`,
                                                   :func:`~sdckit.tabular.cellkey_sums.cell_key_sums`
====================  ======================  ==========================================

Example::

    from sdckit.tabular import CellSuppression, MinFrequency, PPercent
    protection = CellSuppression([MinFrequency(3), PPercent(10)], method="fast")
    result = protection.apply(table)        # suppress(table, rules, method="fast")
    protection.verdict(result)              # (True, "safe: 7 of 7 primary cells protected")
    protection.to_manifest()                # {"name": "suppression", "class": ..., "params": {...}}
"""

from sdckit.tabular.protection.base import (Protection, audit_verdict, protections, register, rule_from_dict,
                                            section_error)
from sdckit.tabular.protection.tables import CellSuppression, ControlledRounding, TabularAdjustment
from sdckit.tabular.protection.cell_key import CellKey, CellKeyTableResult  # registered last: a recipe lists it last

__all__ = ["CellKey", "CellKeyTableResult", "CellSuppression", "ControlledRounding", "Protection", "TabularAdjustment",
           "audit_verdict", "protections", "register", "rule_from_dict", "section_error"]
