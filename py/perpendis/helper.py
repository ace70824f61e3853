"""What a helper worker runs (``app/fold_worker.js``), as :mod:`perpendis.api` is what the
core's worker runs: fold one share of a big comparison, then select order statistics of
an error column while the core's worker finishes the report.

A helper keeps the partial it last folded, so that the selection can start from its own
errors: the core's worker then sends only the errors of its own share, and sends them
while it still waits for this helper's partial (protocol: ``docs/contracts.md``).
"""

from __future__ import annotations

import json

import numpy as np

from . import stream
from .compare import ERROR_COLUMNS, Partial, Share, partial_to_bytes, select
from .formats.buffer import BytesLike, Reader, as_view

OFFLOADED = ERROR_COLUMNS["rel"]
"""The error column (relative errors) whose order statistics a helper selects; the core's
worker selects the other.  At 16 M float32 with a tenth of the elements one ULP apart,
32 ms against 23 ms for the absolute errors: the helper, which starts first, takes the longer."""


def _values(data: BytesLike) -> np.ndarray:
    return np.frombuffer(as_view(data), dtype=np.float64)


class Helper:
    """One helper's state: its last folded partial and the error values added since."""

    def __init__(self) -> None:
        self.partial: Partial | None = None
        self.added: list[np.ndarray] = []

    def _kept(self, partial: Partial) -> np.ndarray:
        self.partial, self.added = partial, []
        return partial_to_bytes(partial)

    def fold(self, share_json: str, a: BytesLike, b: BytesLike) -> np.ndarray:
        """The partial of one share, from its elements' raw bytes, as bytes to send back."""
        return self._kept(Share(**json.loads(share_json)).fold(a, b))

    def fold_files(self, share_json: str, void_json: str, a: tuple[Reader, int], b: tuple[Reader, int]) -> np.ndarray:
        """The partial of one share of two files this helper reads itself (:func:`stream.fold_share`)."""
        return self._kept(stream.fold_share(share_json, void_json, a, b))

    def add(self, values: BytesLike) -> None:
        """Keep another worker's :data:`OFFLOADED` errors (float64 bytes, not copied: the
        caller hands them over) for :meth:`select`."""
        self.added.append(_values(values))

    def select(self, ranks_json: str, values: BytesLike | None = None) -> np.ndarray:
        """The order statistics at ``ranks`` (JSON, sorted) of the merged :data:`OFFLOADED`
        errors, as the bytes of float64 in the ranks' order.

        The merged errors are ``values`` when given (float64 bytes), else this helper's own
        with those :meth:`add` kept: the core's worker says which (``api.merge_split``).
        """
        if values is not None:
            pool = _values(values)
        elif self.partial is not None:
            pool = self.partial.errors.column(OFFLOADED, *self.added)
        else:
            raise ValueError("this helper has folded no share whose errors it could select in")
        self.partial, self.added = None, []
        ranks = json.loads(ranks_json)
        at = select(pool, ranks)
        return np.array([at[r] for r in ranks], dtype=np.float64).view(np.uint8)
