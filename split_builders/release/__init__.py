"""The release's format: the Hub-style folder reader and writer, provenance, the card and recipes. It imports
no evidence; what combines a release with evidence lives in :mod:`split_builders.publishing`."""
