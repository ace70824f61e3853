"""The parsed tensor: an array, its element format, and what we know of where it came from.

Every reader (pasted text, ``.npy``, safetensors, ...) produces :class:`Tensor` objects,
and everything downstream (compare, diagnose, report) consumes them, so knowledge that
only the reader has — "this text was printed with 4 significant digits", "the ``'<V2'``
descr was taken as bfloat16" — travels with the data instead of being lost.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..numerics.bits import FORMATS, Format, format_of


@dataclass
class Tensor:
    """An array in one of the formats of :mod:`perpendis.bits`.

    ``array`` has the logical shape and the format's storage dtype: native NumPy dtypes
    for float16/32/64, integers and bool; raw bits (uint16/uint8) for bfloat16 and the
    float8 formats.
    """

    array: np.ndarray
    format: str
    source: str
    name: str | None = None
    lossless: bool = True
    digits: int | None = None
    notes: list[str] = field(default_factory=list)
    # Text read from a print: the decimals after the point of a fixed-point print (None
    # otherwise), and whether the dtype was assumed because the text printed none.
    decimals: int | None = None
    dtype_assumed: bool = False
    # The last axis holds (real, imaginary) parts of complex values (see from_numpy).
    is_complex: bool = False

    def __post_init__(self) -> None:
        fmt = format_of(self.format)
        if self.array.dtype != np.dtype(fmt.storage):
            raise TypeError(f"{self.format} tensor held as {self.array.dtype}, expected {fmt.storage}")

    @property
    def fmt(self) -> Format:
        return format_of(self.format)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self.array.shape)

    @property
    def size(self) -> int:
        return int(self.array.size)

    def describe(self) -> dict[str, object]:
        """The JSON-ready summary the report shows as ``a``/``b``."""
        return {
            "shape": list(self.shape),
            "dtype": self.format,
            "n_elements": self.size,
            "source": self.source,
            "name": self.name,
            "lossless": self.lossless,
            "digits": self.digits,
            "notes": list(self.notes),
            **({"decimals": self.decimals} if self.decimals is not None else {}),
            **({"dtype_assumed": True} if self.dtype_assumed else {}),
        }


def from_numpy(array: np.ndarray, source: str, *, name: str | None = None, notes: list[str] | None = None) -> Tensor:
    """Wrap a NumPy array of a native dtype, refusing dtypes Perpendis cannot compare.

    Complex arrays are compared per component: they become their real dtype with a
    trailing axis of 2 (real, imaginary), and a note says so.
    """
    array = np.asarray(array)
    notes = list(notes or [])
    is_complex = array.dtype.kind == "c"
    if is_complex:
        from .formats.limits import MAX_DIMS  # here: the formats package imports this module

        if array.ndim >= MAX_DIMS:
            raise InputError(
                f"a complex array of {array.ndim} dimensions cannot be compared: its components would need "
                f"one more axis, past the limit MAX_DIMS = {MAX_DIMS}"
            )
        real = np.dtype(f"float{array.dtype.itemsize * 4}")
        array = np.ascontiguousarray(array).view(real.newbyteorder(array.dtype.byteorder)).reshape(*array.shape, 2)
        notes.append(
            f"complex values are compared per component (a trailing axis of 2: real, imaginary) in {real.name}"
        )
    if array.dtype.byteorder == ">" or (array.dtype.byteorder == "=" and not np.little_endian):
        array = array.astype(array.dtype.newbyteorder("<"))
    name_ = array.dtype.name
    if array.dtype.kind == "b":
        name_ = "bool"
    fmt = FORMATS.get(name_)
    if fmt is None or not fmt.native:
        raise InputError(
            f"arrays of dtype {array.dtype} cannot be compared; Perpendis compares float16, bfloat16, "
            "float32, float64, float8, integer, bool and complex arrays"
        )
    return Tensor(array, fmt.name, source, name=name, notes=notes, is_complex=is_complex)


# torch dtypes NumPy lacks: (Perpendis format, torch dtype of the same width to view the bits as)
_TORCH_RAW = {
    "torch.bfloat16": ("bfloat16", "int16"),
    "torch.float8_e4m3fn": ("float8_e4m3fn", "int8"),
    "torch.float8_e5m2": ("float8_e5m2", "int8"),
}


def as_tensor(value: Any, source: str) -> Tensor:
    """A NumPy array, anything ``np.asarray`` accepts, or a PyTorch tensor (bfloat16 and
    float8 too: their raw bits are taken as they are) as a :class:`Tensor`.  torch is never
    imported here: a tensor's own module is used, so NumPy users need no torch."""
    if isinstance(value, Tensor):
        return value
    raw = _TORCH_RAW.get(str(getattr(value, "dtype", "")))
    if raw is not None:
        torch = sys.modules["torch"]
        fmt, view_as = raw
        ints = value.detach().cpu().contiguous().view(getattr(torch, view_as)).numpy()
        return Tensor(ints.view(ints.dtype.str.replace("i", "u")), fmt, source)
    if hasattr(value, "detach"):  # a torch tensor on any device, or one that requires grad
        value = value.detach().cpu().numpy()
    return from_numpy(np.asarray(value), source)
