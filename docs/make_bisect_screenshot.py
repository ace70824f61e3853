"""Make docs/bisect-transformer-eps.png: the page's layer table for the transformer export
whose second block's first layer norm has a wrong epsilon (tests/fixtures/export).

The PyTorch capture goes in box A; the ONNX Runtime capture without metadata and the
bugged .onnx model in box B, so pairs come from the model's exporter metadata.

Usage: ``python docs/make_bisect_screenshot.py``
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "py", ROOT / "scripts", ROOT / "tests" / "browser", ROOT / "bench"):
    sys.path.insert(0, str(path))

from bisect_page import served_page  # noqa: E402
from startup import READY_AT_JS  # noqa: E402

import build  # noqa: E402

EXPORT = ROOT / "tests" / "fixtures" / "export"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        build.build(Path(tmp) / "dist")
        with served_page(Path(tmp) / "dist") as (page, url):
            page.set_viewport_size({"width": 1500, "height": 1000})
            page.goto(url)
            page.evaluate(READY_AT_JS)
            page.get_by_test_id("file-a").set_input_files(str(EXPORT / "transformer.torch.safetensors"))
            page.get_by_test_id("file-b").set_input_files(
                [str(EXPORT / "transformer_eps.ort.npz"), str(EXPORT / "transformer_eps.onnx")]
            )
            page.wait_for_selector("#chip-b:not([hidden])")
            page.get_by_test_id("compare").click()
            page.get_by_test_id("bisect-summary").wait_for()
            page.locator("#bisect-table").screenshot(path=str(ROOT / "docs" / "bisect-transformer-eps.png"))


if __name__ == "__main__":
    main()
