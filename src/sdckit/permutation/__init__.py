"""The permutation paradigm: reverse mapping, permutation distance, intruder linkage (seeds 000, 001)."""
