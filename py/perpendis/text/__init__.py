"""Pieces of the pasted-text parser; :func:`perpendis.parse.parse_text` is the entry point."""
