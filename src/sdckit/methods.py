"""The catalogue of registered methods, for recipes and the CLI.

Importing a method's module registers it. :func:`available` imports every method package, so
that it sees every method sdckit has; :func:`get_method` and :func:`method_class` import only
the module of the method they are asked for (:data:`METHOD_MODULES`), so that a recipe of
additive noise does not load numba, scikit-learn or the k-anonymity search (issue 28 item 4).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from sdckit.core.method import Method, method_from_params, registered

#: Packages whose import registers methods. A new method package adds its name here.
METHOD_PACKAGES = ("sdckit.masking", "sdckit.synthetic", "sdckit.anonymity", "sdckit.dp")

#: The module that defines (and registers) each method, by its recipe name; a test holds it to
#: what :func:`available` finds. A new method adds its line here.
METHOD_MODULES = {
    "additive_noise": "sdckit.masking.noise",
    "cart_synthesizer": "sdckit.synthetic.cart",
    "correlated_noise": "sdckit.masking.noise",
    "data_shuffling": "sdckit.masking.shuffling",
    "full_domain_generalization": "sdckit.anonymity.fulldomain",
    "gaussian_copula_synthesizer": "sdckit.synthetic.copula",
    "generalize_to_node": "sdckit.anonymity.generalize",
    "global_recoding": "sdckit.masking.recoding",
    "k_epsilon_anonymity": "sdckit.dp.kepsilon",
    "laplace_noise": "sdckit.dp.local",
    "local_suppression": "sdckit.masking.suppression",
    "microaggregation": "sdckit.masking.microaggregation",
    "microaggregation_anonymity": "sdckit.anonymity.microaggregation",
    "mondrian": "sdckit.anonymity.mondrian",
    "multiplicative_noise": "sdckit.masking.noise",
    "multivariate_normal_synthesizer": "sdckit.synthetic.normal",
    "pram": "sdckit.masking.pram",
    "rank_swapping": "sdckit.masking.rankswap",
    "record_swapping": "sdckit.masking.recordswap",
    "rounding": "sdckit.masking.rounding",
    "sampling": "sdckit.masking.sampling",
    "top_bottom_coding": "sdckit.masking.topbottom",
}


def available() -> dict[str, type[Method]]:
    """Every registered method by its recipe name."""
    for package in METHOD_PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:  # the package imports a public name's module on first use (PEP 562)
            getattr(module, name)
    return registered()


def method_class(name: str) -> type[Method] | None:
    """The method registered as ``name`` (its module imported), or None if there is none."""
    if name in METHOD_MODULES:
        importlib.import_module(METHOD_MODULES[name])
        return registered().get(name)
    return available().get(name)


def get_method(name: str, params: Mapping[str, Any] | None = None) -> Method:
    """Build the method a recipe names, e.g. ``get_method("additive_noise", {"alpha": 0.1})``."""
    cls = method_class(name)
    registry = {name: cls} if cls is not None else available()  # an unknown name: the message lists them all
    return method_from_params(name, dict(params or {}), registry)
