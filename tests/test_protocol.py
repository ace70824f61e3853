"""The workers' protocol is declared once on each side (``perpendis.service.protocol`` and
``app/protocol.js``): both tables name the same methods with the same values, the bridge
classes have exactly their table's methods, the workers' scripts call and handle only
declared ones, and a call the table does not declare is refused by name."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from perpendis.service import protocol
from perpendis.service.bridge import CoreWorker, HelperWorker
from perpendis.service.session import Session
from worker_fakes import read_slice

APP = Path(__file__).resolve().parents[1] / "app"


def js_table(part: str) -> dict[str, list[str]]:
    """``PROTOCOL[part]`` of app/protocol.js: method name → its values, read from the source."""
    source = (APP / "protocol.js").read_text()
    body = re.search(rf"^  {part}: \{{\n(.*?)^  \}},", source, re.MULTILINE | re.DOTALL)
    assert body, f"app/protocol.js has no PROTOCOL.{part}"
    entries = re.findall(r"^\s+(\w+): \[([^\]]*)\],", body.group(1), re.MULTILINE)
    return {name: re.findall(r'"(\w+)"', values) for name, values in entries}


@pytest.mark.parametrize("part, table", [("core", protocol.CORE), ("helper", protocol.HELPER),
                                         ("control", protocol.CONTROL)])
def test_both_sides_declare_the_same_methods_and_values(part, table):
    js = js_table(part)
    assert len(js) >= (3 if part == "control" else 6)
    assert js == {name: list(method.fields) for name, method in table.items()}


@pytest.mark.parametrize("cls, table", [(CoreWorker, protocol.CORE), (HelperWorker, protocol.HELPER)])
def test_each_bridge_class_has_exactly_its_tables_methods(cls, table):
    public = {name for name, value in vars(cls).items() if not name.startswith("_") and callable(value)}
    public.discard("call")
    assert public == protocol.python_methods(table)
    for name in protocol.python_methods(table):
        method = table[name]
        params = [p for p in inspect.signature(getattr(cls, name)).parameters.values() if p.name != "self"]
        assert len(params) == len(method.params), name
        assert sum(p.default is not inspect.Parameter.empty for p in params) == method.optional, name


def test_the_workers_call_and_handle_only_declared_methods():
    worker, helper = ((APP / name).read_text() for name in ("worker.js", "fold_worker.js"))
    called = set(re.findall(r"\bcore\.(\w+)\(", worker))
    assert called and called <= set(protocol.CORE)
    asked = set(re.findall(r'#ask\("(\w+)"', worker)) | set(re.findall(r'method: "(\w+)"', worker))
    assert asked == set(protocol.HELPER)
    handlers = re.search(r"^const HANDLERS = \{\n(.*?)^\};", helper, re.MULTILINE | re.DOTALL)
    assert handlers and set(re.findall(r"^  (\w+):", handlers.group(1), re.MULTILINE)) == set(protocol.HELPER)
    python = set(re.findall(r'python\("(\w+)"', helper))
    assert python == protocol.python_methods(protocol.HELPER)
    # No method is picked by comparing names by hand any more.
    assert not re.search(r"\bif \((op|method) === ", helper)


def test_a_call_the_table_does_not_declare_is_refused_by_name():
    core = CoreWorker(read_slice, Session())
    from perpendis.service import planner

    for sizes in ([10, 20], [2**40, 2**40]):
        assert core.call("read_ahead", sizes) is planner.read_ahead(sizes)
    with pytest.raises(ValueError, match="'session' is not a method of the workers' protocol"):
        core.call("session")
    with pytest.raises(ValueError, match=r"read_ahead takes sizes: given 2 values"):
        core.call("read_ahead", [1], [2])
    helper = HelperWorker(read_slice)
    assert helper.call("reserve", 0) == 0
    with pytest.raises(ValueError, match="'spare' is not a method"):
        helper.call("spare", b"")  # the helper's JavaScript keeps it; Python never sees it
    with pytest.raises(ValueError, match="fold_checkpoint takes job, files, views: given 1 values"):
        helper.call("fold_checkpoint", "[]")


def test_the_worker_dispatches_the_control_ops_through_one_table():
    """cancel, reserve and prefetch each have one entry of ``CONTROL`` in app/worker.js, checked
    against ``PROTOCOL.control`` when the worker starts; no op is picked by an ``if`` chain."""
    worker, client, main = ((APP / name).read_text() for name in ("worker.js", "client.js", "main.js"))
    entries = re.search(r"^const CONTROL = \{\n(.*?)^\};", worker, re.MULTILINE | re.DOTALL)
    assert entries, "app/worker.js has no CONTROL table"
    assert set(re.findall(r"^  (\w+): \{", entries.group(1), re.MULTILINE)) == set(protocol.CONTROL)
    assert "protocolHandlers(PROTOCOL.control, CONTROL)" in worker
    assert not re.search(r"\bop (===|!==) ", worker)
    # What the page sends: the control ops by the fields declared, and nothing undeclared.
    sent = set(re.findall(r'op: "(\w+)"', client)) | set(re.findall(r'request\("(reserve|prefetch)"', main))
    assert sent == set(protocol.CONTROL)
    for field in re.findall(r'op: "cancel", (\w+)', client):
        assert field in protocol.CONTROL["cancel"].fields


def test_a_control_op_the_core_serves_takes_the_fields_declared():
    from perpendis.service import requests

    served = protocol.python_methods(protocol.CONTROL)
    assert served == {"reserve"}
    for op in served:
        assert op in requests.OPS
        assert requests.FIELDS_OF[op] == protocol.CONTROL[op].fields
    assert not ({"cancel", "prefetch"} & set(requests.OPS))
