"""Differential privacy: mechanisms, budget accounting, (k,epsilon)-anonymity (seeds 002, 004)."""
