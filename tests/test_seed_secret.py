"""The seed is the release's one secret (issue 12 section 1, issue 19 item 9; DESIGN.md section 9).

The attack test plays the adversary of issue 12: he knows the method and its parameters
(Kerckhoffs), holds the released file, and tries seeds 0..10^4. For each he regenerates the
standard normal draws additive noise would have used and measures how well they explain the
release. The right seed explains it with correlation about sqrt(alpha / (1 + alpha)) = 0.58;
a wrong one only by chance (sd 1/sqrt(n) = 0.045 for n = 500), so the threshold 0.3 (6.7 sd)
makes no false alarm over 10^4 tries.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import sdckit
from sdckit import AdditiveNoise, protect
from sdckit.core.errors import ParameterError
from sdckit.core.random import as_generator, is_strong_seed, new_seed, parse_seed

N = 500
ALPHA = 0.5
GUESSES = 10_000
THRESHOLD = 0.3


def _data() -> pd.DataFrame:
    """Incomes: one numeric column, drawn from a fixed, independent generator."""
    return pd.DataFrame({"income": np.random.default_rng(12345).lognormal(10, 0.5, N)})


def _guess_seed(released: np.ndarray) -> int | None:
    """The adversary: the first seed in 0..GUESSES whose noise explains the release."""
    centred = (released - released.mean()) / released.std()
    for seed in range(GUESSES):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sdckit.SecurityWarning)
            draws = as_generator(seed).standard_normal(N)
        if abs(np.mean(centred * (draws - draws.mean())) / draws.std()) > THRESHOLD:
            return seed
    return None


def _release(seed) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sdckit.SecurityWarning)
        return protect(_data(), [AdditiveNoise(alpha=ALPHA)], seed=seed).data["income"].to_numpy()


def test_seed_guessing_finds_a_weak_seed():
    """The attack works on seed = 7: the test can fail."""
    assert _guess_seed(_release(7)) == 7


@pytest.mark.parametrize("seed", [None, "strong"])
def test_seed_guessing_finds_nothing_without_a_weak_seed(seed):
    """With OS entropy or a 128-bit seed, no seed in 0..10^4 explains the release."""
    release = _release(new_seed() if seed == "strong" else None)
    assert _guess_seed(release) is None


def test_weak_seed_warns_once_per_call_and_strong_seed_does_not():
    with pytest.warns(sdckit.SecurityWarning, match="fewer than 128 bits") as record:
        protect(_data(), [AdditiveNoise(alpha=ALPHA)], seed=7)
    assert len([w for w in record if issubclass(w.category, sdckit.SecurityWarning)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", sdckit.SecurityWarning)
        protect(_data(), [AdditiveNoise(alpha=ALPHA)], seed=new_seed())
        protect(_data(), [AdditiveNoise(alpha=ALPHA)], seed=2**127)
        protect(_data(), [AdditiveNoise(alpha=ALPHA)])


def test_same_strong_seed_same_release_and_different_seeds_differ():
    seed = new_seed()
    assert np.array_equal(_release(seed), _release(seed))
    assert np.array_equal(_release(int(seed, 16)), _release(seed))
    assert not np.array_equal(_release(seed), _release(new_seed()))
    assert not np.array_equal(_release(None), _release(None))


def test_generator_is_cryptographic():
    """Issue 19 item 9: the bits come from AES in counter mode, not PCG64."""
    assert type(as_generator(None).bit_generator).__name__ == "AESCounter"
    assert type(as_generator(new_seed()).bit_generator).__name__ == "AESCounter"


@pytest.mark.parametrize("seed, strong", [
    (7, False), (2**127 - 1, False), (2**127, True), ("ff" * 15, False), ("00" * 16, True),
    ("0x" + "ab" * 16, True),
])
def test_seed_strength_counts_bits(seed, strong):
    assert is_strong_seed(seed) is strong


def test_new_seed_is_32_hex_digits_and_fresh():
    a, b = new_seed(), new_seed()
    assert len(a) == 32 and int(a, 16) >= 0 and a != b


@pytest.mark.parametrize("bad", [-1, True, 1.5, "not hex", b"00"])
def test_bad_seed_is_refused_with_a_parameter_error(bad):
    with pytest.raises(ParameterError, match="seed"):
        parse_seed(bad)
