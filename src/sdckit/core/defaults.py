"""Defaults the command line shows in its help, kept where importing them costs nothing.

``sdckit assess --help`` prints the default of ``--random``; importing it from
:mod:`sdckit.permutation.verify` would load numpy, pandas and scipy first (issue 28 item 4). The
library takes the value from here, so it is defined once.
"""

from __future__ import annotations

#: Random records per replicate of the verification (half define ``Q``, the rest give the null
#: sample; :mod:`sdckit.permutation.verify`).
N_RANDOM = 20_000
