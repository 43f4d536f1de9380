"""Pointwise V-information: cross-fitted PVI and the predictive families that compute it."""
