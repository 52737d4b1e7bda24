"""Synthetic-data generators (seed 001; seed 002 section 4.6.3)."""
