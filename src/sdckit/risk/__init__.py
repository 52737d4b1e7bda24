"""Disclosure-risk measures (record linkage, uniqueness, permutation-paradigm summaries)."""
