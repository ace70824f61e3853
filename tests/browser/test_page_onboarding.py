"""First visit: the forms the boxes take are listed where files are dropped, the capture
snippet shown is code that runs, and the dropped capture it makes is bisected by the page."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import perpendis
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
from safetensors import safe_open  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402

REPORT_TIMEOUT_MS = 90_000


def test_the_accepted_forms_and_a_snippet_that_runs(ready_page, tmp_path):
    page = ready_page
    forms = page.get_by_test_id("accepted-forms").text_content()
    wanted = (".npy", ".npz", ".safetensors", "torch.save", ".pt", "TensorProto", ".onnx", "Polygraphy JSON", "repr()")
    for form in wanted:
        assert form in forms, form
    assert page.get_by_test_id("accepted-forms").is_visible()
    assert "Add run" in page.get_by_test_id("add-run-about").text_content()

    # The Python half of the snippet, as the page shows it, run on a real model.
    snippet = page.get_by_test_id("capture-snippet").text_content()
    python, _, shell = snippet.partition("\n\n")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2)).eval()
    x = torch.randn(2, 4)
    saved = tmp_path / "torch.safetensors"
    assert '"torch.safetensors"' in python
    # Saved into the test's folder rather than the working directory (which imports rely on).
    with torch.no_grad():
        exec(python.replace('"torch.safetensors"', repr(str(saved))), {"perpendis": perpendis, "model": model, "x": x})
    assert saved.stat().st_size > 0

    # The shell half names a real subcommand with the options it shows.
    argv = shell.split()
    assert argv[:4] == ["python", "-m", "perpendis", "capture"]
    usage = subprocess.run([sys.executable, *argv[1:4], "--help"], capture_output=True, text=True, check=True,
                           cwd=Path(perpendis.__file__).parents[1]).stdout
    assert all(option in usage for option in ("--input", "-o"))

    # The capture it made, dropped beside a copy with one layer changed, is bisected.
    tensors = load_file(saved)
    with safe_open(saved, "np") as f:
        metadata = f.metadata()
    names = list(tensors)
    changed = {k: (v + np.float32(1.0) if k == names[-1] else v) for k, v in tensors.items()}
    save_file(changed, tmp_path / "other.safetensors", metadata=metadata)
    page.get_by_test_id("file-a").set_input_files(tmp_path / "other.safetensors")
    page.get_by_test_id("file-b").set_input_files(saved)
    page.get_by_text("torch.safetensors (").wait_for()
    page.get_by_test_id("compare").click()
    page.locator("#bisect-table[data-rows=complete]").wait_for(timeout=REPORT_TIMEOUT_MS)  # built in slices
    assert page.locator("[data-testid=bisect-row]").count() == len(names)
