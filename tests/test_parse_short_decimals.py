"""The short-decimal reader: the values ``np.fromstring`` reads, on what real printers print; the rest left to it."""

from __future__ import annotations

import sys
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from perpendis.errors import InputError
from perpendis.inputs.parse import parse_text
from perpendis.inputs.text import numbers, short_decimals
from perpendis.inputs.text.grid import blank, token_bounds

shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6)
arrays = st.sampled_from([np.float16, np.float32, np.float64]).flatmap(
    lambda dtype: hnp.arrays(dtype, shapes, elements=hnp.from_dtype(np.dtype(dtype), allow_nan=True))
)


def tokens_of(text: str) -> numbers.Tokens:
    flat = blank(text.encode("ascii"), commas=True)
    return numbers.Tokens(flat, token_bounds(flat))


def parsed_both_ways(text: str) -> tuple[list, list]:
    """``parse_text`` as it is, and with every text left to ``np.fromstring``."""
    fast = parse_text(text)
    with mock.patch.object(numbers, "short_decimals", lambda tokens: None):
        slow = parse_text(text)
    return fast, slow


def assert_same(fast: list, slow: list) -> None:
    assert len(fast) == len(slow)
    for a, b in zip(fast, slow, strict=True):
        assert a.describe() == b.describe()
        assert a.array.dtype == b.array.dtype and a.array.tobytes() == b.array.tobytes()


@settings(max_examples=200, deadline=None)
@given(
    arrays,
    st.integers(1, 17),
    st.sampled_from(["maxprec", "fixed", "unique", "maxprec_equal"]),
    st.booleans(),
    st.sampled_from(["-", "+", " "]),
)
@pytest.mark.slow
def test_numpy_repr_reads_the_same_with_and_without_the_short_path(array, precision, floatmode, suppress, sign):
    with np.printoptions(threshold=sys.maxsize, precision=precision, floatmode=floatmode, suppress=suppress, sign=sign):
        text = repr(array)
    assert_same(*parsed_both_ways(text))


def test_real_prints_take_the_short_path_and_read_as_numpy_does():
    values = np.random.default_rng(3).standard_normal(3000).astype(np.float32)
    values[:4] = [0.0, -0.0, 1e-5, -12345.678]
    with np.printoptions(threshold=sys.maxsize):
        texts = [repr(values), repr(values.reshape(30, 100))]
    with np.printoptions(threshold=sys.maxsize, precision=4, floatmode="fixed"):
        texts.append(np.array2string(values.reshape(300, 10), separator=", ", formatter=None))
    texts.append("[" + ", ".join(f"{v:.4e}" for v in values) + "]")  # PyTorch's scientific print
    for text in texts:
        tokens = tokens_of(text[text.index("[") : text.rindex("]") + 1])
        short = short_decimals.short_decimals(tokens)
        assert short is not None, text[:80]
        expected = np.fromstring(tokens.flat, sep=",")
        assert short.tobytes() == expected.tobytes()
        assert_same(*parsed_both_ways(text))


@pytest.mark.parametrize(
    "token",
    [
        "0.12345678901",  # more fractional digits than fit below 2**53
        "12345678.5",  # more whole digits
        "1e5",  # no point
        "+1.5",
        ".5",
        "-.5",
        "1.5e-30",  # beyond 10**22
        "1.5e+1234",
        "1.5e",
        "1.5e+",
        "1.5.2",
        "nan",
        "-inf",
        "1_0.5",
    ],
)
def test_other_tokens_are_left_to_numpy(token):
    text = f"[0.5, {token}, -2.25]"
    assert short_decimals.short_decimals(tokens_of(text)) is None
    assert outcome(lambda: parse_text(text)) == outcome(lambda: parsed_both_ways(text)[1])


def outcome(parse) -> tuple[str, object]:
    """The values and report of a parse, or its error message."""
    try:
        return "parsed", [(t.describe(), t.array.tobytes()) for t in parse()]
    except InputError as error:
        return "refused", str(error)
