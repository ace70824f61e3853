"""The histogram of ULP distances: bins 0, 1, 2, then powers of two."""

from __future__ import annotations

import numpy as np

HIST_BINS = 66  # bins of distances < 2**64


def _ulp_bins(dist: np.ndarray) -> np.ndarray:
    """Histogram bin of each distance: 0, 1, 2, then 3-4, 5-8, ... (bin = bit_length(d - 1) + 1)."""
    x = np.where(dist > 0, dist - np.uint64(1), np.uint64(0))
    length = np.zeros(x.shape, dtype=np.int64)
    for shift in (32, 16, 8, 4, 2, 1):
        big = x >= np.uint64(1 << shift)
        length += big * shift
        x = np.where(big, x >> np.uint64(shift), x)
    length += x > 0
    return np.where(dist > 0, length + 1, 0)


SMALL_ULP = 1 << 16  # below this largest distance, the histogram is binned from a count per distance


def ulp_histogram(dist: np.ndarray, size: int) -> np.ndarray:
    """Counts per :func:`_ulp_bins` bin of ``dist`` (uint64).

    Rounding keeps distances small, so counting each distance first (one pass) and
    binning the few distinct values is the common path; the per-element binning, about
    twenty passes, is left for distances of bugs.
    """
    top = int(dist.max(initial=0))
    if top >= SMALL_ULP:
        return np.bincount(_ulp_bins(dist).astype(np.intp), minlength=size)[:size]
    counts = np.bincount(dist.astype(np.intp), minlength=1)
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, _ulp_bins(np.arange(counts.size, dtype=np.uint64)), counts)
    return out


def ulp_edges(n_bins: int) -> list[str]:
    """Labels of the first ``n_bins`` ULP histogram bins."""
    labels = ["0", "1", "2"]
    labels += [f"{(1 << (k - 2)) + 1}-{1 << (k - 1)}" for k in range(3, n_bins)]
    return labels[:n_bins]

