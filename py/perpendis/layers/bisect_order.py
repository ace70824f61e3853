"""Which order a bisect's rows are in, and the ONNX graph's order for a capture that kept none.

The first failing layer is the first in A's order, which is the run's execution order only
when the file kept it.  ``.npz`` members and a ``torch.save``'d dict keep the order they were
written in, and Perpendis' captures write it to safetensors metadata ``order``; a safetensors
file without it keeps none (its header's keys are sorted, its data laid out by dtype and
name), so forward-hook outputs saved by ``safetensors.torch.save_file`` read back as
``conv1, conv2, fc, relu1, relu2`` and the first of those that fails may be a victim.

Given the ONNX model (``--model``, or the ``.onnx`` dropped on the page), such a side is put
in the graph's order, which ONNX requires to be topological: an ONNX value by the node writing
it, a PyTorch module's output by the last value leaving its call's scope
(``pkg.torch.onnx.name_scopes``, as pairing reads it: :func:`.pairing.module_calls`), its
input just before the call's first value.  Without the model nothing says which failing
layer comes first, and the report says so instead of naming one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .bisect_files import described_by
from .bisect_report import few
from .pairing import carries_metadata, module_calls, module_runs, split_name

CAPTURE, MODEL, USER, UNKNOWN = "capture", "model", "user", "unknown"  # BisectReport.order


def graph_positions(names: Sequence[str], values: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Each name's place in the graph's order, for the names the graph places: ``values`` is
    :func:`..inputs.formats.onnx_model.describe` of the model (its inputs, then its nodes' outputs)."""
    order = list(values)
    index = {name: float(i) for i, name in enumerate(order)}
    runs, calls = module_runs(order, values), module_calls(order, values)
    out = {}
    for name in names:
        if name in index:
            out[name] = index[name]
            continue
        path, call, suffix = split_name(name)
        parts = path.split(".")
        # A wrapper's prefix (DataParallel's ``module.``) is dropped until the path is one of the graph's.
        found = next(((p, call) for p in (".".join(parts[k:]) for k in range(len(parts))) if (p, call) in calls), None)
        if found is None:
            continue
        if suffix.startswith(":in"):
            out[name] = runs[found][0] - 0.5
        else:
            leaving, at = calls[found], suffix.split(":")[1] if suffix else ""
            out[name] = float(leaving[int(at)] if at.isdigit() and int(at) < len(leaving) else leaving[-1])
    return out


def in_graph_order(entries: Sequence[Any], values: Mapping[str, Mapping[str, Any]]) -> tuple[list[Any], list[str]]:
    """``entries`` (anything with a ``name``) in the graph's order, and the names it does not place.

    A module the export left no node of (a dropout, an identity in eval mode) goes right after
    the last placed module sharing the longest part of its path (``h.1.mlp.dropout`` after
    ``h.1.mlp.c_proj``), where it ran; a name sharing none follows the rest in its own order.
    Put last, it would be paired by order and shape with whatever the graph ends in."""
    at = graph_positions([e.name for e in entries], values)
    unplaced = [e.name for e in entries if e.name not in at]
    near = dict(at)
    for name in unplaced:
        kin = _kin(name, at)
        if kin:
            near[name] = max(at[k] for k in kin) + 0.25
    ordered = sorted((e for e in entries if e.name in near), key=lambda e: near[e.name])
    return ordered + [e for e in entries if e.name not in near], unplaced


def _kin(name: str, placed: Mapping[str, float]) -> list[str]:
    """The placed names sharing the longest dotted prefix with ``name`` (at least one part)."""
    parts = name.split(".")
    for k in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:k]) + "."
        kin = [p for p in placed if p.startswith(prefix)]
        if kin:
            return kin
    return []


def arrange(
    ea: Sequence[Any], eb: Sequence[Any], kept: tuple[bool, bool], values: Mapping[str, Any] | None,
    labels: tuple[str, str], recorded: tuple[Mapping[str, Any], Mapping[str, Any]] = ({}, {}),
) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """Both sides' entries, each in execution order where its file kept none and a graph is
    known, and :func:`.bisect.bisect`'s keywords for them: ``info_a`` and ``info_b`` (the
    captures' ``recorded`` descriptions, the model's on its side), ``order`` and ``order_note``.

    ``kept`` says per side whether its file records its order (:func:`..inputs.formats.safetensors.records_order`);
    ``labels`` are the files' names, for the notes.  The graph is the model's (``values``),
    else that of an ONNX capture that kept its order and records each value's scopes
    (``recorded``: a ``perpendis capture`` file's, in its order, which is the graph's).  B's
    order matters too: pairing by values prefers the nearest place.
    """
    ea, eb, order = ordered(list(ea), list(eb), kept, values, labels, recorded)
    info_a, info_b = dict(recorded[0]), dict(recorded[1])
    if values is not None:
        info_a, info_b = described_by(values, [e.name for e in ea], [e.name for e in eb], info_a, info_b)
    return ea, eb, {"info_a": info_a, "info_b": info_b, **order}


def ordered(
    ea: list[Any], eb: list[Any], kept: tuple[bool, bool], values: Mapping[str, Any] | None,
    labels: tuple[str, str], recorded: tuple[Mapping[str, Any], Mapping[str, Any]],
) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """:func:`arrange`'s entries, and bisect's ``order`` and ``order_note`` keywords for them."""
    graph, whose = values, "the ONNX model's graph order"
    for entries, keeps, info, name in zip((eb, ea), kept[::-1], recorded[::-1], labels[::-1], strict=True):
        if graph is None and keeps and carries_metadata(info):
            graph, whose = {e.name: info[e.name] for e in entries if e.name in info}, f"the graph order {name} records"
    if graph is not None and not kept[1]:
        eb, _ = in_graph_order(eb, graph)
    if kept[0]:
        return ea, eb, {"order": CAPTURE, "order_note": None}
    unkept = (f"{labels[0]} records no order for its tensors (a safetensors file keeps none unless its "
              "metadata 'order' or 'execution_order' lists them)")
    if graph is None:
        return ea, eb, {"order": UNKNOWN, "order_note": unknown_note(unkept, labels)}
    placed, unplaced = in_graph_order(ea, graph)
    if len(unplaced) == len(placed):
        note = f"{unkept}, and {whose} places none of them ({few(unplaced)})"
        return ea, eb, {"order": UNKNOWN, "order_note": unknown_note(note, labels)}
    note = f"{unkept}: its rows are in {whose}" + (
        f"; it places no value of {few(unplaced)}, each put after its nearest kin by module path"
        if unplaced else ""
    )
    return placed, eb, {"order": MODEL, "order_note": note}


def unknown_note(why: str, labels: tuple[str, str]) -> str:
    """Why no first failing layer is named, and the commands that give the order."""
    return (
        f"{why}, so its rows are in the file's order, not the order the layers ran in, and no first failing "
        f"layer can be named. Give the ONNX model the other side was run from: perpendis bisect {labels[0]} "
        f"{labels[1]} --model model.onnx (on the page, drop model.onnx beside the captures); or capture with "
        "perpendis.capture(model) and run.save(...), which writes the order, or save with np.savez"
    )
