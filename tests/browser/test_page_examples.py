"""The example buttons: committed examples match their real-model fixtures, and each
loads and compares to the verdict the fixture's manifest expects."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "app" / "examples"
MANIFEST = ROOT / "tests" / "fixtures" / "models" / "manifest.json"
REPORT_TIMEOUT_MS = 60_000


def make_examples():
    spec = importlib.util.spec_from_file_location("make_examples", EXAMPLES / "make_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_examples_are_current():
    module = make_examples()
    for name, example in module.examples().items():
        assert json.loads((EXAMPLES / f"{name}.json").read_text()) == example, f"run {EXAMPLES / 'make_examples.py'}"
    assert json.loads((EXAMPLES / "presets.json").read_text()) == module.presets()


@pytest.mark.parametrize("name", ["rounding", "bug"])
def test_example_button(ready_page, name):
    spec = make_examples().EXAMPLES[name]
    files = {spec["a"], spec["b"]}
    pair = next(p for p in json.loads(MANIFEST.read_text())["pairs"] if {p["a"], p["b"]} == files)
    want = "rounding" if pair["expect"] == "legit" else "investigate"
    page = ready_page
    page.get_by_test_id(f"example-{name}").click()
    page.get_by_test_id("verdict").wait_for(timeout=REPORT_TIMEOUT_MS)
    assert want in page.get_by_test_id("verdict").text_content()
    assert page.get_by_test_id("paste-a").input_value().startswith("array([[[")
    assert page.get_by_test_id("shape-a").text_content() == "(2, 8, 16)"
