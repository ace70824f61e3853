"""Comparing two tensors: alignment, the chunked fold, streaming, task impact (docs/architecture.md)."""
