"""Captures of a network's intermediate tensors, ready to bisect.

``with perpendis.capture(model) as run: model(x)`` hooks a PyTorch model
(:mod:`.torch`); ``python -m perpendis capture model.onnx`` runs ONNX Runtime with every
value marked as an output (:mod:`.onnx`).  Both give a :class:`~.store.Capture`: named
arrays in execution order, with what is known of each (its module, its op type), saved
as safetensors or ``.npz``.  torch, onnx and onnxruntime are optional extras, imported
only when a capture is taken, never by ``import perpendis`` or by the page.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Capture", "capture", "check_export"]


def __getattr__(name: str) -> Any:
    if name == "Capture":
        from .store import Capture

        return Capture
    if name == "capture":
        from .torch import capture

        return capture
    if name == "check_export":
        from .check import check_export

        return check_export
    raise AttributeError(f"module 'perpendis.layers.capture' has no attribute {name!r}")

