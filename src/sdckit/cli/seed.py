"""``sdckit seed``: print a fresh strong seed (128 bits of OS entropy, 32 hex digits)."""

from __future__ import annotations

from sdckit.cli.app import app


@app.command()
def seed() -> None:
    """Print a strong secret seed for a recipe (seed = "<it>"). Keep it: it reproduces the release."""
    from sdckit.core.random import new_seed

    print(new_seed())
