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
from sdckit.core.rowwise import chunk_generator, step_key

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
            # the code is public: a row-wise step's chunk 0 draws from a stream spawned from a
            # key the run's generator gives (sdckit.core.rowwise, issue 17)
            draws = chunk_generator(step_key(as_generator(seed)), 0).standard_normal(N)
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


# --- recipes and the CLI: a weak seed is refused unless allowed --------------------------------

def _recipe(tmp_path, seed_line: str) -> str:
    pd.DataFrame({"income": np.linspace(1000, 5000, 40), "age": np.arange(40) % 7}).to_csv(
        tmp_path / "people.csv", index=False)
    (tmp_path / "r.toml").write_text(
        f'{seed_line}\n[input]\npath = "people.csv"\n[schema]\nquasi = ["age"]\n'
        'confidential = ["income"]\n[[method]]\nname = "additive_noise"\nalpha = 0.5\n'
        'columns = ["income"]\n[output]\ndir = "out"\n[report]\nenabled = false\n')
    return str(tmp_path / "r.toml")


def _manifest(tmp_path) -> dict:
    import json
    (path,) = (tmp_path / "out").glob("*manifest.json")
    return json.loads(path.read_text())


def test_cli_refuses_a_weak_recipe_seed_with_one_line(tmp_path, cli):
    result = cli("protect", _recipe(tmp_path, "seed = 7"), cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "sdckit seed" in result.stderr and "128 bits" in result.stderr
    assert not (tmp_path / "out").exists()


def test_cli_allows_a_weak_seed_when_asked_and_the_manifest_says_weak(tmp_path, cli):
    recipe = _recipe(tmp_path, "seed = 7")
    assert cli("protect", recipe, "--allow-weak-seed", cwd=tmp_path).returncode == 0
    manifest = _manifest(tmp_path)
    assert manifest["seed_strength"] == "weak"
    assert manifest["seed"] == "given by the user"


def test_recipe_allow_weak_seed_key(tmp_path, cli):
    recipe = _recipe(tmp_path, "seed = 7\nallow_weak_seed = true")
    assert cli("protect", recipe, cwd=tmp_path).returncode == 0
    assert _manifest(tmp_path)["seed_strength"] == "weak"


def test_strong_hex_seed_is_accepted_and_never_written(tmp_path, cli):
    strong = new_seed()
    result = cli("protect", _recipe(tmp_path, f'seed = "{strong}"'), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert _manifest(tmp_path)["seed_strength"] == "strong"
    for path in (tmp_path / "out").iterdir():
        text = path.read_text(errors="replace").lower()
        assert strong not in text and str(int(strong, 16)) not in text


def test_no_seed_is_drawn_from_os_entropy(tmp_path, cli):
    assert cli("protect", _recipe(tmp_path, ""), cwd=tmp_path).returncode == 0
    assert _manifest(tmp_path)["seed"] == "drawn from OS entropy"


@pytest.mark.parametrize("line", ['seed = "xyz"', "seed = -3", "seed = 1.5", 'allow_weak_seed = "yes"'])
def test_bad_recipe_seed_is_one_line_exit_2(tmp_path, cli, line):
    result = cli("protect", _recipe(tmp_path, line), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "seed" in result.stderr


def test_sdckit_seed_prints_a_strong_hex_seed(cli):
    result = cli("seed")
    assert result.returncode == 0
    printed = result.stdout.strip()
    assert len(printed) == 32 and is_strong_seed(printed)


def test_seed_file_keeps_the_seed_out_of_the_recipe(tmp_path, cli):
    strong = new_seed()
    (tmp_path / "release.seed").write_text(strong + "\n")
    recipe = _recipe(tmp_path, 'seed_file = "release.seed"')
    assert cli("protect", recipe, cwd=tmp_path).returncode == 0
    first = (tmp_path / "out" / "people_protected.csv").read_bytes()
    assert _manifest(tmp_path)["seed_strength"] == "strong"
    assert cli("protect", recipe, cwd=tmp_path).returncode == 0
    assert (tmp_path / "out" / "people_protected.csv").read_bytes() == first  # same seed, same bytes


@pytest.mark.parametrize("content, line, message", [
    ("", 'seed_file = "release.seed"', "empty"),
    (None, 'seed_file = "missing.seed"', "cannot read"),
    ("07", 'seed_file = "release.seed"', "128 bits"),
    ("ab" * 16, 'seed_file = "release.seed"\nseed = "' + "cd" * 16 + '"', "not both"),
])
def test_bad_seed_file_is_one_line_exit_2(tmp_path, cli, content, line, message):
    if content is not None:
        (tmp_path / "release.seed").write_text(content)
    result = cli("protect", _recipe(tmp_path, line), cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert message in result.stderr
