"""The page's preset list shows each preset's label as Python made it: the peer a preset mimics."""

from __future__ import annotations

import time

from perpendis.numerics.tolerance import PRESETS, preset_label


def test_the_preset_list_names_the_peer_each_preset_mimics(ready_page):
    select = ready_page.get_by_test_id("preset")
    deadline = time.monotonic() + 30
    options: list[list[str]] = []
    while time.monotonic() < deadline:  # the list is filled once presets.json arrives
        options = select.locator("option").evaluate_all("options => options.map(o => [o.value, o.textContent])")
        if any(value in PRESETS for value, _ in options):
            break
        time.sleep(0.1)
    shown = {value: text for value, text in options if value in PRESETS}
    assert shown == {name: preset_label(name) for name in PRESETS}
    assert shown["polygraphy"].endswith("as Polygraphy CompareFunc.simple")
