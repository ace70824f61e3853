"""``python -m perpendis A B --open``: the page the command serves shows the report of its two files.

The command runs as a user runs it (a subprocess, ``BROWSER`` pointing at a script that
records the address it is given, as :mod:`webbrowser` hands it to any browser), then real
Chromium opens that address. The harness's ``context`` fixture fails the test on any
request outside the command's own origin, any CSP violation and any uncaught page error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import urlsplit
from urllib.request import urlopen

import numpy as np
import pytest
from conftest import Server, wait_until_ready

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "fixtures" / "models"
A, B = MODELS / "cnn.ort.npy", MODELS / "cnn.offset.npy"  # ONNX Runtime, and the same with 0.25 added to a bias
REPORT_TIMEOUT_MS = 90_000


@pytest.fixture
def opened(site: Path, tmp_path: Path) -> Iterator[dict]:
    """The command, running; yields the address its browser was asked to open."""
    recorded = tmp_path / "browser-was-asked.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {recorded}\n')
    browser.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "py"), "BROWSER": str(browser)}
    command = [sys.executable, "-m", "perpendis", str(A), str(B), "--open", "--site", str(site), "--preset", "fp32-cpu"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline()
        deadline = time.monotonic() + 30
        while not recorded.exists() or not recorded.read_text():
            assert process.poll() is None, process.stderr.read()
            assert time.monotonic() < deadline, "the browser was never asked to open the page"
            time.sleep(0.05)
        url = recorded.read_text()
        yield {"url": url, "printed": first}
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def server(opened: dict) -> Server:
    """The command's origin is the only one the page may talk to (overrides the harness's)."""
    parts = urlsplit(opened["url"])
    origin = f"{parts.scheme}://{parts.netloc}"
    return Server(url=opened["url"], origin=origin, log_path=None, httpd=None)


def test_page_opened_from_the_command_line_shows_the_report_of_both_files(opened, server, context, page):
    url = opened["url"]
    parts = urlsplit(url)
    assert parts.hostname == "127.0.0.1" and parts.port and parts.query.startswith("open=")
    assert url in opened["printed"]
    page.goto(url)
    wait_until_ready(page)
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
    assert "investigate" in page.get_by_test_id("verdict").text_content().lower()
    for side, path in (("a", A), ("b", B)):
        chip = page.locator(f"#chip-{side} .file-name").text_content()
        assert f"{path.name} ({path.stat().st_size} bytes)" in chip
    # the report is of these files: the inspector opens at the first element NumPy finds failing
    # the tolerance the page shows
    a, b = np.load(A).astype(np.float64), np.load(B).astype(np.float64)
    atol = float(page.get_by_test_id("atol").input_value())
    rtol = float(page.get_by_test_id("rtol").input_value())
    failing = np.flatnonzero(~(np.abs(a - b) <= atol + rtol * np.abs(b)))
    first = np.unravel_index(int((failing if failing.size else np.flatnonzero(a != b))[0]), a.shape)
    assert page.get_by_test_id("element-index").text_content() == "(" + ", ".join(str(int(i)) for i in first) + ")"
    assert page.get_by_test_id("preset").input_value() == "fp32-cpu"
    token = parts.query.removeprefix("open=")
    fetched = [u for u in context.page_requests if "/open/" in u]
    assert sorted(urlsplit(u).path for u in fetched) == [f"/open/{token}/{n}" for n in ("a", "b", "manifest.json")]


def test_only_the_token_opens_the_files(opened, server, context, page):
    base = server.origin
    token = urlsplit(opened["url"]).query.removeprefix("open=")
    manifest = json.load(urlopen(f"{base}/open/{token}/manifest.json"))
    assert manifest == {"inputs": {"a": A.name, "b": B.name}, "options": {"preset": "fp32-cpu"}}
    assert urlopen(f"{base}/open/{token}/b").read() == B.read_bytes()
    for path in (f"/open/{token[:-1]}x/a", f"/open/{token}/c", f"/open/{token}/../index.html", "/open/"):
        with pytest.raises(HTTPError) as info:
            urlopen(base + path)
        assert info.value.code == 404, path
    headers = urlopen(base + "/").headers
    assert "connect-src 'self'" in headers["Content-Security-Policy"]
    # a page whose token is not the command's says what to do, and loads nothing
    page.goto(f"{base}/?open={token[:-1]}x")
    wait_until_ready(page)
    error = page.get_by_test_id("error")
    error.wait_for(timeout=REPORT_TIMEOUT_MS)
    assert "run the command again" in error.text_content()
