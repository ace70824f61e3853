"""A W3C WebDriver client for WebKit: Debian's ``webkit2gtk-driver`` under Xvfb.

Safari's engine is the third one the page is tested in (tests/browser/test_webkit.py).
Playwright's WebKit is a patched build it downloads, which this machine cannot fetch, so the
page runs in Debian's WebKitGTK ``MiniBrowser``, driven by ``WebKitWebDriver`` over plain
HTTP (the W3C WebDriver protocol is JSON over HTTP: no client library is needed). It runs
under ``Xvfb``: WebKitGTK's MiniBrowser has no headless mode.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

DRIVER = "WebKitWebDriver"
MINIBROWSER_DIRS = ("/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1", "/usr/lib/aarch64-linux-gnu/webkit2gtk-4.1")
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference
REQUEST_TIMEOUT_S = 300  # a click can wait on a synchronous task of the page


# Resolves once the element's box is the same over two frames and the element (or a child)
# is what a click at its centre hits, then records where the next click lands.
AIM_JS = """
const [element, timeoutMs] = arguments, done = arguments[arguments.length - 1];
const deadline = performance.now() + timeoutMs;
element.scrollIntoView({block: "center"});
let last = null;
const look = () => {
  const r = element.getBoundingClientRect();
  const key = [r.x, r.y, r.width, r.height].join();
  const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
  if ((key === last && hit && element.contains(hit)) || performance.now() > deadline) {
    window.__clicked = undefined;
    document.addEventListener("click", (event) => {
      window.__clicked = element.contains(event.target) ? "hit"
        : `it reached <${event.target.tagName.toLowerCase()} id="${event.target.id}">`;
    }, {capture: true, once: true});
    done(null);
    return;
  }
  last = key;
  requestAnimationFrame(look);
};
requestAnimationFrame(look);
"""


class WebDriverError(RuntimeError):
    """What the driver answered to a command it could not carry out."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def minibrowser() -> str | None:
    found = [str(Path(d) / "MiniBrowser") for d in MINIBROWSER_DIRS if (Path(d) / "MiniBrowser").exists()]
    return found[0] if found else None


def missing() -> str | None:
    """Why WebKit cannot run here, or None when it can."""
    if shutil.which(DRIVER) is None or minibrowser() is None:
        return "WebKitGTK is not installed: run `apt-get install webkit2gtk-driver` (scripts/test.sh does)"
    if shutil.which("Xvfb") is None:
        return "Xvfb is not installed: run `apt-get install xvfb` (scripts/test.sh does)"
    return None


class Session:
    """One browser session: the few W3C commands the tests need."""

    def __init__(self, endpoint: str, session_id: str) -> None:
        self.url = f"{endpoint}/session/{session_id}"

    def command(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as err:
            value = json.loads(err.read()).get("value", {})
            raise WebDriverError(f"{method} {path}: {value.get('error')}: {value.get('message')}") from None

    def go(self, url: str) -> None:
        self.command("POST", "/url", {"url": url})

    def run(self, script: str, *args):
        """The value of `script` (a function body) run in the page with `args`."""
        return self.command("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css: str) -> dict:
        return self.command("POST", "/element", {"using": "css selector", "value": css})

    def click(self, css: str, timeout: float = 20) -> None:
        """A real click at the element's centre, as the user's, aimed once the element has
        stopped moving and is what a click at its centre would hit. Under CI's load the page's
        next-frame scroll could move a button between the driver's aim and its click, and the
        click was lost without a trace (the share link's timeout); now a click that does not
        reach the element fails and names what it reached."""
        element = self.find(css)
        self.command("POST", "/execute/async", {"script": AIM_JS, "args": [element, timeout * 1000]})
        self.command("POST", f"/element/{element[ELEMENT]}/click", {})
        reached = self.run("const got = window.__clicked; window.__clicked = undefined; return got ?? null;")
        if reached != "hit":
            raise WebDriverError(f"the click on {css} did not reach it: {reached or 'no click event at all'}")

    def choose_files(self, css: str, paths: list[Path]) -> None:
        """Files chosen in an ``<input type=file>``, as through its dialog."""
        element = self.find(css)[ELEMENT]
        self.command("POST", f"/element/{element}/value", {"text": "\n".join(str(p) for p in paths)})

    def settle(self) -> None:
        """Two animation frames and a little more: what the page does in the next frame
        (revealing the verdict scrolls it) is done before the next click is aimed."""
        self.command("POST", "/execute/async", {"script": "const done = arguments[arguments.length - 1];"
                     "requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 100)));", "args": []})

    def screenshot(self, path: Path) -> None:
        """The window as painted. Taken right after a change, WebKitGTK under Xvfb gave the
        frame before it, so the page is settled first."""
        self.settle()
        path.write_bytes(base64.b64decode(self.command("GET", "/screenshot")))

    def wait(self, script: str, *args, timeout: float = 120, what: str = "the page") -> object:
        """Poll `script` until it returns something truthy; its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.run(script, *args)
            if value:
                return value
            if time.monotonic() > deadline:
                state = self.run("const error = document.getElementById('error');"
                                 "return document.getElementById('status').textContent + ' | ' + "
                                 "(error.hidden ? '' : error.textContent) + ' | ' + "
                                 "(document.getElementById('export-status')?.textContent ?? '')")
                raise TimeoutError(f"timed out waiting for {what}; the page: {state}")
            time.sleep(0.2)


@contextmanager
def webkit(tmp: Path, width: int = 1280, height: int = 900) -> Iterator[Session]:
    """A fresh WebKitGTK session on its own X display; everything is stopped on exit."""
    display = f":{free_port() % 1000 + 100}"
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port = free_port()
    log = (tmp / "webkitwebdriver.log").open("w")
    # A profile of its own: every test starts cold, as the Chromium ones do.
    env = dict(os.environ, DISPLAY=display, XDG_DATA_HOME=str(tmp / "data"), XDG_CACHE_HOME=str(tmp / "cache"))
    driver = subprocess.Popen([DRIVER, f"--port={port}"], env=env, stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        session_id = _new_session(endpoint, width, height)
        session = Session(endpoint, session_id)
        try:
            yield session
        finally:
            with suppress(OSError, urllib.error.URLError):
                urllib.request.urlopen(urllib.request.Request(session.url, method="DELETE"), timeout=30).read()
    finally:
        driver.terminate()
        xvfb.terminate()
        for process in (driver, xvfb):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        log.close()


def _new_session(endpoint: str, width: int, height: int) -> str:
    capabilities = {"capabilities": {"alwaysMatch": {
        "browserName": "MiniBrowser",
        "webkitgtk:browserOptions": {"binary": minibrowser(), "args": ["--automation"]},
    }}}
    body = json.dumps(capabilities).encode()
    deadline = time.monotonic() + 30
    while True:  # the driver takes a moment to listen
        try:
            request = urllib.request.Request(f"{endpoint}/session", data=body, method="POST",
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=60) as response:
                session_id = json.loads(response.read())["value"]["sessionId"]
            break
        except (ConnectionError, urllib.error.URLError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    Session(endpoint, session_id).command("POST", "/window/rect", {"width": width, "height": height})
    return session_id
