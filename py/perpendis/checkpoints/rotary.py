"""llama.cpp's rotary row order: which GGUF weights it permuted, and putting them back.

``convert_hf_to_gguf.py`` stores a llama model's Q and K weights with each head's rows
interleaved for GGML's rotary kernel; compared with the Hugging Face checkpoint as
stored, every row would differ.  Apart from the reading of checkpoints because it is a
fact about one converter, not about any file format.
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import InputError

LLAMA_ROTARY = re.compile(r"^blk\.\d+\.attn_(q|k)\.weight$")


def permuted_heads(name: str, meta: dict[str, object]) -> int:
    """The heads whose rows llama.cpp's converter permuted in the GGUF tensor ``name``, or 0.

    ``convert_hf_to_gguf.py`` reorders each head's rows of a llama model's Q and K
    weights from Hugging Face's rotary layout (first halves, then second halves) to
    GGML's (pairs interleaved), using the file's head counts (the KV heads for K).
    """
    if meta.get("general.architecture") != "llama" or not (m := LLAMA_ROTARY.match(name)):
        return 0
    key = "llama.attention.head_count" + ("_kv" if m[1] == "k" else "")
    heads = meta.get(key, meta.get("llama.attention.head_count"))
    return heads if isinstance(heads, int) and heads > 0 else 0



def unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """The inverse of llama.cpp's ``permute(w, n_head)``: each head's rows from GGML's
    interleaved rotary order back to Hugging Face's halves."""
    rows = w.shape[0]
    if rows % (2 * heads):
        raise InputError(f"{rows} rows cannot be {heads} heads of rotary pairs")
    return w.reshape(heads, rows // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
