"""Bytes as NumPy writes them to disk (``np.save``, ``np.savez``), for tests that hand the
core a file's contents without a file."""

from __future__ import annotations

import io

import numpy as np


def npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def npz(**arrays: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()
