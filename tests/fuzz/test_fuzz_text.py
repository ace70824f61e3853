"""Fuzzing the pasted-text parser: real ``repr`` text from NumPy and PyTorch (made here,
and the committed fixtures), mutated; look-alike characters; bracket depth bombs;
dtypes that contradict the values.

Text NumPy prints with ``floatmode="unique"`` is lossless, so it must parse to the
exact array; text whose only change is a typographic look-alike (U+2212 minus, no-break
or ideographic spaces, zero-width characters) must parse to what the plain text does.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from fuzzkit import FUZZ, assert_same, logical_bits, outcome
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from perpendis.inputs.parse import parse_text
from perpendis.numerics.bits import to_float64

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"
COMMITTED = [p.read_text() for p in sorted(FIXTURES.glob("*.repr*.txt"))]
NUMPY_DTYPES = ["float16", "float32", "float64", "int8", "int32", "int64", "uint8", "uint16", "bool", "complex64"]
TORCH_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int64, torch.bool]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)


@st.composite
def numpy_text(draw) -> tuple[str, str, np.ndarray]:
    """``repr`` (or ``print``, ``tolist``) of a NumPy array, printed losslessly, and the form used."""
    array = draw(hnp.arrays(np.dtype(draw(st.sampled_from(NUMPY_DTYPES))), SHAPES))
    form = draw(st.sampled_from(["repr", "str", "tolist"]))
    with np.printoptions(floatmode="unique", threshold=sys.maxsize, linewidth=draw(st.integers(20, 200))):
        text = {"repr": repr, "str": str, "tolist": lambda a: repr(a.tolist())}[form](array)
    return text, form, array


@st.composite
def torch_text(draw) -> str:
    """``repr`` of a torch tensor, printed with torch's own options (often lossy)."""
    dtype = draw(st.sampled_from(TORCH_DTYPES))
    values = draw(hnp.arrays(np.float64, SHAPES, elements=st.floats(-1e6, 1e6)))
    tensor = torch.from_numpy(values).to(dtype)
    options = torch._tensor_str.PRINT_OPTS
    saved = (options.precision, options.sci_mode)
    torch.set_printoptions(precision=draw(st.integers(1, 12)), sci_mode=draw(st.sampled_from([None, True, False])))
    try:
        return repr(tensor)
    finally:
        torch.set_printoptions(precision=saved[0], sci_mode=saved[1])


def any_text() -> st.SearchStrategy[str]:
    return numpy_text().map(lambda sample: sample[0]) | torch_text() | st.sampled_from(COMMITTED)


def as_printed(array: np.ndarray) -> np.ndarray:
    """``array`` with every NaN made the canonical quiet NaN: text says ``nan`` whatever the
    NaN's sign and payload, so that is all a parser can give back."""
    if array.dtype.kind == "c":
        out = np.empty_like(array)
        out.real, out.imag = as_printed(array.real), as_printed(array.imag)
        return out
    if array.dtype.kind == "f":
        return np.where(np.isnan(array), array.dtype.type(np.nan), array)
    return array


@FUZZ
@given(numpy_text())
def test_lossless_numpy_text_parses_exactly(sample):
    """A repr names its dtype, so every bit must come back; print and tolist text do not,
    so their values, taken back to the array's dtype, must."""
    text, form, array = sample
    result = outcome(parse_text, text)
    assert result.error is None, f"{result.error} for {text!r}"
    [tensor] = result.tensors
    if form == "repr":
        assert_same(tensor, as_printed(array))
        return
    assert tensor.size == array.size * (2 if array.dtype.kind == "c" else 1)
    if array.ndim and array.size and array.dtype.kind != "c":  # "[]" cannot say (0, 3) from (0,)
        values = to_float64(tensor.array, tensor.fmt) if tensor.fmt.is_float else tensor.array
        np.testing.assert_array_equal(values.astype(array.dtype), array)


@FUZZ
@given(torch_text())
def test_torch_text_parses(text):
    result = outcome(parse_text, text)
    assert result.error is None, f"{result.error} for {text!r}"


LOOK_ALIKE_SPACES = ["\u00a0", "\u2009", "\u202f", "\u3000", "\u2007", "\t"]
ZERO_WIDTH = ["\u200b", "\ufeff", "\u2060"]


@FUZZ
@given(any_text(), st.sampled_from(LOOK_ALIKE_SPACES), st.sampled_from(ZERO_WIDTH), st.booleans(), st.booleans())
def test_look_alikes_read_as_the_plain_text(text, space, zero_width, crlf, prompts):
    plain = outcome(parse_text, text)
    fancy = text.replace("-", "\u2212").replace(" ", space)
    fancy = zero_width + fancy.replace(",", "," + zero_width)
    if crlf:
        fancy = fancy.replace("\n", "\r\n")
    if prompts:
        fancy = ">>> x\n" + fancy
    result = outcome(parse_text, fancy)
    assert (result.error is None) == (plain.error is None), (plain.error, result.error)
    for ours, theirs in zip(result.tensors or [], plain.tensors or [], strict=True):
        assert (ours.format, ours.shape) == (theirs.format, theirs.shape)
        np.testing.assert_array_equal(logical_bits(ours), logical_bits(theirs))


HOSTILE = [
    "[", "]", "(", ")", ",", ".", "-", "+", "e", "E", "j", "nan", "inf", "-inf", "...", "\u2026", "\u2212", "\u00a0",
    "\uff11", "\uff0e", "\u0660", "\x00", "\r", "\n", "\t", ">>> ", "Out[3]: ", "dtype=", "dtype=object", "torch.",
    "size=(10000000000, 10000000000)", "True", "False", "0x1p3", "1e309", "9" * 400, "<script>", "'", '"', "\U0001f600",
    "\ud800", "\x1c", "\x1e", "\x1f", "\x0b", "\x0c", "\x85", "\u2028",
    "tensor(", "array(", "np.float32(", "masked_array(", "<tf.Tensor: shape=(2,), dtype=float32, numpy=",
]  # fmt: skip


@st.composite
def mutated_text(draw) -> str:
    text = draw(any_text())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "replace", "truncate", "dtype"]))
        if kind == "insert":
            text = text[:at] + draw(st.sampled_from(HOSTILE) | st.text(max_size=3)) + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 8)) :]
        elif kind == "replace":
            text = text[:at] + draw(st.sampled_from(HOSTILE)) + text[at + 1 :]
        elif kind == "truncate":
            text = text[:at]
        else:
            name = draw(st.sampled_from(["float16", "bfloat16", "int8", "uint8", "bool", "complex64", "object", "x"]))
            text = text.replace("dtype=", f"dtype={name}, dtype=", 1) if draw(st.booleans()) else text + f"dtype={name}"
    return text


@FUZZ
@given(mutated_text())
def test_mutated_text_parses_or_fails_cleanly(text):
    outcome(parse_text, text)


def wrapped_text() -> st.SearchStrategy[str]:
    """Text that prints its wrapper (``array(``, ``tensor(``), so tensors can be told apart."""
    return numpy_text().filter(lambda sample: sample[1] == "repr").map(lambda sample: sample[0]) | torch_text()


@pytest.mark.slow
@FUZZ
@given(st.lists(wrapped_text(), min_size=2, max_size=4), st.sampled_from(["\n", " ", "\nParameter containing:\n"]))
def test_several_tensors_in_one_paste(texts, separator):
    """Two printed tensors are a pair to compare; more are refused."""
    result = outcome(parse_text, separator.join(texts))
    if len(texts) > 2:
        assert result.error is not None
    elif result.error is None:
        assert len(result.tensors) == 2


@pytest.mark.parametrize("depth", [65, 1000, 100_000])
@pytest.mark.parametrize("wrap", ["{}", "tensor({})", "array({}, dtype=float32)", "{}]", "[{}", "{}" + "]" * 10])
def test_depth_bombs_are_refused(depth, wrap):
    text = wrap.format("[" * depth + "1.5" + "]" * depth)
    result = outcome(parse_text, text)
    assert result.error is not None


@FUZZ
@given(
    st.lists(st.sampled_from(["1", "-2", "2.5", "1e3", "True", "False", "1+2j", "3j", "nan", "-inf", "0x1p3"]),
             min_size=1, max_size=6),
    st.sampled_from(["{}", "array({}, dtype=float32)", "array({}, dtype=int64)", "array({}, dtype=bool)",
                     "array({}, dtype=complex64)", "tensor({}, dtype=torch.float16)", "tensor({})"]),
)  # fmt: skip
def test_mixed_element_kinds_parse_or_fail_cleanly(items, wrap):
    outcome(parse_text, wrap.format("[" + ", ".join(items) + "]"))


@pytest.mark.parametrize("control", ["\x00", "\x07", "\x1b", "\x1c", "\x1d", "\x1e", "\x1f", "\x7f", "\x0b", "\x0c"])
@pytest.mark.parametrize(
    "text", ["{}-7", "1.5,{}2.5", "[1.5, 2.5]{}", "array([1.5,{}2.5])", "1.5\n{}2.5\n", "0{}031", "[True,{}False]"]
)
def test_control_characters_parse_or_fail_cleanly(text, control):
    """Found by atheris: Python's ``str.split`` takes U+001C..U+001F for whitespace, the token scan did not."""
    outcome(parse_text, text.format(control))
