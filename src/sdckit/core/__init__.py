"""Foundations shared by every part of sdckit: errors, schema, parameters, methods, randomness.

Nothing in :mod:`sdckit.core` imports any other part of sdckit.
"""
