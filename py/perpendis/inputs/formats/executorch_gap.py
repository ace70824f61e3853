"""ExecuTorch's numeric gap (``Inspector.calculate_numeric_gap``), saved with
``torch.save(df.to_dict("list"), PATH)`` or ``df.to_dict("records")``: each op's output in the
exported program (AOT, side A) beside the same op's output in the ExecuTorch runtime (side B).

The DataFrame itself is a pandas pickle, which names pandas' classes: Perpendis' unpickler
loads no class but torch's tensor rebuilders, so the columns are saved as plain lists.  A row's
name is its AOT ops joined by ``+`` and its debug handle (``conv2d@1``): op names repeat in a
graph, handles do not.  Rows keep the DataFrame's order, the runtime's.
"""

from __future__ import annotations

from ...errors import InputError
from ..tensor import Tensor
from . import torchsave

COLUMNS = ("aot_ops", "aot_intermediate_output", "runtime_intermediate_output")


def recognised(obj: object) -> bool:
    """Whether a loaded torch.save object is a numeric gap table, by columns or by rows."""
    if isinstance(obj, dict):
        return all(isinstance(obj.get(c), list) for c in COLUMNS)
    return isinstance(obj, list) and bool(obj) and all(isinstance(r, dict) and set(COLUMNS) <= set(r) for r in obj)


def _rows(obj: object) -> list[dict]:
    if isinstance(obj, list):
        return obj
    assert isinstance(obj, dict)
    lengths = {len(obj[c]) for c in COLUMNS}
    if len(lengths) != 1:
        raise InputError(f"the numeric gap's columns {', '.join(COLUMNS)} are of different lengths ({sorted(lengths)})")
    return [{k: v[i] for k, v in obj.items() if isinstance(v, list) and i < len(v)} for i in range(lengths.pop())]


def sides(obj: object) -> tuple[list[Tensor], list[Tensor]]:
    """The AOT and runtime outputs, row by row; a row whose outputs are no tensors (a scalar an op
    returned) is left out, a row of several tensors gives one per output (``name.0``, ``name.1``)."""
    if not recognised(obj):
        raise InputError("the torch.save file is not an ExecuTorch numeric gap (columns " + ", ".join(COLUMNS) + ")")
    a: list[Tensor] = []
    b: list[Tensor] = []
    for i, row in enumerate(_rows(obj)):
        name = _name(row, i)
        aot, runtime = _tensors(row["aot_intermediate_output"]), _tensors(row["runtime_intermediate_output"])
        if len(aot) != len(runtime):
            raise InputError(f"numeric gap row {name}: {len(aot)} AOT outputs against {len(runtime)} runtime ones")
        for k, (x, y) in enumerate(zip(aot, runtime, strict=True)):
            label = name if len(aot) == 1 else f"{name}.{k}"
            a.append(torchsave.as_tensor(label, x))
            b.append(torchsave.as_tensor(label, y))
    if not a:
        raise InputError("the numeric gap holds no tensor outputs to compare")
    return a, b


def _name(row: dict, index: int) -> str:
    ops = row.get("aot_ops")
    ops = "+".join(str(o) for o in ops) if isinstance(ops, (list, tuple)) and ops else f"row{index}"
    handle = row.get("aot_debug_handle")
    if isinstance(handle, (list, tuple)):
        return f"{ops}@{'.'.join(str(h) for h in handle)}"
    return ops if handle is None else f"{ops}@{handle}"


def _tensors(value: object) -> list[torchsave.Loaded]:
    if isinstance(value, torchsave.Loaded):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torchsave.Loaded)]
    return []
