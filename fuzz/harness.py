"""What both atheris fuzzers share: the check on each input, and a keep-going mode.

libFuzzer stops at the first crash, and its ``-fork`` mode does not run atheris
scripts.  With ``PERPENDIS_FUZZ_FINDINGS=<file>`` set, an unexpected exception is
instead written to that file (once per distinct exception type and line, with the
input in base64 to replay it) and the run goes on, so one long run reports every
distinct bug.  Hangs and excessive memory still stop the run (``-timeout``,
``-rss_limit_mb``), since an input that needs them cannot be survived in-process.
"""

from __future__ import annotations

import base64
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py"))

_FINDINGS = os.environ.get("PERPENDIS_FUZZ_FINDINGS")
_seen: set[tuple[str, str, int]] = set()


def checked(parse: Callable[[bytes], list], input_error: type, tensor: type, most: int | None = None):
    """A libFuzzer target: ``parse(data)`` must return tensors (at most ``most``) or raise ``input_error``."""

    def target(data: bytes) -> None:
        try:
            tensors = parse(data)
            if not (isinstance(tensors, list) and all(isinstance(t, tensor) for t in tensors)):
                raise AssertionError(f"returned {tensors!r:.200}")
            if most is not None and not 1 <= len(tensors) <= most:
                raise AssertionError(f"returned {len(tensors)} tensors")
        except input_error as err:
            if not err.message.strip():
                raise AssertionError("an InputError without a message") from err
        except Exception as err:
            if _FINDINGS is None:
                raise
            _record(err, data)

    return target


def _record(err: Exception, data: bytes) -> None:
    frame = traceback.extract_tb(err.__traceback__)[-1]
    key = (type(err).__name__, frame.filename, frame.lineno)
    if key in _seen:
        return
    _seen.add(key)
    with open(_FINDINGS, "a", encoding="utf-8") as out:
        out.write(f"{key[0]} at {frame.filename}:{frame.lineno}: {str(err)[:200]!r}\n")
        out.write(f"  input (base64): {base64.b64encode(data).decode()}\n")
