"""The exact samplers and the Laplace / geometric mechanisms (sdckit.dp.exact_samplers, .mechanisms)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from sdckit import DataError, ParameterError
from sdckit.dp import Geometric, Laplace
from sdckit.dp.mechanisms import confidence_radius, laplace_randomise
from sdckit.dp.exact_samplers import bernoulli_exp_neg, discrete_laplace


def discrete_laplace_pmf(values: np.ndarray, scale: float) -> np.ndarray:
    q = math.exp(-1.0 / scale)
    return (1 - q) / (1 + q) * q ** np.abs(values)


# --------------------------------------------------------------------------- exact samplers
def test_bernoulli_exp_neg_has_the_right_mean():
    # exp(-3/10) = 0.7408; 40,000 draws: standard error sqrt(p(1-p)/n) = 0.0022.
    draws = bernoulli_exp_neg(np.full(40_000, 3), 10, np.random.default_rng(1))
    assert abs(draws.mean() - math.exp(-0.3)) < 4 * 0.0022
    # gamma = 0 always succeeds; gamma = 1 gives exp(-1) = 0.3679.
    assert bernoulli_exp_neg(np.zeros(100, dtype=int), 7, np.random.default_rng(2)).all()
    ones = bernoulli_exp_neg(np.full(40_000, 5), 5, np.random.default_rng(3))
    assert abs(ones.mean() - math.exp(-1)) < 4 * 0.0024


@pytest.mark.parametrize(("s", "r"), [(2, 1), (5, 2), (1, 3)])
def test_discrete_laplace_matches_its_pmf(s, r):
    draws = discrete_laplace(30_000, s, r, np.random.default_rng(s * 10 + r))
    support = np.arange(-6, 7)
    expected = discrete_laplace_pmf(support, s / r) * len(draws)
    observed = np.array([(draws == v).sum() for v in support])
    tail = len(draws) - observed.sum()
    expected_tail = len(draws) - expected.sum()
    chi2 = stats.chisquare(np.append(observed, tail), np.append(expected, expected_tail))
    assert chi2.pvalue > 1e-3
    assert abs(draws.mean()) < 4 * draws.std() / math.sqrt(len(draws))


def test_discrete_laplace_takes_one_scale_per_draw():
    scales = np.repeat([1, 50], 20_000)
    draws = discrete_laplace(len(scales), scales, 1, np.random.default_rng(4))
    # E|Y| = 2q / (1 - q^2) for the discrete Laplace; q = exp(-1/scale).
    for scale, part in ((1, draws[:20_000]), (50, draws[20_000:])):
        q = math.exp(-1 / scale)
        assert np.abs(part).mean() == pytest.approx(2 * q / (1 - q**2), rel=0.04)


# --------------------------------------------------------------------------- Laplace
def test_laplace_noise_has_the_laplace_distribution():
    mech = Laplace(epsilon=0.5, sensitivity=1.5)  # scale 3
    noise = mech.noise(20_000, seed=5)
    assert mech.scale == 3.0
    assert stats.kstest(noise, stats.laplace(scale=3.0).cdf).pvalue > 1e-3
    assert np.abs(noise).mean() == pytest.approx(3.0, rel=0.03)  # E|Y| = b
    assert noise.var() == pytest.approx(2 * 9.0, rel=0.06)  # Var Y = 2 b^2


def test_laplace_is_reproducible_under_a_seed_and_keeps_the_shape():
    mech = Laplace(epsilon=1.0, sensitivity=1.0)
    values = np.arange(12.0).reshape(3, 4)
    first = mech.randomise(values, seed=9)
    assert first.shape == (3, 4)
    np.testing.assert_array_equal(first, mech.randomise(values, seed=9))
    assert not np.array_equal(first, mech.randomise(values, seed=10))


def test_zero_sensitivity_elements_are_left_unchanged():
    rng = np.random.default_rng(0)
    out = laplace_randomise(np.array([1.5, 2.5, 3.5]), np.array([0.0, 1.0, 0.0]), 1.0, rng)
    assert out[0] == 1.5 and out[2] == 3.5 and out[1] != 2.5


def off_grid_share(values: np.ndarray, step: float) -> float:
    """Share of values that are not exact multiples of ``step`` (a power of two)."""
    return float(np.mean(np.fmod(values, step) != 0))


def test_textbook_sampling_shows_the_attack_signature():
    # Mironov (2012): textbook x + b*log(U) noise. From input 1 every output near 0 is
    # 1 + n with n near -1, an exact (Sterbenz) subtraction: a multiple of 2**-53. From input
    # 0 the output is n itself, which near 0 has far finer low bits. So an output off the 2**-53
    # grid proves the input was 0: the low bits reveal the input.
    rng = np.random.default_rng(6)
    from_zero = 0.0 + rng.laplace(0.0, 1.0, 200_000)
    from_one = 1.0 + rng.laplace(0.0, 1.0, 200_000)
    near_zero = lambda y: y[np.abs(y) < 0.25]  # noqa: E731
    assert off_grid_share(near_zero(from_one), 2.0**-53) == 0.0
    assert off_grid_share(near_zero(from_zero), 2.0**-53) > 0.5


def test_sdckit_sampler_has_no_attack_signature():
    # The same experiment with sdckit's sampler: every output, from either input, is a
    # multiple of the grid g = 2**-40 (scale 1), so the low bits carry nothing about the input.
    mech = Laplace(epsilon=1.0, sensitivity=1.0)
    from_zero = mech.randomise(np.zeros(200_000), seed=7)
    from_one = mech.randomise(np.ones(200_000), seed=8)
    assert mech.grid == 2.0**-40
    for outputs in (from_zero, from_one):
        assert off_grid_share(outputs, mech.grid) == 0.0
        assert off_grid_share(outputs[np.abs(outputs) < 0.25], 2.0**-53) == 0.0
    # The lowest grid bits are uniform for both inputs (chi-square against uniform on 16 cells).
    for outputs in (from_zero, from_one):
        low = (np.rint(outputs / mech.grid).astype(np.int64) % 16)
        assert stats.chisquare(np.bincount(low, minlength=16)).pvalue > 1e-3


@settings(max_examples=60, deadline=None)
@given(
    x=st.floats(-1e6, 1e6, allow_nan=False),
    sensitivity=st.floats(1e-3, 1e3),
    epsilon=st.floats(0.01, 10.0),
    seed=st.integers(0, 2**32),
)
def test_every_output_lies_on_the_input_independent_grid(x, sensitivity, epsilon, seed):
    mech = Laplace(epsilon=epsilon, sensitivity=sensitivity)
    outputs = mech.randomise(np.full(50, x), seed=seed)
    # Below 2**53 grid steps the output is an exact grid point; above, every double is one.
    assert np.all(np.fmod(outputs, mech.grid) == 0)
    assert mech.grid <= mech.scale * 2.0**-40 < 2 * mech.grid


def test_confidence_radius_hand_worked():
    # P(|Y| <= r) = 1 - exp(-r/b) = alpha  =>  r = b ln(1/(1-alpha)); b = 2, alpha = 0.99:
    # r = 2 ln 100 = 9.2103.
    assert confidence_radius(2.0, 0.99) == pytest.approx(2 * math.log(100))
    assert Laplace(epsilon=0.5, sensitivity=1.0).radius(0.5) == pytest.approx(2 * math.log(2))
    noise = Laplace(epsilon=1.0, sensitivity=2.0).noise(20_000, seed=3)
    assert np.mean(np.abs(noise) <= confidence_radius(2.0, 0.9)) == pytest.approx(0.9, abs=0.01)


# --------------------------------------------------------------------------- geometric
def test_geometric_noise_matches_the_discrete_laplace():
    mech = Geometric(epsilon=0.5, sensitivity=1)  # scale 2
    out = mech.randomise(np.full(30_000, 7), seed=11)
    assert out.dtype == np.int64
    support = np.arange(-5, 6)
    observed = np.array([(out - 7 == v).sum() for v in support])
    expected = discrete_laplace_pmf(support, 2.0) * len(out)
    chi2 = stats.chisquare(
        np.append(observed, len(out) - observed.sum()),
        np.append(expected, len(out) - expected.sum()),
    )
    assert chi2.pvalue > 1e-3


def test_geometric_refuses_non_integers():
    with pytest.raises(DataError, match="integer"):
        Geometric(epsilon=1.0, sensitivity=1).randomise([1.5], seed=0)


# --------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("cls", [Laplace, Geometric])
@pytest.mark.parametrize("epsilon", [0, 0.0, -1.0, math.inf, math.nan, "1", True, None])
def test_bad_epsilon_is_refused(cls, epsilon):
    with pytest.raises(ParameterError, match=rf"The 'epsilon' parameter of {cls.__name__} must be"):
        cls(epsilon=epsilon, sensitivity=1)


@pytest.mark.parametrize("cls", [Laplace, Geometric])
def test_missing_sensitivity_is_refused(cls):
    with pytest.raises(ParameterError, match=rf"The 'sensitivity' parameter of {cls.__name__} .*Got None"):
        cls(epsilon=1.0)


@pytest.mark.parametrize("sensitivity", [0, -2.0, math.inf, math.nan, "2"])
def test_bad_laplace_sensitivity_is_refused(sensitivity):
    with pytest.raises(ParameterError, match="'sensitivity' parameter of Laplace"):
        Laplace(epsilon=1.0, sensitivity=sensitivity)


@pytest.mark.parametrize("sensitivity", [0, 1.5, -1])
def test_bad_geometric_sensitivity_is_refused(sensitivity):
    with pytest.raises(ParameterError, match="'sensitivity' parameter of Geometric must be an int >= 1"):
        Geometric(epsilon=1.0, sensitivity=sensitivity)


def test_epsilon_too_small_to_sample_exactly_is_refused():
    with pytest.raises(ParameterError, match="epsilon"):
        Laplace(epsilon=2.0**-60, sensitivity=1.0)
    with pytest.raises(ParameterError, match="epsilon"):
        Geometric(epsilon=2.0**-40, sensitivity=1)


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_missing_or_infinite_values_are_refused(value):
    with pytest.raises(DataError, match="missing or infinite"):
        Laplace(epsilon=1.0, sensitivity=1.0).randomise([1.0, value], seed=0)


# --------------------------------------------------------------------------- issue 19 item 11
@pytest.mark.parametrize("x", [1.6e296, 1e300, 1.7e308, -1.7e308])
def test_huge_finite_inputs_stay_finite(x):
    # Old code: x / grid overflowed to inf above about 1.6e296 * scale.
    mech = Laplace(epsilon=1.0, sensitivity=1.0)
    out = mech.randomise(np.full(1000, x), seed=1)
    assert np.all(np.isfinite(out))
    # Near x the doubles are coarser than the noise: the value comes back (almost) as it was.
    assert np.all(np.abs(out - x) <= abs(x) * 2.0**-50)


def test_huge_inputs_with_a_huge_scale_still_get_noise():
    mech = Laplace(epsilon=1.0, sensitivity=1e300)
    out = mech.randomise(np.full(2000, 1e300), seed=2)
    assert np.all(np.isfinite(out))
    assert np.abs(out - 1e300).mean() == pytest.approx(1e300, rel=0.1)


@pytest.mark.parametrize("sensitivity", [1e-310, 5e-324, 1e-320])
def test_a_subnormal_sensitivity_is_sampled_not_blamed_on_epsilon(sensitivity):
    # Old code: the grid underflowed to 0 and the error said epsilon was too small.
    mech = Laplace(epsilon=1.0, sensitivity=sensitivity)
    noise = mech.noise(20_000, seed=3)
    assert np.all(np.isfinite(noise)) and mech.grid > 0
    # The grid is the smallest double; the noise scale is at least the requested one (the
    # grid step lost to rounding makes it larger when the sensitivity is only a few steps).
    assert np.abs(noise).mean() >= 0.9 * sensitivity
    assert np.all(np.fmod(noise, mech.grid) == 0)


def test_an_overflowing_scale_names_both_parameters():
    with pytest.raises(ParameterError, match="sensitivity / epsilon is too large"):
        Laplace(epsilon=1e-10, sensitivity=1e300)


# --------------------------------------------------------------------------- accountant wiring
def test_mechanisms_charge_the_callers_accountant_and_refuse_when_spent():
    from sdckit.dp import BudgetAccountant, BudgetExceeded, Gaussian

    acct = BudgetAccountant(3.0, delta=1e-6)
    Laplace(epsilon=1.0, sensitivity=1.0, accountant=acct).randomise([1.0, 2.0], seed=0)
    Geometric(epsilon=1.0, sensitivity=1, accountant=acct).randomise([1, 2], seed=0)
    Gaussian(epsilon=0.5, delta=5e-7, sensitivity=1.0, accountant=acct).randomise([1.0], seed=0)
    assert acct.spent == 2.5 and acct.spent_delta == Fraction("5e-7")
    assert [s["label"] for s in acct.spends] == ["Laplace.randomise", "Geometric.randomise", "Gaussian.randomise"]
    with pytest.raises(BudgetExceeded):
        Laplace(epsilon=1.0, sensitivity=1.0, accountant=acct).randomise([1.0], seed=0)
    # Noise alone (no data) costs nothing; bad data is refused before anything is charged.
    Laplace(epsilon=1.0, sensitivity=1.0, accountant=acct).noise(5, seed=0)
    with pytest.raises(DataError):
        Laplace(epsilon=0.5, sensitivity=1.0, accountant=acct).randomise([math.nan], seed=0)
    assert acct.spent == 2.5
    # The accountant is not a parameter: mechanisms differing only in it are equal.
    assert Laplace(epsilon=1.0, sensitivity=1.0, accountant=acct) == Laplace(epsilon=1.0, sensitivity=1.0)
    with pytest.raises(ParameterError, match="'accountant' parameter of Laplace must be None or a BudgetAccountant"):
        Laplace(epsilon=1.0, sensitivity=1.0, accountant=3.0)


def test_averaging_repeated_releases_is_stopped_by_the_budget():
    # Issue 19 item 8, the attack: 200 releases of the same value at epsilon = 1, averaged,
    # cut the error tenfold. With one accountant of budget 5 only 5 releases are made.
    from sdckit.dp import BudgetAccountant, BudgetExceeded

    secret = np.array([42.0])
    acct = BudgetAccountant(5.0)
    mech = Laplace(epsilon=1.0, sensitivity=10.0, accountant=acct)
    rng = np.random.default_rng(5)
    releases, refused = [], 0
    for _ in range(200):
        try:
            releases.append(mech.randomise(secret, rng)[0])
        except BudgetExceeded:
            refused += 1
    assert len(releases) == 5 and refused == 195
    # Without the accountant the average of 200 releases is within 10 * sqrt(2/200) = 1 of the
    # secret; the attacker now has 5 draws of scale 10 (standard error 6.3).
    assert acct.remaining == 0


# --------------------------------------------------------------------------- Gaussian (item 14)
def profile_by_integration(sigma: float, sensitivity: float, epsilon: float) -> float:
    """delta = integral of max(0, p(y) - e^eps q(y)), p = N(0, sigma^2), q = N(sensitivity, sigma^2):
    the definition of the privacy profile, integrated numerically (independent of the closed form)."""
    from scipy import integrate

    p = stats.norm(0, sigma).pdf
    q = stats.norm(sensitivity, sigma).pdf
    # p > e^eps q exactly left of the crossing point c.
    c = sensitivity / 2 - epsilon * sigma**2 / sensitivity
    value, _ = integrate.quad(lambda y: p(y) - math.exp(epsilon) * q(y), c - 40 * sigma, c,
                              epsabs=0, epsrel=1e-10, limit=200)
    return value


@pytest.mark.parametrize(("epsilon", "delta", "sensitivity"), [
    (1.0, 1e-5, 1.0), (0.1, 1e-6, 2.0), (4.0, 1e-8, 0.5), (10.0, 1e-3, 1.0),
])
def test_analytic_sigma_is_the_smallest_that_meets_delta(epsilon, delta, sensitivity):
    from sdckit.dp.gaussian import analytic_sigma

    sigma = analytic_sigma(epsilon, delta, sensitivity)
    assert profile_by_integration(sigma, sensitivity, epsilon) <= delta * (1 + 1e-6)
    assert profile_by_integration(sigma * 0.999, sensitivity, epsilon) > delta
    if epsilon < 1:  # the classical bound (Dwork & Roth, Theorem A.1) is larger
        assert sigma < math.sqrt(2 * math.log(1.25 / delta)) * sensitivity / epsilon


def discrete_gaussian_pmf(support: np.ndarray, variance: float) -> np.ndarray:
    wide = np.arange(-60 * math.ceil(math.sqrt(variance)) - 60, 60 * math.ceil(math.sqrt(variance)) + 61)
    norm = np.exp(-wide.astype(float) ** 2 / (2 * variance)).sum()
    return np.exp(-support.astype(float) ** 2 / (2 * variance)) / norm


@pytest.mark.parametrize(("t", "c"), [(1, 1), (2, 1), (3, 3), (1, 5)])
def test_discrete_gaussian_matches_its_pmf(t, c):
    from sdckit.dp.exact_samplers import discrete_gaussian

    draws = discrete_gaussian(40_000, t, c, np.random.default_rng(t * 7 + c))
    half = int(4 * math.sqrt(t * c)) + 1
    support = np.arange(-half, half + 1)
    expected = discrete_gaussian_pmf(support, t * c) * len(draws)
    observed = np.array([(draws == v).sum() for v in support])
    chi2 = stats.chisquare(np.append(observed, len(draws) - observed.sum()),
                           np.append(expected, len(draws) - expected.sum()))
    assert chi2.pvalue > 1e-3


def test_discrete_gaussian_of_large_variance_is_gaussian():
    from sdckit.dp.exact_samplers import discrete_gaussian

    t, c = 2**20 + 3, 2**20 - 5
    draws = discrete_gaussian(40_000, t, c, np.random.default_rng(9)).astype(float)
    sigma = math.sqrt(t * c)
    assert stats.kstest(draws / sigma, "norm").pvalue > 1e-3
    assert draws.var() == pytest.approx(t * c, rel=0.03)  # s.e. sqrt(2/n) = 0.7%


def test_the_discrete_delta_bound_holds_by_brute_force():
    # Exact delta of the discrete Gaussian (sum of max(0, p(y) - e^eps p(y - d)) over the
    # integers) for every integer shift d up to the sensitivity, against the bound sdckit
    # calibrates with.
    from sdckit.dp.gaussian import discrete_delta_bound, gaussian_delta

    for variance, sens, epsilon in ((400, 10, 1.0), (900, 3, 0.5), (100, 7, 2.0)):
        y = np.arange(-4000, 4001)
        pmf = discrete_gaussian_pmf(y, variance)
        bound = discrete_delta_bound(math.sqrt(variance), sens, epsilon)
        for d in range(1, sens + 1):
            shifted = discrete_gaussian_pmf(y - d, variance)
            exact_delta = np.maximum(pmf - math.exp(epsilon) * shifted, 0).sum()
            assert exact_delta <= bound
        # and the bound is close to the continuous profile, not vacuous
        assert bound < 1.5 * gaussian_delta(math.sqrt(variance), sens, epsilon) + 0.01


def test_gaussian_noise_has_the_calibrated_normal_distribution():
    from sdckit.dp import Gaussian

    mech = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=2.0)
    assert mech.analytic_sigma <= mech.sigma <= mech.analytic_sigma * (1 + 1e-4)
    noise = mech.noise(20_000, seed=4)
    assert stats.kstest(noise / mech.sigma, "norm").pvalue > 1e-3
    out = mech.randomise(np.full(20_000, 3.0), seed=5)
    assert stats.kstest((out - 3.0) / mech.sigma, "norm").pvalue > 1e-3
    # Every output lies on the input-independent grid, whatever the input.
    for x in (0.0, 1.0 / 3.0, 1e6 + 0.1):
        assert np.all(np.fmod(mech.randomise(np.full(500, x), seed=6), mech.grid) == 0)
    assert mech.radius(0.95) == pytest.approx(1.959964 * mech.sigma)
    np.testing.assert_array_equal(mech.randomise([1.0, 2.0], seed=7), mech.randomise([1.0, 2.0], seed=7))


@pytest.mark.parametrize(("param", "value"), [
    ("epsilon", 0), ("epsilon", math.inf), ("delta", 0), ("delta", 1.0), ("delta", None),
    ("sensitivity", -1.0), ("sensitivity", None),
])
def test_bad_gaussian_parameters_are_refused(param, value):
    from sdckit.dp import Gaussian

    params = {"epsilon": 1.0, "delta": 1e-6, "sensitivity": 1.0, param: value}
    with pytest.raises(ParameterError, match=rf"The '{param}' parameter of Gaussian must be"):
        Gaussian(**params)
