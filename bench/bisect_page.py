"""Time bisect by layer in the page on a ResNet-18-sized pair of captures.

Two ``.npz`` captures of the 60 tensors a ResNet-18 forward pass hooks (stem, 8 basic
blocks with their downsample branches, pool, fc) at a batch size that makes about 100 MB
of float32 per side.  Side B is side A with rounding noise that grows with depth, the
way two correct runtimes drift apart, rounded to float32.  The figure is the time from
pressing Compare to the table being shown, in the real built site in Debian's Chromium;
the same request through ``perpendis.service.api`` natively is printed beside it.  Not a test:
nothing asserts, timings on a shared machine are noisy.

Usage: ``python bench/bisect_page.py [--megabytes 100] [--runs 1]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "py", ROOT / "scripts", ROOT / "tests" / "browser", ROOT / "bench"):
    sys.path.insert(0, str(path))

import serve  # noqa: E402
from conftest import CHROMIUM_ARGS, chromium_path  # noqa: E402
from perpendis.service import api  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402
from startup import READY_AT_JS  # noqa: E402

import build  # noqa: E402

TIMEOUT_MS = 600_000


def resnet18_layers() -> list[tuple[str, tuple[int, ...]]]:
    """Hooked module names and per-sample output shapes of torchvision's ResNet-18 at 224×224."""
    layers = [("conv1", (64, 112, 112)), ("bn1", (64, 112, 112)), ("relu", (64, 112, 112)), ("maxpool", (64, 56, 56))]
    for stage, (channels, size) in enumerate([(64, 56), (128, 28), (256, 14), (512, 7)], start=1):
        for block in range(2):
            name = f"layer{stage}.{block}"
            shape = (channels, size, size)
            layers += [(f"{name}.conv1", shape), (f"{name}.bn1", shape), (f"{name}.relu", shape)]
            layers += [(f"{name}.conv2", shape), (f"{name}.bn2", shape)]
            if stage > 1 and block == 0:
                layers += [(f"{name}.downsample.0", shape), (f"{name}.downsample.1", shape)]
            layers.append((name, shape))
    return [*layers, ("avgpool", (512, 1, 1)), ("fc", (1000,))]


def make_captures(folder: Path, megabytes: float) -> tuple[Path, Path, int, int]:
    """Write A and B as .npz; returns their paths, the batch size and the tensor count."""
    layers = resnet18_layers()
    per_sample = sum(int(np.prod(shape)) for _, shape in layers) * 4
    batch = max(1, round(megabytes * 1e6 / per_sample))
    rng = np.random.default_rng(0)
    a_arrays, b_arrays = {}, {}
    for depth, (name, shape) in enumerate(layers, start=1):
        a = rng.standard_normal((batch, *shape), dtype=np.float32)
        if "relu" in name or name.count(".") == 1:
            np.maximum(a, 0, out=a)
        # Relative error of a few float32 roundings, growing like a random walk with depth.
        noise = rng.standard_normal(a.shape, dtype=np.float32) * np.float32(2.0**-24 * np.sqrt(depth))
        a_arrays[name], b_arrays[name] = a, (a + a * noise).astype(np.float32)
    paths = folder / "resnet18.a.npz", folder / "resnet18.b.npz"
    np.savez(paths[0], **a_arrays)
    np.savez(paths[1], **b_arrays)
    return paths[0], paths[1], batch, len(layers)


def native_seconds(a: Path, b: Path) -> float:
    request = {"op": "bisect", "inputs": {"a": {"name": a.name, "data": "a"}, "b": {"name": b.name, "data": "b"}}}
    payloads = {"a": a.read_bytes(), "b": b.read_bytes()}
    start = time.perf_counter()
    out = api.handle(request, payloads)
    elapsed = time.perf_counter() - start
    if not out["ok"]:
        raise SystemExit(f"native bisect failed: {out['error']}")
    return elapsed


# Presses Compare and resolves with the milliseconds until the bisect table is shown.
TIME_COMPARE_JS = """() => new Promise((resolve, reject) => {
  const start = performance.now();
  const done = () => {
    if (document.querySelector('[data-testid="bisect-summary"]')) {
      observer.disconnect();
      resolve(performance.now() - start);
    } else if (!document.querySelector('[data-testid="error"]').hidden) {
      observer.disconnect();
      reject(new Error(document.querySelector('[data-testid="error"]').textContent));
    }
  };
  const observer = new MutationObserver(done);
  observer.observe(document.body, { childList: true, subtree: true, attributes: true });
  document.querySelector('[data-testid="compare"]').click();
})"""


@contextmanager
def served_page(site: Path) -> Iterator[tuple[Any, str]]:
    """The built site served on a free port, and a page of a fresh headless Chromium profile."""
    httpd = serve.make_server(site, port=0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
            ctx = pw.chromium.launch_persistent_context(
                profile, executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True
            )
            page = ctx.pages[0] if ctx.pages else ctx.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            yield page, f"http://127.0.0.1:{httpd.server_address[1]}/"
            ctx.close()
    finally:
        httpd.shutdown()
        httpd.server_close()


def open_captures(page, a: Path, b: Path) -> None:
    """Open the two captures in the page's inputs, and wait until it has taken them."""
    for side, path in (("a", a), ("b", b)):
        page.get_by_test_id(f"file-{side}").set_input_files(str(path))
        page.wait_for_selector(f"#chip-{side}:not([hidden])")


def page_seconds(site: Path, a: Path, b: Path, runs: int) -> list[float]:
    times = []
    with served_page(site) as (page, url):
        for _ in range(runs):
            page.goto(url)
            page.evaluate(READY_AT_JS)
            open_captures(page, a, b)
            times.append(page.evaluate(TIME_COMPARE_JS) / 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=float, default=100, help="float32 megabytes per side (default 100)")
    parser.add_argument("--runs", type=int, default=1, help="page measurements, each in a fresh page load")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        a, b, batch, n = make_captures(folder, args.megabytes)
        size = a.stat().st_size / 1e6
        print(f"captures: {n} tensors, batch {batch}, {size:.0f} MB per side (.npz)")
        print(f"native api.handle bisect: {native_seconds(a, b):.2f} s")
        build.build(folder / "dist")
        times = page_seconds(folder / "dist", a, b, args.runs)
        runs = ", ".join(f"{t:.2f}" for t in times)
        print(f"page, Compare pressed to table shown: {statistics.median(times):.2f} s (runs: {runs})")


if __name__ == "__main__":
    main()
