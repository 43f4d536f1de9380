"""The release: the Hub-style folder writer, provenance, the card, publishing and showing."""
