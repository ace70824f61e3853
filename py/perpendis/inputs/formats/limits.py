"""Resource caps for reading files and pasted text, so a hostile, broken or merely huge
input fails fast instead of exhausting memory or time.

Every file reaches us from someone's disk or browser and is parsed before anyone has
looked at it, and in the browser an out-of-memory kills the whole worker.  Each cap
below is checked against what a file *declares* (a header, a zip directory, a shape)
before anything that size is allocated, and errors name the cap, so a user with a
genuinely big file knows which limit they hit.

``NPY_MAX_HEADER_BYTES``
    Longest ``.npy`` header accepted; NumPy's own ``max_header_size`` default, since
    the header is evaluated as a Python literal.
``NPY_HEADER_PREFIX``
    Bytes a streaming reader should read first: enough to hold any accepted header.
``MAX_ELEMENTS``
    Most elements in one tensor (2**31): beyond what a 32-bit browser heap can hold,
    and it stops absurd declared shapes before any size arithmetic overflows.  An
    empty shape is held to it too, through the product of its nonzero sides: NumPy
    refuses ``(2**62, 0)`` although it has no elements.
``MAX_DIMS``
    Most dimensions of a tensor: NumPy's own limit.
``ZIP_MAX_MEMBERS``, ``ZIP_MAX_TOTAL_BYTES``
    Most members, and most uncompressed bytes over all members, of a ``.npz`` or
    ``torch.save`` archive, read from the zip directory before inflating.
``ZIP_MAX_RATIO``, ``ZIP_RATIO_MIN_BYTES``
    Largest uncompressed/compressed ratio of a member larger than the minimum (zip
    bombs); small members are exempt because an all-zero array legitimately compresses
    a thousandfold.
``SAFETENSORS_MAX_HEADER_BYTES``
    Longest safetensors JSON header (100 MB, the reference implementation's cap).
``PICKLE_MAX_BYTES``, ``PICKLE_MAX_DEPTH``
    Largest ``data.pkl`` inside a ``torch.save`` file, and deepest nesting of
    containers walked when collecting its tensors.
``JSON_MAX_DEPTH``
    Deepest nesting walked in a Polygraphy JSON file.
``TEXT_MAX_CHARS``
    Longest text parsed (64 Mi characters, about 3.4 million float32 values printed in
    full).  Parsing holds about eight times the text in memory at its peak (500 MiB at
    the cap, measured natively), beside the text's own copies on the way in; the page's
    32-bit heap holds at most 4 GiB, and a tab often gets less, so four times the cap
    would not reliably fit.  A ``.npy`` file holds the same values in a fifth of the
    bytes and is read without parsing, so beyond the cap the error points there.
"""

from __future__ import annotations

import math

from ...errors import InputError

NPY_MAX_HEADER_BYTES = 10_000
NPY_HEADER_PREFIX = 12 + NPY_MAX_HEADER_BYTES
MAX_ELEMENTS = 2**31
MAX_DIMS = 64
ZIP_MAX_MEMBERS = 100_000
ZIP_MAX_TOTAL_BYTES = 2**31
ZIP_MAX_RATIO = 1000
ZIP_RATIO_MIN_BYTES = 2**20
SAFETENSORS_MAX_HEADER_BYTES = 100_000_000
PICKLE_MAX_BYTES = 64 * 2**20
PICKLE_MAX_DEPTH = 64
JSON_MAX_DEPTH = 64
TEXT_MAX_CHARS = 64 * 2**20


def element_count(shape: object, what: str) -> int:
    """Number of elements of a declared shape, refusing malformed shapes, ``MAX_DIMS`` and ``MAX_ELEMENTS``.

    ``shape`` comes straight from a file, so it is checked to be a sequence of
    non-negative integers (bools excluded) before any arithmetic on it.
    """
    if not isinstance(shape, (tuple, list)) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
    ):
        raise InputError(f"{what} declares an invalid shape {shape!r}; a shape is a list of non-negative integers")
    if len(shape) > MAX_DIMS:
        raise InputError(f"{what} declares {len(shape)} dimensions, more than the limit MAX_DIMS = {MAX_DIMS}")
    count = math.prod(shape)
    if count > MAX_ELEMENTS:
        raise InputError(
            f"{what} declares {count} elements, more than the limit MAX_ELEMENTS = {MAX_ELEMENTS}; "
            "compare a slice of it instead"
        )
    span = math.prod(n for n in shape if n)
    if span > MAX_ELEMENTS:
        raise InputError(
            f"{what} declares the empty shape {tuple(shape)}, whose nonzero sides multiply to {span}, more than "
            f"the limit MAX_ELEMENTS = {MAX_ELEMENTS}; NumPy cannot make such an array"
        )
    return count
