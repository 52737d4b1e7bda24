"""The DP recipe the ledger tests run: Laplace noise on one column x in [0, 10]."""

from __future__ import annotations

from pathlib import Path

RECIPE = """\
seed = "{seed}"
{budget}
[input]
path = "{data}"
[schema]
confidential = ["x"]
[[method]]
name = "laplace_noise"
epsilon = {epsilon}
bounds = {{x = [0.0, 10.0]}}
[output]
dir = "out"
name = "{name}"
[report]
enabled = false
"""


def write_dp_recipe(path: Path, data: str, *, budget: str = "", epsilon: str = "1.0", name: str = "release") -> str:
    """Write the recipe to ``path`` (a strong seed, the release named ``name``); its path as text."""
    path.write_text(RECIPE.format(seed="ab" * 16, budget=budget, data=data, epsilon=epsilon, name=name))
    return str(path)
