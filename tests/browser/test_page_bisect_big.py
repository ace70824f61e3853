"""Two big Polygraphy outputs files bisected in the page, handed to the worker unread.

Files of 32 MB or more stay where they are: the worker reads them through ``Blob.slice``,
indexes each Polygraphy file and decodes one tensor pair at a time (``perpendis.service.planner``).
The files are written by Polygraphy's own ``to_json``: a ResNet-like list of float32
layers, run B rounding differently from run A everywhere and wrong in one layer.  The
rows the page shows are checked against ``perpendis`` run natively on the same files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from perpendis.layers.bisect import bisect, path_entries

pytest.importorskip("polygraphy")
from polygraphy.comparator import RunResults
from polygraphy.comparator.struct import IterationResult
from polygraphy.json import to_json

TIMEOUT_MS = 300_000  # a busy 2-core machine; bench/polygraphy_page.py measures the real speed
IN_PLACE_BYTES = 32 * 2**20  # app/main.js hands files from this size over unread

# Output names as an ONNX export of a ResNet names them, and per-sample (channels, side).
STAGES = [(64, 56), (128, 28), (256, 14), (512, 7)]


def resnet_layers() -> list[tuple[str, tuple[int, ...]]]:
    """Marked outputs of a ResNet-18-like graph, in execution order, with per-sample shapes."""
    layers = [("/conv1/Conv_output_0", (64, 112, 112)), ("/relu/Relu_output_0", (64, 112, 112))]
    for stage, (channels, side) in enumerate(STAGES, start=1):
        for block in range(2):
            scope = f"/layer{stage}/layer{stage}.{block}"
            for op in ("conv1/Conv", "relu/Relu", "conv2/Conv", "Add", "relu_1/Relu"):
                layers.append((f"{scope}/{op}_output_0", (channels, side, side)))
    return [*layers, ("/fc/Gemm_output_0", (1000,))]


def write_captures(folder: Path, megabytes: float, bug: str) -> tuple[Path, Path]:
    """Polygraphy outputs of two runners, about ``megabytes`` of float32 each (base64 adds a third).

    B is A with rounding noise that grows with depth, rounded to float32, and a tenth of
    one channel of layer ``bug`` scaled by 1.01.
    """
    layers = resnet_layers()
    per_sample = sum(int(np.prod(shape)) for _, shape in layers) * 4
    batch = max(1, round(megabytes * 1e6 / per_sample))
    rng = np.random.default_rng(7)
    a_out, b_out = {}, {}
    for depth, (name, shape) in enumerate(layers, start=1):
        a = rng.standard_normal((batch, *shape), dtype=np.float32)
        noise = rng.standard_normal(a.shape, dtype=np.float32) * np.float32(2.0**-24 * np.sqrt(depth))
        b = (a + a * noise).astype(np.float32)
        if name == bug:
            b[0, 0].flat[: b[0, 0].size // 10] *= np.float32(1.01)
        a_out[name], b_out[name] = a, b
    paths = folder / "onnxrt_outputs.json", folder / "trt_outputs.json"
    for path, runner, outputs in ((paths[0], "onnxrt-runner-N0", a_out), (paths[1], "trt-runner-N0", b_out)):
        results = RunResults()
        results.append((runner, [IterationResult(outputs, runner_name=runner)]))
        path.write_text(to_json(results))
    return paths


BUG = "/layer3/layer3.0/conv2/Conv_output_0"


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> tuple[Path, Path]:
    paths = write_captures(tmp_path_factory.mktemp("polygraphy"), megabytes=40, bug=BUG)
    assert all(p.stat().st_size >= IN_PLACE_BYTES for p in paths), "small enough for the page to read whole"
    return paths


def test_big_polygraphy_files_bisect_unread_to_the_bugged_layer(ready_page, captures):
    page = ready_page
    for side, path in zip("ab", captures, strict=True):
        page.get_by_test_id(f"file-{side}").set_input_files(str(path))
        page.wait_for_selector(f"#chip-{side}:not([hidden])")
        # Handed over unread: the page never copies the file.
        assert "read in place" in page.locator(f"#chip-{side}").text_content()
    page.get_by_test_id("compare").click()
    page.get_by_test_id("bisect-summary").wait_for(timeout=TIMEOUT_MS)
    page.locator("#bisect-table[data-rows=complete]").wait_for(timeout=TIMEOUT_MS)  # built in slices

    native = bisect(path_entries(captures[0]), path_entries(captures[1]))
    assert native.first_failing is not None and native.first_failing.a_name == BUG
    shown = page.eval_on_selector_all(
        "[data-testid=bisect-row]",
        """rows => rows.map(r => ({
             a: r.querySelector('[data-testid=bisect-a-name]').firstChild.textContent,
             standing: r.dataset.standing,
             ulp: r.querySelector('[data-testid=bisect-max-ulp]').textContent }))""",
    )
    assert [r["a"] for r in shown] == [p.a_name for p in native.pairs]
    assert [r["ulp"] for r in shown] == [f"{p.report.max_ulp:,}" for p in native.pairs]
    first = next(i for i, r in enumerate(shown) if r["standing"] == "first-failing")
    assert shown[first]["a"] == BUG
    assert all(r["standing"] == "pass" for r in shown[:first])

    # The row opens its pair's full report: the worker decodes that pair again from the files.
    report = native.pairs[first].report
    page.locator(f"[data-testid=bisect-row][data-index='{first}']").click()
    page.wait_for_selector(f"#verdict-box[data-verdict='{report.verdict}']", timeout=TIMEOUT_MS)
    assert page.get_by_test_id("max-ulp").text_content().strip() == f"{report.max_ulp:,}"
