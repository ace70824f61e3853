"""A real notebook, executed by a real Jupyter kernel: a Report displays itself inline."""

import sys
from html import escape
from pathlib import Path

import numpy as np
import perpendis
import pytest
from perpendis.report.html import render_fragment

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "fixtures" / "models"
sys.path.insert(0, str(ROOT / "scripts"))
pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

from screenshot_notebook import NOTEBOOK, execute  # noqa: E402


@pytest.mark.slow
def test_report_displays_as_html_and_markdown():
    executed = execute(NOTEBOOK)
    (result,) = [o for o in executed.cells[-1].outputs if o.output_type == "execute_result"]
    html, markdown = result.data["text/html"], result.data["text/markdown"]
    # what the kernel displayed is exactly the report of the same files rendered here
    expected = perpendis.compare(np.load(MODELS / "transformer.ort.npy"), np.load(MODELS / "transformer.signflip.npy"))
    assert html == render_fragment(expected)
    assert markdown == expected.to_markdown()
    assert 'class="perpendis-report" data-verdict="investigate"' in html
    assert "<svg" in html and "First difference" in html and "Worst elements" in html
    assert all(escape(f.message) in html for f in expected.findings)
    assert result.data["text/plain"] == expected.to_text().rstrip("\n")  # what a terminal IPython shows
    assert not [o for c in executed.cells for o in c.get("outputs", []) if o.output_type == "error"]
