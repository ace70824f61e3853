"""``.npz`` archives (``np.savez``, ``np.savez_compressed``): one tensor per member.

A member is a ``.npy`` file, read by :mod:`.npy`; its name is the keyword it was saved
under (``arr_0`` when positional), without the ``.npy`` suffix ``np.savez`` adds.
"""

from __future__ import annotations

import zipfile

from ...errors import InputError
from ..tensor import Tensor
from . import npy
from .buffer import BytesLike, as_view
from .zipview import member_bytes, open_zip

WHAT = ".npz archive"


def is_npz(names: list[str]) -> bool:
    """Whether a zip archive's member names are those of an ``.npz``: every one a ``.npy``."""
    return bool(names) and all(name.endswith(".npy") for name in names)


def read(data: BytesLike, *, void_format: str | None = None) -> list[Tensor]:
    """Every array in the archive, in archive order."""
    view = as_view(data)
    archive, members = open_zip(view, WHAT)
    if not members:
        raise InputError("the .npz archive holds no arrays")
    return [_member(archive, view, info, void_format) for info in members]


def _member(archive: zipfile.ZipFile, view: memoryview, info: zipfile.ZipInfo, void_format: str | None) -> Tensor:
    member = info.filename.removesuffix(".npy")
    where = f"archive member {info.filename!r}"
    try:
        tensor = npy.read(member_bytes(archive, view, info, WHAT), member, void_format=void_format)
    except InputError as err:
        raise InputError(err.message, where=where) from err
    compressed = info.compress_type != zipfile.ZIP_STORED
    tensor.source = f".npz{' (compressed)' if compressed else ''}, {tensor.source}"
    return tensor
