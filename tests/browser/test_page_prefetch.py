"""Files the page hands the core unread (32 MiB and more) are read by the core as soon as
they are chosen (op ``prefetch``), while the user has yet to press Compare: the comparison
then takes the bytes read then, and equals the native one."""

from __future__ import annotations

import json
import os

import numpy as np
from perpendis.engine import stream
from perpendis.service import api
from test_page_reserve import SPY_JS
from test_page_stream import assert_close

ELEMENTS = (32 << 20) // 4 + 4096  # just over the size from which the page leaves a file unread


def answered(page, op: str, count: int) -> list[dict]:
    page.wait_for_function(
        "([op, count]) => window.__requests.filter((r) => r.op === op && r.answer).length >= count", arg=[op, count]
    )
    return [r for r in page.evaluate("() => window.__requests") if r["op"] == op]


def native(a: bytes, b: bytes, names: tuple[str, str] = ("a.npy", "b.npy")) -> dict:
    inputs = {side: {"name": name, "data": side} for side, name in zip("ab", names, strict=True)}
    request = {"op": "compare", "inputs": inputs}
    return json.loads(json.dumps(api.handle(request, {"a": a, "b": b})["report"]))


def test_files_chosen_are_read_ahead_and_compared_as_chosen(ready_page, tmp_path):
    rng = np.random.default_rng(4)
    a = rng.standard_normal(ELEMENTS).astype(np.float32)
    b = a.copy()
    b[::9] = np.nextafter(b[::9], np.float32(np.inf))
    paths = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(paths[0], a)
    np.save(paths[1], b)
    chosen = [path.read_bytes() for path in paths]
    ready_page.evaluate(SPY_JS)
    ready_page.get_by_test_id("file-a").set_input_files(paths[0])
    ready_page.get_by_test_id("file-b").set_input_files(paths[1])
    prefetches = answered(ready_page, "prefetch", 2)
    # Each choice sends the files chosen so far; each is read once.
    assert [r["files"] for r in prefetches] == [1, 2]
    assert [r["answer"]["read"] for r in prefetches] == [len(chosen[0]), len(chosen[1])]

    # A changed on disk since it was chosen: the browser no longer reads it, so a comparison
    # that read it now would fail; the one read ahead compares the file as it was chosen.
    np.save(paths[0], np.zeros_like(a))
    os.utime(paths[0], (1e9, 1e9))
    ready_page.get_by_test_id("compare").click()
    [compare] = answered(ready_page, "compare", 1)
    assert compare["answer"]["ok"], compare["answer"]
    assert_close(compare["answer"]["report"], native(*chosen))

    # The copies last while the files stay chosen: comparing again, or the other way round,
    # reads nothing.
    ready_page.get_by_test_id("compare").click()
    again = answered(ready_page, "compare", 2)[1]["answer"]
    assert again["ok"], again
    assert_close(again["report"], native(*chosen))
    ready_page.get_by_test_id("swap").click()
    ready_page.get_by_test_id("compare").click()
    swapped = answered(ready_page, "compare", 3)[2]["answer"]
    assert swapped["ok"], swapped
    assert_close(swapped["report"], native(chosen[1], chosen[0], ("b.npy", "a.npy")))


# An input of its own that nothing in the page listens to, to choose a file in.
UNWATCHED_INPUT_JS = """() => {
  const input = document.createElement("input");
  input.type = "file";
  input.id = "unwatched";
  document.body.append(input);
}"""


def choose_then_change(page, path) -> None:
    """Choose ``path`` in the unwatched input, then change it on disk (size and time): the
    File chosen can no longer be read."""
    page.locator("#unwatched").set_input_files(path)
    # Its size and time, as the browser took them when it was chosen; asked for first, so
    # that they are taken before the change.
    page.evaluate("() => [...document.getElementById('unwatched').files].map((f) => [f.size, f.lastModified])")
    np.save(path, np.zeros(2000, dtype=np.float32))
    os.utime(path, (1e9, 1e9))


def test_a_file_changed_since_it_was_chosen_is_a_clear_error(ready_page, tmp_path):
    """A file the core has not read ahead (here: sent without the page's number), changed on
    disk since it was chosen, cannot be read: the answer says so, with no traceback."""
    path = tmp_path / "a.npy"
    np.save(path, np.arange(1000, dtype=np.float32))
    ready_page.evaluate(UNWATCHED_INPUT_JS)
    choose_then_change(ready_page, path)
    answer = ready_page.evaluate(
        """async () => {
             const { core } = await import(new URL("app/client.js", location.href));
             const file = document.getElementById("unwatched").files[0];
             const input = { name: file.name, file };
             return core.request("compare", { inputs: { a: input, b: input }, options: {} });
           }"""
    )
    assert answer["ok"] is False, answer
    assert answer["error"]["message"].startswith("a.npy could not be read (NotReadableError): it was changed"), answer
    assert "detail" not in answer["error"]


def test_a_dropped_file_that_cannot_be_read_is_a_clear_error_in_the_page(ready_page, tmp_path):
    """The page reads a file under 32 MiB itself when it is dropped: one changed on disk
    since is named in the page's error, and what the box held stays."""
    path = tmp_path / "a.npy"
    np.save(path, np.arange(1000, dtype=np.float32))
    ready_page.evaluate(UNWATCHED_INPUT_JS)
    choose_then_change(ready_page, path)
    ready_page.evaluate(
        """() => {
             const dropped = new DataTransfer();
             dropped.items.add(document.getElementById("unwatched").files[0]);
             document.getElementById("side-a").dispatchEvent(
               new DragEvent("drop", { dataTransfer: dropped, bubbles: true, cancelable: true }));
           }"""
    )
    error = ready_page.get_by_test_id("error")
    error.wait_for()
    assert error.text_content().startswith("a.npy could not be read (NotReadableError): it was changed")
    assert ready_page.locator("#chip-a").is_hidden()


def test_a_file_chosen_again_is_read_again(ready_page, tmp_path):
    rng = np.random.default_rng(5)
    a = rng.standard_normal(ELEMENTS).astype(np.float32)
    first, second, b = tmp_path / "first.npy", tmp_path / "second.npy", tmp_path / "b.npy"
    np.save(first, a)
    np.save(second, -a)
    np.save(b, a)
    ready_page.evaluate(SPY_JS)
    ready_page.get_by_test_id("file-a").set_input_files(first)
    ready_page.get_by_test_id("file-b").set_input_files(b)
    ready_page.get_by_test_id("file-a").set_input_files(second)
    prefetches = answered(ready_page, "prefetch", 3)
    assert [r["answer"]["read"] for r in prefetches] == [first.stat().st_size, b.stat().st_size, second.stat().st_size]
    ready_page.get_by_test_id("compare").click()
    [compare] = answered(ready_page, "compare", 1)
    assert compare["answer"]["ok"], compare["answer"]
    assert_close(compare["answer"]["report"], native(second.read_bytes(), b.read_bytes(), ("second.npy", "b.npy")))
    assert compare["answer"]["report"]["verdict"] == "investigate"  # -A against A: a sign flip


def test_copies_are_let_go_when_the_chosen_files_will_be_streamed(ready_page, tmp_path):
    """Two files together over the streaming threshold are never read whole: one read ahead
    while it was alone is let go rather than held beside the streamed comparison."""
    a, b_small, b_big = tmp_path / "a.npy", tmp_path / "b.npy", tmp_path / "big.npy"
    np.save(a, np.ones(ELEMENTS, dtype=np.float32))
    np.save(b_small, np.ones(ELEMENTS, dtype=np.float32))
    with b_big.open("wb") as sparse:  # never read: its size alone decides
        sparse.truncate(stream.STREAM_MIN_BYTES)
    ready_page.evaluate(SPY_JS)
    ready_page.get_by_test_id("file-a").set_input_files(a)
    ready_page.get_by_test_id("file-b").set_input_files(b_big)
    ready_page.get_by_test_id("file-b").set_input_files(b_small)
    prefetches = answered(ready_page, "prefetch", 3)
    # A is read alone, let go when the big B joins it, and read again when B is small.
    assert [r["answer"]["read"] for r in prefetches] == [a.stat().st_size, 0, a.stat().st_size + b_small.stat().st_size]
