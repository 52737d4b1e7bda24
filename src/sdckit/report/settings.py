"""The report's settings: defaults and their checks (recipes check them before any data is
read). The verification's settings follow :data:`sdckit.permutation.verify.VERIFY_RULES`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdckit.core.params import Interval, check_param
from sdckit.core.defaults import N_RANDOM
from sdckit.permutation.rules import VERIFY_RULES

#: Default settings of the report's measures (shown in its transparency section; never the seed).
DEFAULTS: dict[str, Any] = {"null": "copula", "n_random": N_RANDOM, "n_null": 50, "alpha": 0.05, "interval_p": 10.0}

RULES = {
    **{name: VERIFY_RULES[name] for name in ("null", "n_random", "n_null")},
    "alpha": Interval(float, 0, 1, closed="neither"),
    "interval_p": Interval(float, 0, 100, closed="right"),
}


def check_settings(settings: Mapping[str, Any]) -> None:
    """Raise :class:`~sdckit.core.errors.ParameterError` for a bad report setting."""
    for name, value in settings.items():
        if name in RULES:
            check_param("the report", name, value, RULES[name])
