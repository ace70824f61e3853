"""Stand-ins for what Pyodide hands the workers' Python (``perpendis.service.bridge``): a
JavaScript ``Uint8Array`` (its ``byteLength`` and ``assign_to``), a ``Blob`` (its ``size``
and ``name``), and ``app/boot.js``'s ``readSlice``.  Only these members are used there."""

from __future__ import annotations

import numpy as np


class View:
    """Pyodide's proxy of a JavaScript ``Uint8Array``, as the bridge uses it."""

    def __init__(self, data: bytes | np.ndarray) -> None:
        self.data = bytes(data)
        self.byteLength = len(self.data)

    def assign_to(self, array: np.ndarray) -> None:
        array[:] = np.frombuffer(self.data, np.uint8)


class Blob:
    """A file handed over unread: its name, size, and the slices read of it."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name, self.data, self.size = name, data, len(data)
        self.reads: list[tuple[int, int]] = []


def read_slice(blob: Blob, offset: int, length: int) -> View:
    """``readSlice(blob, start, length)``: a slice of a Blob, read synchronously."""
    blob.reads.append((offset, length))
    return View(blob.data[offset : offset + length])
