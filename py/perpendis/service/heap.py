"""Growing a worker's heap ahead of a big comparison, while the user has yet to press Compare.

In the browser the WebAssembly heap grows as a comparison first needs memory, and the
new pages are touched for the first time while it runs: the first 16 M-element
comparison after load took 320-360 ms, against 210-250 ms once the heap had grown.  The
page asks for this when files are chosen (``app/main.js``), so that cost falls before
the click.  Memory freed in a WebAssembly heap stays in it, for the comparison to reuse.
Natively this is of no use, and nothing calls it.
"""

from __future__ import annotations

import numpy as np

RESERVE_FACTOR = 2
"""Heap a comparison needs per byte of its inputs: their copy, then the fold's samples and
temporaries (``bench/run.py``: peak_memory_ratio 1.9)."""

RESERVE_MAX = 384 << 20
"""Most bytes reserved: a pair too big to hold is streamed in a heap of under 400 MB."""


def reserve(input_bytes: int) -> int:
    """Write, then free, the memory a comparison of inputs of ``input_bytes`` will need; the bytes reserved."""
    size = min(max(input_bytes, 0) * RESERVE_FACTOR, RESERVE_MAX)
    if size:
        np.ones(size, dtype=np.uint8)
    return size
