"""Differential privacy: mechanisms, budget accounting, (k,epsilon)-anonymity (seeds 002, 004)."""

from sdckit.core.lazy import lazy_exports

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

#: Where each public name lives; it is imported on first use (issue 28 item 4, start-up).
__getattr__, __dir__ = lazy_exports(__name__, {
    "BudgetAccountant": "sdckit.dp.accountant",
    "BudgetExceeded": "sdckit.dp.accountant",
    "ConfidenceSuppression": "sdckit.dp.confidence",
    "ErrorPrediction": "sdckit.dp.measures",
    "Gaussian": "sdckit.dp.gaussian",
    "Geometric": "sdckit.dp.mechanisms",
    "KEpsilonAnonymity": "sdckit.dp.kepsilon",
    "Laplace": "sdckit.dp.mechanisms",
    "LaplaceNoise": "sdckit.dp.local",
    "confidence_suppression": "sdckit.dp.confidence",
    "expected_relative_error": "sdckit.dp.measures",
    "linking_risk": "sdckit.dp.measures",
})
