"""Splitters: pure functions from a per-row signal to train/validation/test index sets (numpy, no I/O)."""
