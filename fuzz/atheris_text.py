"""Coverage-guided fuzzing of the pasted-text parser (``perpendis.parse.parse_text``) with atheris.

The fuzzer's bytes are read as UTF-8 (invalid sequences become U+FFFD, as a browser's
paste would), so mutations reach look-alike characters as well as ASCII.  Every input
must come out as tensors or as ``InputError``.

    python fuzz/atheris_text.py fuzz/corpus/text -max_total_time=600 -timeout=10 -rss_limit_mb=3072
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py"))

with atheris.instrument_imports(include=["perpendis"]):
    from perpendis.errors import InputError
    from perpendis.parse import parse_text
    from perpendis.tensor import Tensor


def test_one_input(data: bytes) -> None:
    try:
        tensors = parse_text(data.decode("utf-8", "replace"))
    except InputError as err:
        if not err.message.strip():
            raise AssertionError("an InputError without a message") from err
        return
    if not (1 <= len(tensors) <= 2 and all(isinstance(t, Tensor) for t in tensors)):
        raise AssertionError(f"parse_text returned {tensors!r}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
