"""Coverage-guided fuzzing of the pasted-text parser (``perpendis.inputs.parse.parse_text``) with atheris.

The fuzzer's bytes are read as UTF-8 (invalid sequences become U+FFFD, as a browser's
paste would), so mutations reach look-alike characters as well as ASCII.  Every input
must come out as one or two tensors or as ``InputError``; see README.md.

    python fuzz/atheris_text.py fuzz/corpus/text -max_total_time=600 -timeout=10 -rss_limit_mb=3072
"""

from __future__ import annotations

import sys

import atheris
from harness import checked

with atheris.instrument_imports(include=["perpendis"]):
    from perpendis.errors import InputError
    from perpendis.inputs.parse import parse_text
    from perpendis.inputs.tensor import Tensor

if __name__ == "__main__":
    parse = checked(lambda data: parse_text(data.decode("utf-8", "replace")), InputError, Tensor, most=2)
    atheris.Setup(sys.argv, parse)
    atheris.Fuzz()
