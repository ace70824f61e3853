"""Mutation operators on an ONNX graph: each makes one bug a user could have shipped.

Every operator is a small function ``op(model, target) -> ModelProto`` that returns a
mutated copy (the input model is never changed) or raises :class:`NotApplicable` when the
target does not suit it.  ``OPERATORS`` lists them with what they apply to (a node of
some op types, a float initializer, or the graph's input or output) and the cause family
the bug belongs to; :func:`label` writes the record a case carries: operator, node name,
op type, module scope (from the exporter's ``pkg.torch.onnx.name_scopes`` metadata) and
expected cause family.  Families are named by what was done (``scale``, ``offset``,
``normalisation``, ``activation``, ``reorder``, ``layout``, ``clip``, ``precision``,
``sign``, ``slice``, ``weight``, ``mask``, ``position``, ``structure``); the scorer
maps each to the findings that count as naming it.

No ONNX op type here is special-cased beyond the table of what each operator applies to:
targets are enumerated from the graph, so a new architecture gets the same operators.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SCOPES_KEY = "pkg.torch.onnx.name_scopes"


class NotApplicable(Exception):
    """The operator does not suit this target (wrong shape, attribute absent, ...)."""


@dataclass(frozen=True)
class Operator:
    """One mutation operator: ``fn(model, target)``; ``on`` is "node", "initializer",
    "head" (the last weighted layer's weight) or "io"; ``op_types`` (for nodes) the op
    types it applies to; ``family`` the cause family, or None when it follows the
    target's op type (:data:`OP_FAMILY`)."""

    name: str
    fn: Callable[[onnx.ModelProto, str], onnx.ModelProto]
    on: str
    family: str | None
    op_types: tuple[str, ...] = ()
    kind: str = "bug"  # "bug", or "precision" for a lower-precision round trip


# What a node's bypass or repetition changes, by op type.
OP_FAMILY = {
    "Gelu": "activation",
    "Relu": "activation",
    "Tanh": "activation",
    "Sigmoid": "activation",
    "LayerNormalization": "normalisation",
    "Softmax": "normalisation",
    "ReduceMean": "normalisation",
    "Sqrt": "normalisation",
    "Reciprocal": "normalisation",
    "Pow": "normalisation",
    "Neg": "sign",
    "Transpose": "reorder",
    "MaxPool": "structure",
    "Add": "offset",
    "Mul": "scale",
    "MatMul": "weight",
    "Gemm": "weight",
    "Conv": "weight",
}


# ---------------------------------------------------------------- graph helpers


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


def node_by_name(model: onnx.ModelProto | onnx.GraphProto, name: str) -> onnx.NodeProto:
    for n in _graph(model).node:
        if n.name == name:
            return n
    raise NotApplicable(f"no node {name!r}")


def _initializer(model: onnx.ModelProto, name: str) -> onnx.TensorProto:
    for t in model.graph.initializer:
        if t.name == name:
            return t
    raise NotApplicable(f"no initializer {name!r}")


def _const(model: onnx.ModelProto, name: str) -> np.ndarray | None:
    """The value of ``name`` when it is an initializer or a Constant node's output."""
    for t in model.graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t)
    for n in model.graph.node:
        if n.op_type == "Constant" and n.output[0] == name:
            for a in n.attribute:
                if a.name == "value":
                    return numpy_helper.to_array(a.t)
    return None


def _attr(node: onnx.NodeProto, name: str, default: Any = None) -> Any:
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _set_attr(node: onnx.NodeProto, name: str, value: Any) -> None:
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept)
    node.attribute.append(helper.make_attribute(name, value))


def _fresh(model: onnx.ModelProto, base: str) -> str:
    """A value or node name not yet used in the graph."""
    used = {v for n in model.graph.node for v in (*n.input, *n.output, n.name)}
    used |= {t.name for t in model.graph.initializer} | {i.name for i in model.graph.input}
    name, k = f"{base}_mut", 0
    while name in used:
        k += 1
        name = f"{base}_mut{k}"
    return name


def _add_const(model: onnx.ModelProto, base: str, value: np.ndarray) -> str:
    name = _fresh(model, base)
    model.graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
    return name


def _insert_after(model: onnx.ModelProto, value: str, make: Callable[[str, str], list[onnx.NodeProto]]) -> None:
    """Put nodes between ``value`` and its readers: the producer now writes a fresh name
    and ``make(fresh, value)`` returns the nodes that map it back to ``value``, in the
    producer's module scope (its ``metadata_props``, as the exporter marks the nodes of a
    module's code, so a bisect pairs the module with the inserted nodes' output); readers and
    graph outputs are untouched.  A graph input is handled by renaming its readers."""
    graph = model.graph
    producer = next((n for n in graph.node if value in n.output), None)
    fresh = _fresh(model, value)
    if producer is None:  # a graph input: point every reader at the new value instead
        made = make(value, fresh)
        for n in graph.node:
            for i, v in enumerate(n.input):
                if v == value:
                    n.input[i] = fresh
        for k, n in enumerate(made):
            graph.node.insert(k, n)
        return
    producer.output[list(producer.output).index(value)] = fresh
    made = make(fresh, value)
    for n in made:  # the module scope the exporter gives every node a module emits
        n.metadata_props.extend(producer.metadata_props)
    at = list(graph.node).index(producer) + 1
    for k, n in enumerate(made):
        graph.node.insert(at + k, n)


def _float_output(model: onnx.ModelProto) -> str:
    return model.graph.output[0].name


def scope(node: onnx.NodeProto) -> str | None:
    """The innermost module the exporter recorded for ``node`` (its name scopes' last
    module entry: the list ends with the node's own FX name)."""
    for p in node.metadata_props:
        if p.key == SCOPES_KEY:
            try:
                scopes = ast.literal_eval(p.value)
            except (ValueError, SyntaxError):
                return None
            modules = [s for s in scopes[:-1] if s]
            return modules[-1] if modules else None
    return None


def readers(model: onnx.ModelProto | onnx.GraphProto, value: str) -> list[onnx.NodeProto]:
    return [n for n in _graph(model).node if value in n.input]


def _graph(model: onnx.ModelProto | onnx.GraphProto) -> onnx.GraphProto:
    """The graph of a model, or the graph given (the scorer keeps graphs without their model)."""
    return model.graph if isinstance(model, onnx.ModelProto) else model


# ---------------------------------------------------------------- attribute operators


def _set(name: str, value_of: Callable[[Any, onnx.NodeProto], Any]):
    def op(model: onnx.ModelProto, target: str) -> onnx.ModelProto:
        out = _copy(model)
        node = node_by_name(out, target)
        old = _attr(node, name)
        new = value_of(old, node)
        if new is None or new == old:
            raise NotApplicable(f"{name} has no other value here")
        _set_attr(node, name, new)
        return out

    return op


def _other_axis(old: Any, node: onnx.NodeProto) -> int:
    return -2 if old in (None, -1) else -1


ln_epsilon = _set("epsilon", lambda old, n: 1e-3 if (old or 1e-5) < 1e-3 else 1e-6)
ln_axis = _set("axis", _other_axis)
softmax_axis = _set("axis", _other_axis)
gelu_approximate = _set("approximate", lambda old, n: "tanh" if old in (None, b"none", "none") else "none")
transpose_perm = _set("perm", lambda old, n: None if old is None or len(old) < 2 else [*old[:-2], old[-1], old[-2]])
gather_axis = _set("axis", lambda old, n: 1 if (old or 0) == 0 else 0)
concat_axis = _set("axis", lambda old, n: (old or 0) - 1 if (old or 0) != 0 else 1)
reduce_keepdims = _set("keepdims", lambda old, n: 0 if old in (None, 1) else 1)
conv_strides = _set("strides", lambda old, n: None if old is None else [s + 1 for s in old])


def conv_pads(model: onnx.ModelProto, target: str) -> onnx.ModelProto:
    """Move one row of padding from the end of the first spatial axis to its start: the
    output keeps its shape and shifts by one (padding on one side only)."""
    out = _copy(model)
    node = node_by_name(out, target)
    pads = list(_attr(node, "pads", []) or [])
    half = len(pads) // 2
    if not pads or pads[half] == 0:
        raise NotApplicable("no end padding to move")
    pads[0] += 1
    pads[half] -= 1
    _set_attr(node, "pads", pads)
    return out


def reduce_axes(model: onnx.ModelProto, target: str) -> onnx.ModelProto:
    """Reduce over the axis before the one exported (opset 18 takes axes as an input)."""
    out = _copy(model)
    node = node_by_name(out, target)
    axes = _const(out, node.input[1]) if len(node.input) > 1 and node.input[1] else None
    if axes is None:
        raise NotApplicable("axes not a constant input")
    node.input[1] = _add_const(out, "axes", np.asarray(axes, dtype=np.int64) - 1)
    return out


# ---------------------------------------------------------------- structural operators


def _on_data(model: onnx.ModelProto, target: str) -> tuple[onnx.ModelProto, onnx.NodeProto]:
    """A copy of the model and its node ``target``, whose first input must be computed
    data (a node over a constant has nothing to bypass or repeat)."""
    out = _copy(model)
    node = node_by_name(out, target)
    if not node.input or _const(out, node.input[0]) is not None:
        raise NotApplicable("first input is a constant")
    return out, node


def bypass(model: onnx.ModelProto, target: str) -> onnx.ModelProto:
    """The node's output is its (first) input: a layer left out."""
    out, node = _on_data(model, target)
    ident = helper.make_node("Identity", [node.input[0]], [node.output[0]], name=node.name)
    ident.metadata_props.extend(node.metadata_props)  # the exporter's scope stays: the bug is in that module
    at = list(out.graph.node).index(node)
    out.graph.node.remove(node)
    out.graph.node.insert(at, ident)
    return out


def double(model: onnx.ModelProto, target: str) -> onnx.ModelProto:
    """The node applied twice to its first input (other inputs shared): a layer repeated."""
    out, node = _on_data(model, target)
    mid = _fresh(out, node.output[0])
    second = onnx.NodeProto()
    second.CopyFrom(node)
    second.name = _fresh(out, node.name)
    second.input[0] = mid
    del second.output[1:]
    final = node.output[0]
    node.output[0] = mid
    second.output[0] = final
    out.graph.node.insert(list(out.graph.node).index(node) + 1, second)
    return out


def swap_inputs(model: onnx.ModelProto, target: str) -> onnx.ModelProto:
    """The first two inputs exchanged (for Where: the two branches, a mask inverted)."""
    out = _copy(model)
    node = node_by_name(out, target)
    i, j = (1, 2) if node.op_type == "Where" else (0, 1)
    if len(node.input) <= j or node.input[i] == node.input[j]:
        raise NotApplicable("nothing to swap")
    node.input[i], node.input[j] = node.input[j], node.input[i]
    return out


def _after_node(make: Callable[[onnx.ModelProto, str, str], list[onnx.NodeProto]]):
    def op(model: onnx.ModelProto, target: str) -> onnx.ModelProto:
        out = _copy(model)
        node = node_by_name(out, target)
        _insert_after(out, node.output[0], lambda src, dst: make(out, src, dst))
        return out

    return op


def _offset_nodes(model: onnx.ModelProto, src: str, dst: str) -> list[onnx.NodeProto]:
    c = _add_const(model, "offset", np.float32(0.25))
    return [helper.make_node("Add", [src, c], [dst], name=_fresh(model, "add_offset"))]


def _clip_nodes(model: onnx.ModelProto, src: str, dst: str) -> list[onnx.NodeProto]:
    lo, hi = _add_const(model, "clip_lo", np.float32(-1.0)), _add_const(model, "clip_hi", np.float32(1.0))
    return [helper.make_node("Clip", [src, lo, hi], [dst], name=_fresh(model, "clip"))]


def _round_trip(to: int):
    def make(model: onnx.ModelProto, src: str, dst: str) -> list[onnx.NodeProto]:
        mid = _fresh(model, src + "_low")
        return [
            helper.make_node("Cast", [src], [mid], to=to, name=_fresh(model, "cast_down")),
            helper.make_node("Cast", [mid], [dst], to=TensorProto.FLOAT, name=_fresh(model, "cast_up")),
        ]

    return make


add_offset = _after_node(_offset_nodes)
insert_clip = _after_node(_clip_nodes)
cast_fp16 = _after_node(_round_trip(TensorProto.FLOAT16))
cast_bf16 = _after_node(_round_trip(TensorProto.BFLOAT16))


# ---------------------------------------------------------------- initializer operators


def _target_seed(target: str) -> int:
    """The perturbation's seed: from the target's name, mixed with the corpus seed when
    one is set (seed 0 keeps the original draws)."""
    from . import models

    own = int.from_bytes(target.encode()[:8].ljust(8, b"\0"), "little")
    return own if models.SEED == 0 else models.variant_seed(target)


def _init_op(change: Callable[[np.ndarray, np.random.Generator], np.ndarray]):
    def op(model: onnx.ModelProto, target: str) -> onnx.ModelProto:
        out = _copy(model)
        t = _initializer(out, target)
        w = numpy_helper.to_array(t)
        if w.dtype.kind != "f" or w.size < 2:
            raise NotApplicable("not a float tensor of two or more values")
        rng = np.random.default_rng(_target_seed(target))
        new = np.asarray(change(w.copy(), rng), dtype=w.dtype)
        if new.shape != w.shape:
            raise NotApplicable("shape changed")
        t.CopyFrom(numpy_helper.from_array(new, target))
        return out

    return op


def _transposed(w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if w.ndim < 2 or w.shape[-1] != w.shape[-2]:
        raise NotApplicable("not square in its last two axes")
    return np.swapaxes(w, -1, -2)


def _one_slice(w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    k = int(rng.integers(w.shape[0]))
    w[k] = rng.standard_normal(w[k].shape) * (w.std() or 1.0) + w.mean()
    return w


def _one_slice_negated(w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    k = int(rng.integers(w.shape[0]))
    w[k] = -w[k]
    return w


def _redrawn(w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(w.shape) * (w.std() or 1.0) + w.mean()


def _zeroed_bias(w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if w.ndim != 1:
        raise NotApplicable("not a bias (one axis)")
    return np.zeros_like(w)


init_half = _init_op(lambda w, rng: w * 0.5)
init_double = _init_op(lambda w, rng: w * 2.0)
init_rsqrt_d = _init_op(lambda w, rng: w / math.sqrt(w.shape[-1]))
init_transpose = _init_op(_transposed)
init_one_slice = _init_op(_one_slice)
init_slice_negated = _init_op(_one_slice_negated)
init_redrawn = _init_op(_redrawn)
init_zero_bias = _init_op(_zeroed_bias)


# ---------------------------------------------------------------- pre/post-processing operators


def _input(model: onnx.ModelProto) -> onnx.ValueInfoProto:
    return model.graph.input[0]


def _is_float_input(model: onnx.ModelProto) -> bool:
    return _input(model).type.tensor_type.elem_type == TensorProto.FLOAT


def _on_input(make: Callable[[onnx.ModelProto, str, str], list[onnx.NodeProto]], *, float_only: bool = True):
    def op(model: onnx.ModelProto, target: str) -> onnx.ModelProto:
        out = _copy(model)
        if float_only and not _is_float_input(out):
            raise NotApplicable("input is not float")
        _insert_after(out, _input(out).name, lambda src, dst: make(out, src, dst))
        return out

    return op


def _on_output(make: Callable[[onnx.ModelProto, str, str], list[onnx.NodeProto]]):
    def op(model: onnx.ModelProto, target: str) -> onnx.ModelProto:
        out = _copy(model)
        _insert_after(out, _float_output(out), lambda src, dst: make(out, src, dst))
        return out

    return op


def _rank(model: onnx.ModelProto, value_info: onnx.ValueInfoProto) -> int:
    return len(value_info.type.tensor_type.shape.dim)


def _scale_input(model: onnx.ModelProto, src: str, dst: str) -> list[onnx.NodeProto]:
    c = _add_const(model, "input_scale", np.float32(1 / 255))
    return [helper.make_node("Mul", [src, c], [dst], name=_fresh(model, "pre_scale"))]


def _normalise_input(model: onnx.ModelProto, src: str, dst: str) -> list[onnx.NodeProto]:
    """(x - 0.5) / 0.25: mean/std constants of another preprocessing recipe."""
    mid = _fresh(model, src + "_centred")
    m, s = _add_const(model, "input_mean", np.float32(0.5)), _add_const(model, "input_std", np.float32(0.25))
    return [
        helper.make_node("Sub", [src, m], [mid], name=_fresh(model, "pre_sub")),
        helper.make_node("Div", [mid, s], [dst], name=_fresh(model, "pre_div")),
    ]


def _reverse_channels(model: onnx.ModelProto, src: str, dst: str) -> list[onnx.NodeProto]:
    """Axis 1 reversed (RGB against BGR; for a sequence of frames, the feature order)."""
    if _rank(model, _input(model)) < 3:
        raise NotApplicable("input has no channel axis")
    starts, ends = (
        _add_const(model, "rev_start", np.array([-1], np.int64)),
        _add_const(model, "rev_end", np.array([-(2**62)], np.int64)),
    )
    axes, steps = (
        _add_const(model, "rev_axes", np.array([1], np.int64)),
        _add_const(model, "rev_steps", np.array([-1], np.int64)),
    )
    return [helper.make_node("Slice", [src, starts, ends, axes, steps], [dst], name=_fresh(model, "pre_reverse"))]


def _roll_tokens(model: onnx.ModelProto, src: str, dst: str) -> list[onnx.NodeProto]:
    """Tokens shifted one place along the sequence (a BOS token added, the last one lost)."""
    first, rest = _fresh(model, src + "_last"), _fresh(model, src + "_head")
    c = {
        k: _add_const(model, k, np.array([v], np.int64))
        for k, v in (("roll_m1", -1), ("roll_big", 2**62), ("roll_0", 0), ("roll_ax", 1))
    }
    last = [src, c["roll_m1"], c["roll_big"], c["roll_ax"]]
    head = [src, c["roll_0"], c["roll_m1"], c["roll_ax"]]
    return [
        helper.make_node("Slice", last, [first], name=_fresh(model, "roll_last")),
        helper.make_node("Slice", head, [rest], name=_fresh(model, "roll_head")),
        helper.make_node("Concat", [first, rest], [dst], axis=1, name=_fresh(model, "pre_roll")),
    ]


def _softmax_output(model: onnx.ModelProto, src: str, dst: str) -> list[onnx.NodeProto]:
    return [helper.make_node("Softmax", [src], [dst], axis=-1, name=_fresh(model, "post_softmax"))]


def _transpose_output(model: onnx.ModelProto, src: str, dst: str) -> list[onnx.NodeProto]:
    r = _rank(model, model.graph.output[0])
    perm = [*range(r - 2), r - 1, r - 2]
    return [helper.make_node("Transpose", [src], [dst], perm=perm, name=_fresh(model, "post_transpose"))]


def _temperature_output(model: onnx.ModelProto, src: str, dst: str) -> list[onnx.NodeProto]:
    c = _add_const(model, "temperature", np.float32(0.5))
    return [helper.make_node("Div", [src, c], [dst], name=_fresh(model, "post_temperature"))]


def _output_dims(model: onnx.ModelProto) -> list[int]:
    """The output's static axis sizes (0 for a dynamic one, as the batch axis)."""
    return [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim]


def _on_last_axis(values: Callable[[int, int], np.ndarray], op_type: str):
    """Output ``op_type`` (Mul or Add) a vector along the last axis: ``values(n, k)`` for an
    axis of ``n`` entries, ``k = n // 3`` the index changed (one channel, class or feature)."""

    def make(model: onnx.ModelProto, src: str, dst: str) -> list[onnx.NodeProto]:
        n = _output_dims(model)[-1]
        if n < 2:
            raise NotApplicable("last axis too short")
        c = _add_const(model, "post_vector", values(n, n // 3).astype(np.float32))
        return [helper.make_node(op_type, [src, c], [dst], name=_fresh(model, "post_slice"))]

    return make


def _unit(n: int, k: int, at_k: float, elsewhere: float) -> np.ndarray:
    v = np.full(n, elsewhere)
    v[k] = at_k
    return v


def _region_mask(model: onnx.ModelProto, src: str, dst: str) -> list[onnx.NodeProto]:
    """The last quarter of axis 1 zeroed (a mask or padding applied to part of the tensor)."""
    dims = _output_dims(model)
    if len(dims) < 2 or dims[1] < 4:
        raise NotApplicable("axis 1 too short")
    mask = np.ones([dims[1]] + [1] * (len(dims) - 2), np.float32)
    mask[-max(1, dims[1] // 4) :] = 0
    c = _add_const(model, "post_mask", mask)
    return [helper.make_node("Mul", [src, c], [dst], name=_fresh(model, "post_region"))]


def head_unit(model: onnx.ModelProto, target: str) -> onnx.ModelProto:
    """One output unit of the last weighted layer (``target``: its weight) redrawn: one
    class or feature computed with a wrong weight slice."""
    out = _copy(model)
    reader = next(iter(readers(out, target)), None)
    if reader is None or reader.op_type not in ("MatMul", "Gemm") or list(reader.input).index(target) != 1:
        raise NotApplicable("not the weight of a MatMul or Gemm")
    t = _initializer(out, target)
    w = numpy_helper.to_array(t).copy()
    if w.ndim != 2:
        raise NotApplicable("weight is not a matrix")
    rows = reader.op_type == "Gemm" and _attr(reader, "transB", 0) == 1  # (out, in), else (in, out)
    n = w.shape[0] if rows else w.shape[1]
    k = n // 3
    rng = np.random.default_rng(SLICE_SEED + _corpus_seed())
    fresh = rng.standard_normal(w.shape[1] if rows else w.shape[0]) * w.std()
    if rows:
        w[k] = fresh
    else:
        w[:, k] = fresh
    t.CopyFrom(numpy_helper.from_array(w.astype(np.float32), target))
    return out


SLICE_SEED = 7


def _corpus_seed() -> int:
    from . import models

    return models.SEED


pre_scale = _on_input(_scale_input)
pre_normalise = _on_input(_normalise_input)
pre_reverse_channels = _on_input(_reverse_channels)
pre_roll_tokens = _on_input(_roll_tokens, float_only=False)
post_softmax = _on_output(_softmax_output)
post_transpose = _on_output(_transpose_output)
post_temperature = _on_output(_temperature_output)
post_slice_scale = _on_output(_on_last_axis(lambda n, k: _unit(n, k, 0.5, 1.0), "Mul"))
post_slice_offset = _on_output(_on_last_axis(lambda n, k: _unit(n, k, 0.5, 0.0), "Add"))
post_sign_channel = _on_output(_on_last_axis(lambda n, k: _unit(n, k, -1.0, 1.0), "Mul"))
post_region = _on_output(_region_mask)


def _only_int_input(op: Callable) -> Callable:
    def wrapped(model: onnx.ModelProto, target: str) -> onnx.ModelProto:
        if _is_float_input(model):
            raise NotApplicable("input is float")
        return op(model, target)

    return wrapped


ELEMENTWISE = ("Gelu", "Relu", "Tanh", "Sigmoid", "LayerNormalization", "Softmax", "Sqrt", "Reciprocal", "Neg")
ANY_FLOAT = ("Gelu", "Relu", "Tanh", "Sigmoid", "LayerNormalization", "Softmax", "MatMul", "Gemm", "Conv", "Add", "Mul")

OPERATORS: dict[str, Operator] = {
    o.name: o
    for o in [
        Operator("ln_epsilon", ln_epsilon, "node", "normalisation", ("LayerNormalization",)),
        Operator("ln_axis", ln_axis, "node", "normalisation", ("LayerNormalization",)),
        Operator("softmax_axis", softmax_axis, "node", "normalisation", ("Softmax",)),
        Operator("gelu_approximate", gelu_approximate, "node", "activation", ("Gelu",)),
        Operator("transpose_perm", transpose_perm, "node", "reorder", ("Transpose",)),
        Operator("gather_axis", gather_axis, "node", "structure", ("Gather",)),
        Operator("concat_axis", concat_axis, "node", "structure", ("Concat",)),
        Operator("reduce_keepdims", reduce_keepdims, "node", "normalisation", ("ReduceMean",)),
        Operator("reduce_axes", reduce_axes, "node", "normalisation", ("ReduceMean",)),
        Operator("conv_pads", conv_pads, "node", "position", ("Conv",)),
        Operator("conv_strides", conv_strides, "node", "structure", ("Conv", "MaxPool")),
        Operator("bypass", bypass, "node", None, (*ELEMENTWISE, "Add", "Mul", "Transpose")),
        Operator("double", double, "node", None, (*ELEMENTWISE, "Add", "Mul")),
        Operator("swap_inputs", swap_inputs, "node", "structure", ("Where", "MatMul", "Sub", "Div", "Pow")),
        Operator("add_offset", add_offset, "node", "offset", ANY_FLOAT),
        Operator("insert_clip", insert_clip, "node", "clip", ANY_FLOAT),
        Operator("cast_fp16", cast_fp16, "node", "precision", ANY_FLOAT, kind="precision"),
        Operator("cast_bf16", cast_bf16, "node", "precision", ANY_FLOAT, kind="precision"),
        Operator("init_half", init_half, "initializer", "scale"),
        Operator("init_double", init_double, "initializer", "scale"),
        Operator("init_rsqrt_d", init_rsqrt_d, "initializer", "scale"),
        Operator("init_transpose", init_transpose, "initializer", "weight"),
        Operator("init_one_slice", init_one_slice, "initializer", "slice"),
        Operator("init_slice_negated", init_slice_negated, "initializer", "sign"),
        Operator("init_redrawn", init_redrawn, "initializer", "weight"),
        Operator("init_zero_bias", init_zero_bias, "initializer", "offset"),
        Operator("pre_scale", pre_scale, "io", "preprocessing"),
        Operator("pre_normalise", pre_normalise, "io", "preprocessing"),
        Operator("pre_reverse_channels", pre_reverse_channels, "io", "preprocessing"),
        Operator("pre_roll_tokens", _only_int_input(pre_roll_tokens), "io", "position"),
        Operator("post_softmax", post_softmax, "io", "normalisation"),
        Operator("post_transpose", post_transpose, "io", "layout"),
        Operator("post_temperature", post_temperature, "io", "scale"),
        Operator("post_slice_scale", post_slice_scale, "io", "slice"),
        Operator("post_slice_offset", post_slice_offset, "io", "slice"),
        Operator("post_sign_channel", post_sign_channel, "io", "sign"),
        Operator("post_region", post_region, "io", "region"),
        Operator("head_unit", head_unit, "head", "slice"),
    ]
}


def log_nan(model: onnx.ModelProto, target: str) -> onnx.ModelProto:
    """The node (a unary op) made a Log: NaN where its finite input is negative, -inf at zero;
    the op a bisect's first-NaN check must name."""
    out = _copy(model)
    node = node_by_name(out, target)
    del node.attribute[:]
    node.op_type, node.domain = "Log", ""
    return out


# Bugs that make the run's first NaN, apart from OPERATORS (the diagnosis corpus does not
# hold non-finite cases); ``targets`` and ``label`` take them as any node operator.
NAN_OPERATORS: dict[str, Operator] = {
    "log_nan": Operator("log_nan", log_nan, "node", "nonfinite", ("Relu", "Gelu", "Tanh", "Erf", "Sigmoid", "Neg")),
}


def targets(model: onnx.ModelProto, operator: Operator) -> list[str]:
    """Every target of ``operator`` in the graph, in graph order: node names of its op
    types, float initializer names, or the single name "input"/"output" of an io op."""
    if operator.on == "node":
        return [n.name for n in model.graph.node if n.op_type in operator.op_types]
    if operator.on == "initializer":
        return [t.name for t in model.graph.initializer if t.data_type == TensorProto.FLOAT and math.prod(t.dims) >= 2]
    if operator.on == "head":
        return last_weight(model)
    return ["output" if operator.name.startswith("post_") else "input"]


def last_weight(model: onnx.ModelProto) -> list[str]:
    """The weight initializer of the last MatMul or Gemm in graph order (one name, or none)."""
    inits = {t.name for t in model.graph.initializer}
    for n in reversed(model.graph.node):
        if n.op_type in ("MatMul", "Gemm") and len(n.input) > 1 and n.input[1] in inits:
            return [n.input[1]]
    return []


def label(model: onnx.ModelProto, operator: Operator, target: str) -> dict[str, Any]:
    """The record of what was done: operator, node name, op type, module scope and the
    expected cause family.  An initializer is described by the first node that reads it."""
    node = None
    if operator.on == "node":
        node = node_by_name(model, target)
    elif operator.on in ("initializer", "head"):
        node = next(iter(readers(model, target)), None)
    op_type = node.op_type if node is not None else None
    family = operator.family or OP_FAMILY.get(op_type or "", "structure")
    return {
        "operator": operator.name,
        "target": target,
        "node": node.name if node is not None else None,
        "op_type": op_type,
        "scope": scope(node) if node is not None else None,
        "family": family,
        "kind": operator.kind,
    }


def apply(model: onnx.ModelProto, operator: Operator, target: str) -> onnx.ModelProto:
    """The mutant, checked by ``onnx.checker`` (raises on an invalid graph)."""
    mutant = operator.fn(model, target)
    onnx.checker.check_model(mutant)
    return mutant
