"""Coverage-guided fuzzing of the file readers (``perpendis.formats.read``) with atheris.

Every input must come out as tensors or as ``InputError``; any other exception is a
crash libFuzzer saves as ``crash-<sha1>``.  Hangs and huge allocations are caught by
libFuzzer's own ``-timeout`` and ``-rss_limit_mb``/``-malloc_limit_mb`` (see README.md).

    python fuzz/atheris_formats.py fuzz/corpus/formats -max_total_time=600 -timeout=10 -rss_limit_mb=3072
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py"))

with atheris.instrument_imports(include=["perpendis"]):
    from perpendis import formats
    from perpendis.errors import InputError
    from perpendis.tensor import Tensor


def test_one_input(data: bytes) -> None:
    try:
        tensors = formats.read(data, "fuzz.bin")
    except InputError as err:
        if not err.message.strip():
            raise AssertionError("an InputError without a message") from err
        return
    if not all(isinstance(t, Tensor) for t in tensors):
        raise AssertionError(f"formats.read returned {tensors!r}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
