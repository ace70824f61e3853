"""Captures of one network, paired layer by layer and bisected (docs/architecture.md)."""
