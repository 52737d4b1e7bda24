"""Secondary cell suppression: the cheapest set of further cells to suppress so that no primary
cell can be estimated, from the published cells and the table's equations, within its
protection levels.

``method="optimal"``: the exact model of Fischetti & Salazar (2001), "Solving the cell
suppression problem on tabular data with linear constraints", *Management Science* 47(7),
1008-1027, solved by branch-and-cut (:mod:`.optimal`, :mod:`sdckit.tabular.cutloop`).
``method="fast"``: the cheapest deviation flow of each primary (Kelly, Golden & Assad 1992;
Castro 2007), polished on small tables (:mod:`.polish`). Both return only after the audit has
shown every primary cell protected.

The modules, one idea each:

* :mod:`.api` — :func:`suppress`, the public entry (one table, or linked tables as a list);
* :mod:`.single` — one table: the method, then the audit;
* :mod:`.problem` — :class:`SuppressionProblem`, the model both methods solve (candidates,
  equations, deviation bounds, weights; attacker cuts and deviation flows), and :func:`cell_costs`;
* :mod:`.optimal`, :mod:`.polish` — the branch-and-cut of ``optimal`` and the polish of ``fast``;
* :mod:`.limits` — the work and time limits (``POLISH_SECONDS``, ``OPTIMAL_TIME_LIMIT``, ...);
* :mod:`.params` — the parameter rules of the suppression functions;
* :mod:`.result` — :class:`SuppressionResult`;
* :mod:`.linked` — linked tables protected together (:func:`suppress_linked`).
"""

from sdckit.tabular.suppress.api import suppress
from sdckit.tabular.suppress.problem import SuppressionProblem, cell_costs
from sdckit.tabular.suppress.result import STATUSES, SuppressionResult

__all__ = ["STATUSES", "SuppressionProblem", "SuppressionResult", "cell_costs", "suppress"]
