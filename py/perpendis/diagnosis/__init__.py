"""Findings and the verdict: what the folded numbers of a comparison mean (docs/architecture.md)."""
