"""Randomness: one cryptographic :class:`numpy.random.Generator` per run (DESIGN.md sections 2, 9).

The seed is the release's only secret (Kerckhoffs's principle: the method, its parameters and the
code are public). So

* no seed gives 128 bits of OS entropy (:class:`numpy.random.SeedSequence` with no argument);
* a seed is *strong* when it carries at least 128 bits: an int ``>= 2**127`` or a hex string of 32
  or more digits (``sdckit seed`` and :func:`new_seed` print one); a weaker int still works, for
  tests and teaching, but where the seed protects a release (a method's noise, a pipeline, a
  random rounding) it raises :class:`~sdckit.core.errors.SecurityWarning` once per call, since
  an attacker who tries the small seeds can regenerate the noise and subtract it. A seed that
  protects nothing — an assessment's random records, a tuning's or comparison's evaluations —
  is no secret and does not warn (``as_generator(..., secret=False)``);
* the bits come from AES in counter mode (``randomgen.AESCounter``), a cryptographic generator,
  so the noise cannot be predicted from released values the way PCG64's state can. Same seed =
  same output.

No global random state is ever used.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import secrets
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from randomgen import AESCounter

from sdckit.core.errors import ParameterError, SecurityWarning

RandomState = int | str | np.random.Generator | np.random.SeedSequence | None

F = TypeVar("F", bound=Callable[..., Any])

#: Bits of entropy a seed must carry to be called strong.
STRONG_SEED_BITS = 128


def new_seed() -> str:
    """Return a fresh strong seed: 128 bits of OS entropy as 32 hex digits."""
    return secrets.token_hex(STRONG_SEED_BITS // 8)


def parse_seed(seed: int | str) -> int:
    """Return the int of a seed given as a non-negative int or a hex string ("0x" optional)."""
    if isinstance(seed, str):
        digits = seed.strip().lower().removeprefix("0x")
        try:
            return int(digits, 16)
        except ValueError:
            raise ParameterError(
                "The seed must be a non-negative int or a hex string (run `sdckit seed` for one). "
                "Got a string that is not hex instead."
            ) from None
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and seed >= 0:
        return int(seed)
    raise ParameterError(
        "The seed must be None, a non-negative int, a hex string or a numpy.random.Generator. "
        f"Got {type(seed).__name__} instead."
    )


def is_strong_seed(seed: int | str) -> bool:
    """Whether ``seed`` carries at least :data:`STRONG_SEED_BITS` bits.

    An int counts by value (``>= 2**127``); a hex string by its number of digits (>= 32), so that
    a strong seed with leading zeros stays strong.
    """
    if isinstance(seed, str):
        digits = seed.strip().lower().removeprefix("0x")
        parse_seed(seed)
        return len(digits) * 4 >= STRONG_SEED_BITS
    return parse_seed(seed) >= 2 ** (STRONG_SEED_BITS - 1)


def crypto_generator(seed: np.random.SeedSequence) -> np.random.Generator:
    """A Generator over AES in counter mode, keyed from ``seed``."""
    return np.random.Generator(AESCounter(seed))


def renamed_seed(old: str = "random_state") -> Callable[[F], F]:
    """Accept the old keyword ``old`` for ``seed`` for one release, with a :class:`FutureWarning`.

    Randomness has one name at the public API, ``seed`` (DESIGN.md section 2); ``random_state=``
    (and ``rng=`` on :meth:`Method.apply` / :meth:`Method.run`) still work until the next release.
    The wrapped function keeps its signature (``inspect.signature`` shows ``seed``).

    Raises
    ------
    ParameterError
        Both ``seed=`` and the old keyword are given.
    """
    def decorate(function: F) -> F:
        names = list(inspect.signature(function).parameters)
        position = names.index("seed")  # the seed's place when passed by position

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if old in kwargs:
                if "seed" in kwargs or len(args) > position:
                    raise ParameterError(
                        f"Pass seed= only: {old}= is its old name; got both. Drop {old}=."
                    )
                warnings.warn(f"{old}= is now seed=; the old name goes in the next release.",
                              FutureWarning, stacklevel=2)
                kwargs["seed"] = kwargs.pop(old)
            return function(*args, **kwargs)
        wrapper.renamed_seed = old  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]
    return decorate


@renamed_seed()
def as_generator(seed: RandomState, *, secret: bool = True) -> np.random.Generator:
    """Return a cryptographic Generator for ``seed``.

    ``None`` gives fresh OS entropy; an int, hex string or SeedSequence seeds a new AES-counter
    generator; a Generator is returned as is (so that one generator can be passed down a
    pipeline). ``secret``: the draws protect a release (the default), so a weak int or string
    warns :class:`SecurityWarning`; pass ``secret=False`` where they protect nothing (an
    assessment's random records, a tuning's evaluations), so that a small seed chosen for
    reproducibility does not warn.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return crypto_generator(np.random.SeedSequence())
    if isinstance(seed, np.random.SeedSequence):
        return crypto_generator(seed)
    value = parse_seed(seed)
    if secret and not is_strong_seed(seed):
        warnings.warn(
            f"This seed has fewer than {STRONG_SEED_BITS} bits: anyone can try all such seeds and "
            "undo the noise. Pass no seed, or a strong one from `sdckit seed`.",
            SecurityWarning, stacklevel=4,
        )
    return crypto_generator(np.random.SeedSequence(value))


def derive_seed(rng: np.random.Generator) -> int:
    """A strong seed (128 bits, >= 2**127) drawn from ``rng``: for runs derived from one master
    seed, e.g. the repetitions of a comparison."""
    return int.from_bytes(rng.bytes(STRONG_SEED_BITS // 8), "big") | 2 ** (STRONG_SEED_BITS - 1)


#: The one line a refused weak seed prints (recipe or CLI), saying how to make a strong one.
WEAK_SEED_MESSAGE = (
    "the seed has fewer than 128 bits, so anyone can find it by trying seeds and undo the noise; "
    "use no seed (OS entropy) or a strong one from `sdckit seed` (in TOML as a string: "
    'seed = "<32 hex digits>"), or allow it with allow_weak_seed = true / --allow-weak-seed.'
)


def check_recipe_seed(seed: object, allow_weak: object = False) -> None:
    """Refuse a recipe's or the CLI's seed unless it is strong or ``allow_weak`` is true.

    Raises
    ------
    ParameterError
        ``seed`` is not a non-negative int / hex string, ``allow_weak`` is not a bool, or the
        seed is weak and not allowed (:data:`WEAK_SEED_MESSAGE`).
    """
    if not isinstance(allow_weak, bool):
        raise ParameterError(f"'allow_weak_seed' must be true or false; got {type(allow_weak).__name__}.")
    if seed is None:
        return
    if not isinstance(seed, (int, str)):
        raise ParameterError("'seed' must be a hex string (`sdckit seed` prints one) or a non-negative integer.")
    try:
        strong = is_strong_seed(seed)  # type: ignore[arg-type]
    except ParameterError:
        raise ParameterError(
            "'seed' must be a hex string (`sdckit seed` prints one) or a non-negative integer."
        ) from None
    if not strong and not allow_weak:
        raise ParameterError(WEAK_SEED_MESSAGE)


def seed_provenance(seed: RandomState) -> dict[str, str]:
    """What the manifest says of the seed, never the seed itself: its source and strength."""
    if seed is None:
        return {"seed": "drawn from OS entropy", "seed_strength": "strong"}
    if isinstance(seed, (np.random.Generator, np.random.SeedSequence)):
        return {"seed": "a generator passed by the caller"}
    return {"seed": "given by the user",
            "seed_strength": "strong" if is_strong_seed(seed) else "weak"}
