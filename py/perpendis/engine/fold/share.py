"""A share of a comparison folded elsewhere (a helper worker, a checkpoint run's process, a
Dask worker): what folding its elements needs besides the elements."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ...inputs.formats.buffer import BytesLike, as_view
from ...numerics.bits import format_of
from ...numerics.tolerance import Tolerance
from .chunk import Chunk, aligned_chunks, fold
from .partial import Partial


@dataclass
class Share:
    """What folding elements ``start`` to ``stop`` of a comparison needs, apart from the elements."""

    start: int
    stop: int
    fmt: str
    shape: list[int]
    atol: float
    rtol: float
    preset: str
    lossy: list[int | None]
    complex: bool = False  # the values are (real, imaginary) pairs judged whole (Tolerance.complex)

    def to_json(self) -> str:
        return json.dumps(self.__dict__)

    def fold(self, a: BytesLike, b: BytesLike) -> Partial:
        """The partial of this share, from its elements given as raw bytes (fmt's storage)."""
        storage = np.dtype(format_of(self.fmt).storage)
        xa, xb = np.frombuffer(as_view(a), dtype=storage), np.frombuffer(as_view(b), dtype=storage)
        if xa.size != self.stop - self.start or xb.size != xa.size:
            raise ValueError(f"a share of {self.stop - self.start} elements came with {xa.size} and {xb.size}")
        return self.fold_chunks(aligned_chunks(xa, xb, offset=self.start))

    def fold_chunks(self, chunks: Iterable[Chunk]) -> Partial:
        """The partial of this share from its chunks, however they were read."""
        tol = Tolerance(self.atol, self.rtol, self.preset, None, self.complex)
        return fold(chunks, format_of(self.fmt), tuple(self.shape), tol, lossy=tuple(self.lossy))

