"""Nothing the user pastes or opens leaves the tab.

Two sessions use every feature the page has — paste, open a file, drop a file, compare,
step through differences, change the tolerance, the examples, swap, copy as Markdown,
download JSON, copy a share link and open it; a reference input, archives compared
layer by layer, a third run, the name mapping — with inputs that carry distinctive
markers.  Every request of the page and its worker is recorded (method, URL, headers,
body), and so is every request the server saw (its access log).  Then: no request
left the origin, none but GET, none had a body, none carried a marker in its URL or
headers, and the share link's fragment, which holds the inputs, never reached the
server.
"""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit

import numpy as np
from made import npy_bytes, npz_bytes, numpy_text

REPORT_TIMEOUT_MS = 60_000
FILE_NAME = "private-weights-QX7Z.npy"
DROPPED_NAME = "dropped-capture-K9W2.npy"
MARKER = 1.2345678  # appears in the pasted text of A and nowhere in the page itself








def wait_report(page) -> None:
    """Wait for a fresh report: compare() hides the old one before it asks the core."""
    page.wait_for_function(
        "() => !document.getElementById('report').hidden && !document.getElementById('cancel').offsetParent",
        timeout=REPORT_TIMEOUT_MS,
    )


def wait_tolerance(page, text: str) -> None:
    """Wait until the report has been judged again under the tolerance ``text`` names."""
    page.wait_for_function(
        "text => document.querySelector('[data-testid=\"tolerance-result\"]')?.textContent.includes(text)",
        arg=text,
        timeout=REPORT_TIMEOUT_MS,
    )


def drop_file(page, side: str, name: str, data: bytes) -> None:
    """Drop a file on a box the way the browser does: a drop event carrying a DataTransfer."""
    page.evaluate(
        """([side, name, b64]) => {
             const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
             const transfer = new DataTransfer();
             transfer.items.add(new File([bytes], name));
             const box = document.getElementById(`side-${side}`);
             for (const type of ["dragover", "drop"]) {
               box.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }));
             }
           }""",
        [side, name, base64.b64encode(data).decode()],
    )
    page.wait_for_function(
        "([side, name]) => document.getElementById(`chip-${side}`).textContent.includes(name)", arg=[side, name]
    )


class Recorder:
    """Every request of the context (page and workers: method, URL, headers, body) and every WebSocket."""

    def __init__(self, context, page):
        self.context = context
        self.requests: list[dict] = []
        self.sockets: list[str] = []
        context.on("request", self.record)
        page.on("websocket", lambda ws: self.sockets.append(ws.url))

    def record(self, request) -> None:
        self.requests.append(
            {"method": request.method, "url": request.url, "headers": request.headers, "body": request.post_data_buffer}
        )

    def stop(self) -> None:
        self.context.remove_listener("request", self.record)


def assert_private(recorder: Recorder, server, secrets: list[str], fragment: str | None = None) -> None:
    """No request left the origin, none but GET, none had a body, none carried a secret
    (in its URL or headers), no WebSocket opened; the server's own log agrees, and never
    saw the share link's fragment (when a link was made)."""
    recorder.stop()
    seen = recorder.requests
    assert not recorder.sockets, recorder.sockets
    for request in seen:
        url = request["url"]
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about"):
            continue
        assert f"{parts.scheme}://{parts.netloc}" == server.origin, url
        assert request["method"] == "GET", (request["method"], url)
        assert not request["body"], url
        assert parts.fragment == "", url
        carried = unquote(url) + " " + " ".join(f"{k}: {v}" for k, v in request["headers"].items())
        leaked = [secret for secret in secrets if secret in carried]
        assert not leaked, (leaked, url)
        assert "v1=" not in parts.query, url

    log = server.log_path.read_text()
    assert log.strip(), "the server logged no request"
    for line in log.splitlines():
        request_line = line.split('"')[1] if '"' in line else line
        assert request_line.split()[0] == "GET", line
        assert "v1=" not in line, line
        assert fragment is None or fragment[:40] not in line, line
        assert not [secret for secret in secrets if secret in unquote(line)], line


def test_no_input_leaves_the_tab(ready_page, context, server, tmp_path):
    page = ready_page
    recorder = Recorder(context, page)

    rng = np.random.default_rng(11)
    a = rng.standard_normal((6, 7)).astype(np.float32)
    a[0, 0] = MARKER
    b = a.copy()
    b[2, 3] = np.nextafter(b[2, 3], np.float32(9))
    b[5, 6] = -b[5, 6]
    secrets = [str(np.float32(MARKER)), FILE_NAME, DROPPED_NAME, "QX7Z", "K9W2"]

    # Paste, open a file, compare.
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    np.save(tmp_path / FILE_NAME, b)
    page.get_by_test_id("file-b").set_input_files(tmp_path / FILE_NAME)
    page.get_by_text(f"{FILE_NAME} (").wait_for()
    page.get_by_test_id("compare").click()
    wait_report(page)

    # Inspect: step through differences, change the tolerance (preset and custom).
    page.get_by_test_id("next-diff").click()
    page.get_by_test_id("prev-diff").click()
    page.get_by_test_id("atol").fill("0.001")
    page.get_by_test_id("rtol").fill("0.001")
    wait_tolerance(page, "atol=0.001, rtol=0.001")
    presets = page.get_by_test_id("preset").locator("option").evaluate_all("options => options.map(o => o.value)")
    named = [p for p in presets if p not in ("", "custom")]
    if named:
        page.get_by_test_id("preset").select_option(named[0])
        wait_tolerance(page, f"(preset {named[0]})")

    # Export: Markdown to the clipboard, the JSON report as a download, the share link.
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.origin)
    page.get_by_test_id("copy-markdown").click()
    page.get_by_text("Markdown report copied.").wait_for()
    with page.expect_download() as download:
        page.get_by_test_id("download-json").click()
    assert download.value.suggested_filename.endswith(".json")
    page.get_by_test_id("share").click()
    link = page.get_by_test_id("share-link")
    link.wait_for()
    share_url = link.input_value()
    assert "#v1=" in share_url

    # Drop a file, swap, compare again; the examples; clear.
    drop_file(page, "a", DROPPED_NAME, npy_bytes(b))
    page.get_by_test_id("swap").click()
    page.get_by_test_id("compare").click()
    wait_report(page)
    page.get_by_test_id("example-bug").click()
    wait_report(page)
    page.get_by_test_id("example-rounding").click()
    wait_report(page)
    page.get_by_test_id("clear").click()

    # Open the share link as a new document: it restores the inputs and compares them.
    page.goto("about:blank")
    page.goto(share_url)
    wait_report(page)
    assert page.get_by_test_id("paste-a").input_value() == numpy_text(a)

    # The share link loaded the page anew: the recorder saw its worker fetch Pyodide's runtime.
    assert any("/pyodide/" in request["url"] for request in recorder.requests), recorder.requests
    assert_private(recorder, server, secrets, share_url.split("#", 1)[1])


def test_no_input_leaves_the_tab_with_reference_bisect_and_runs(ready_page, context, server):
    """The other features: a reference input, archives compared layer by layer, a third
    run, the name mapping; member names and file names carry the secrets."""
    page = ready_page
    recorder = Recorder(context, page)
    rng = np.random.default_rng(12)
    layers = {f"secret_layer_{i}_M4RK": rng.standard_normal((3, 4)).astype(np.float32) for i in range(3)}
    moved = {name: value + np.float32(1e-6) for name, value in layers.items()}
    secrets = ["M4RK", "R3FX", "RUNC"]

    # The reference, beside a plain compare.
    a = next(iter(layers.values()))
    page.get_by_test_id("paste-a").fill(numpy_text(a))
    page.get_by_test_id("paste-b").fill(numpy_text(moved[next(iter(moved))]))
    page.get_by_text("Reference (optional)").click()
    page.get_by_test_id("file-ref").set_input_files(
        {"name": "ref-R3FX.npy", "mimeType": "application/octet-stream", "buffer": npy_bytes(a.astype(np.float64))}
    )
    page.wait_for_selector("#chip-ref:not([hidden])")
    page.get_by_test_id("compare").click()
    page.get_by_test_id("reference").wait_for(timeout=REPORT_TIMEOUT_MS)
    page.locator("#chip-ref .chip-remove").click()

    # Archives on both sides: compared layer by layer; then a third run and a mapping.
    for side, arrays, name in (("a", layers, "torch-M4RK.npz"), ("b", moved, "ort-M4RK.npz")):
        page.get_by_test_id(f"file-{side}").set_input_files(
            {"name": name, "mimeType": "application/octet-stream", "buffer": npz_bytes(**arrays)}
        )
        page.wait_for_selector(f"#chip-{side}:not([hidden])")
    page.get_by_test_id("compare").click()
    page.get_by_test_id("bisect-summary").wait_for(timeout=REPORT_TIMEOUT_MS)
    page.get_by_test_id("add-run").click()
    page.get_by_test_id("file-c").set_input_files(
        {"name": "run-RUNC.npz", "mimeType": "application/octet-stream", "buffer": npz_bytes(**layers)}
    )
    page.wait_for_selector("[data-run=C] .file-chip:not([hidden])")
    page.evaluate("() => document.querySelector('[data-testid=\"bisect-summary\"]')?.remove()")
    page.get_by_test_id("compare").click()
    page.get_by_test_id("runs-matrix").wait_for(timeout=REPORT_TIMEOUT_MS)
    names = list(layers)
    page.get_by_test_id("mapping").fill(f"{names[0]} = {names[1]}")
    page.get_by_test_id("apply-mapping").click()
    page.wait_for_function("() => !document.body.classList.contains('busy')", timeout=REPORT_TIMEOUT_MS)

    assert_private(recorder, server, secrets)
