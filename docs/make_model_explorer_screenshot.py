"""Make docs/model-explorer-overlay.png: Google Model Explorer showing the bugged CNN export's
graph (tests/fixtures/export/cnn_bias.onnx, a dropped Conv bias) coloured by perpendis's
verdicts, the ``nodes.json`` that ``perpendis bisect --model-explorer`` writes.

The bisect runs here (the PyTorch capture against the ONNX Runtime capture, paired by the
model's exporter metadata, with ``--isolate``), then ``model-explorer`` serves the model
with that node data on a free port, and Debian's Chromium, headless, expands every layer
and takes the picture.  Model Explorer is not in requirements-dev.txt (with its adapter it
is some 780 MB); install it apart, e.g. ``python3 -m venv /tmp/mevenv && /tmp/mevenv/bin/pip
install ai-edge-model-explorer model-explorer-onnx``.

Usage: ``python docs/make_model_explorer_screenshot.py [--model-explorer /tmp/mevenv/bin/model-explorer]``
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT / "py"))
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from conftest import CHROMIUM_ARGS  # noqa: E402
from perpendis.cli.main import main as perpendis  # noqa: E402

EXPORT = ROOT / "tests" / "fixtures" / "export"
OUT = DOCS / "model-explorer-overlay.png"
TIMEOUT_MS = 120_000
# Model Explorer asks fonts.gstatic.com for Google Sans; offline it falls back to a system font.
ARGS = [a for a in CHROMIUM_ARGS if not a.startswith("--host-resolver-rules")]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served_url(server: subprocess.Popen[str]) -> str:
    """The URL the server prints once it serves, with the model and node data in its query."""
    assert server.stdout is not None
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        line = server.stdout.readline()
        if not line and server.poll() is not None:
            raise SystemExit(f"model-explorer exited with {server.returncode}")
        if line.strip().startswith("http://"):
            return line.strip()
    raise SystemExit("model-explorer did not say where it serves")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-explorer", default=shutil.which("model-explorer") or "model-explorer")
    args = parser.parse_args()
    model = EXPORT / "cnn_bias.onnx"
    with tempfile.TemporaryDirectory() as tmp:
        nodes = Path(tmp) / "nodes.json"
        code = perpendis(["bisect", str(EXPORT / "cnn.torch.safetensors"), str(EXPORT / "cnn_bias.ort.npz"),
                          "--model", str(model), "--isolate", "--model-explorer", str(nodes)])
        assert code == 1, "the bugged export must fail"
        server = subprocess.Popen(
            [args.model_explorer, str(model), "--extensions=model_explorer_onnx", f"--node_data_paths={nodes}",
             "--no_open_in_browser", "--host=127.0.0.1", f"--port={free_port()}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        try:
            url = served_url(server)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 1100}, color_scheme="light")
                page.set_default_timeout(TIMEOUT_MS)
                page.goto(url)
                page.get_by_text("perpendis verdict").first.wait_for()
                page.locator(".bubble.flatten-layers").click()  # op nodes only: bigger than in nested layers
                time.sleep(2)
                page.locator(".bubble.zoom-fit").click()
                page.mouse.move(5, 400)  # off the toolbar, so no tooltip shows
                time.sleep(2)
                page.screenshot(path=OUT)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
