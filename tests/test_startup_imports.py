"""What the page's core worker imports before it says "ready", and on a first comparison.

``app/worker.js`` reports ready once ``perpendis.service.bridge`` is imported, so every
module imported then sits on a first visit's critical path (in Pyodide, the whole service
and engine took about 0.55 s, as long again as importing NumPy). The bridge imports the
service on its first request, and the service imports bisecting, streaming, checkpoints
and the capture readers on the first request that needs them. Each case runs in a fresh
interpreter (``sys.modules`` of the test session holds everything), and checks both what
is left out and that the first use of what was left out still works.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXPORT = ROOT / "tests" / "fixtures" / "export"

# Engine modules: none is needed to construct the core worker's Python side.
ENGINE = ("perpendis.engine.compare", "perpendis.report.model", "perpendis.inputs.tensor", "perpendis.inputs.formats",
          "perpendis.service.handle", "perpendis.service.helper")
# Only a bisect, a streamed comparison, checkpoints or a capture file need these.
ON_FIRST_USE = ("perpendis.layers.bisect", "perpendis.layers.bisect_inputs", "perpendis.engine.stream",
                "perpendis.checkpoints", "perpendis.layers.capture", "perpendis.inputs.formats.polygraphy",
                "perpendis.inputs.formats.onnx_model")

PRELUDE = """
import json, sys
sys.path[:0] = [{tests!r}, {py!r}]
import numpy as np
from worker_fakes import View, read_slice
from perpendis.service.bridge import CoreWorker
core = CoreWorker(read_slice)

def loaded(prefixes):
    return sorted(m for m in sys.modules if any(m == p or m.startswith(p + ".") for p in prefixes))
"""


def run(body: str) -> dict:
    """Runs ``body`` after the worker's start (the prelude) in a fresh interpreter; it
    prints one JSON object as its last line."""
    code = PRELUDE.format(tests=str(ROOT / "tests"), py=str(ROOT / "py")) + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_core_worker_starts_without_the_engine():
    got = run(f"print(json.dumps({{'loaded': loaded({list(ENGINE + ON_FIRST_USE)!r})}}))")
    assert got["loaded"] == []


def test_a_first_comparison_of_pasted_text_loads_no_bisect_stream_or_checkpoints():
    got = run(f"""
        request = {{"op": "compare", "inputs": {{"a": {{"text": "tensor([1.0000, 2.0000, 3.0000])"}},
                                                "b": {{"text": "tensor([1.0000, 2.0001, 3.0000])"}}}}, "options": {{}}}}
        answer = json.loads(core.serve(json.dumps(request), [], [], [], None, 1))
        print(json.dumps({{"answer": answer, "loaded": loaded({list(ON_FIRST_USE)!r})}}))
    """)
    assert got["answer"]["ok"], got["answer"]
    assert got["answer"]["report"]["n_bitwise_diff"] == 1
    assert got["loaded"] == []


def test_a_first_comparison_of_npy_files_loads_no_bisect_stream_or_checkpoints():
    got = run(f"""
        import io
        def npy(array):
            out = io.BytesIO()
            np.save(out, array)
            return out.getvalue()
        a = np.linspace(-1, 1, 3000, dtype=np.float32)
        b = a.copy()
        b[::7] = np.nextafter(b[::7], np.float32(2))
        request = {{"op": "compare", "inputs": {{"a": {{"name": "a.npy", "data": "p0"}},
                                                "b": {{"name": "b.npy", "data": "p1"}}}}}}
        views = [("p0", View(npy(a))), ("p1", View(npy(b)))]
        answer = json.loads(core.serve(json.dumps(request), views, [], [], None, 1))
        print(json.dumps({{"verdict": answer["report"]["verdict"], "n_diff": answer["report"]["n_bitwise_diff"],
                          "loaded": loaded({list(ON_FIRST_USE)!r})}}))
    """)
    assert got["n_diff"] == len(range(0, 3000, 7))
    assert got["loaded"] == []


def test_bisecting_is_imported_by_the_first_comparison_that_needs_it():
    # Two real exports of one model (ONNX Runtime and PyTorch outputs per layer): several
    # tensors in each box, so the comparison becomes a bisect on its first use.
    got = run(f"""
        names = ["cnn.ort.safetensors", "cnn.torch.safetensors"]
        views = [("p0", View(open({str(EXPORT / "cnn.ort.safetensors")!r}, "rb").read())),
                 ("p1", View(open({str(EXPORT / "cnn.torch.safetensors")!r}, "rb").read()))]
        request = {{"op": "compare", "inputs": {{"a": {{"name": names[0], "data": "p0"}},
                                                "b": {{"name": names[1], "data": "p1"}}}}}}
        answer = json.loads(core.serve(json.dumps(request), views, [], [], None, 1))
        pairs = answer.get("bisect", {{}}).get("pairs", [])
        print(json.dumps({{"ok": answer["ok"], "keys": sorted(answer), "rows": len(pairs),
                          "loaded": loaded(["perpendis.layers.bisect", "perpendis.service.captures"])}}))
    """)
    assert got["ok"], got
    assert "bisect" in got["keys"], got["keys"]
    assert got["rows"] > 1
    assert got["loaded"] == ["perpendis.layers.bisect", "perpendis.service.captures"]


def test_reading_ahead_imports_the_streaming_threshold_on_first_use():
    got = run("""
        print(json.dumps({"small": core.read_ahead([1000, 1000]), "huge": core.read_ahead([2**30, 2**30]),
                          "none": core.read_ahead([]), "stream": "perpendis.engine.stream" in sys.modules}))
    """)
    assert got == {"small": True, "huge": False, "none": False, "stream": True}


def test_a_first_comparison_leaves_the_html_rendering_until_a_report_is_shown_as_html():
    """The page reads the Markdown of every answer, never the HTML: ``perpendis.report``
    imports that rendering (and the standard library's ``html``) on its first use."""
    got = run("""
        request = {"op": "compare", "inputs": {"a": {"text": "tensor([1.0000, 2.0000, 3.0000])"},
                                              "b": {"text": "tensor([1.0000, 2.5000, 3.0000])"}}, "options": {}}
        answer = json.loads(core.serve(json.dumps(request), [], [], [], None, 1))
        before = loaded(["perpendis.report", "html"])
        from perpendis.testing import compare
        shown = compare(np.float32([1, 2, 3]), np.float32([1, 2.5, 3]))._repr_html_()
        print(json.dumps({"markdown": answer["markdown"], "before": before, "html": shown,
                          "after": "perpendis.report.html" in sys.modules}))
    """)
    assert "perpendis.report.text" in got["before"] and "perpendis.report.model" in got["before"]
    assert "perpendis.report.html" not in got["before"] and "html" not in got["before"]
    assert "investigate" in got["markdown"].lower()
    assert got["after"] and got["html"].lstrip().startswith("<") and "investigate" in got["html"].lower()
