"""The TypeScript client generator's modules (run `generate.py`, not these)."""
