"""What PyTorch's numeric suite (``torch.ao.ns``) returns, saved with ``torch.save``: both
models' per-layer values in one file, split here into the two sides of a bisect.

``torch.ao.ns._numeric_suite_fx`` (``add_loggers`` + ``extract_logger_info``,
``add_shadow_loggers`` + ``extract_shadow_logger_info``, ``extract_weights``) gives
``{layer: {result_type: {model_name: [{"values": [tensor, ...], "ref_node_name": ...}, ...]}}}``,
``result_type`` being ``node_output``, ``node_input`` or ``weight``; the eager
``torch.ao.ns._numeric_suite`` gives ``{layer: {"float": [tensor, ...], "quantized": [...]}}``
(``compare_model_outputs``) or ``{name: {"float": tensor, "quantized": tensor}}``
(``compare_weights``).  A quantized model's values are quantized tensors, which
:mod:`.torchsave` dequantizes.  The layers stay in the file's order, the suite's own
(the order it matched the two graphs in, which is the graph's).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import InputError
from ..tensor import Tensor
from . import torchsave

_FX_TYPES = ("node_output", "node_input", "weight")


@dataclass
class Side:
    """One model's values, named by layer, in the suite's order."""

    model: str
    tensors: list[Tensor] = field(default_factory=list)


def recognised(obj: object) -> bool:
    """Whether a loaded torch.save object has the numeric suite's shape (fx or eager)."""
    return isinstance(obj, dict) and bool(obj) and all(_fx_layer(v) or _eager_layer(v) for v in obj.values())


def _fx_layer(value: object) -> bool:
    return isinstance(value, dict) and bool(value) and all(
        k in _FX_TYPES and isinstance(models, dict) and all(isinstance(e, list) for e in models.values())
        for k, models in value.items()
    )


def _eager_layer(value: object) -> bool:
    """``{"float": ..., "quantized": ...}``, the keys the eager suite always writes (a plain nested
    state_dict is not taken for one)."""
    return isinstance(value, dict) and set(value) == {"float", "quantized"} and all(
        isinstance(v, (list, tuple, torchsave.Loaded)) for v in value.values()
    )


def sides(obj: object) -> tuple[Side, Side]:
    """Both models' values, the first model named in the file first (the suite's model A)."""
    if not recognised(obj):
        raise InputError("the torch.save file is not a numeric suite result ({layer: {node_output: {model: [...]}}})")
    assert isinstance(obj, dict)
    found: dict[str, Side] = {}
    for layer, value in obj.items():
        for model, name, loaded in _values(str(layer), value):
            side = found.setdefault(model, Side(model))
            side.tensors.append(torchsave.as_tensor(name, loaded))
    if len(found) != 2:
        raise InputError(
            f"the numeric suite result holds {len(found)} models ({', '.join(found) or 'none'}), not two; "
            "bisect compares two: extract_logger_info of add_loggers(name_a, model_a, name_b, model_b)"
        )
    a, b = found.values()
    return a, b


def _values(layer: str, value: dict) -> list[tuple[str, str, torchsave.Loaded]]:
    """(model, tensor name, values) of one layer: the layer's name, with the result type when it
    is not the layer's output and an index when the layer logged several tensors."""
    out: list[tuple[str, str, torchsave.Loaded]] = []
    if _fx_layer(value):
        for kind, models in value.items():
            for model, results in models.items():
                tensors = [t for r in results if isinstance(r, dict) for t in _tensors(r.get("values"))]
                out += _named(str(model), layer if kind == "node_output" else f"{layer}:{kind}", tensors)
    else:
        for model, tensors in value.items():
            out += _named(str(model), layer, _tensors(tensors))
    return out


def _tensors(values: object) -> list[torchsave.Loaded]:
    if isinstance(values, torchsave.Loaded):
        return [values]
    if not isinstance(values, (list, tuple)):
        return []
    return [v for v in values if isinstance(v, torchsave.Loaded)]


def _named(model: str, name: str, tensors: list[torchsave.Loaded]) -> list[tuple[str, str, torchsave.Loaded]]:
    if len(tensors) == 1:
        return [(model, name, tensors[0])]
    return [(model, f"{name}.{i}", t) for i, t in enumerate(tensors)]
