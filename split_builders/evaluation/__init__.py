"""Evaluating models on behavioural splits (training losses)."""
