"""Bytes or pasted text to tensors: file formats, REPL text, dtype adoption (docs/architecture.md)."""
