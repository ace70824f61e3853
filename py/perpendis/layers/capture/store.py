"""A capture in memory: named arrays in execution order, each with what is known of it.

Saved as safetensors, the order goes under the metadata key ``order`` (which the
safetensors reader already follows) and each tensor's description (module path, op
type, the ONNX values a node read) under ``perpendis.tensors`` as JSON, so pairing can
use it later without the model.  ``.npz`` keeps the order by itself (members are
written in order) but has no place for the descriptions.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InputError
from ...inputs.formats import safetensors
from ...inputs.formats.buffer import BytesLike

META_KEY = "perpendis.tensors"


@dataclass
class Capture:
    """Tensors in the order they were computed; ``info[name]`` describes one (JSON-safe)."""

    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    info: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, name: str, array: np.ndarray, **info: Any) -> None:
        if name in self.arrays:
            raise InputError(f"the capture already holds a tensor named {name!r}; names must be unique", where=name)
        self.arrays[name] = np.ascontiguousarray(array)
        self.info[name] = {k: v for k, v in info.items() if v is not None}

    @property
    def names(self) -> list[str]:
        return list(self.arrays)

    def __len__(self) -> int:
        return len(self.arrays)

    def __iter__(self) -> Iterator[str]:
        return iter(self.arrays)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def save(self, path: str | Path) -> Path:
        """Write ``.safetensors`` (order and descriptions in its metadata) or ``.npz`` (order only)."""
        path = Path(path)
        if path.suffix == ".safetensors":
            _save_safetensors(path, self.arrays, self.info)
        elif path.suffix == ".npz":
            _save_npz(path, self.arrays)
        else:
            raise InputError(f"save a capture as .safetensors or .npz, not {path.suffix or 'a name without extension'}")
        return path


def _save_safetensors(path: Path, arrays: Mapping[str, np.ndarray], info: Mapping[str, dict]) -> None:
    from safetensors.numpy import save_file

    metadata = {"order": json.dumps(list(arrays)), META_KEY: json.dumps(dict(info))}
    save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(path), metadata=metadata)
    # safetensors creates the file with mode 0600; a capture is shared like any output file.
    os.chmod(path, 0o666 & ~_umask())


def _umask() -> int:
    """The process's umask (reading it means setting it: put straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _save_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """``np.savez`` would do, but it takes names as keywords, which a module path may not be."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)


def read_info(data: BytesLike) -> dict[str, dict[str, Any]]:
    """What a saved capture records of each tensor (``{}`` for files without it: npz, other writers)."""
    try:
        info = json.loads(safetensors.metadata(data).get(META_KEY, "{}"))
    except json.JSONDecodeError:
        return {}
    if not isinstance(info, dict):
        return {}
    return {str(k): v for k, v in info.items() if isinstance(v, dict)}
