"""Pieces of the pasted-text parser; :func:`perpendis.inputs.parse.parse_text` is the entry point."""
