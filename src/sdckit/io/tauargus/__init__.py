"""tau-ARGUS interoperability: read the metadata (``.rda``), microdata (``.asc``), tabular input
(``.tab``) and hierarchies (``.hrc``) of existing tau-ARGUS jobs (issue 13; DESIGN.md section 6).

Example::

    from sdckit.io import tauargus
    rda = tauargus.read_rda("pp.rda")
    cells = tauargus.read_tab("pp.tab", rda)
    regions = tauargus.hierarchy(rda, "Region")      # {child: parent}, root = <TOTCODE>
"""

from sdckit.io.tauargus.hrc import hierarchy, levels_hierarchy, read_hrc
from sdckit.io.tauargus.rda import Keyword, TauMetadata, TauVariable, read_rda
from sdckit.io.tauargus.records import rda_beside, read_asc, read_tab, tab_status

__all__ = ["Keyword", "TauMetadata", "TauVariable", "hierarchy", "levels_hierarchy", "rda_beside",
           "read_asc", "read_hrc", "read_rda", "read_tab", "tab_status"]
