"""After one visit the page works with its server gone (the service worker in app/sw.js),
and a new build replaces the cached one instead of piling up next to it."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import Server, serving, wait_until_ready

import build

pytest.importorskip("playwright")
from playwright.sync_api import expect

SW_TIMEOUT_MS = 60_000  # the install downloads the whole site once (from the HTTP cache)

# Resolves once a service worker controls the page and returns what it has cached.
CONTROLLED_JS = """async () => {
  await navigator.serviceWorker.ready;
  if (!navigator.serviceWorker.controller) {
    await new Promise((resolve) => navigator.serviceWorker.addEventListener("controllerchange", resolve));
  }
  const names = await caches.keys();
  const urls = [];
  for (const name of names) {
    for (const request of await (await caches.open(name)).keys()) urls.push(request.url);
  }
  return { names, urls };
}"""

# Waits until the named cache is the only one (or the time is up), and returns the names.
ONLY_CACHE_JS = """async ([name, timeoutMs]) => {
  const deadline = Date.now() + timeoutMs;
  let names = await caches.keys();
  while (names.join() !== name && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    names = await caches.keys();
  }
  // What the registration holds, for the failure message: which worker installs, waits, runs.
  const registration = await navigator.serviceWorker.getRegistration();
  const workers = registration ? ["installing", "waiting", "active"].map((slot) =>
    `${slot}: ${registration[slot] ? registration[slot].state : "none"}`).join(", ") : "no registration";
  return { names, workers };
}"""


@pytest.fixture
def server(site: Path, tmp_path: Path) -> Iterator[Server]:
    """A server of this test's own, so the test can stop it (overrides the session one).
    It serves the link ``tmp_path / "served"``, so a test can deploy another build under it."""
    served = tmp_path / "served"
    served.symlink_to(site, target_is_directory=True)
    with serving(served, tmp_path / "access.log") as running:
        yield running


def deploy(site: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.unlink()
    served.symlink_to(site, target_is_directory=True)


def build_manifest(site: Path) -> dict:
    """The version and file list build.py wrote into the served sw.js."""
    match = re.search(r"^const BUILD = (\{.*?\});$", (site / "sw.js").read_text(), re.S | re.M)
    assert match, "dist/sw.js holds no build manifest"
    return json.loads(match.group(1))


def wait_controlled(page) -> dict:
    page.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=SW_TIMEOUT_MS)
    return page.evaluate(CONTROLLED_JS)


def native_verdict(a: np.ndarray, b: np.ndarray) -> str:
    from perpendis.service import api

    request = {"op": "compare", "inputs": {"a": {"text": repr(a)}, "b": {"text": repr(b)}}, "options": {}}
    return api.handle(request, {})["report"]["verdict"]


def test_page_starts_and_compares_with_the_server_stopped(ready_page, server: Server, site: Path):
    cached = wait_controlled(ready_page)
    manifest = build_manifest(site)
    assert cached["names"] == [f"perpendis-{manifest['version']}"]
    assert {server.url + file["path"] for file in manifest["files"]} <= set(cached["urls"])

    server.stop()
    ready_page.reload()
    wait_until_ready(ready_page)
    assert ready_page.evaluate("() => navigator.serviceWorker.controller !== null")

    a = np.array([1.0, 2.5, -3.25, 1e-3], dtype=np.float16)
    b = a.copy()
    b[2] = np.nextafter(b[2], np.float16(0))
    ready_page.get_by_test_id("paste-a").fill(repr(a))
    ready_page.get_by_test_id("paste-b").fill(repr(b))
    ready_page.get_by_test_id("compare").click()
    verdict = native_verdict(a, b)
    expect(ready_page.get_by_test_id("verdict")).to_have_text(re.compile(f"^{verdict}\\b", re.I), timeout=30_000)


def test_a_new_build_replaces_the_cached_one(page, server: Server, site: Path, tmp_path: Path):
    # The next build: one app file changed, the service worker rewritten as build.py does.
    next_site = tmp_path / "next" / "dist"
    shutil.copytree(site, next_site)
    styles = next_site / "app" / "styles.css"
    styles.write_text(styles.read_text() + "\n/* next build */\n")
    old = build_manifest(site)
    build.write_service_worker(next_site, {Path(file["path"]) for file in old["files"] if file["immutable"]})
    build.precompress(next_site)
    new = build_manifest(next_site)
    assert new["version"] != old["version"]

    page.goto(server.url)
    wait_until_ready(page)
    assert wait_controlled(page)["names"] == [f"perpendis-{old['version']}"]

    deploy(next_site, tmp_path)
    page.reload()
    wait_until_ready(page)
    caches = page.evaluate(ONLY_CACHE_JS, [f"perpendis-{new['version']}", SW_TIMEOUT_MS])
    assert caches["names"] == [f"perpendis-{new['version']}"], caches["workers"]
    cached_css = page.evaluate(
        """async (url) => (await (await caches.match(url)).text())""", server.url + "app/styles.css"
    )
    assert cached_css == styles.read_text()
