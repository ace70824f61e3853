"""Capture, pair and bisect at ResNet-50 size, natively; then the page bisects the same captures.

A ResNet-50 (bottlenecks [3, 4, 6, 3], built from torch modules, random weights, batch
statistics from two training batches: nothing downloaded) is exported by torch.onnx
(dynamo), and run by PyTorch under ``perpendis.capture`` and by ONNX Runtime under
``capture_onnx`` at a batch that makes about ``--gigabytes`` of float32 per side.  Printed:
tensor counts and sizes, seconds for each step, the bisect with the exporter's metadata
and from values alone, pairing accuracy (the metadata pairs taken as right, each checked
to agree), and, unless ``--no-page``, Compare-to-table seconds in the built page
(Chromium) on the two captures, with the longest gap between animation frames meanwhile
(the page works in a Web Worker; a frozen tab would show a gap as long as the work).
Not a test: timings on a shared machine are noisy; CPU seconds are printed beside wall ones.

Usage: ``python bench/capture_resnet.py [--gigabytes 1] [--no-page | --page-only]``
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / p) for p in ("", "py", "bench", "scripts", "tests/browser")]

import perpendis  # noqa: E402
from perpendis.layers.bisect import bisect, path_entries, path_info  # noqa: E402
from perpendis.layers.capture.onnx import capture_onnx  # noqa: E402


class Bottleneck(nn.Module):
    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * 4
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.downsample = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet50(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64)
        self.relu, self.maxpool = nn.ReLU(), nn.MaxPool2d(3, 2, 1)
        cin, stages = 64, []
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            layer = []
            for k in range(blocks):
                layer.append(Bottleneck(cin, width, stride if k == 0 else 1))
                cin = width * 4
            stages.append(nn.Sequential(*layer))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(2048, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def timed(label: str, fn):
    """Wall seconds, and this process's CPU seconds beside them: on a shared machine the wall
    figure says how busy the others were, the CPU figure what the step costs."""
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    print(f"{label}: {time.perf_counter() - start:.1f} s wall, {time.process_time() - cpu:.1f} s CPU", flush=True)
    return out


# Presses Compare; resolves with [ms until the bisect table shows, the longest gap between two
# animation frames meanwhile]: a page that froze would show a gap as long as the work.
TIME_COMPARE_FRAMES_JS = """() => new Promise((resolve, reject) => {
  const start = performance.now();
  let last = start, longest = 0, done = false;
  const frame = (now) => {
    longest = Math.max(longest, now - last);
    last = now;
    if (!done) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  const observer = new MutationObserver(() => {
    const error = document.querySelector('[data-testid="error"]');
    if (document.querySelector('[data-testid="bisect-summary"]')) {
      done = true;
      observer.disconnect();
      resolve([performance.now() - start, longest]);
    } else if (error && !error.hidden) {
      done = true;
      observer.disconnect();
      reject(new Error(error.textContent));
    }
  });
  observer.observe(document.body, { childList: true, subtree: true, attributes: true });
  document.querySelector('[data-testid="compare"]').click();
})"""


def page_figures(site: Path, a: Path, b: Path) -> tuple[float, float]:
    """Seconds from Compare to the table in the built page, and the longest frame gap (ms)."""
    from bisect_page import open_captures, served_page
    from startup import READY_AT_JS

    with served_page(site) as (page, url):
        page.goto(url)
        page.evaluate(READY_AT_JS)
        open_captures(page, a, b)
        total, gap = page.evaluate(TIME_COMPARE_FRAMES_JS)
    return total / 1000, gap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gigabytes", type=float, default=1.0, help="float32 gigabytes per side (default 1)")
    parser.add_argument("--no-page", action="store_true", help="skip the page measurement")
    parser.add_argument("--page-only", action="store_true", help="only the captures and the page (no native bisects)")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = ResNet50()
    model.train()
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn(4, 3, 64, 64))
    model.eval()
    with torch.no_grad(), perpendis.capture(model) as probe:
        model(torch.randn(1, 3, 224, 224))
    per_sample = sum(a.nbytes for a in probe.arrays.values())
    batch = max(1, round(args.gigabytes * 1e9 / per_sample))
    del probe
    x = torch.randn(batch, 3, 224, 224)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        onnx_path = folder / "resnet50.onnx"
        timed("export (torch.onnx, dynamo; not part of the check)",
              lambda: torch.onnx.export(model, (x[:1],), str(onnx_path), dynamo=True, dynamic_shapes=({0: "batch"},)))
        start_all = time.perf_counter()

        def torch_side():
            with torch.no_grad(), perpendis.capture(model) as run:
                model(x)
            return run

        torch_run = timed("PyTorch capture", torch_side)
        gigabytes = sum(a.nbytes for a in torch_run.arrays.values()) / 1e9
        print(f"  {len(torch_run)} tensors, {gigabytes:.2f} GB, batch {batch}")
        timed("  saved (safetensors)", lambda: torch_run.save(folder / "torch.safetensors"))
        torch_run.arrays.clear()
        gc.collect()
        ort_run = timed("ONNX Runtime capture", lambda: capture_onnx(onnx_path, [x.numpy()]))
        print(f"  {len(ort_run)} values, {sum(a.nbytes for a in ort_run.arrays.values()) / 1e9:.2f} GB")
        timed("  saved (safetensors)", lambda: ort_run.save(folder / "ort.safetensors"))
        timed("  saved without metadata (npz)", lambda: ort_run.save(folder / "ort.npz"))
        ort_run.arrays.clear()
        gc.collect()
        a_path, b_path = folder / "torch.safetensors", folder / "ort.safetensors"
        if args.page_only:
            _page(folder, a_path, b_path)
            return
        result = timed("bisect by metadata (pair + compare every layer, 2 threads)", lambda: bisect(
            path_entries(a_path), path_entries(b_path), info_b=path_info(b_path), workers=2))
        print(f"  total capture + pair + bisect: {time.perf_counter() - start_all:.1f} s (export excluded)")
        truth = {p.a_name: p.b_name for p in result.pairs}
        verdicts = {p.verdict for p in result.pairs}
        first = result.first_failing
        print(f"  {len(result.pairs)} pairs, verdicts {sorted(verdicts)}, first failing {first and first.a_name}")
        plain = timed("bisect from values, order and shape (npz, no metadata)",
                      lambda: bisect(path_entries(a_path), path_entries(folder / "ort.npz"), workers=2))
        found = {p.a_name: p.b_name for p in plain.pairs}
        right = sum(found.get(a) == b for a, b in truth.items())
        wrong = sum(truth.get(a) != b for a, b in found.items())
        print(f"  pairing without the model: {right}/{len(truth)} right, {wrong} wrong")
        if not args.no_page:
            _page(folder, a_path, b_path)


def _page(folder: Path, a_path: Path, b_path: Path) -> None:
    import build

    build.build(folder / "dist")
    total, gap = page_figures(folder / "dist", a_path, b_path)
    print(f"page, Compare pressed to table shown: {total:.1f} s; longest gap between frames {gap:.0f} ms")


if __name__ == "__main__":
    main()
