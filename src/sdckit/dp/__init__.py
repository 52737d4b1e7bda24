"""Differential privacy: mechanisms, budget accounting, (k,epsilon)-anonymity (seeds 002, 004)."""

from sdckit.dp.accountant import BudgetAccountant, BudgetExceeded
from sdckit.dp.confidence import ConfidenceSuppression, confidence_suppression
from sdckit.dp.gaussian import Gaussian
from sdckit.dp.kepsilon import KEpsilonAnonymity
from sdckit.dp.local import LaplaceNoise
from sdckit.dp.measures import ErrorPrediction, expected_relative_error, linking_risk
from sdckit.dp.mechanisms import Geometric, Laplace

__all__ = [
    "BudgetAccountant",
    "BudgetExceeded",
    "ConfidenceSuppression",
    "ErrorPrediction",
    "Gaussian",
    "Geometric",
    "KEpsilonAnonymity",
    "Laplace",
    "LaplaceNoise",
    "confidence_suppression",
    "expected_relative_error",
    "linking_risk",
]
