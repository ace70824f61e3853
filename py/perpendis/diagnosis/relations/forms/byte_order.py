"""Bytes reversed: each element of A is B's element with its bytes in the other order, the
mark of a buffer read with the wrong byte order.  Checked on the stored bits, exactly:
a rounding never reverses bytes, so one exact match per element is the whole evidence."""

from __future__ import annotations

import numpy as np

from . import implies
from .form import Form, fails_text
from .view import HOLDS, View


def find(view: View) -> Form | None:
    if view.raw is None:
        return None
    a, b = view.raw
    ok = (a == b.byteswap()).reshape(view.shape)
    share = float(np.mean(ok))
    if share < HOLDS or share <= view.identity_share:
        return None
    params = {"map": "byteswap", "bytes": a.dtype.itemsize}
    text = f"A = B with the {a.dtype.itemsize} bytes of each element in reverse order (B.byteswap())"
    return Form("elementwise_map", text, params, share, int(ok.size), fails_text(view, ok),
                implies.causes("elementwise_map", params))
