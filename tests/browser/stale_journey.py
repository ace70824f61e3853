"""The inputs of the stale-report journey (``stale_journey.js``) and the check of what the
page showed at each step, shared by the Chromium, Firefox and WebKit lanes.

The inputs are real: NumPy prints and an ``.npy`` file written by ``np.save``; the
verdicts the page must show are CPython's perpendis's for the same inputs.
"""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
from made import npy_bytes, numpy_text
from perpendis.service import api

JOURNEY = (Path(__file__).with_name("stale_journey.js")).read_text()


def judged(a: str, b: str, **options: str) -> dict:
    """CPython's verdict for two texts, and whether they pass the tolerance."""
    answer = api.handle({"op": "compare", "inputs": {"a": {"text": a}, "b": {"text": b}}, "options": options}, {})
    assert answer["ok"], answer
    return {"verdict": answer["report"]["verdict"], "passes": answer["report"]["tolerance"]["passed"]}


def journey_spec() -> dict:
    """Texts of A and B (B off by 3e-3 relative at every fourth element: more than float32's
    tolerance allows, less than fp16's), other texts for A and B, a reference, an ``.npy``
    file, and text the core refuses; with what CPython judges of A and B."""
    rng = np.random.default_rng(36)
    a = rng.standard_normal((5, 6)).astype(np.float32)
    b = a.copy()
    b.reshape(-1)[::4] *= np.float32(1 + 3e-3)
    spec = {
        "a": numpy_text(a), "b": numpy_text(b),
        "a2": numpy_text(a[:, :4]), "b2": numpy_text(b * 2),
        "ref": numpy_text(a.astype(np.float64)),
        "npy": base64.b64encode(npy_bytes(b)).decode(),
        "words": "loss went down",
    }
    spec["expect"] = {"compared": judged(spec["a"], spec["b"]), "preset": judged(spec["a"], spec["b"], preset="fp16")}
    # After a report, the page's atol and rtol fields hold its tolerance: rtol 0.5 typed
    # there keeps that atol.
    default = api.handle({"op": "compare", "inputs": {"a": {"text": spec["a"]}, "b": {"text": spec["b"]}}}, {})
    spec["expect"]["rtol"] = judged(spec["a"], spec["b"], atol=default["report"]["tolerance"]["atol"], rtol=0.5)
    # The preset changes the outcome: a report judged again shows it, a stale one cannot.
    assert spec["expect"]["compared"]["passes"] != spec["expect"]["preset"]["passes"], spec["expect"]
    return spec


def check(seen: list[dict], spec: dict) -> None:
    """Each step left the report as the inputs on screen require: current, or marked stale
    (dimmed, with the reason in a polite live region), or replaced by an error."""
    by = {s["step"]: s for s in seen}
    assert len(by) == len(seen) == 16, [s["step"] for s in seen]
    current = ("compared", "paste back", "reference removed", "preset", "preset back", "compared again",
               "file removed", "atol back")
    for step in current:
        shown = by[step]
        assert shown["report"] and not shown["stale"] and not shown["dimmed"] and shown["note"] is None, shown
    marked = {
        "paste": ["the inputs changed"], "reference": ["the inputs changed"], "file": ["the inputs changed"],
        "rtol after an edit": ["the inputs changed", "the tolerance changed"], "share": ["the inputs changed"],
        "tolerance only": ["the tolerance changed"],
        "invalid atol": ["not a number"],
    }
    for step, reasons in marked.items():
        shown = by[step]
        assert shown["report"] and shown["stale"] and shown["dimmed"], shown
        assert shown["live"] == "polite" and all(reason in shown["note"] for reason in reasons), shown
    # What was judged: CPython's verdict and outcome, again under the preset chosen on the same
    # inputs, and not under the rtol typed after A changed.
    outcome = lambda step: {"verdict": by[step]["verdict"], "passes": by[step]["passes"]}  # noqa: E731
    assert outcome("compared") == spec["expect"]["compared"], by["compared"]
    assert outcome("preset") == spec["expect"]["preset"], by["preset"]
    assert outcome("preset back") == spec["expect"]["compared"], by["preset back"]
    assert outcome("rtol after an edit") == spec["expect"]["compared"], by["rtol after an edit"]
    assert "the inputs changed" not in by["tolerance only"]["note"], by["tolerance only"]
    assert outcome("compared again") == spec["expect"]["rtol"], by["compared again"]
    # The link of a stale report carries the report's inputs, and says so, with its length.
    share = by["share"]["share"]
    assert share and "not what was edited since" in share["status"], share
    assert f"{share['length']:,} characters" in share["status"], share
    # An error replaces or marks the report it would otherwise sit beside.
    assert by["invalid atol"]["error"], by["invalid atol"]
    assert by["refused input"]["error"] and not by["refused input"]["report"], by["refused input"]
