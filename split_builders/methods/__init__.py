"""Split methods: one module per family, each implementing the split-method protocol."""
