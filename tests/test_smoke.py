import numpy as np
import pandas as pd

from sdckit import AdditiveNoise, protect


def test_protect_adds_noise_and_keeps_input(small_frame):
    before = small_frame.copy()
    release = protect(small_frame, [AdditiveNoise(alpha=0.5)], schema={"identifier": ["id"], "confidential": ["income"]}, seed=3)
    pd.testing.assert_frame_equal(small_frame, before)
    assert "id" not in release.data.columns
    assert not np.allclose(release.data["income"], small_frame["income"])
    np.testing.assert_array_equal(release.data["age"], small_frame["age"])
