"""Files → tensors, whatever form they were saved in, recognised by their content.

File names lie (``.pt`` files that are zips of ``.npy``, ``.bin`` files of anything),
so :func:`read` looks at the bytes: the ``.npy`` magic, a zip archive (``.npz`` or
``torch.save``, told apart by member names), a safetensors header, Polygraphy JSON,
and last, since protobuf has no magic number, an ONNX ``TensorProto`` that decodes
cleanly.  Text is not a file form here: :func:`looks_like_text` lets the caller send it
to the text parser instead.

The readers are imported on first use, not with the package: the page's core imports
this package at start (for :mod:`.buffer`), and a reader it has not needed yet is start-up
time spent for nothing.
"""

from __future__ import annotations

from ...errors import InputError
from ..tensor import Tensor
from .buffer import BytesLike, as_view
from .zipview import ZIP_MAGIC, open_zip

UNDERSTOOD = (
    ".npy, .npz, .safetensors, torch.save (.pt/.pth, zip format), ONNX TensorProto (.pb) "
    "and Polygraphy JSON (--save-outputs / --save-inputs)"
)
_PICKLE_PROTOCOL = 0x80
_TEXT_CONTROLS = frozenset(range(32)) - {9, 10, 12, 13}


def looks_like_text(data: BytesLike, size: int | None = None) -> bool:
    """Whether the bytes are UTF-8 text (pasted REPL output saved to a file), not a binary form.

    Text has no control characters but tabs and line breaks, which every binary form
    here has in its first bytes; Polygraphy JSON is text too but is a file form.  ``size``:
    the whole file's, when ``data`` is only its first bytes.
    """
    view = as_view(data)
    if _TEXT_CONTROLS.intersection(bytes(view[:4096])):  # binary forms show it early: spare the 64 KiB scan
        return False
    from . import polygraphy

    head = bytes(view[:65536])
    if not head or _TEXT_CONTROLS.intersection(head) or polygraphy.looks_like_polygraphy(view):
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        # A multi-byte character cut by the 64 KiB window is still text.
        return max(len(view), size or 0) > len(head) and err.start >= len(head) - 3
    return True


def read(data: BytesLike, name: str | None = None, *, void_format: str | None = None) -> list[Tensor]:
    """The tensors in a file, in saved order.

    ``name`` is the file name, used to name a file's single unnamed array; archives name
    each tensor after its member or key.  ``void_format`` chooses how anonymous void
    ``.npy`` elements are read (see :data:`npy.VOID_FORMATS`).
    """
    # Each reader is imported when the bytes get as far as its test: a first .npy loads no other.
    from . import npy

    view = as_view(data)
    if not len(view):
        raise InputError("the file is empty")
    if bytes(view[: len(npy.MAGIC)]) == npy.MAGIC:
        return [npy.read(view, name, void_format=void_format)]
    if bytes(view[:4]) == ZIP_MAGIC:
        return _read_zip(view, name, void_format)
    from . import safetensors

    if safetensors.header_length(view) is not None:
        return safetensors.read(view)
    from . import polygraphy

    if polygraphy.looks_like_polygraphy(view):
        return polygraphy.read(view, void_format=void_format)
    from . import onnx_pb, torchsave

    if bytes(view[: len(torchsave.LEGACY_MAGIC)]) == torchsave.LEGACY_MAGIC:
        return torchsave.read(view, name)
    if view[0] == _PICKLE_PROTOCOL:
        raise InputError(
            "the file is a Python pickle; Perpendis never unpickles arbitrary files, since that runs code "
            f"from them: save the tensors as one of {UNDERSTOOD}"
        )
    if looks_like_text(view):
        raise InputError("the file is text, not a tensor file: read it as pasted text")
    try:
        return [onnx_pb.read(view, name)]
    except InputError as err:
        if not err.message.startswith("not an ONNX TensorProto"):
            raise
    raise InputError(f"the file is in no form Perpendis understands; it reads {UNDERSTOOD}")


def _read_zip(view: memoryview, name: str | None, void_format: str | None) -> list[Tensor]:
    from . import npz, torchsave

    _, members = open_zip(view, "zip archive")
    names = [info.filename for info in members]
    if torchsave.is_torch_zip(names):
        return torchsave.read(view, name)
    if npz.is_npz(names):
        return npz.read(view, void_format=void_format)
    raise InputError(
        f"the zip archive is neither an .npz (members {', '.join(names[:3]) or 'none'}... are not all .npy) "
        "nor a torch.save file (no <name>/data.pkl)"
    )
