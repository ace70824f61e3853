"""Every input form through the page, end to end, against the same core run natively.

Files are written here by the libraries that write them in real use (NumPy, ml_dtypes,
safetensors, ONNX, Polygraphy) or taken from committed fixtures made by PyTorch; text is
what NumPy, PyTorch and JAX print.  Each form goes through the page in Chromium, and the
page must show what ``perpendis.service.api.handle`` computes natively on the very same bytes or
text: the page moves bytes and renders, it must neither lose nor invent anything.  Where
the page could agree with a wrong core, the test also checks a fact it knows on its own
(the shape and dtype it saved).

One page serves all cases of a kind, since a cold start of the Python core costs seconds.
"""

from __future__ import annotations

import base64
import io
import re
import sys
from collections.abc import Callable
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from made import npy_bytes

ml_dtypes = pytest.importorskip("ml_dtypes")
pytest.importorskip("polygraphy")
from polygraphy.comparator import RunResults  # noqa: E402
from polygraphy.comparator.struct import IterationResult  # noqa: E402
from polygraphy.json import to_json  # noqa: E402

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
safetensors_numpy = pytest.importorskip("safetensors.numpy")
pytest.importorskip("polygraphy")

from perpendis.service import api  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPORT_TIMEOUT_MS = 60_000


# ---------------------------------------------------------------- how the page writes things


def index_text(index: list[int]) -> str:
    """A multi-index as the page writes it, NumPy's tuple style: (1, 0, 4), (4,), ()."""
    return f"({index[0]},)" if len(index) == 1 else "(" + ", ".join(str(i) for i in index) + ")"


def js_number(value: object) -> str:
    """A report number as the page shows it: JavaScript's ``String(number)`` of the JSON value.

    Python and JavaScript both print the shortest round-trip digits; they differ only in
    where they switch to exponent notation and how they write it (ECMAScript
    Number::toString), and JSON gives JavaScript no distinction between 2 and 2.0.
    """
    if value is None:
        return "—"
    if isinstance(value, str | bool):
        return str(value)
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    _, digits_tuple, exp = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digits_tuple))
    k, n = len(digits), len(digits) + exp
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return f"{sign}{digits[:n]}.{digits[n:]}"
    if -6 < n <= 0:
        return f"{sign}0.{'0' * -n}{digits}"
    mantissa = digits[0] + (f".{digits[1:]}" if k > 1 else "")
    return f"{sign}{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"


def test_js_number_matches_ecmascript_examples():
    cases = {0.1: "0.1", 2.0: "2", 1.5e-7: "1.5e-7", 1e21: "1e+21", 123e18: "123000000000000000000",
             -0.000001: "-0.000001", 3: "3", None: "—", "nan": "nan"}  # fmt: skip
    assert {k: js_number(k) for k in cases} == cases


# ---------------------------------------------------------------- the core, natively


def native(inputs: dict, payloads: dict, options: dict | None = None) -> dict:
    """``api.handle``'s compare result for the same request the page sends."""
    out = api.handle({"op": "compare", "inputs": inputs, "options": options or {}}, payloads)
    assert out["ok"], out
    return out


def native_files(a: tuple[str, bytes], b: tuple[str, bytes], **kw) -> dict:
    inputs = {"a": {"name": a[0], "data": "a"}, "b": {"name": b[0], "data": "b"}}
    return native(inputs, {"a": a[1], "b": b[1]}, **kw)


def native_texts(a: str, b: str) -> dict:
    return native({"a": {"text": a}, "b": {"text": b}}, {})


def shown_element(report: dict) -> tuple[str, str]:
    """The element the inspector opens on (the top finding's element, else the first failing one,
    else the first difference, else element 0) and its ULP."""
    where = (report["findings"] or [{}])[0].get("where") or {}
    shape = report["compared_shape"]
    first = (report["tolerance"] or {}).get("first_fail") or report["first_diff"]
    if where.get("element") is not None and shape is not None and len(where["element"]) == len(shape):
        flat = int(np.ravel_multi_index(tuple(where["element"]), tuple(shape)))
        first = api.handle({"op": "element", "flat": flat}, {})["element"]
    if first is None:
        first = api.handle({"op": "element", "flat": 0}, {})["element"]
    ulp = first["ulp"]
    return index_text(first["index"]), f"{ulp:,}" if isinstance(ulp, int) else js_number(ulp)


# ---------------------------------------------------------------- driving the page


def text(page, testid: str) -> str:
    return page.get_by_test_id(testid).first.text_content().strip()


def start_over(page) -> None:
    page.get_by_test_id("clear").click()
    page.locator("#report").wait_for(state="hidden")


def pick_file(page, side: str, path: Path) -> None:
    page.get_by_test_id(f"file-{side}").set_input_files(path)
    page.locator(f"#chip-{side}").get_by_text(f"{path.name} (").wait_for()


def drop_file(page, side: str, name: str, data: bytes) -> None:
    """A real drop: a DataTransfer built in the page from the file's bytes, dropped on the box."""
    page.evaluate(
        """([side, name, b64]) => {
             const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
             const transfer = new DataTransfer();
             transfer.items.add(new File([bytes], name));
             const target = document.querySelector(`[data-testid="paste-${side}"]`);
             for (const type of ["dragenter", "dragover", "drop"]) {
               target.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }));
             }
           }""",
        [side, name, base64.b64encode(data).decode("ascii")],
    )
    page.locator(f"#chip-{side}").get_by_text(f"{name} (").wait_for()


def run_compare(page) -> None:
    """Press Compare and wait for the report; fail with the page's error if it shows one."""
    page.get_by_test_id("compare").click()
    page.wait_for_function(
        "() => !document.getElementById('report').hidden || !document.getElementById('error').hidden",
        timeout=REPORT_TIMEOUT_MS,
    )
    error = page.get_by_test_id("error")
    assert not error.is_visible(), f"the page refused the input: {error.text_content()}"


def check_report(page, want: dict, *, case: str) -> None:
    """The page shows what the native core computed: shape, dtype, verdict, first difference, ULP."""
    report = want["report"]
    index, ulp = shown_element(report)
    page.wait_for_function(
        "want => document.querySelector('[data-testid=\"element-index\"]')?.textContent === want", arg=index
    )
    first = report["first_diff"]
    got = {
        "shape-a": text(page, "shape-a"),
        "dtype-a": text(page, "dtype-a"),
        "shape-b": text(page, "shape-b"),
        "verdict": text(page, "verdict").split(" — ")[0],
        "first-diff-index": text(page, "first-diff-index"),
    }
    # Integers and booleans have no ULP: the element view shows |A − B| alone.
    exact = re.fullmatch(r"u?int\d*|bool", str(report["compared_as"])) is not None
    if not exact:
        got["ulp"] = text(page, "ulp")
    expected = {
        "shape-a": index_text(report["a"]["shape"]),
        "dtype-a": report["a"]["dtype"],
        "shape-b": index_text(report["b"]["shape"]),
        "verdict": report["verdict"],
        "first-diff-index": index_text(first["index"]) if first else "none",
    }
    if not exact:
        expected["ulp"] = ulp
    else:
        assert page.get_by_test_id("ulp").count() == 0, case
    assert got == expected, case


# ---------------------------------------------------------------- inputs made by real libraries


def nudged(array: np.ndarray) -> np.ndarray:
    """A copy with two elements changed a little: one ULP (or one unit) and a few ULPs more."""
    out = array.copy()
    flat = out.reshape(-1, order="A")  # a view, for C and Fortran order alike
    picks = (1, flat.size - 2)
    if out.dtype == np.bool_:
        for i in picks:
            flat[i] = not flat[i]
    elif out.dtype.kind in "iu":
        for step, i in enumerate(picks, 1):
            flat[i] += step
    else:
        as_bits = flat.view(np.dtype(f"u{out.dtype.itemsize}").newbyteorder(out.dtype.byteorder))
        for step, i in enumerate(picks, 1):
            as_bits[i] += step * 3 - 2
    return out




def npz_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, logits=array)
    return buffer.getvalue()


def safetensors_bytes(array: np.ndarray) -> bytes:
    return safetensors_numpy.save({"output": array})


def onnx_bytes(array: np.ndarray) -> bytes:
    return onnx.numpy_helper.from_array(array, "output").SerializeToString()


ORT_RUNNER = "onnxrt-runner-N0-11/29/26-18:00:00"
TRT_RUNNER = "trt-runner-N0-11/29/26-18:00:05"


def polygraphy_bytes(array: np.ndarray, *more_runs: tuple[str, np.ndarray]) -> bytes:
    """``polygraphy run --save-outputs``: each runner's one output, here ONNX Runtime's first."""
    results = RunResults()
    for runner, output in ((ORT_RUNNER, array), *more_runs):
        results.append((runner, [IterationResult({"output": output}, runner_name=runner)]))
    return to_json(results).encode()


def sample(shape: tuple[int, ...], dtype) -> np.ndarray:
    rng = np.random.default_rng(sum(shape) + len(str(dtype)))
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-1000, 1000, shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def torch_fixture_pair() -> tuple[bytes, bytes, tuple[int, ...], str]:
    """A torch.save file from the committed fixtures, and B: its values nudged, as .npy."""
    values = np.load(FIXTURES / "files" / "torch_tensor.expected.npz")["torch_tensor.pt"]
    return (FIXTURES / "files" / "torch_tensor.pt").read_bytes(), npy_bytes(nudged(values)), values.shape, "float16"


# name: (A file name, A bytes, B file name, B bytes, shape A was saved with, its dtype)
FileCase = tuple[str, bytes, str, bytes, tuple[int, ...], str]


def same_form(
    name: str, write: Callable[[np.ndarray], bytes], array: np.ndarray, dtype: str, shape: tuple[int, ...] | None = None
) -> FileCase:
    """A and B in the same form: ``array`` and its nudged copy, as ``write`` saves them."""
    a, b = write(array), write(nudged(array))
    return (f"a-{name}", a, f"b-{name}", b, shape or array.shape, dtype)


def file_cases() -> dict[str, FileCase]:
    f32 = sample((3, 4), np.float32)
    complex64 = sample((5,), np.complex64)
    torch_a, torch_b, torch_shape, torch_dtype = torch_fixture_pair()
    return {
        "npy v1.0 float32": same_form("v1.npy", npy_bytes, f32, "float32"),
        "npy v3.0 float64": same_form(
            "v3.npy", lambda x: npy_bytes(x, (3, 0)), sample((2, 3, 2), np.float64), "float64"
        ),
        "npy big-endian float32": same_form("be.npy", npy_bytes, f32.astype(">f4"), "float32"),
        "npy Fortran-order float16": same_form(
            "fortran.npy", npy_bytes, np.asfortranarray(sample((4, 3), np.float16)), "float16"
        ),
        "npy int32": same_form("int32.npy", npy_bytes, sample((2, 5), np.int32), "int32"),
        "npy bool": same_form("bool.npy", npy_bytes, sample((9,), np.bool_), "bool"),
        "npy complex64": same_form("complex.npy", npy_bytes, complex64, "float32", shape=(5, 2)),
        "npy ml_dtypes bfloat16": same_form(
            "bf16.npy", npy_bytes, sample((3, 3), np.float32).astype(ml_dtypes.bfloat16), "bfloat16"
        ),
        "npy ml_dtypes float8_e4m3fn": same_form(
            "f8.npy", npy_bytes, sample((8,), np.float32).astype(ml_dtypes.float8_e4m3fn), "float8_e4m3fn"
        ),
        "npz with one array": same_form("one.npz", npz_bytes, f32, "float32"),
        "safetensors with one tensor": same_form("one.safetensors", safetensors_bytes, f32, "float32"),
        "torch.save fixture": ("torch_tensor.pt", torch_a, "b-torch.npy", torch_b, torch_shape, torch_dtype),
        "ONNX TensorProto": same_form("tensor.pb", onnx_bytes, sample((2, 6), np.float16), "float16"),
        "Polygraphy JSON": same_form("outputs.json", polygraphy_bytes, f32, "float32"),
    }


def test_every_file_form_through_the_file_inputs(ready_page, tmp_path):
    page = ready_page
    for case, (a_name, a_bytes, b_name, b_bytes, shape, dtype) in file_cases().items():
        want = native_files((a_name, a_bytes), (b_name, b_bytes))
        # What the test saved, known without Perpendis; and B does differ from A.
        assert (tuple(want["report"]["a"]["shape"]), want["report"]["a"]["dtype"]) == (shape, dtype), case
        assert want["report"]["n_bitwise_diff"] == 2, case
        start_over(page)
        for side, name, data in (("a", a_name, a_bytes), ("b", b_name, b_bytes)):
            path = tmp_path / name
            path.write_bytes(data)
            pick_file(page, side, path)
        run_compare(page)
        check_report(page, want, case=case)


def test_files_dropped_on_each_side(ready_page):
    page = ready_page
    a = sample((2, 3, 4), np.float32)
    a_bytes, b_bytes = safetensors_bytes(a), npy_bytes(nudged(a), (2, 0))
    drop_file(page, "a", "dropped.safetensors", a_bytes)
    drop_file(page, "b", "dropped.npy", b_bytes)
    run_compare(page)
    check_report(page, native_files(("dropped.safetensors", a_bytes), ("dropped.npy", b_bytes)), case="drop")
    assert text(page, "shape-a") == "(2, 3, 4)"
    assert text(page, "n-diff") == "2"


# ---------------------------------------------------------------- pasted text


@contextmanager
def torch_print(**options):
    old = {k: getattr(torch._tensor_str.PRINT_OPTS, k) for k in ("precision", "sci_mode")}
    torch.set_printoptions(**options)
    try:
        yield
    finally:
        torch.set_printoptions(**old)


def torch_on_device(values: np.ndarray) -> str:
    """PyTorch's repr of a tensor off the default device, with its autograd node.

    PyTorch prints ``device=`` only for a tensor off the default device, and this machine
    has no accelerator; so the printer is told the default is CUDA, and its own code
    writes the suffix exactly as for a GPU tensor.
    """
    t = torch.from_numpy(values).requires_grad_(True) * 1
    with torch_print(precision=10), mock.patch.object(torch._C, "_get_default_device", return_value="cuda"):
        return repr(t)


def torch_repr(values: np.ndarray, dtype=None) -> str:
    t = torch.from_numpy(values)
    with torch_print(precision=10):
        return repr(t if dtype is None else t.to(dtype))


def numpy_repr(values: np.ndarray) -> str:
    with np.printoptions(floatmode="unique", threshold=sys.maxsize):
        return repr(values)


def numpy_print(values: np.ndarray) -> str:
    with np.printoptions(floatmode="unique", threshold=sys.maxsize):
        return str(values)


def csv_text(values: np.ndarray) -> str:
    buffer = io.StringIO()
    np.savetxt(buffer, values, delimiter=",", fmt="%.17g")
    return buffer.getvalue()


def text_cases() -> dict[str, tuple[str, str]]:
    f32 = sample((3, 4), np.float32)
    f16 = sample((2, 5), np.float16)
    f64 = sample((6,), np.float64)
    bf16_a = sample((2, 4), np.float32)
    bf16_b = torch.from_numpy(bf16_a).to(torch.bfloat16).view(torch.int16).add(1).view(torch.bfloat16)
    scalar = np.float32(0.1)
    return {
        "torch float16": (torch_repr(f16), torch_repr(nudged(f16))),
        "torch bfloat16": (torch_repr(bf16_a, torch.bfloat16), torch_repr(bf16_b.float().numpy(), torch.bfloat16)),
        "torch device= and grad_fn=": (torch_on_device(f32), torch_on_device(nudged(f32))),
        "numpy repr": (numpy_repr(f32), numpy_repr(nudged(f32))),
        "numpy print": (numpy_print(f64), numpy_print(nudged(f64))),
        "NumPy 2 scalar": (repr(scalar), repr(np.nextafter(scalar, np.float32(1)))),
        "list": (repr(f64.tolist()), repr(nudged(f64).tolist())),
        "hex list": (repr([float(x).hex() for x in f64]), repr([float(x).hex() for x in nudged(f64)])),
        "CSV": (csv_text(f64.reshape(2, 3)), csv_text(nudged(f64.reshape(2, 3)))),
        "REPL prompts": (f">>> a\n{numpy_repr(f32)}\n>>> ", f"In [7]: b\nOut[7]: \n{numpy_repr(nudged(f32))}\n"),
    }


def paste(page, a: str, b: str) -> None:
    page.get_by_test_id("paste-a").fill(a)
    page.get_by_test_id("paste-b").fill(b)


def check_texts(page, cases: dict[str, tuple[str, str]]) -> None:
    for case, (a, b) in cases.items():
        want = native_texts(a, b)
        assert want["report"]["n_bitwise_diff"] > 0, case
        start_over(page)
        paste(page, a, b)
        run_compare(page)
        check_report(page, want, case=case)


def test_every_text_form_pasted(ready_page):
    cases = text_cases()
    check_texts(ready_page, cases)
    # The torch print that carries the device and the autograd node, as the test made it.
    a = cases["torch device= and grad_fn="][0]
    assert "device='cpu'" in a and "grad_fn=<MulBackward0>" in a


def test_jax_arrays_pasted(ready_page):
    """JAX's own repr (committed with the script that made it) against NumPy's repr of a nudged copy."""
    folder = FIXTURES / "text"
    a = (folder / "jax_float32_repr.txt").read_text()
    assert a.lstrip().startswith("Array(")
    b = numpy_repr(nudged(np.load(folder / "jax_float32_repr.npy")))
    check_texts(ready_page, {"JAX": (a, b)})


def test_tensorflow_repr_and_print_pasted(ready_page):
    """TensorFlow's own output, committed with the script that made it (``tests/fixtures/tensorflow``)."""
    page = ready_page
    folder = FIXTURES / "tensorflow"
    texts = {
        f"{form}_{side}": (folder / f"tf_{form}_{side}.txt").read_text() for form in ("repr", "print") for side in "ab"
    }
    check_texts(page, {"TensorFlow repr": (texts["repr_a"], texts["repr_b"]),
                       "TensorFlow print": (texts["print_a"], texts["print_b"]),
                       "TensorFlow repr against print": (texts["repr_a"], texts["print_b"])})  # fmt: skip
    # The last pair, checked against the values TensorFlow held.
    a, b = np.load(folder / "tf_a.npy"), np.load(folder / "tf_b.npy")
    differ = np.flatnonzero(a.view(np.uint32) != b.view(np.uint32))
    assert text(page, "n-diff") == f"{differ.size:,}"
    assert text(page, "first-diff-index") == index_text(list(np.unravel_index(differ[0], a.shape)))
    assert text(page, "max-ulp") == f"{int(np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32)).max()):,}"


@pytest.mark.parametrize(
    ("summarised", "fix"),
    [
        ((FIXTURES / "text" / "torch_summarised_2d.txt").read_text(), 'torch.set_printoptions(profile="full")'),
        (repr(np.arange(2000.0)), "np.set_printoptions(threshold=sys.maxsize)"),
    ],
    ids=["torch", "numpy"],
)
def test_summarised_print_is_refused_with_the_fix_and_kept(ready_page, summarised, fix):
    page = ready_page
    other = numpy_repr(np.ones(3, np.float32))
    paste(page, other, summarised)
    page.get_by_test_id("compare").click()
    error = page.locator("#side-b [data-testid='error']")
    error.wait_for(timeout=REPORT_TIMEOUT_MS)
    assert fix in error.text_content()
    assert "..." in error.text_content() or "summarised" in error.text_content()
    assert page.get_by_test_id("paste-b").input_value() == summarised
    assert page.get_by_test_id("paste-a").input_value() == other
    assert page.locator("#report").is_hidden()


def test_lossy_text_shows_the_printed_precision_and_the_note(ready_page):
    page = ready_page
    values = sample((2, 6), np.float64)
    a, b = repr(values), repr(values * 1.001)  # NumPy's default print: 8 significant digits
    want = native_texts(a, b)
    info = want["report"]["a"]
    assert not info["lossless"] and info["digits"] == 8 and info["notes"]
    paste(page, a, b)
    run_compare(page)
    check_report(page, want, case="lossy")
    assert "printed with 8 digits" in text(page, "source-a")
    summary = page.locator("#summary")
    for note in info["notes"]:
        assert summary.get_by_text(f"A: {note}", exact=True).is_visible()
    lossy = [f["message"] for f in want["report"]["findings"] if f["kind"] == "lossy"]
    assert lossy and all(page.locator("#findings").get_by_text(m).is_visible() for m in lossy)


# ---------------------------------------------------------------- void .npy: read as another format


def test_void_npy_can_be_read_as_another_format(ready_page, tmp_path):
    page = ready_page
    # np.save of an ml_dtypes float8 array writes '<V1': the width, not the format.
    saved = sample((10,), np.float32).astype(ml_dtypes.float8_e4m3fn)
    a_bytes = npy_bytes(saved)
    assert b"'<V1'" in a_bytes
    b_bytes = npy_bytes(saved.astype(np.float32))
    (tmp_path / "f8.npy").write_bytes(a_bytes)
    (tmp_path / "f32.npy").write_bytes(b_bytes)
    pick_file(page, "a", tmp_path / "f8.npy")
    pick_file(page, "b", tmp_path / "f32.npy")
    run_compare(page)
    default = native_files(("f8.npy", a_bytes), ("f32.npy", b_bytes))
    check_report(page, default, case="void read as default")
    assert default["report"]["a"]["dtype"] == "float8_e4m3fn"
    note = page.get_by_test_id("void-note-a")
    assert note.is_visible() and "float8_e4m3fn" in note.text_content()
    assert page.locator("#summary").get_by_text(f"A: {default['report']['a']['notes'][0]}").is_visible()
    select = page.get_by_test_id("void-format-a")
    assert select.input_value() == "float8_e4m3fn"
    assert [o.get_attribute("value") for o in select.locator("option").all()] == ["float8_e4m3fn", "float8_e5m2"]
    assert page.get_by_test_id("void-format-b").count() == 0

    select.select_option("float8_e5m2")
    page.wait_for_function("() => document.querySelector('[data-testid=\"dtype-a\"]')?.textContent === 'float8_e5m2'")
    reread = native_files(("f8.npy", a_bytes), ("f32.npy", b_bytes), options={"void_format": {"a": "float8_e5m2"}})
    check_report(page, reread, case="void read as float8_e5m2")
    # The same bits, now as float8_e5m2: the core says it read them so because it was asked.
    assert page.locator("#summary").get_by_text("read as float8_e5m2, as asked").is_visible()
    assert page.get_by_test_id("void-format-a").input_value() == "float8_e5m2"
    e5m2 = saved.view(np.uint8).view(ml_dtypes.float8_e5m2)
    first = reread["report"]["first_diff"]
    assert text(page, "value-a") == first["a"]
    assert ml_dtypes.float8_e5m2(float(first["a"])) == e5m2[first["flat"]]


# ---------------------------------------------------------------- two tensors in one box


def test_two_tensors_in_one_box_are_offered_as_a_and_b(ready_page):
    page = ready_page
    session = (FIXTURES / "text" / "torch_session.txt").read_text()
    want = native({"a": {"text": session}, "b": {"text": ""}}, {})
    assert want["one_box"] == "a"
    paste(page, session, "")
    run_compare(page)
    check_report(page, want, case="one box")
    note = page.get_by_test_id("one-box")
    shapes = [index_text(want["report"][side]["shape"]) for side in "ab"]
    assert note.is_visible() and "Box A held two tensors" in note.text_content()
    assert all(s in note.text_content() for s in shapes)
    assert [text(page, "shape-a"), text(page, "shape-b")] == shapes == ["(3,)", "(3,)"]
    # The values the REPL session printed: b differs from a in its middle element only.
    assert text(page, "first-diff-index") == "(1,)"
    # Filling B makes it an ordinary pair again, and the note goes.
    page.get_by_test_id("paste-b").fill(session.split(">>> b\n")[1].removesuffix(">>> \n"))
    page.get_by_test_id("paste-a").fill(session.split("\n")[1])
    run_compare(page)
    page.wait_for_function("() => document.getElementById('input-notes').hidden")


def test_polygraphy_outputs_of_two_runners_are_offered_as_a_and_b(ready_page, tmp_path):
    page = ready_page
    ort = sample((2, 4), np.float32)
    data = polygraphy_bytes(ort, (TRT_RUNNER, nudged(ort)))
    want = native({"a": {"name": "outputs.json", "data": "a"}, "b": {"text": ""}}, {"a": data})
    assert want["one_box"] == "a"
    (tmp_path / "outputs.json").write_bytes(data)
    pick_file(page, "a", tmp_path / "outputs.json")
    run_compare(page)
    check_report(page, want, case="two runners")
    assert "Box A held two tensors" in text(page, "one-box")
    # Which runner is which side is on the page, not left to guess.
    assert ORT_RUNNER in text(page, "source-a") and TRT_RUNNER in text(page, "source-b")
    assert text(page, "n-diff") == "2"


def test_several_tensors_and_an_empty_box_name_every_tensor(ready_page, tmp_path):
    """Neither the first tensor nor the first two are taken silently: the page names them all.

    (With both boxes filled, several tensors go to the layer-by-layer view; its tests are
    in ``test_page_bisect.py``.)
    """
    page = ready_page
    x = sample((2, 2), np.float32)
    buffer = io.BytesIO()
    np.savez(buffer, conv=x, relu=x, fc=x)
    third = "tensorrt-runner-N0-11/29/26-18:00:09"
    inputs = {
        "layers.npz": (buffer.getvalue(), ["'conv'", "'relu'", "'fc'"]),
        "runners.json": (polygraphy_bytes(x, (TRT_RUNNER, x), (third, x)), [ORT_RUNNER, TRT_RUNNER, third]),
    }
    for name, (data, names) in inputs.items():
        request = {"op": "compare", "inputs": {"a": {"name": name, "data": "a"}, "b": {"text": ""}}}
        refused = api.handle(request, {"a": data})
        assert not refused["ok"] and refused["error"]["side"] == "b", name
        start_over(page)
        (tmp_path / name).write_bytes(data)
        pick_file(page, "a", tmp_path / name)
        page.get_by_test_id("compare").click()
        error = page.locator("#side-b [data-testid='error']")
        error.wait_for(timeout=REPORT_TIMEOUT_MS)
        assert error.text_content() == refused["error"]["message"], name
        assert "box A holds 3 tensors" in error.text_content(), name
        assert all(n in error.text_content() for n in names), name
        assert page.locator("#report").is_hidden()


# ---------------------------------------------------------------- the optional reference


def test_reference_file_from_a_float64_run(ready_page):
    page = ready_page
    models = FIXTURES / "models"
    files = {side: models / f"linear.{kind}.npy" for side, kind in (("a", "ort"), ("b", "torch"), ("ref", "ref64"))}
    inputs = {side: {"name": path.name, "data": side} for side, path in files.items()}
    want = native(inputs, {side: path.read_bytes() for side, path in files.items()})
    reference = want["report"]["reference"]
    assert want["report"]["ref"]["dtype"] == "float64" and reference is not None

    assert page.get_by_test_id("paste-ref").is_hidden()  # collapsed until asked for
    page.get_by_text("Reference (optional)").click()
    assert page.get_by_test_id("paste-ref").is_visible()
    pick_file(page, "a", files["a"])
    pick_file(page, "b", files["b"])
    drop_file(page, "ref", files["ref"].name, files["ref"].read_bytes())
    run_compare(page)
    check_report(page, want, case="with reference")
    # Each figure shows 4 significant digits; its title holds every digit (app/render/numbers.js).
    keys = ("a_rmse", "b_rmse", "a_max_ulp", "b_max_ulp", "ratio")
    full = {key: page.get_by_test_id(f"ref-{key.replace('_', '-')}").locator("span").first.get_attribute("title")
            for key in keys}  # fmt: skip
    assert full == {key: js_number(reference[key]) for key in keys}
    shown = {key: text(page, f"ref-{key.replace('_', '-')}") for key in keys}
    assert all(float(shown[key]) == float(f"{reference[key]:.4g}") for key in keys), shown
    assert text(page, "ref-equivalent") == ("yes" if reference["equivalent"] else "no")
    assert "(2, 3, 7) float64" in text(page, "ref-info")
    # Both runtimes are float32 runs of the same model: each is near the float64 run.
    assert reference["equivalent"] and text(page, "ref-verdict").startswith("B is rounding-equivalent")

    # Without the reference the card goes away.
    page.locator("#chip-ref .chip-remove").click()
    run_compare(page)
    page.locator("#reference-card").wait_for(state="hidden")


def test_reference_of_the_wrong_shape_is_refused_beside_it(ready_page):
    page = ready_page
    values = sample((2, 3), np.float32)
    a, b, ref_text = numpy_repr(values), numpy_repr(nudged(values)), numpy_repr(np.zeros(4))
    inputs = {"a": {"text": a}, "b": {"text": b}, "ref": {"text": ref_text}}
    refused = api.handle({"op": "compare", "inputs": inputs}, {})
    assert not refused["ok"] and refused["error"]["side"] == "ref" and refused["error"]["where"] is None
    paste(page, a, b)
    page.get_by_text("Reference (optional)").click()
    page.get_by_test_id("paste-ref").fill(ref_text)
    page.get_by_test_id("compare").click()
    error = page.locator("#side-ref [data-testid='error']")
    error.wait_for(timeout=REPORT_TIMEOUT_MS)
    assert error.text_content() == refused["error"]["message"]
    assert "reference" in error.text_content()
    assert page.get_by_test_id("paste-ref").input_value() == ref_text
