"""Numbers at the bit level: ULP, the tolerance test and its presets, how figures are written (docs/architecture.md)."""
