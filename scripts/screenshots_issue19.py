"""Before/after screenshots of each problem of issue 19, clipped to the element concerned.

"Before" is the page as built by commit 5708a57 (a checkout of it, given by ``--before``,
built with its own ``build.py``); "after" is this tree's page. Both are served on 127.0.0.1
and driven by Debian's Chromium with the browser tests' flags, on the same real inputs
(made here with NumPy and PyTorch). One more "after" is taken in Firefox ESR through
``tests/firefox/run.mjs`` (puppeteer-core). Writes ``docs/screenshots/issue19/*.png``.

Run: ``python3 scripts/screenshots_issue19.py --before <checkout of 5708a57>``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots" / "issue19"
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "py"))
sys.path.insert(0, str(ROOT / "tests" / "browser"))

import serve  # noqa: E402
from conftest import CHROMIUM_ARGS, chromium_path  # noqa: E402
from made import numpy_text  # noqa: E402

TIMEOUT_MS = 180_000


def settle(page) -> None:
    page.wait_for_timeout(400)
    page.wait_for_function(
        """() => !document.body.classList.contains("busy")
             && (!document.getElementById("report").hidden || !document.getElementById("error").hidden
                 || !document.getElementById("bisect").hidden)""",
        timeout=TIMEOUT_MS,
    )
    page.wait_for_timeout(600)


def paste(page, a: str, b: str) -> None:
    page.get_by_test_id("clear").click()
    page.get_by_test_id("paste-a").fill(a)
    page.get_by_test_id("paste-b").fill(b)
    page.get_by_test_id("compare").click()
    settle(page)


# ---------------------------------------------------------------------------------- the cases


def fp16_vs_fp32() -> tuple[str, str]:
    b = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    return numpy_text(b.astype(np.float16)), numpy_text(b)


def no_dtype() -> tuple[str, str]:
    b = (np.arange(12, dtype=np.float32) / 4).reshape(3, 4)
    return str(b), numpy_text(b)


def torch_prints() -> tuple[str, str]:
    import torch

    b = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))
    a = b.clone()
    a.view(-1)[:16] = torch.nextafter(b.view(-1)[:16], torch.tensor(float("inf")))
    return repr(a), repr(b)


def channel_bug() -> tuple[str, str]:
    """(8, 6, 6) float32: rounding noise in every channel, a bug in channel 5."""
    rng = np.random.default_rng(2)
    b = rng.standard_normal((8, 6, 6)).astype(np.float32)
    a = (b.astype(np.float64) * (1 + rng.uniform(-2e-7, 2e-7, b.shape))).astype(np.float32)
    a[5, 2:4] += np.float32(0.3)
    return numpy_text(a), numpy_text(b)


def wide_ulps() -> tuple[str, str]:
    from test_page_layout import wide_pair

    a, b = wide_pair()
    return numpy_text(a), numpy_text(b)


def noisy() -> tuple[str, str]:
    from test_page_numbers import bug_pair

    a, b = bug_pair()
    return numpy_text(a), numpy_text(b)


def summarised() -> tuple[str, str]:
    import torch

    values = np.arange(2000, dtype=np.float32) / 7
    return repr(values), repr(torch.from_numpy(values))


def shapes_then_preset(page) -> None:
    paste(page, "[[1, 2, 3], [4, 5, 6]]", "[1, 2, 3, 4, 5]")
    page.get_by_test_id("preset").select_option("fp16")
    page.wait_for_timeout(1500)


def heatmap_open(page) -> None:
    paste(page, *channel_bug())
    page.locator("#heatmap canvas.heatmap").wait_for(timeout=TIMEOUT_MS)
    page.wait_for_timeout(800)


# (name, problem, width, colour scheme, action, selector to clip). The action leaves the page
# in the state the problem is about.
Shot = tuple[str, str, int, str, Callable, str]
SHOTS: list[Shot] = [
    ("fp16-headline", "fp16 against fp32: a red INVESTIGATE while the tolerance passes", 1280, "light",
     lambda p: paste(p, *fp16_vs_fp32()), "#verdict-box"),
    ("no-dtype", "print(ndarray) carries no dtype: an error-level dtype mismatch", 1280, "light",
     lambda p: paste(p, *no_dtype()), "#verdict-box"),
    ("torch-decimals", "two PyTorch default prints (4 decimals) called IDENTICAL", 1280, "light",
     lambda p: paste(p, *torch_prints()), "#verdict-box"),
    ("shapes-then-preset", "after shapes that cannot align, a preset change blanks the tolerance card", 1280,
     "light", shapes_then_preset, "#report > .grid"),
    ("heatmap-opening", "the heat map opens on slice 0 (rounding), the bug is in channel 5", 1280, "light",
     heatmap_open, "#slice-card"),
    ("heatmap-dark", "per-slice colour scale, no legend, a 'darkest' caption wrong in dark mode", 1280, "dark",
     heatmap_open, "#slice-card"),
    ("inspector-opening", "the inspector opens on the first difference, not the first failing element", 1280,
     "light", lambda p: paste(p, *channel_bug()), ".inspector"),
    ("histogram-ticks", "the histogram's tick labels overlap", 1280, "light",
     lambda p: paste(p, *wide_ulps()), "#histogram"),
    ("worst-390", "the worst-elements table is clipped at 390 px with no hint that it scrolls", 390, "light",
     lambda p: paste(p, *noisy()), "#worst"),
    ("numbers-summary", "noisy numbers: 17 digits, 'max relative inf'", 1280, "light",
     lambda p: paste(p, *noisy()), "#summary"),
    ("numbers-tolerance", "'9 (0.28125 of all)' beside percentages elsewhere", 1280, "light",
     lambda p: paste(p, *noisy()), "#tolerance"),
    ("words", "'hello world' and 'loss went down' blame the token 'loss'", 1280, "light",
     lambda p: paste(p, "hello world", "loss went down"), ".inputs"),
    ("json-dict", "a pasted JSON dict is reported as a ragged list", 1280, "light",
     lambda p: paste(p, '{"a": [1, 2], "b": [3, 4]}', "[1, 2]"), ".inputs"),
    ("summarised-both", "both boxes hold summarised prints, only A is flagged", 1280, "light",
     lambda p: paste(p, *summarised()), ".inputs"),
    ("differing-bit-dark", "the 'differing bit' legend lacks contrast in dark mode", 1280, "dark",
     lambda p: paste(p, *channel_bug()), ".inspector .legend"),
    ("onboarding", "a newcomer cannot tell which files are accepted or what Add run does", 1280, "light",
     lambda p: None, "main"),
    ("paste-back", "no block of lines to paste back into a test", 1280, "light",
     lambda p: paste(p, *noisy()), "#paste-back-card || .export"),
]


def shoot(site: Path, label: str, shots: list[Shot]) -> dict[str, str]:
    """Take every shot of ``site``; returns name → file name, or the reason it was not taken."""
    taken = {}
    httpd = serve.make_server(site, port=0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
            context = pw.chromium.launch_persistent_context(
                profile, executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True,
                viewport={"width": 1280, "height": 900})
            page = context.pages[0]
            page.goto(f"http://127.0.0.1:{httpd.server_address[1]}/")
            page.wait_for_function("() => /ready/.test(document.getElementById('status').textContent)",
                                   timeout=TIMEOUT_MS)
            for name, _, width, scheme, action, selector in shots:
                page.set_viewport_size({"width": width, "height": 900})
                page.emulate_media(color_scheme=scheme)
                try:
                    action(page)
                    # "x || y": x where the build has it shown, else y (a card the old page lacks).
                    choices = [page.locator(c.strip()).first for c in selector.split("||")]
                    target = next((c for c in choices if c.count() and c.is_visible()), choices[-1])
                    target.scroll_into_view_if_needed()
                    path = OUT / f"{name}-{label}.png"
                    if selector == "main":  # the top of the page: the inputs and what is said about them
                        box = target.bounding_box()
                        page.evaluate("() => window.scrollTo(0, 0)")
                        page.screenshot(path=path, clip={"x": box["x"], "y": 0, "width": box["width"],
                                                         "height": min(box["height"], 640)})
                    else:
                        target.screenshot(path=path)
                    taken[name] = path.name
                except Exception as err:  # one shot that cannot be taken must not cost the others
                    taken[name] = f"not taken: {type(err).__name__}: {str(err).splitlines()[0][:120]}"
            context.close()
    finally:
        httpd.shutdown()
    return taken


def firefox_shot(site: Path) -> str:
    """The heat map of the channel bug in Firefox ESR, dark, through puppeteer-core."""
    a, b = channel_bug()
    path = OUT / "heatmap-dark-after-firefox.png"
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.json"
        spec.write_text(json.dumps({"a": a, "b": b, "selector": "#slice-card", "path": str(path), "dark": True}))
        httpd = serve.make_server(site, port=0)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{httpd.server_address[1]}/"
            run = subprocess.run(["node", str(ROOT / "tests" / "firefox" / "run.mjs"), "screenshot", url, str(spec)],
                                 cwd=ROOT, capture_output=True, text=True, timeout=600)
        finally:
            httpd.shutdown()
    if run.returncode:
        return f"not taken: {run.stderr.strip()[-300:]}"
    return path.name


HEADER = """# Issue 19: before and after

Each problem the issue names, on the same real input, clipped to the element concerned:
"before" is the page of commit 5708a57, "after" the page of this branch, both in Debian's
Chromium (the browser tests' flags); the last row is Firefox ESR through puppeteer-core.
Made by `python3 scripts/screenshots_issue19.py --before <checkout of 5708a57>`; the inputs
are made in that script. Not pictured (nothing to see): the verdict's live region, CLS and the
bisect buttons' accessible names (see tests/browser/test_accessibility.py and bench/lighthouse_page.py).
The "hello world" / "loss went down" pair was already answered right at 5708a57: its two pictures show the same answer.

"""


def cell(name: str, taken: str) -> str:
    """A table cell: the image, or why it was not taken."""
    return f"![{name}]({taken})" if taken.endswith(".png") else taken


def build_site(tree: Path, out: Path) -> Path:
    subprocess.run([sys.executable, str(tree / "build.py"), "--out", str(out)], cwd=tree, check=True,
                   capture_output=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout of commit 5708a57")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        before = shoot(build_site(args.before.resolve(), Path(tmp) / "before"), "before", SHOTS)
        site = build_site(ROOT, Path(tmp) / "after")
        after = shoot(site, "after", SHOTS)
        firefox = firefox_shot(site)
    rows = ["| problem | before (5708a57) | after |", "| --- | --- | --- |"]
    for name, problem, width, scheme, _, _ in SHOTS:
        rows.append(f"| {problem} ({width} px, {scheme}) | {cell(name, before[name])} | {cell(name, after[name])} |")
    rows.append(f"| the heat map in Firefox ESR (dark), after | | {cell('heatmap-dark-firefox', firefox)} |")
    (OUT / "README.md").write_text(HEADER + "\n".join(rows) + "\n")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
