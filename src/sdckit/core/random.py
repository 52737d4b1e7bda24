"""Randomness: one :class:`numpy.random.Generator` per run, created from the user's seed.

No global random state is ever used (DESIGN.md section 2).
"""

from __future__ import annotations

import numbers

import numpy as np

from sdckit.core.errors import ParameterError

RandomState = int | np.random.Generator | np.random.SeedSequence | None


def as_generator(random_state: RandomState) -> np.random.Generator:
    """Return a Generator for ``random_state``.

    ``None`` gives fresh OS entropy, an int or SeedSequence seeds a new PCG64 generator, and a
    Generator is returned as is (so that one generator can be passed down a pipeline).
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ParameterError(
                f"The seed must be a non-negative int. Got {random_state} instead."
            )
        return np.random.default_rng(int(random_state))
    raise ParameterError(
        "The seed must be None, a non-negative int or a numpy.random.Generator. "
        f"Got {random_state!r} instead."
    )
