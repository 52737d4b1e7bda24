"""The verification's p-value is calibrated: uniform when the release carries no link.

On uncorrelated data both nulls are exact, so for a release drawn independently of the original
(no record linked to any other) the p-value of one Monte-Carlo batch must be uniform on [0, 1] up
to the resolution 1/n_null (the default p-value is the mean over batches of such p-values:
tests/test_permutation_stability.py). 80 runs: the mean of a uniform variable has sd 0.289/sqrt(80) = 0.032, and the share
at or below 0.1 has sd sqrt(0.09/80) = 0.034; both bounds below are 3.5 sd wide. Drawing the null
samples from the records that define Q (the bias this guards against) gives a mean p of about
0.33 on such data.
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
        v = verify_linkage(original, released, null=null, n_random=6000, n_null=40,
                           exhaustive_limit=0, max_batches=1, random_state=seed)
        p_values.append(v.p_value)
    p_values = np.array(p_values)
    assert abs(p_values.mean() - 0.5) < 3.5 * 0.032, p_values.mean()
    assert abs(np.mean(p_values <= 0.1) - 0.1) < 3.5 * 0.034, np.mean(p_values <= 0.1)
