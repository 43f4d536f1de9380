"""Causal-LM signals: model resolution, prompt templates, scoring and k-fold fine-tuning."""
