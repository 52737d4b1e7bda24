"""Sequential CART synthesis in the manner of R's synthpop (Reiter 2005; Nowok, Raab &
Dibben 2016), with scikit-learn trees."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from sdckit.core.errors import SchemaError
from sdckit.core.method import register
from sdckit.core.params import Interval, IsNone, StrList
from sdckit.core.ranks import order_values
from sdckit.core.schema import Column, Kind, Schema
from sdckit.synthetic.base import Synthesizer


def sample_from_leaves(train_leaves: np.ndarray, new_leaves: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each new record, a training record drawn uniformly from the same leaf (its row)."""
    by_leaf = np.argsort(train_leaves, kind="stable")
    leaves, start, count = np.unique(train_leaves[by_leaf], return_index=True, return_counts=True)
    slot = np.searchsorted(leaves, new_leaves)
    offset = np.floor(rng.random(len(new_leaves)) * count[slot]).astype(np.int64)
    return by_leaf[start[slot] + offset]


def _encode(series: pd.Series, column: Column, categories: pd.Index | None) -> np.ndarray:
    """Predictor columns for a tree: one-hot for a nominal column, order values otherwise."""
    if column.kind is Kind.NOMINAL:
        return (categories.get_indexer(series)[:, None] == np.arange(len(categories))).astype(np.float32)
    return order_values(series, column)[:, None]


@register
@dataclass(frozen=True)
class CartSynthesizer(Synthesizer):
    """Sequential CART synthesis: each column drawn from a tree on the columns before it.

    In the manner of R's synthpop (``method = "cart"``): the first column of ``order`` is
    drawn from its marginal (a bootstrap sample of its observed values); for every next
    column a decision tree is fitted on the original data, with the previous columns as
    predictors, and each synthetic record takes a value drawn at random from the original
    values in the leaf its (already synthetic) previous columns fall into. Values are
    therefore always observed values, and the dependence of each column on the earlier ones
    is kept as far as the tree captures it.

    Trees: :class:`sklearn.tree.DecisionTreeRegressor` for numeric, ordinal (on its category
    order) and date columns, :class:`~sklearn.tree.DecisionTreeClassifier` for nominal ones;
    nominal predictors are one-hot encoded, the others enter as their ordered values. Each
    tree gets an integer seed drawn from the run's generator, so a seed reproduces the run.

    Parameters
    ----------
    min_samples_leaf : int >= 1
        Fewest original records per leaf (synthpop's ``minbucket``, default 5). Larger
        leaves mean less detail and lower risk of reproducing a rare record.
    max_depth : int >= 1, optional
        Depth limit of every tree; default none.
    order : list of str, optional
        The order in which columns are synthesized (the first is drawn from its marginal);
        columns not listed follow in their data order. Names must be targeted columns.
    n : int >= 1, optional
        Records to release; default as many as the input.
    columns : list of str, optional
        Columns to synthesize, of any kind; default every non-identifier column. Other
        columns are dropped (see :class:`~sdckit.synthetic.base.Synthesizer`).

    Notes
    -----
    ``nan_policy="error"``. Output values are original values, so dtypes are kept. A leaf
    with few distinct values can reproduce a rare original combination: check the release
    with the permutation-paradigm measures.

    References
    ----------
    Reiter (2005), "Using CART to generate partially synthetic public use microdata";
    Nowok, Raab & Dibben (2016), "synthpop: bespoke creation of synthetic data in R";
    seed 002 section 4.6.3, synthetic microdata (Rubin); seed 001 section 5.
    """

    min_samples_leaf: int = 5
    max_depth: int | None = None
    order: tuple[str, ...] | None = None
    name: ClassVar[str] = "cart_synthesizer"
    constraints: ClassVar = {
        **Synthesizer.constraints,
        "min_samples_leaf": Interval(int, 1, None),
        "max_depth": [IsNone(), Interval(int, 1, None)],
        "order": [IsNone(), StrList()],
    }
    kinds: ClassVar = frozenset(Kind)
    example: ClassVar = {"min_samples_leaf": 5, "order": ["age", "income"]}

    def synthesize(
        self, data: pd.DataFrame, schema: Schema, size: int, rng: np.random.Generator
    ) -> pd.DataFrame:
        # imported here: scikit-learn takes seconds to import, which every CLI call would pay
        from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

        sequence = self._sequence(tuple(data.columns))
        n = len(data)
        first = sequence[0]
        picked = {first: rng.integers(0, n, size)}  # bootstrap of the first column
        train: list[np.ndarray] = []
        synth: list[np.ndarray] = []
        previous = first
        for name in sequence[1:]:
            column = schema[previous]
            categories = pd.Index(pd.unique(data[previous])) if column.kind is Kind.NOMINAL else None
            train.append(_encode(data[previous], column, categories))
            synth.append(_encode(data[previous].iloc[picked[previous]], column, categories))
            x_train, x_synth = np.hstack(train), np.hstack(synth)
            target = schema[name]
            model = DecisionTreeClassifier if target.kind is Kind.NOMINAL else DecisionTreeRegressor
            tree = model(
                min_samples_leaf=self.min_samples_leaf,
                max_depth=self.max_depth,
                random_state=int(rng.integers(0, 2**31 - 1)),
            )
            y = pd.factorize(data[name])[0] if target.kind is Kind.NOMINAL else order_values(data[name], target)
            tree.fit(x_train, y)
            picked[name] = sample_from_leaves(tree.apply(x_train), tree.apply(x_synth), rng)
            previous = name
        return pd.DataFrame({c: data[c].iloc[picked[c]].reset_index(drop=True) for c in data.columns})

    def _sequence(self, columns: tuple[str, ...]) -> tuple[str, ...]:
        given = self.order or ()
        outside = [c for c in given if c not in columns]
        if outside:
            raise SchemaError(
                f"CartSynthesizer's order names {', '.join(map(repr, outside))}, which it does "
                f"not synthesize (its columns: {', '.join(columns)}); fix order or columns."
            )
        return tuple(given) + tuple(c for c in columns if c not in given)
