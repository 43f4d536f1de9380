"""What combines a release with its evidence and its readers: the harness exports (lm-evaluation-harness, inspect-ai,
Croissant) and which files they wrote, ``verify``, ``diff``, ``push``, ``clean`` (a release less its contaminated
rows) and ``against`` (a recipe's contamination check in the card). Above both :mod:`split_builders.release` (the
format) and :mod:`split_builders.evidence`."""
