"""Execute ``tests/fixtures/notebooks/compare.ipynb`` in a real kernel and photograph the
``text/html`` its last cell displayed, in headless Chromium, to ``docs/screenshot-notebook.png``.

Usage: ``python scripts/screenshot_notebook.py [--out PNG]``. The kernel imports the
package from this checkout's ``py/``; the picture shows what Jupyter receives, laid out
under an ``Out[n]:`` prompt as a notebook would.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "tests" / "fixtures" / "notebooks" / "compare.ipynb"


def execute(path: Path = NOTEBOOK) -> nbformat.NotebookNode:
    """Run every cell in an ipykernel that imports ``perpendis`` from this checkout's ``py/``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "py"), os.environ.get("PYTHONPATH")]))}
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute(env=env)
    return nb


def displayed_html(nb: nbformat.NotebookNode) -> tuple[int, str]:
    """(execution count, text/html) of the last cell's result."""
    cell = nb.cells[-1]
    (result,) = [o for o in cell.outputs if o.output_type == "execute_result"]
    return cell.execution_count, result.data["text/html"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshot-notebook.png")
    args = parser.parse_args(argv)
    count, html = displayed_html(execute())
    source = nbformat.read(NOTEBOOK, as_version=4).cells[-1].source
    page = (
        "<!doctype html><meta charset='utf-8'><body style='margin:16px;background:#fff'>"
        "<div style='display:flex;gap:12px;font:13px ui-monospace,monospace'>"
        f"<div style='color:#303f9f;min-width:70px'>In [{count}]:</div>"
        f"<pre style='margin:0;background:#f5f5f5;padding:6px;flex:1'>{source}</pre></div>"
        "<div style='display:flex;gap:12px;margin-top:8px'>"
        f"<div style='color:#d84315;min-width:70px;font:13px ui-monospace,monospace'>Out[{count}]:</div>"
        f"<div>{html}</div></div></body>"
    )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"], headless=True)
        view = browser.new_page(viewport={"width": 1000, "height": 600})
        view.set_content(page)
        view.screenshot(path=str(args.out), full_page=True)
        browser.close()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
