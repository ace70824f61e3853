"""Layer names of two captures paired by name: the explicit mapping, identical names, then
equal normalised names (ONNX value names and PyTorch module paths read alike).

Kept apart from :mod:`perpendis.bisect` (which re-exports it) so that
:mod:`perpendis.pairing`, which pairs by module, op type and values too, and the bisect
that uses its pairs read the same rules without importing each other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..errors import InputError

_OUTPUT_SUFFIX = re.compile(r"(_output_\d+|:\d+)$")
_OP_TYPE = re.compile(r"^[A-Z][A-Za-z0-9]*(_\d+)?$")


def normalise_name(name: str) -> str:
    """The module path a tensor name stands for, so both runtimes' names of a layer agree.

    ONNX exporters name a node's output ``/<scope>/<OpType>[_k]_output_<n>``, where the
    scope repeats each container's prefix (``/layer1/layer1.0/conv1``).  Dropping the
    output suffix and the op type, then every scope component the next one restates,
    leaves the PyTorch module name (``layer1.0.conv1``).
    """
    parts = [p for p in name.strip().split("/") if p]
    if not parts:
        return name.strip()
    last = _OUTPUT_SUFFIX.sub("", parts[-1])
    if len(parts) > 1 and _OP_TYPE.match(last):
        parts = parts[:-1]
    else:
        parts[-1] = last
    kept = [p for p, nxt in zip(parts, [*parts[1:], ""], strict=True) if not nxt.startswith(p + ".")]
    return ".".join(kept)


def _shared_prefix(keys: list[str]) -> str:
    """The leading dotted components every key has (``module.`` from DataParallel, ``model.``)."""
    if len(keys) < 2:
        return ""
    split = [k.split(".") for k in keys]
    common: list[str] = []
    for parts in zip(*split, strict=False):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    if any(len(s) <= len(common) for s in split):
        common = common[:-1]
    return ".".join(common) + "." if common else ""


def _keys(names: list[str]) -> list[str]:
    keys = [normalise_name(n) for n in names]
    prefix = _shared_prefix(keys)
    return [k.removeprefix(prefix) for k in keys]


def pair_names(
    a_names: Sequence[str], b_names: Sequence[str], mapping: Mapping[str, str] | None = None
) -> tuple[list[tuple[int, int, str]], list[int], list[int]]:
    """Pair names of A with names of B: ``(i_a, i_b, how)`` in A's order, and the unpaired.

    First the explicit ``mapping`` (A name → B name), then identical names, then equal
    normalised names.  A module's output is the last tensor computed in its scope, so
    when several tensors share a normalised name the last ones on each side pair up
    (``/blocks.0/Add_1`` is the block's output, ``/blocks.0/Add`` an intermediate).
    """
    mapping = dict(mapping or {})
    b_index = {n: i for i, n in enumerate(b_names)}
    a_index = {n: i for i, n in enumerate(a_names)}
    for a_name, b_name in mapping.items():
        if a_name not in a_index:
            raise InputError(f"the mapping names {a_name!r}, which A does not hold", where="mapping", side="a")
        if b_name not in b_index:
            raise InputError(f"the mapping names {b_name!r}, which B does not hold", where="mapping", side="b")
    matched: dict[int, tuple[int, str]] = {a_index[a]: (b_index[b], "mapping") for a, b in mapping.items()}
    used_b = {i for i, _ in matched.values()}
    for i, name in enumerate(a_names):
        j = b_index.get(name)
        if i not in matched and j is not None and j not in used_b:
            matched[i] = (j, "exact")
            used_b.add(j)

    a_keys, b_keys = _keys(list(a_names)), _keys(list(b_names))
    groups_b: dict[str, list[int]] = {}
    for j, key in enumerate(b_keys):
        if j not in used_b:
            groups_b.setdefault(key, []).append(j)
    groups_a: dict[str, list[int]] = {}
    for i, key in enumerate(a_keys):
        if i not in matched:
            groups_a.setdefault(key, []).append(i)
    for key, a_group in groups_a.items():
        for i, j in zip(reversed(a_group), reversed(groups_b.get(key, [])), strict=False):
            matched[i] = (j, "normalised")
            used_b.add(j)

    pairs = [(i, j, how) for i, (j, how) in sorted(matched.items())]
    only_a = [i for i in range(len(a_names)) if i not in matched]
    only_b = [j for j in range(len(b_names)) if j not in used_b]
    return pairs, only_a, only_b


# ---------------------------------------------------------------------------------------
# Comparing
