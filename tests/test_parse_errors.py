"""Bad or unusual text: every refusal is an InputError that says what is wrong and how to fix it."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perpendis.errors import InputError
from perpendis.inputs.formats.limits import TEXT_MAX_CHARS
from perpendis.inputs.load import load_bytes
from perpendis.inputs.parse import parse_text


def _refused(text: str) -> InputError:
    with pytest.raises(InputError) as error:
        parse_text(text)
    return error.value


@pytest.mark.parametrize("text", ["", "   \n\t\r\n", ">>> a\n"])
def test_empty_text_has_nothing_to_compare(text: str) -> None:
    assert "nothing to compare" in _refused(text).message


def test_numpy_summarised_repr_names_numpy_fix() -> None:
    message = _refused(repr(np.arange(2000.0).reshape(40, 50))).message
    assert "summarised" in message and "np.set_printoptions(threshold=sys.maxsize)" in message


def test_numpy_summarised_print_names_numpy_fix() -> None:
    message = _refused(str(np.arange(5000))).message
    assert "np.set_printoptions(threshold=sys.maxsize)" in message


def test_full_numpy_print_after_the_fix_parses() -> None:
    original = np.arange(2000.0).reshape(40, 50)
    with np.printoptions(threshold=sys.maxsize):
        (tensor,) = parse_text(repr(original))
    np.testing.assert_array_equal(tensor.array, original)


def test_typographic_ellipsis_counts_as_summarised() -> None:
    assert "summarised" in _refused("tensor([1.0000, 2.0000, \u2026, 9.0000])").message


def test_masked_array_is_refused_with_the_fix() -> None:
    text = repr(np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0]))
    message = _refused(text).message
    assert "masked" in message and "filled" in message


def test_ragged_list_names_the_row() -> None:
    error = _refused("[[1.0, 2.0], [3.0, 4.0], [5.0]]")
    assert "ragged" in error.message and "row [2]" in error.message


def test_ragged_inner_row_names_its_full_index() -> None:
    error = _refused("[[[1, 2], [3, 4]],\n [[5, 6], [7]]]")
    assert "row [1, 1]" in error.message and error.where == "line 2"


def test_mixed_depths_are_refused() -> None:
    assert "depth" in _refused("[[1.0, 2.0], 3.0]").message


def test_nesting_deeper_than_numpy_allows_is_refused() -> None:
    assert "64" in _refused("[" * 65 + "1.0" + "]" * 65).message


def test_nesting_at_the_limit_parses() -> None:
    (tensor,) = parse_text("[" * 64 + "1.5" + "]" * 64)
    assert tensor.shape == (1,) * 64


def test_unbalanced_brackets_are_refused() -> None:
    assert "brackets" in _refused("[[1.0, 2.0], [3.0, 4.0]]]").message


def test_cut_off_tensor_is_refused() -> None:
    message = _refused("tensor([[1.0000, 2.0000],\n        [3.0000,").message
    assert "cut off" in message


def test_bad_token_is_named() -> None:
    assert "'x'" in _refused("[1.0, x, 3.0]").message


def test_unknown_character_is_named_with_its_code_point() -> None:
    error = _refused("[1.0, 2.0\u00d7, 3.0]")
    assert "U+00D7" in error.message and error.where == "line 1"


def test_three_tensors_are_refused() -> None:
    text = "\n".join(repr(np.arange(3.0)) for _ in range(3))
    assert "3 printed tensors" in _refused(text).message


def test_integer_out_of_range_is_refused() -> None:
    assert "int8" in _refused("array([1, 300], dtype=int8)").message


def test_integer_dtype_with_decimals_is_refused() -> None:
    assert "int32" in _refused("array([1.5, 2.], dtype=int32)").message


def test_unsupported_dtype_is_refused() -> None:
    assert "cannot be compared" in _refused(repr(np.array(["a", "b"]))).message


def test_trailing_data_after_the_tensor_is_refused() -> None:
    assert "unexpected text" in _refused("tensor([1., 2.]) and [3., 4.]").message


def test_ragged_csv_names_the_line() -> None:
    error = _refused("1,2,3\n4,5,6\n7,8\n")
    assert error.where == "line 3" and "columns" in error.message


def test_printed_shape_must_match_the_values() -> None:
    assert "shape" in _refused("tf.Tensor([1. 2. 3.], shape=(2,), dtype=float32)").message


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("[](),. 0123456789-+eEjnaifTrueFalsx\n'\"tensor=dtype")), max_size=60))
def test_any_text_parses_or_raises_input_error(text: str) -> None:
    try:
        tensors = parse_text(text)
    except InputError as error:
        assert error.message
    else:
        assert 1 <= len(tensors) <= 2


def _numpy_rows(row: np.ndarray, rows: int | None = None, *, longer_than: int = 0) -> str:
    """``repr(np.tile(row, (rows, 1)))`` without printing every row (by default, as few rows
    as make it longer than ``longer_than``): NumPy prints equal rows identically, so a
    middle row's lines repeat (checked against the real repr below)."""
    with np.printoptions(threshold=sys.maxsize):
        first, middle, last = repr(np.tile(row, (3, 1))).split("],\n", 2)
    if rows is None:
        rows = 3 + max(0, longer_than - len(first) - len(last)) // (len(middle) + 3)
    return "],\n".join([first, *[middle] * (rows - 2), last])


def test_numpy_rows_are_what_numpy_prints() -> None:
    row = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    with np.printoptions(threshold=sys.maxsize):
        assert _numpy_rows(row, 5) == repr(np.tile(row, (5, 1)))
    text = _numpy_rows(row, longer_than=100_000)
    rows = text.count("[") - 1
    assert len(text) > 100_000 >= len(_numpy_rows(row, rows - 1))  # as few rows as make it longer


def test_text_over_the_cap_is_refused_before_any_work() -> None:
    """A full NumPy print of about 3.5 million float32 values, just over the cap."""
    row = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    text = _numpy_rows(row, longer_than=TEXT_MAX_CHARS)
    message = _refused(text).message
    assert f"the text is {len(text)} characters" in message
    assert f"TEXT_MAX_CHARS = {TEXT_MAX_CHARS} (64 MiB)" in message
    assert "np.save" in message and ".npy" in message


def test_the_cap_holds_at_its_exact_length(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lowered cap moves the boundary without a huge text: at the cap it parses, one
    character (a trailing newline) more is refused."""
    row = np.random.default_rng(2).standard_normal(50).astype(np.float32)
    text = _numpy_rows(row, 20)
    monkeypatch.setattr("perpendis.inputs.parse.TEXT_MAX_CHARS", len(text))
    (tensor,) = parse_text(text)
    np.testing.assert_array_equal(tensor.array, np.tile(row, (20, 1)))
    assert "more than the limit" in _refused(text + "\n").message


def test_a_dropped_text_file_over_the_cap_is_refused_the_same_way() -> None:
    data = _numpy_rows(np.arange(1000, dtype=np.float32) / 7, longer_than=TEXT_MAX_CHARS).encode()
    with pytest.raises(InputError, match="TEXT_MAX_CHARS"):
        load_bytes(data, "big.txt")


@pytest.mark.parametrize("obj", [{"a": [1.0, 2.0]}, {"logits": [[0.5, -1.25], [2.0, 3.0]], "step": 3}])
def test_a_pasted_json_dict_is_named_as_one_not_as_a_ragged_list(obj: dict) -> None:
    import json

    error = _refused(json.dumps(obj, indent=2))
    assert "JSON object" in error.message and "ragged" not in error.message
    assert "np.savez" in error.message


def test_words_in_both_boxes_blame_a_for_its_own_text() -> None:
    # "hello world" against "loss went down" once blamed B's word 'loss' as if it were A's.
    from perpendis.service import api

    inputs = {"a": {"text": "hello world"}, "b": {"text": "loss went down"}}
    answer = api.handle({"op": "compare", "inputs": inputs}, {})
    assert answer["error"]["side"] == "a"
    assert "loss" not in answer["error"]["message"] and "no numbers" in answer["error"]["message"]


def _summarised_prints() -> dict[str, str]:
    """What numpy and torch really print for arrays over their summary threshold."""
    torch = pytest.importorskip("torch")

    values = np.arange(2000, dtype=np.float32) / 7
    return {"numpy": repr(values), "torch": repr(torch.from_numpy(values)), "numpy 2-D": repr(values.reshape(40, 50))}


@pytest.mark.parametrize(("a", "b"), [("numpy", "torch"), ("torch", "torch"), ("numpy 2-D", "numpy")])
def test_summarised_prints_in_both_boxes_name_both(a: str, b: str) -> None:
    from perpendis.service import api

    prints = _summarised_prints()
    assert all("..." in text for text in prints.values())
    answer = api.handle({"op": "compare", "inputs": {"a": {"text": prints[a]}, "b": {"text": prints[b]}}}, {})
    error = answer["error"]
    assert not answer["ok"] and error["side"] == "a" and error["sides"] == ["a", "b"]
    assert error["message"].startswith("both boxes hold summarised prints")
    assert error["where"].startswith("A line ") and ", B line " in error["where"]
    fixes = {"numpy": "np.set_printoptions(threshold=sys.maxsize)", "torch": 'torch.set_printoptions(profile="full")'}
    for side in {a.split()[0], b.split()[0]}:
        assert fixes[side] in error["message"]


def test_a_summarised_print_beside_a_full_one_names_only_its_box() -> None:
    from perpendis.service import api

    prints = _summarised_prints()
    full = np.array2string(np.arange(2000, dtype=np.float32) / 7, threshold=10**6, separator=", ")
    for inputs, side in (({"a": {"text": prints["torch"]}, "b": {"text": full}}, "a"),
                         ({"a": {"text": full}, "b": {"text": prints["numpy"]}}, "b")):
        error = api.handle({"op": "compare", "inputs": inputs}, {})["error"]
        assert error["side"] == side and "sides" not in error and "was summarised" in error["message"]
