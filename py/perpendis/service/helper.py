"""What a helper worker runs (``app/fold_worker.js``, through
:class:`perpendis.service.bridge.HelperWorker`), as the service is what the core's worker
runs: fold one share of a big comparison, then select order statistics of an error column
while the core's worker finishes the report.

A helper keeps the partial it last folded, so that the selection can start from its own
errors: the core's worker then sends only the errors of its own share, and sends them
while it still waits for this helper's partial; the helper selects as soon as it has
sent that partial (protocol: ``docs/contracts.md``).
"""

from __future__ import annotations

import json

import numpy as np

from ..engine.fold.codec import partial_to_bytes
from ..engine.fold.order import select
from ..engine.fold.partial import Partial
from ..engine.fold.quantiles import ERROR_COLUMNS, Ranks
from ..engine.fold.share import Share
from ..inputs.formats.buffer import BytesLike, Reader, as_view

OFFLOADED = ERROR_COLUMNS["rel"]
"""The error column (relative errors) whose order statistics a helper selects; the core's
worker selects the other.  At 16 M float32 with a tenth of the elements one ULP apart,
32 ms against 23 ms for the absolute errors: the helper, which starts first, takes the longer."""


def _values(data: BytesLike) -> np.ndarray:
    return np.frombuffer(as_view(data), dtype=np.float64)


class Helper:
    """One helper's state: the partial it last folded, until it is asked to select."""

    def __init__(self) -> None:
        self.partial: Partial | None = None

    def _kept(self, partial: Partial) -> np.ndarray:
        self.partial = partial
        return partial_to_bytes(partial)

    def fold(self, share_json: str, a: BytesLike, b: BytesLike) -> np.ndarray:
        """The partial of one share, from its elements' raw bytes, as bytes to send back."""
        self.partial = None  # should this fold fail, no earlier partial stands in for it
        return self._kept(Share(**json.loads(share_json)).fold(a, b))

    def fold_files(self, share_json: str, void_json: str, a: tuple[Reader, int], b: tuple[Reader, int]) -> np.ndarray:
        """The partial of one share of two files this helper reads itself
        (:func:`perpendis.engine.stream.fold_share`; imported then, not at the helper's start)."""
        from ..engine import stream

        self.partial = None
        return self._kept(stream.fold_share(share_json, void_json, a, b))

    def select_pooled(self, ranks_json: str, values: BytesLike) -> np.ndarray:
        """The order statistics of the :data:`OFFLOADED` errors of this helper's share and
        of the other worker's ``values`` (float64 bytes) together, as float64 bytes in the
        order of their ranks.

        ``ranks_json`` is the other worker's :class:`~perpendis.engine.compare.Ranks` (a list):
        added to this share's, they give the merged ranks, so this helper starts at once,
        without waiting for the merge.  They are the ones the merge asks for when neither
        sample was cut (``FoldCoordinator.merge_partials`` says ``pooled``); otherwise the answer is not used.
        """
        if self.partial is None:
            raise ValueError("this helper has folded no share whose errors it could select in")
        partial, self.partial = self.partial, None
        ranks = (Ranks.of(partial) + Ranks(*json.loads(ranks_json))).wanted()
        return _selected(partial.errors.column(OFFLOADED, _values(values)), ranks)

    def select(self, ranks_json: str, values: BytesLike) -> np.ndarray:
        """The order statistics at ``ranks`` (JSON, sorted) of ``values`` (float64 bytes: the
        merged :data:`OFFLOADED` errors), as float64 bytes in the ranks' order."""
        self.partial = None
        return _selected(_values(values), json.loads(ranks_json))


def _selected(values: np.ndarray, ranks: list[int]) -> np.ndarray:
    at = select(values, ranks)
    return np.array([at[r] for r in ranks], dtype=np.float64).view(np.uint8)
