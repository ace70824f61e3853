"""The page end to end: pasted NumPy and PyTorch text, .npy files, bad input.

Every expected number is computed here with NumPy from the arrays the test wrote, never
taken from Perpendis, so the page is checked against an independent answer.
"""

from __future__ import annotations

import numpy as np
import pytest
from made import numpy_text

torch = pytest.importorskip("torch")

UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
REPORT_TIMEOUT_MS = 60_000




def torch_text(array: np.ndarray) -> str:
    """``repr`` of a real torch tensor, printed with enough digits to be lossless."""
    old = torch._tensor_str.PRINT_OPTS.precision
    torch.set_printoptions(precision=10)
    try:
        return repr(torch.from_numpy(array))
    finally:
        torch.set_printoptions(precision=old)


def bits_of(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).view(UINT[array.dtype.itemsize]).astype(np.uint64)


def ordered(array: np.ndarray) -> np.ndarray:
    """Sign-magnitude bits as signed integers in value order (+0 and -0 both 0)."""
    width = array.dtype.itemsize * 8
    raw = bits_of(array).astype(object)
    sign = 1 << (width - 1)
    return np.array([-(r - sign) if r >= sign else r for r in raw.ravel()], dtype=object).reshape(array.shape)


def bit_string(value: np.generic) -> str:
    """Sign, exponent and mantissa separated by single spaces, from NumPy's own finfo."""
    info = np.finfo(value.dtype)
    width = value.dtype.itemsize * 8
    s = format(int(bits_of(np.array([value]))[0]), f"0{width}b")
    return f"{s[0]} {s[1:1 + info.nexp]} {s[1 + info.nexp:]}"


def expected(a: np.ndarray, b: np.ndarray) -> dict[str, object]:
    differ = bits_of(a) != bits_of(b)
    flat = np.flatnonzero(differ)
    first = int(flat[0])
    ulps = np.abs(ordered(a) - ordered(b))
    return {
        "n_diff": int(differ.sum()),
        "first_index": str(tuple(int(i) for i in np.unravel_index(first, a.shape))),
        "first_flat": first,
        "bits_a": bit_string(a.ravel()[first]),
        "bits_b": bit_string(b.ravel()[first]),
        "ulp": int(ulps.ravel()[first]),
        "max_ulp": int(ulps.max()),
    }


def perturbed(rng: np.random.Generator, shape: tuple[int, ...], dtype: type, steps: dict[int, int]) -> tuple:
    """An array and a copy with the element at each flat index moved by that many ULPs."""
    a = rng.standard_normal(shape).astype(dtype)
    b = a.copy().ravel()
    for flat, n in steps.items():
        for _ in range(abs(n)):
            b[flat] = np.nextafter(b[flat], dtype(np.inf) if n > 0 else dtype(-np.inf))
    return a, b.reshape(shape)


def run_compare(page, a_text: str, b_text: str) -> None:
    page.get_by_test_id("paste-a").fill(a_text)
    page.get_by_test_id("paste-b").fill(b_text)
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)


def text(page, testid: str) -> str:
    return page.get_by_test_id(testid).text_content().strip()


def check_numbers(page, a: np.ndarray, b: np.ndarray, opens_at: int | None = None) -> None:
    """The report's numbers; the inspector opens at flat ``opens_at`` (the first failing
    element) when given, and "First difference" moves it to the first difference."""
    want = expected(a, b)
    assert text(page, "n-diff") == f"{want['n_diff']:,}"
    assert text(page, "first-diff-index") == want["first_index"]
    assert text(page, "max-ulp") == f"{want['max_ulp']:,}"
    if opens_at is not None:
        page.wait_for_function(
            "want => document.querySelector('[data-testid=\"bits-a\"]')?.textContent === want",
            arg=bit_string(a.ravel()[opens_at]),
        )
    page.get_by_test_id("first-diff").click()
    page.wait_for_function(
        "want => document.querySelector('[data-testid=\"bits-a\"]')?.textContent === want", arg=want["bits_a"]
    )
    assert text(page, "bits-b") == want["bits_b"]
    assert text(page, "ulp") == f"{want['ulp']:,}"


def test_pasted_numpy_float32(ready_page):
    rng = np.random.default_rng(1)
    a, b = perturbed(rng, (3, 4, 5), np.float32, {7: 1, 22: -3, 41: 2})
    run_compare(ready_page, numpy_text(a), numpy_text(b))
    assert text(ready_page, "shape-a") == "(3, 4, 5)"
    assert text(ready_page, "shape-b") == "(3, 4, 5)"
    assert text(ready_page, "dtype-a") == "float32"
    assert text(ready_page, "dtype-b") == "float32"
    check_numbers(ready_page, a, b)
    assert text(ready_page, "first-diff-index") == "(0, 1, 2)"


def test_pasted_torch_float16(ready_page):
    rng = np.random.default_rng(2)
    a, b = perturbed(rng, (6, 5), np.float16, {3: 1, 17: 40})
    run_compare(ready_page, torch_text(a), torch_text(b))
    assert text(ready_page, "dtype-a") == "float16"
    assert text(ready_page, "shape-b") == "(6, 5)"
    check_numbers(ready_page, a, b, opens_at=17)  # 40 ULP fails float16's tolerance; 1 ULP at 3 does not


def test_identical_inputs_say_identical(ready_page):
    a = np.linspace(-1, 1, 12, dtype=np.float64).reshape(3, 4)
    run_compare(ready_page, numpy_text(a), numpy_text(a.copy()))
    assert "identical" in text(ready_page, "verdict")
    assert text(ready_page, "n-diff") == "0"
    assert text(ready_page, "first-diff-index") == "none"


def test_npy_files(ready_page, tmp_path):
    rng = np.random.default_rng(3)
    a, b = perturbed(rng, (2, 3, 8), np.float32, {5: 2, 30: 1})
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    page = ready_page
    page.get_by_test_id("file-a").set_input_files(tmp_path / "a.npy")
    page.get_by_test_id("file-b").set_input_files(tmp_path / "b.npy")
    page.get_by_text("a.npy (").wait_for()
    page.get_by_text("b.npy (").wait_for()
    page.get_by_test_id("compare").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
    assert text(page, "shape-a") == "(2, 3, 8)"
    check_numbers(page, a, b)


def test_shape_mismatch_comes_first(ready_page):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(6, dtype=np.float32).reshape(3, 2)
    run_compare(ready_page, numpy_text(a), numpy_text(b))
    evidence = ready_page.locator("#evidence").text_content()
    assert evidence.startswith("Shapes differ: A is (2, 3), B is (3, 2).")
    assert "investigate" in text(ready_page, "verdict")


def test_bad_input_shows_error_beside_it_and_keeps_text(ready_page):
    page = ready_page
    good = numpy_text(np.ones(3, dtype=np.float32))
    bad = "array([1.0, 2.0, oops], dtype=float32)"
    page.get_by_test_id("paste-a").fill(good)
    page.get_by_test_id("paste-b").fill(bad)
    page.get_by_test_id("compare").click()
    error = page.get_by_test_id("error")
    error.wait_for(timeout=REPORT_TIMEOUT_MS)
    message = error.text_content()
    assert message.strip() and not message.startswith("internal error")
    # Shown inside B's box, and neither input was touched.
    assert page.locator("#side-b [data-testid='error']").count() == 1
    assert page.get_by_test_id("paste-b").input_value() == bad
    assert page.get_by_test_id("paste-a").input_value() == good
    assert page.get_by_test_id("paste-b").get_attribute("aria-invalid") == "true"
