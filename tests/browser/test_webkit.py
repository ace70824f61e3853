"""The page's main journeys in WebKit, Safari's engine: Debian's WebKitGTK under Xvfb,
driven over W3C WebDriver (tests/browser/webkit.py).

Load until ready; paste two tensors and compare; an example; two ``.npy`` files opened;
a share link opened in a fresh session; the report marked out of date when the
inputs change, on every path (stale_journey.js); and a seeded random sequence of actions. Each answer is checked against
CPython's perpendis, as in Firefox (tests/browser/test_firefox.py). Any uncaught error,
rejected promise or console error in the page (from the moment it has loaded) fails the
test, as does a request to another origin.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import webkit
from heatmap_cells import CELLS_JS, CLICK_CELL_JS, Cell
from made import npy_bytes, numpy_text
from stale_journey import JOURNEY, check, journey_spec
from test_firefox import pair, shown
from test_page_actions_fuzz import CASES, SHOWN_JS, off_screen

pytestmark = pytest.mark.browser

READY_S = 240  # a cold start of the core in WebKitGTK on a busy 2-core machine
ANSWER_S = 120

WATCH = """
window.__problems = [];
addEventListener("error", (e) => __problems.push(`uncaught: ${e.message}`));
addEventListener("unhandledrejection", (e) => __problems.push(`unhandled rejection: ${e.reason}`));
const error = console.error.bind(console);
console.error = (...args) => { __problems.push(`console error: ${args.join(" ")}`); error(...args); };
"""

FOREIGN = """
return performance.getEntriesByType("resource").map((e) => e.name)
  .filter((url) => !url.startsWith(location.origin + "/") && !/^(blob|data):/.test(url));
"""


@pytest.fixture
def browser(server, tmp_path: Path) -> Iterator[webkit.Session]:
    why = webkit.missing()
    if why:
        pytest.fail(why)
    with webkit.webkit(tmp_path) as session:
        yield session
        problems = session.run("return window.__problems ?? []") + [
            f"request to another origin: {url}" for url in session.run(FOREIGN)
        ]
        session.screenshot(tmp_path / "last.png")
    assert not problems, problems


def open_page(browser: webkit.Session, url: str) -> None:
    browser.go(url)
    browser.run(WATCH)
    browser.wait("return /\\bready\\b/.test(document.getElementById('status').textContent) || "
                 "document.getElementById('status').dataset.state === 'failed'", timeout=READY_S, what="ready")
    status = browser.run("return document.getElementById('status').textContent")
    assert status == "ready", status


def type_text(browser: webkit.Session, side: str, text: str) -> None:
    """Text put in a box as a paste does: its value, and the input event."""
    browser.run("const box = document.getElementById(arguments[0]); box.value = arguments[1];"
                "box.dispatchEvent(new Event('input', {bubbles: true}));", f"paste-{side}", text)


def answered(browser: webkit.Session) -> dict:
    """After Compare: what the report says, once the page is idle again."""
    browser.wait("return !document.body.classList.contains('busy') && "
                 "(!document.getElementById('report').hidden || !document.getElementById('error').hidden)",
                 timeout=ANSWER_S, what="an answer")
    # The page scrolls the verdict into view in the frame after it shows it: a click aimed
    # before that lands where the button was (the share link's lost click under load).
    browser.settle()
    return browser.run("""
      const box = document.getElementById("verdict-box");
      return {verdict: box.dataset.verdict, index: document.getElementById("element-index").textContent,
              stale: document.getElementById("report").dataset.stale,
              error: document.getElementById("error").hidden ? null : document.getElementById("error").textContent};
    """)


def compare(browser: webkit.Session) -> dict:
    browser.click("#compare")
    return answered(browser)


def test_paste_compare_and_a_stale_report(browser, server, tmp_path):
    open_page(browser, server.url)
    a, b = pair(4, 48, [3, 30])
    b[11] += 0.25
    inputs = {"a": numpy_text(a), "b": numpy_text(b)}
    for side, text in inputs.items():
        type_text(browser, side, text)
    got = compare(browser)
    want = shown({side: {"text": text} for side, text in inputs.items()})
    assert (got["verdict"], got["index"], got["stale"]) == (want["verdict"], want["index"], "false"), got
    browser.screenshot(tmp_path / "compare.png")

    type_text(browser, "b", numpy_text(a))
    note = browser.run("const n = document.getElementById('stale-note'); return n.hidden ? null : n.textContent")
    assert note and "the inputs changed" in note, note
    assert browser.run("return document.getElementById('report').classList.contains('stale')")
    browser.screenshot(tmp_path / "stale.png")
    got = compare(browser)
    assert (got["verdict"], got["stale"]) == ("identical", "false"), got


def test_every_stale_path(browser, server, tmp_path):
    """The report is marked out of date, judged again or replaced, as in Chromium and Firefox
    (stale_journey.js): started in the page, then polled, as WebDriver's scripts time out."""
    open_page(browser, server.url)
    spec = journey_spec()
    browser.run(f"window.__journey = null; ({JOURNEY})(arguments[0]).then("
                "(seen) => { window.__journey = {seen}; }, (err) => { window.__journey = {error: String(err)}; });"
                "return true;", spec)
    done = browser.wait("return window.__journey", timeout=ANSWER_S * 3, what="the stale journey")
    browser.screenshot(tmp_path / "journey-end.png")
    assert "error" not in done, done
    check(done["seen"], spec)


def test_example_and_files(browser, server, tmp_path):
    open_page(browser, server.url)
    browser.click("#example-rounding")
    got = answered(browser)
    assert got["verdict"] == "rounding", got

    a = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float16)
    b = a.copy()
    b[2, 3] = -b[2, 3]  # a sign flip: a bug
    paths = {}
    for side, array in (("a", a), ("b", b)):
        paths[side] = tmp_path / f"{side}.npy"
        paths[side].write_bytes(npy_bytes(array))
        browser.choose_files(f"#file-{side}", [paths[side]])
        browser.wait("return !document.getElementById(arguments[0]).hidden", f"chip-{side}", timeout=30,
                     what=f"the chip of {side}")
    assert browser.run("return document.getElementById('report').dataset.stale") == "true"
    want = shown({side: {"name": p.name, "data": side} for side, p in paths.items()},
                 {side: p.read_bytes() for side, p in paths.items()})
    got = compare(browser)
    assert (got["verdict"], got["index"], got["stale"]) == (want["verdict"], want["index"], "false"), got
    browser.screenshot(tmp_path / "files.png")


def test_heat_map_canvas(browser, server, tmp_path):
    """The heat map painted on its canvas: the cells that differ in the heat colour, the bug at
    full strength, and a click on a cell opening that element."""
    open_page(browser, server.url)
    a = np.random.default_rng(9).standard_normal((12, 16)).astype(np.float32)
    b = a.copy()
    b[::4, ::3] = np.nextafter(b[::4, ::3], np.float32(np.inf))  # rounding
    b[3:6, 8:12] += np.float32(0.5)  # the bug
    type_text(browser, "a", numpy_text(a))
    type_text(browser, "b", numpy_text(b))
    assert compare(browser)["verdict"] == "investigate"
    browser.wait("return document.querySelector('#heatmap canvas') !== null", timeout=ANSWER_S, what="the heat map")
    cells = [Cell(*c) for c in browser.run(f"return ({CELLS_JS})(document.querySelector('#heatmap canvas'))")]
    assert sorted((c.row, c.col) for c in cells if c.kind == "heat") == sorted(map(tuple, np.argwhere(a != b).tolist()))
    assert {c.kind for c in cells} == {"heat", "zero"}
    strong = {(c.row, c.col) for c in cells if c.kind == "heat" and c.opacity > 0.9}
    assert strong and strong <= {(r, c) for r in range(3, 6) for c in range(8, 12)}
    browser.run(f"({CLICK_CELL_JS})(document.querySelector('#heatmap canvas'), 1, 2)")
    browser.wait("return document.getElementById('element-index').textContent === '(1, 2)'", timeout=ANSWER_S,
                 what="the clicked element")
    mark = browser.run("const m = document.querySelector('[data-testid=heatmap-mark]'); "
                       "return [m.dataset.row, m.dataset.col]")
    assert mark == ["1", "2"]
    browser.run("document.getElementById('slice-card').scrollIntoView()")
    browser.screenshot(tmp_path / "heatmap.png")


def test_share_link_round_trip(server, tmp_path):
    why = webkit.missing()
    if why:
        pytest.fail(why)
    a, b = pair(4, 32, [7])
    b[20] += 1.0
    inputs = {"a": numpy_text(a), "b": numpy_text(b)}
    want = shown({side: {"text": text} for side, text in inputs.items()})
    for who in ("sender", "receiver"):
        (tmp_path / who).mkdir()
    with webkit.webkit(tmp_path / "sender") as sender:
        open_page(sender, server.url)
        for side, text in inputs.items():
            type_text(sender, side, text)
        compare(sender)
        sender.click("#share")
        link = sender.wait("const f = document.getElementById('share-link'); return f.hidden ? null : f.value",
                           timeout=30, what="the link")
        status = sender.run("return document.getElementById('export-status').textContent")
        assert f"{len(link):,} characters" in status, status
        assert sender.run("return window.__problems") == []
    with webkit.webkit(tmp_path / "receiver") as receiver:
        open_page(receiver, link)
        got = answered(receiver)
        assert (got["verdict"], got["index"], got["stale"]) == (want["verdict"], want["index"], "false"), got
        assert receiver.run("return document.getElementById('paste-a').value") == inputs["a"]
        assert receiver.run("return window.__problems") == []


# The random-action test of tests/browser/test_page_actions_fuzz.py, in WebKit: the actions
# on text and the tolerance controls (files are covered by test_example_and_files), a
# seeded sequence, and after each step the same checks: no uncaught or console error, and
# no report that claims to be current for other text than the boxes hold.
FUZZ_STEPS = 60


def fuzz_action(browser: webkit.Session, rng) -> str:
    visible = browser.run("""return ["prev-diff", "next-diff", "share", "chip-a", "chip-b"].filter((id) => {
      const node = document.getElementById(id); return node && node.offsetParent !== null; });""")
    offered = ["case", "case", "compare", "compare", "compare", "preset", "atol", "swap", "clear", "example"]
    offered += [id for id in visible if id in ("prev-diff", "next-diff", "share")]
    action = rng.choice(offered)
    if action == "case":
        name = rng.choice(sorted(CASES))
        for side in ("a", "b"):
            if f"chip-{side}" in visible:
                browser.click(f"#chip-{side} .chip-remove")
        for side, text in zip(("a", "b"), CASES[name], strict=True):
            type_text(browser, side, text)
        return f"case {name}"
    if action == "preset":
        value = rng.choice(browser.run("return [...document.getElementById('preset').options].map((o) => o.value)"))
        browser.run("const s = document.getElementById('preset'); s.value = arguments[0];"
                    "s.dispatchEvent(new Event('change', {bubbles: true}));", value)
        return f"preset {value!r}"
    if action == "atol":
        field, value = rng.choice(["atol", "rtol"]), rng.choice(["1e-5", "0", "0.5", "", "abc", "-1"])
        browser.run("const f = document.getElementById(arguments[0]); f.value = arguments[1];"
                    "f.dispatchEvent(new Event('input', {bubbles: true}));", field, value)
        return f"{field} {value!r}"
    browser.click({"example": "#example-bug"}.get(action, f"#{action}"))
    return action


def test_random_actions(browser, server):
    open_page(browser, server.url)
    rng = random.Random(36)
    done = []
    for _ in range(FUZZ_STEPS):
        done.append(fuzz_action(browser, rng))
        time.sleep(0.3)  # the tolerance fields wait 250 ms before judging again
        browser.wait("return !document.body.classList.contains('busy')", timeout=ANSWER_S, what="idle")
        problems = [*browser.run("return window.__problems"), off_screen(browser.run(f"return ({SHOWN_JS})()"))]
        problems = [p for p in problems if p]
        assert not problems, f"after {' → '.join(done)}: {problems}"


def test_a_bisect_of_60_layers_built_in_slices(browser, server, tmp_path):
    """The bisect table of more rows than it builds at once (render/bisect_table.js): every row
    arrives in place, in CPython's order and verdicts, and a row built later opens its pair."""
    from test_page_bisect_slices import LAYERS, native, write_captures

    open_page(browser, server.url)
    paths = write_captures(tmp_path)
    for side, path in zip("ab", paths, strict=True):
        browser.choose_files(f"#file-{side}", [path])
        browser.wait("return !document.getElementById(arguments[0]).hidden", f"chip-{side}", timeout=30,
                     what=f"the chip of {side}")
    truth = native(paths)
    browser.click("#compare")
    browser.wait("return document.getElementById('bisect-table').dataset.rows === 'complete'", timeout=ANSWER_S,
                 what="every row of the table")
    shown_rows = browser.run("""return [...document.querySelectorAll('[data-testid=bisect-row]')].map((r) =>
      [r.querySelector('[data-testid=bisect-a-name]').firstChild.textContent, r.dataset.verdict,
       r.dataset.standing])""")
    assert len(shown_rows) == LAYERS
    assert [r[0] for r in shown_rows] == [p.a_name for p in truth.pairs]
    assert [r[1] for r in shown_rows] == [p.verdict for p in truth.pairs]
    assert [r[2] for r in shown_rows].index("first-failing") == truth.pairs.index(truth.first_failing)
    browser.screenshot(tmp_path / "bisect60.png")
    late = LAYERS - 3
    browser.run("document.querySelector(`[data-testid=bisect-row][data-index='${arguments[0]}'] button.link`)"
                ".click()", late)
    browser.wait("return !document.getElementById('pair-title').hidden", timeout=ANSWER_S, what="the pair's report")
    title = browser.run("return document.getElementById('pair-title').textContent")
    assert title.startswith(f"Layer {late + 1} of {LAYERS}: A {truth.pairs[late].a_name} "), title
