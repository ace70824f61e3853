"""Seeded pseudo-random numbers in plain NumPy: SplitMix64's finaliser over a counter.

perpendis needs randomness only to pick positions to sample, reproducibly. It does not use
``numpy.random`` for that: Pyodide loads every shared library of NumPy's wheel when the wheel is
installed, and ``numpy.random``'s are 2.1 MB of WebAssembly that the page would compile at each
start before it is ready. Without a use of ``numpy.random``, build.py leaves it out of the wheel
the page loads (0.56 MB of its download).
"""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S1, _S2, _S3 = np.uint64(30), np.uint64(27), np.uint64(31)


def mix64(x: np.ndarray) -> np.ndarray:
    """A pseudo-random uint64 per integer of ``x`` (SplitMix64's finaliser, a bijection of uint64):
    the same inputs always give the same outputs, so a sample keyed by them is reproducible."""
    z = x.astype(np.uint64)
    z += _GOLDEN
    # In place, on one scratch array: a fresh array per step cost Pyodide 40% more.
    shifted = z >> _S1
    z ^= shifted
    z *= _M1
    z ^= np.right_shift(z, _S2, out=shifted)
    z *= _M2
    z ^= np.right_shift(z, _S3, out=shifted)
    return z


class Stream:
    """SplitMix64 seeded with ``seed``: uniform uint64 draws, each continuing the stream where
    the last ended (its ``i``-th output is ``mix64(seed + i * golden)``, computed all at once)."""

    def __init__(self, seed: int) -> None:
        self._seed = np.uint64(seed % 2**64)
        self._drawn = 0

    def uint64(self, n: int) -> np.ndarray:
        steps = np.arange(self._drawn, self._drawn + n, dtype=np.uint64)
        self._drawn += n
        steps *= _GOLDEN  # modulo 2**64, as uint64 arrays wrap
        steps += self._seed
        return mix64(steps)

    def distinct(self, size: int, k: int) -> np.ndarray:
        """``k`` distinct positions of ``range(size)``, ascending (all of them when ``size <= k``).

        The first ``k`` distinct values of uniform draws: a uniform ``k``-subset. (Reducing a
        uint64 modulo ``size`` favours some values by at most ``size / 2**64``.)
        """
        if size <= k:
            return np.arange(size, dtype=np.intp)
        draws = np.empty(0, dtype=np.uint64)
        more = k + k // 4 + 64  # few repeats while size is well above k
        while True:
            draws = np.concatenate([draws, self.uint64(more) % np.uint64(size)])
            _, first = np.unique(draws, return_index=True)
            if len(first) >= k:
                return np.sort(draws[np.sort(first)[:k]]).astype(np.intp)
            more = len(draws)
