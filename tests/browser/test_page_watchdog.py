"""A core that goes silent after its downloads is restarted, and what was asked of it is
sent again (app/client.js, the watchdog).

The client is given a worker script served by the test: its first copy reports that its
downloads are done and then never answers again, as a worker frozen mid-start; its second
copy starts and answers every request with what it was sent.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

HUNG = 'postMessage({type: "status", state: "loading", message: "importing NumPy", fraction: 0.7});'
# A worker of a cross-origin isolated page must say it embeds only what allows it, as
# scripts/serve.py says for every file of the site.
HEADERS = {"Cache-Control": "no-store", "Cross-Origin-Embedder-Policy": "require-corp"}
ANSWERS = """
postMessage({type: "status", state: "ready", message: "ready", fraction: 1});
onmessage = (event) => postMessage({type: "result", id: event.data.id, result: {ok: true, echo: event.data}});
"""


def test_a_core_silent_after_its_downloads_is_restarted_and_gets_the_queued_requests(ready_page):
    page = ready_page
    served: list[str] = []

    def worker(route) -> None:
        served.append(route.request.url)
        body = HUNG if len(served) == 1 else ANSWERS
        route.fulfill(status=200, content_type="text/javascript", body=body, headers=HEADERS)

    page.route("**/app/watchdog-test-worker.js", worker)
    outcome = page.evaluate(
        """async () => {
             const { CoreClient } = await import(new URL("app/client.js", location.href));
             const client = new CoreClient(new URL("app/watchdog-test-worker.js", location.href), {startBoundMs: 2000});
             const statuses = [];
             client.onStatus((s) => statuses.push(s.message));
             const bytes = new Uint8Array([1, 2, 3]);
             const answer = await client.request("compare", { n: 7, bytes }, [bytes.buffer]);
             return { answer, statuses, kept: bytes.length };
           }"""
    )
    assert len(served) == 2, served
    assert outcome["answer"]["echo"]["op"] == "compare" and outcome["answer"]["echo"]["n"] == 7
    assert outcome["answer"]["echo"]["bytes"] in ([1, 2, 3], {"0": 1, "1": 2, "2": 3})
    assert outcome["kept"] == 3  # copied, not moved, while the core was not ready
    assert any("had not answered for 2 s after its downloads" in s for s in outcome["statuses"]), outcome["statuses"]
    assert outcome["statuses"][-1] == "ready"


def test_a_core_that_never_starts_is_reported_failed_after_the_restarts(ready_page):
    page = ready_page
    page.route(
        "**/app/watchdog-test-worker.js",
        lambda route: route.fulfill(status=200, content_type="text/javascript", body=HUNG,
                                    headers=HEADERS),
    )
    status = page.evaluate(
        """async () => {
             const { CoreClient } = await import(new URL("app/client.js", location.href));
             const client = new CoreClient(new URL("app/watchdog-test-worker.js", location.href), {startBoundMs: 500});
             return await new Promise((resolve) => client.onStatus((s) => s.state === "failed" && resolve(s.message)));
           }"""
    )
    assert "did not start" in status and "reload the page" in status
