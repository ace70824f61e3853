"""Big comparisons in the page are folded on several CPU cores (app/fold_worker.js helpers),
and the report is the one a single worker, or native perpendis, makes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import wait_for_all_cores
from perpendis.engine.fold.chunk import CHUNK
from perpendis.service import api, fold
from test_page_stream import assert_close, open_files

# The two files in the page's inputs compared through the page's own client, as buffers.
COMPARE_JS = """async () => {
  const { core } = await import(new URL("app/client.js", location.href));
  const files = ["a", "b"].map((side) => document.querySelector(`[data-testid="file-${side}"]`).files[0]);
  const buffers = await Promise.all(files.map((file) => file.arrayBuffer()));
  const inputs = { a: { name: "a.npy", buffer: buffers[0] }, b: { name: "b.npy", buffer: buffers[1] } };
  const stages = [];
  const result = await core.request("compare", { inputs, options: {} }, buffers, (stage) => stages.push(stage));
  return { result, stages };
}"""

# The same, with the two files handed over unread (as the page hands files from 32 MiB on).
COMPARE_UNREAD_JS = """async () => {
  const { core } = await import(new URL("app/client.js", location.href));
  const files = ["a", "b"].map((side) => document.querySelector(`[data-testid="file-${side}"]`).files[0]);
  const inputs = { a: { name: "a.npy", file: files[0] }, b: { name: "b.npy", file: files[1] } };
  return core.request("compare", { inputs, options: {} });
}"""

ELEMENT_JS = """async (flat) => {
  const { core } = await import(new URL("app/client.js", location.href));
  return core.request("element", { flat });
}"""

REQUEST = {"op": "compare", "inputs": {"a": {"name": "a.npy", "data": "a"}, "b": {"name": "b.npy", "data": "b"}}}


@pytest.fixture(scope="module")
def bug_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """4.5M float32 elements of rounding noise, and a run of sign flips in a later share.

    A fifth of the elements differ: enough errors for a helper to select one error column's
    quantiles while the core's worker selects the other's (``fold.OFFLOAD_MIN``)."""
    rng = np.random.default_rng(11)
    n = 4 * CHUNK + CHUNK // 2
    a = rng.standard_normal(n).astype(np.float32)
    b = a.copy()
    hit = rng.random(n) < 0.2
    b[hit] = np.nextafter(b[hit], np.float32(np.inf))
    b[3 * CHUNK : 3 * CHUNK + 20_000] *= -1
    folder = tmp_path_factory.mktemp("split")
    paths = folder / "a.npy", folder / "b.npy"
    np.save(paths[0], a)
    np.save(paths[1], b)
    return paths


@pytest.fixture(scope="module")
def swapped_pair(bug_pair: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same pair with A stored big-endian: its elements are byte-swapped on loading, so
    they lie in no buffer the page sent, and the worker copies helpers' shares out of Python."""
    folder = tmp_path_factory.mktemp("swapped")
    path = folder / "a.npy"
    np.save(path, np.load(bug_pair[0]).astype(">f4"))
    return path, bug_pair[1]


@pytest.mark.parametrize("pair", ["bug_pair", "swapped_pair"])
def test_a_big_comparison_is_shared_across_cores_and_matches_native(ready_page, pair, request):
    bug_pair = request.getfixturevalue(pair)
    workers = wait_for_all_cores(ready_page)
    open_files(ready_page, bug_pair)
    got = ready_page.evaluate(COMPARE_JS)
    result = got["result"]
    assert result["ok"], result
    assert result["workers"] == workers
    assert "compare" in got["stages"]

    payloads = {"a": bug_pair[0].read_bytes(), "b": bug_pair[1].read_bytes()}
    expected = json.loads(json.dumps(api.handle(REQUEST, payloads)))
    assert_close(result["report"], expected["report"])
    assert result["report"]["n_bitwise_diff"] > fold.OFFLOAD_MIN
    assert result["report"]["verdict"] == "investigate"
    assert any(f["kind"] == "sign_flip" for f in result["report"]["findings"])

    # The pair is kept as after any comparison: an element in a helper's share can be asked about.
    element = ready_page.evaluate(ELEMENT_JS, 3 * CHUNK + 5)
    assert element["ok"], element
    native_element = api.handle({"op": "element", "flat": 3 * CHUNK + 5}, {})
    assert element["element"] == native_element["element"]

    # A and B swapped: the helper now writes its partial into the buffer of its first one, given back.
    open_files(ready_page, bug_pair[::-1])
    again = ready_page.evaluate(COMPARE_JS)["result"]
    assert again["ok"] and again["workers"] == workers, again
    swapped = {"a": payloads["b"], "b": payloads["a"]}
    assert_close(again["report"], json.loads(json.dumps(api.handle(REQUEST, swapped)))["report"])


def test_files_handed_over_unread_are_shared_across_cores_and_match_native(ready_page, bug_pair, tmp_path):
    """Files under the streaming threshold are read whole by the core, which hands the
    helpers copies of their shares; the report is the native one."""
    workers = wait_for_all_cores(ready_page)
    open_files(ready_page, bug_pair)
    result = ready_page.evaluate(COMPARE_UNREAD_JS)
    assert result["ok"], result
    assert result["workers"] == workers and "streamed" not in result
    payloads = {"a": bug_pair[0].read_bytes(), "b": bug_pair[1].read_bytes()}
    expected = json.loads(json.dumps(api.handle(REQUEST, payloads)))
    assert_close(result["report"], expected["report"])
    assert any(f["kind"] == "sign_flip" for f in result["report"]["findings"])
    # The pair is kept: an element in a helper's share can be asked about.
    element = ready_page.evaluate(ELEMENT_JS, 3 * CHUNK + 5)
    assert element["element"] == api.handle({"op": "element", "flat": 3 * CHUNK + 5}, {})["element"]
