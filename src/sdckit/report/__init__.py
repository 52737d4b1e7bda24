"""Transparency: the release manifest (and, later, plots and the HTML report)."""
