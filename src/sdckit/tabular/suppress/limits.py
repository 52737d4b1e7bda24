"""The work and time limits of secondary cell suppression, in one place.

The methods read them from this module when they run (``limits.POLISH_SECONDS``), so that a test
or a caller who sets one here changes it for every method at once. Work limits (rounds, nodes,
LPs) rather than seconds make a pattern reproducible on any machine; the seconds are CPU seconds
of this process (:func:`sdckit.tabular.cutloop.cpu_time`).
"""

from __future__ import annotations

#: Above this many non-empty cells the heuristic's flows are sought on each primary's
#: neighbourhood first (one LP per primary); below, on the whole table (two LPs, better patterns).
LOCAL_ABOVE = 3000
#: Polishing (``method="fast"``): branch-and-cut rounds on integer masters and branch-and-bound
#: nodes per master run, work limits rather than seconds so that the pattern is reproducible.
POLISH_ROUNDS = 20
POLISH_NODES = 500
POLISH_LP_ROUNDS = 200
#: ... and a cap on its CPU seconds (:func:`cpu_time`, from the start of ``suppress``; the polish
#: and the redundancy removal after it) when no time limit is given: the work limits alone let
#: the integer masters run for minutes on a few 4-D tables (roof x water x relat x sex of
#: testdata: > 690 s CPU). Most tables finish their work budget well within it and stay
#: reproducible; on the others the heuristic's audited pattern, improved as far as the cap
#: allowed, is returned (issue 27: fast within a minute of CPU up to 3,000 cells).
POLISH_SECONDS = 40.0
#: Default time limit of ``method="optimal"`` (CPU seconds, :func:`cpu_time`): a proof, or the
#: best audited pattern with its gap, within about a minute; ``time_limit=math.inf`` lifts it.
OPTIMAL_TIME_LIMIT = 50.0
#: Flow LPs the redundancy removal of ``fast`` may solve on a large table when no time limit is
#: given: a work budget, so that the pattern does not depend on the machine's speed or load.
REDUNDANCY_LPS = 10000
#: Up to this many non-empty cells ``fast`` polishes its pattern by branch-and-cut; above, the
#: rounds cost more than they gain in its time budget (measured on a 16,848-cell table).
POLISH_WHOLE = 3000
