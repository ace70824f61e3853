"""One byte view over whatever buffer the caller hands in.

The browser passes file contents as a buffer that Python sees without a copy (a
``memoryview`` or a uint8 NumPy array), the CLI as ``bytes``.  Readers all work on a
flat ``memoryview`` of unsigned bytes so that slicing a payload out of a file never
copies it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import InputError

BytesLike = bytes | bytearray | memoryview | np.ndarray


def as_view(data: BytesLike) -> memoryview:
    """A flat, contiguous ``memoryview`` of unsigned bytes over ``data``, without copying."""
    if isinstance(data, np.ndarray) and (data.ndim != 1 or data.dtype != np.uint8):
        raise InputError(f"file contents must be a 1-D uint8 array, not {data.ndim}-D {data.dtype}")
    try:
        view = memoryview(data)
    except TypeError:
        raise InputError(f"file contents must be bytes, not {type(data).__name__}") from None
    if not view.c_contiguous:
        raise InputError("file contents must be one contiguous buffer")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


Reader = Callable[[int, int], BytesLike]
"""``read(offset, length)``: ``length`` bytes of one file from ``offset`` (fewer only at its end).

How a file too big to hold is read a part at a time: over a memory map (CLI), a
``Blob.slice`` (browser worker), or bytes already in memory (:func:`view_reader`).
"""


def view_reader(data: BytesLike) -> tuple[Reader, int]:
    """A reader over bytes already in memory, and their size; its slices share the buffer."""
    view = as_view(data)
    return (lambda offset, length: view[offset : offset + length]), len(view)
