"""Sharing past what a link can carry: a 100 k-element float32 pair (two .npy files of
400 kB each, random values that deflate hardly at all) is offered as one .perpendis file,
which a fresh page opens into the same comparison."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import wait_until_ready
from made import npy_bytes
from test_page_actions_fuzz import settle

pytestmark = pytest.mark.browser

N = 100_000


def report_json(page) -> dict:
    with page.expect_download() as info:
        page.get_by_test_id("download-json").click()
    return json.loads(Path(info.value.path()).read_text())


def test_a_pair_too_big_for_a_link_travels_as_a_perpendis_file(ready_page, context, server, tmp_path):
    page = ready_page
    a = np.random.default_rng(100).standard_normal(N).astype(np.float32)
    b = a.copy()
    b[::1000] = np.nextafter(b[::1000], np.float32(np.inf))
    b[4321] += np.float32(0.5)
    for side, array in (("a", a), ("b", b)):
        (tmp_path / f"{side}.npy").write_bytes(npy_bytes(array))
        page.get_by_test_id(f"file-{side}").set_input_files(str(tmp_path / f"{side}.npy"))
        page.wait_for_selector(f"#chip-{side}:not([hidden])")
    page.get_by_test_id("compare").click()
    settle(page)
    sent = report_json(page)
    assert sent["n_elements"] == N

    page.get_by_test_id("share").click()
    page.get_by_test_id("download-bundle").wait_for()
    status = page.get_by_test_id("export-status").text_content()
    assert "more than the 100 kB a share link can carry" in status and ".perpendis" in status, status
    with page.expect_download() as info:
        page.get_by_test_id("download-bundle").click()
    bundle = tmp_path / info.value.suggested_filename
    info.value.save_as(bundle)
    assert bundle.suffix == ".perpendis" and bundle.stat().st_size > 100 * 1024

    other = context.new_page()
    other.goto(server.url)
    wait_until_ready(other)
    other.get_by_test_id("file-a").set_input_files(str(bundle))
    other.get_by_test_id("verdict").wait_for(timeout=90_000)
    settle(other)
    got = report_json(other)
    for key in ("verdict", "n_elements", "n_bitwise_diff", "max_ulp"):
        assert got[key] == sent[key], key
    assert got["first_diff"]["index"] == sent["first_diff"]["index"]
