"""Perpendis: tell whether two tensors that should be equal differ by rounding or by a bug."""

__version__ = "0.1.0"
