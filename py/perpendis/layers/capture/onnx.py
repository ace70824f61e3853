"""ONNX Runtime captures: every value a model computes, from one run.

The model is copied and every node output made a graph output (the user's file is not
touched); ONNX Runtime runs the copy once, and each value is kept in topological order
(the graph's inputs first) with its producing node's op type and the exporter's notes
on it (module path, class hierarchy, namespace: see :func:`..formats.onnx_model.describe`).
onnx and onnxruntime are imported here only: they are an optional extra (``[onnx]``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InputError
from ...inputs.formats.onnx_model import check_model, describe, read_graph
from .store import Capture

# ONNX Runtime's type strings → NumPy dtypes, for checking what the user feeds.
ORT_TYPES = {
    "tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
    "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int16)": "int16", "tensor(int8)": "int8",
    "tensor(uint8)": "uint8", "tensor(uint16)": "uint16", "tensor(uint32)": "uint32", "tensor(uint64)": "uint64",
    "tensor(bool)": "bool",
}


def _modules() -> tuple[Any, Any]:
    try:
        import onnx
        import onnxruntime
    except ImportError as err:
        raise InputError(
            f"capturing an ONNX model needs onnx and onnxruntime ({err.name} is missing): "
            "pip install 'perpendis[onnx]'"
        ) from None
    return onnx, onnxruntime


def load_model(path: str | Path) -> tuple[Any, bytes]:
    """The parsed model and its file's bytes; an :class:`InputError` naming the file when it is not one."""
    onnx, _ = _modules()
    path = Path(path)
    try:
        check_model(path)  # a file that is no model is refused from its first bytes, not read whole
        data = path.read_bytes()
    except InputError as err:
        raise InputError(f"{path.name}: {err.message}", where=str(path)) from None
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror or err}", where=str(path)) from None
    try:
        model = onnx.load_model_from_string(data)
        if path.parent and any(t.data_location == 1 for t in model.graph.initializer):
            onnx.load_external_data_for_model(model, str(path.parent))
    except Exception as err:  # protobuf's DecodeError and friends
        raise InputError(f"{path.name} is not an ONNX model onnx can read ({err})", where=str(path)) from None
    if not model.graph.node:
        raise InputError(f"{path.name} is not an ONNX model: its graph has no nodes", where=str(path))
    return model, data


def session(model: Any, provider: str | None, what: str) -> Any:
    """An ONNX Runtime session of ``model``; ORT's own complaint, as an InputError, when it cannot load it."""
    _, ort = _modules()
    providers = [provider] if provider else ["CPUExecutionProvider"]
    if provider and provider not in ort.get_available_providers():
        raise InputError(
            f"ONNX Runtime has no execution provider {provider!r} here; available: "
            f"{', '.join(ort.get_available_providers())}",
            where="--provider",
        )
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(model.SerializeToString(), options, providers=providers)
    except Exception as err:  # ORT raises its own Fail/InvalidGraph/NotImplemented types
        message = " ".join(str(err).split())
        raise InputError(f"ONNX Runtime cannot load {what}: {message}", where=what) from None


def feeds_for(sess: Any, given: Sequence[np.ndarray] | Mapping[str, np.ndarray], what: str) -> dict[str, np.ndarray]:
    """The user's inputs by the model's input names, checked for name, count, dtype and static dims.

    Unnamed inputs take the model's inputs in order; named ones their own.
    """
    expected = {i.name: i for i in sess.get_inputs()}
    names = list(expected)
    if isinstance(given, Mapping):
        feeds = dict(given)
    else:
        if len(given) > len(names):
            raise InputError(f"{what} takes {len(names)} input(s) ({', '.join(names)}), {len(given)} were given")
        feeds = dict(zip(names, given, strict=False))
    for name in feeds:
        if name not in expected:
            raise InputError(f"{what} has no input named {name!r}; its inputs are {', '.join(names)}", where=name)
    missing = [n for n in names if n not in feeds]
    if missing:
        raise InputError(f"{what} also needs input(s) {', '.join(missing)}; give them as --input NAME=FILE.npy")
    for name, array in feeds.items():
        meta = expected[name]
        want = ORT_TYPES.get(meta.type)
        if want is not None and np.dtype(array.dtype) != np.dtype(want):
            raise InputError(
                f"input {name!r} of {what} is {want}, the file given for it holds {array.dtype}", where=name
            )
        dims = list(meta.shape)
        if len(dims) != array.ndim or any(
            isinstance(d, int) and d >= 0 and d != s for d, s in zip(dims, array.shape, strict=False)
        ):
            shape = "×".join("?" if not isinstance(d, int) else str(d) for d in dims) or "scalar"
            raise InputError(
                f"input {name!r} of {what} has shape {shape}; the array given for it is "
                f"{'×'.join(map(str, array.shape)) or 'a scalar'}",
                where=name,
            )
    return feeds


# Formats ONNX Runtime computes but cannot hand to NumPy: their values are read through a
# Cast to float32, which holds each of them exactly.
_UNREADABLE = ("tensor(bfloat16)", "tensor(float8e4m3fn)", "tensor(float8e4m3fnuz)", "tensor(float8e5m2)",
               "tensor(float8e5m2fnuz)")


def _widen_unreadable(marked: Any, sess: Any) -> dict[str, str]:
    """Each output of ``marked`` in a format NumPy cannot take (bfloat16, float8) replaced by
    its Cast to float32 (edited in place); the map of value name → the cast's name."""
    from onnx import TensorProto, helper

    unreadable = {o.name for o in sess.get_outputs() if o.type in _UNREADABLE}
    widened: dict[str, str] = {}
    kept = []
    for out in marked.graph.output:
        if out.name not in unreadable:
            kept.append(out)
            continue
        wide = widened[out.name] = f"{out.name}.float32"
        marked.graph.node.append(helper.make_node("Cast", [out.name], [wide], to=TensorProto.FLOAT))
        kept.append(helper.make_tensor_value_info(wide, TensorProto.FLOAT, None))
    if widened:
        del marked.graph.output[:]
        marked.graph.output.extend(kept)
    return widened


def capture_onnx(
    path: str | Path,
    inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray],
    *,
    provider: str | None = None,
) -> Capture:
    """Run the model once on ``inputs`` with every value an output; every value, in topological order."""
    onnx, _ = _modules()
    path = Path(path)
    model, data = load_model(path)
    values = describe(read_graph(data))
    marked = onnx.ModelProto()
    marked.CopyFrom(model)
    typed = {v.name: v for v in [*marked.graph.value_info, *marked.graph.output]}
    outputs = {o.name for o in marked.graph.output}
    for name, info in values.items():
        if info["op_type"] != "input" and name not in outputs:
            marked.graph.output.append(typed.get(name) or onnx.ValueInfoProto(name=name))
    sess = session(marked, provider, path.name)
    widened = _widen_unreadable(marked, sess)
    if widened:
        sess = session(marked, provider, path.name)
    feeds = feeds_for(sess, inputs, path.name)
    out_names = [o.name for o in sess.get_outputs()]
    try:
        results = sess.run(out_names, feeds)
    except Exception as err:
        raise InputError(f"ONNX Runtime could not run {path.name}: {' '.join(str(err).split())}") from None
    computed = dict(zip(out_names, results, strict=True))
    computed.update({name: computed.pop(wide) for name, wide in widened.items() if wide in computed})
    run = Capture()
    for name, info in values.items():
        array = feeds.get(name) if info["op_type"] == "input" else computed.get(name)
        if isinstance(array, np.ndarray):
            run.add(name, array, **info)
    return run
