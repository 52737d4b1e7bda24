"""k-anonymity and its refinements: hierarchies, lattice search, Mondrian, criteria (seeds 003, 004)."""
