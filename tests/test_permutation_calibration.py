"""The verification's p-value is calibrated: uniform when the release carries no link.

On uncorrelated data both nulls are exact, so for a release drawn independently of the original
(no record linked to any other) the exact p-value (the chance that a replicate's null sample is at
least as far from Q as the originals) is uniform on [0, 1] over releases. Each run estimates it from
at most 40 independent replicates (the sequential test stops early only above the level, issue 27),
so its estimate is S/40 with S binomial: over 80 releases its mean has sd about 0.033 around 0.5 and
the share at or below 0.1 (S <= 4) is 5/41 = 0.122 with sd sqrt(0.122 * 0.878 / 80) = 0.037; both
bounds below are 3.5 sd wide. Drawing the null samples from the records that define Q (the bias
this guards against) gives a mean p of about 0.33 on such data.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdckit.permutation import verify_linkage


@pytest.mark.parametrize("null", ["copula", "independent"])
def test_p_value_uniform_without_links(null):
    runs, n, m = 80, 300, 3
    p_values = []
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        original = pd.DataFrame(rng.standard_normal((n, m)), columns=list("abc"))
        released = pd.DataFrame(rng.standard_normal((n, m)), columns=list("abc"))
        v = verify_linkage(original, released, null=null, n_random=6000, max_replicates=40,
                           exhaustive_limit=0, seed=seed)
        p_values.append(v.p_value)
    p_values = np.array(p_values)
    assert abs(p_values.mean() - 0.5) < 3.5 * 0.033, p_values.mean()
    assert abs(np.mean(p_values <= 0.1) - 5 / 41) < 3.5 * 0.037, np.mean(p_values <= 0.1)
