"""Signals: what a method computes per row (LM scores, PVI, program atoms and compounds, lengths)."""
