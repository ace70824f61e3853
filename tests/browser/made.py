"""Inputs the browser tests make with real NumPy: printed text and saved files."""

from __future__ import annotations

import io
import sys

import numpy as np


def numpy_text(array: np.ndarray) -> str:
    """What a REPL prints, but lossless: shortest round-trip floats, no ``...`` summary."""
    with np.printoptions(floatmode="unique", threshold=sys.maxsize):
        return repr(array)


def npy_bytes(array: np.ndarray, version: tuple[int, int] | None = None) -> bytes:
    """``np.save`` output, or ``write_array`` at a given format version."""
    buffer = io.BytesIO()
    if version is None:
        np.save(buffer, array)
    else:
        np.lib.format.write_array(buffer, array, version=version)
    return buffer.getvalue()


def npz_bytes(**arrays: np.ndarray) -> bytes:
    """``np.savez`` output holding the named arrays."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()
