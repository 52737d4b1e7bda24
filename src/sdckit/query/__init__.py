"""The protected query service (DESIGN.md section 7; seed 002 section 4.6.2)."""
