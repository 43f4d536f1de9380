"""Pointwise V-information: cross-fitted PVI (:mod:`.crossfit`), the predictive families that compute
it (:mod:`.families`) and the PVI columns and summaries of a release (:mod:`.columns`)."""
