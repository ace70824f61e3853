"""Random sequences of UI actions never raise in the page.

A seeded generator picks, from the actions the page offers at that moment, one after
another: loading a real case into the boxes (a pair that rounds, a bugged 3-D pair, shapes
that cannot be aligned, an input error, whole-model captures that bisect, a third run),
Compare, preset and atol changes (valid and not), swap, clear, previous/next difference,
the heat map's slice controls, share, opening a bisect row and Add run.  After each action
the page is left to settle.  The test fails on any uncaught error or console error, and on a
report that claims to be current (not marked out of date) while the two boxes on screen hold
other arrays than it describes: CPython's perpendis compares the text on screen, and its
shapes and count of differing elements must be the report's. The sequence that led to a
failure is in the failure message, and the seed replays it.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from made import numpy_text
from perpendis.service import api

pytestmark = pytest.mark.browser

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"
SETTLE_MS = 120_000
STEPS = 30


def _cases() -> dict[str, tuple[str, str]]:
    rng = np.random.default_rng(19)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    rounding = (a + a * np.float32(1e-7)).astype(np.float32)
    bug = a.copy()
    bug[1, 2] += 0.5  # one row of one slice is off: a bug the heat map can show
    return {
        "rounding": (numpy_text(a), numpy_text(rounding)),
        "bug": (numpy_text(a), numpy_text(bug)),
        "shapes": ("[[1, 2, 3], [4, 5, 6]]", "[1, 2, 3, 4, 5]"),
        "words": ("hello world", "loss went down"),
        "half empty": (numpy_text(a[0]), ""),
        "json dict": ('{"a": [1, 2]}', "[1, 2]"),
    }


CASES = _cases()
CAPTURES = {
    "a": MODELS / "cnn.capture.torch.npz",
    "b": MODELS / "cnn.capture.ort.npz",
    "c": MODELS / "cnn.capture.ort_bug.npz",
}


def settle(page) -> None:
    """Wait until no request to the core is outstanding and no debounce is pending."""
    page.wait_for_timeout(300)  # the atol/rtol fields wait 250 ms before judging again
    page.wait_for_function("() => !document.body.classList.contains('busy')", timeout=SETTLE_MS)


def shape_text(shape: list[int]) -> str:
    return f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(map(str, shape)) + ")"


# What the page shows of a report that claims to be current (null when none does, or when it
# judges files or layers, which the boxes do not hold): the boxes' text and the report's figures.
SHOWN_JS = """() => {
  const $ = (id) => document.getElementById(id);
  const text = (id) => document.querySelector(`[data-testid="${id}"]`)?.getAttribute("data-full")
    ?? document.querySelector(`[data-testid="${id}"]`)?.textContent;
  if ($("report").hidden || $("report").dataset.stale === "true") return null;
  if (!$("chip-a").hidden || !$("chip-b").hidden || !$("pair-title").hidden || !$("bisect").hidden) return null;
  return {a: $("paste-a").value, b: $("paste-b").value, ref: $("paste-ref").value,
          shape_a: text("shape-a"), shape_b: text("shape-b"),
          n_diff: document.querySelector('[data-testid="n-diff"] .figure')?.dataset.full ?? text("n-diff")};
}"""


def off_screen(shown: dict | None) -> str | None:
    """Why a report that claims to be current does not describe the text in the boxes; None
    when it does, or when none claims to (``shown``: what SHOWN_JS read)."""
    if shown is None:
        return None
    inputs = {side: {"text": shown[side]} for side in ("a", "b")}
    if shown["ref"].strip():
        inputs["ref"] = {"text": shown["ref"]}
    answer = api.handle({"op": "compare", "inputs": inputs}, {})
    if not answer["ok"]:
        return f"a current-looking report for boxes CPython refuses: {answer['error']['message']}"
    report = answer["report"]
    want = (shape_text(report["a"]["shape"]), shape_text(report["b"]["shape"]), str(report["n_bitwise_diff"]))
    got = (shown["shape_a"], shown["shape_b"], str(shown["n_diff"]).replace(",", ""))
    return None if want == got else f"the report shows {got}, the boxes hold {want}"


def visible(page, selector: str) -> bool:
    locator = page.locator(selector)
    return locator.count() > 0 and locator.first.is_visible() and locator.first.is_enabled()


def load_case(page, rng: random.Random) -> str:
    name = rng.choice(sorted(CASES))
    text_a, text_b = CASES[name]
    for side in ("a", "b"):  # files win over text: take them out first
        if visible(page, f"#chip-{side} .chip-remove"):
            page.locator(f"#chip-{side} .chip-remove").click()
    page.get_by_test_id("paste-a").fill(text_a)
    page.get_by_test_id("paste-b").fill(text_b)
    if rng.random() < 0.5:
        page.get_by_test_id("compare").click()
        return f"compare {name}"
    return f"load {name}"


def load_captures(page, rng: random.Random) -> str:
    for side in ("a", "b"):
        page.get_by_test_id(f"file-{side}").set_input_files(str(CAPTURES[side]))
        page.wait_for_selector(f"#chip-{side}:not([hidden])")
    return "load captures"


def add_run(page, rng: random.Random) -> str:
    page.get_by_test_id("add-run").click()
    run = page.locator("[data-run] input[type=file]").last
    if rng.random() < 0.7:
        run.set_input_files(str(CAPTURES["c"]))
    return "add run"


def pick_preset(page, rng: random.Random) -> str:
    values = page.eval_on_selector_all("#preset option", "options => options.map(o => o.value)")
    value = rng.choice(values)
    page.get_by_test_id("preset").select_option(value)
    return f"preset {value!r}"


def type_atol(page, rng: random.Random) -> str:
    value = rng.choice(["1e-5", "0", "0.5", "", "abc", "-1", "1e309"])
    page.get_by_test_id(rng.choice(["atol", "rtol"])).fill(value)
    return f"tolerance field {value!r}"


def click(testid: str):
    def action(page, rng: random.Random) -> str:
        page.get_by_test_id(testid).click()
        return testid

    return action


def slice_control(page, rng: random.Random) -> str:
    controls = page.locator("#slice-controls select, #slice-controls input")
    control = controls.nth(rng.randrange(controls.count()))
    if control.evaluate("node => node.tagName") == "SELECT":
        values = control.evaluate("node => [...node.options].map(o => o.value)")
        control.select_option(rng.choice(values))
    elif control.get_attribute("type") == "checkbox":  # the log scale
        control.click()
    else:
        control.fill(str(rng.randrange(-1, 6)))
        control.dispatch_event("change")
    return "slice control"


def heatmap_cell(page, rng: random.Random) -> str:
    canvas = page.locator("#heatmap canvas")
    rows, cols, size = (int(canvas.get_attribute(f"data-{key}")) for key in ("rows", "cols", "size"))
    canvas.click(position={"x": (rng.randrange(cols) + 0.5) * size, "y": (rng.randrange(rows) + 0.5) * size})
    return "heat map cell"


def bisect_row(page, rng: random.Random) -> str:
    buttons = page.locator("[data-testid=bisect-row] button")
    buttons.nth(rng.randrange(buttons.count())).click()
    return "bisect row"


# (action, selector that must be visible for it to be offered); an action listed twice is
# picked twice as often.
ACTIONS = [
    (load_case, None),
    (load_case, None),
    (load_case, None),
    (load_captures, None),
    (add_run, "[data-testid=add-run]"),
    (click("compare"), None),
    (click("compare"), None),
    (click("compare"), None),
    (click("compare"), None),
    (pick_preset, None),
    (type_atol, None),
    (click("swap"), None),
    (click("clear"), None),
    (click("prev-diff"), "[data-testid=prev-diff]"),
    (click("next-diff"), "[data-testid=next-diff]"),
    (slice_control, "#slice-controls select"),
    (heatmap_cell, "#heatmap canvas"),
    (click("share"), "[data-testid=share]"),
    (click("first-fail"), "[data-testid=first-fail]"),
    (bisect_row, "[data-testid=bisect-row] button"),
    (click("example-bug"), None),
]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_action_sequences_raise_nothing(ready_page, context, seed):
    page = ready_page
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"pageerror: {error}"))
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    rng = random.Random(seed)
    done: list[str] = []
    for _ in range(STEPS):
        offered = [action for action, needs in ACTIONS if needs is None or visible(page, needs)]
        action = rng.choice(offered)
        done.append(action(page, rng))
        settle(page)
        mismatch = off_screen(page.evaluate(SHOWN_JS))
        if errors or mismatch:
            pytest.fail(f"seed {seed}, after {' → '.join(done)}: {errors or mismatch}")
    # The page still answers: a fresh comparison of a real case gives a verdict.
    page.get_by_test_id("clear").click()
    page.get_by_test_id("paste-a").fill(CASES["bug"][0])
    page.get_by_test_id("paste-b").fill(CASES["bug"][1])
    page.get_by_test_id("compare").click()
    settle(page)
    assert page.locator("#verdict-box").get_attribute("data-verdict") == "investigate", done
    assert not errors, errors


def test_after_shapes_that_cannot_align_the_tolerance_can_change_and_clear_works(ready_page):
    page = ready_page
    page.get_by_test_id("paste-a").fill(CASES["shapes"][0])
    page.get_by_test_id("paste-b").fill(CASES["shapes"][1])
    page.get_by_test_id("compare").click()
    settle(page)
    assert page.get_by_test_id("tolerance-result").text_content() == "not judged: no values were compared"
    # The cards about values are not left as empty shells.
    assert not page.locator("#h-element").is_visible() and not page.locator("#h-worst").is_visible()
    page.get_by_test_id("preset").select_option("fp16")
    settle(page)
    page.get_by_test_id("atol").fill("0.5")
    settle(page)
    assert page.get_by_test_id("tolerance-result").text_content() == "not judged: no values were compared"
    page.get_by_test_id("clear").click()
    settle(page)
    assert page.locator("#report").is_hidden()
