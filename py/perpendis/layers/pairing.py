"""Pair the tensors of two captures of one network: PyTorch module paths with ONNX values.

Three rules, each applied to what the rules before it left over, and each pair keeps
the reason it was made:

``mapping``
    the user's own ``A name → B name`` pairs (``--map``, the page's editor).
``metadata``
    torch.onnx records on every node the module path of the call that made it
    (``pkg.torch.onnx.name_scopes``, read into ``info["module"]``; see
    :func:`.formats.onnx_model.describe`).  A module's k-th call is the k-th run of
    consecutive values made in its scope, and its output the last value of that run;
    the PyTorch capture names the k-th call ``path@k`` (:mod:`.capture.torch`).
``name``
    equal names, or equal once normalised (``/layer1/layer1.0/conv1/Conv_output_0`` is
    ``layer1.0.conv1``): :func:`.bisect.pair_names`.
``order and shape``
    for what is left, a tensor of A pairs with a tensor of B of the same shape whose
    values agree far better than chance: two unrelated tensors of one shape differ by
    about as much as they hold (relative error ``|a - b| / |b|`` near or above 1), a
    pair of the same layer by rounding.  Those agreeing to ``CLOSE`` are landmarks;
    between two landmarks (in both orders), pairs agreeing to ``AGREE`` (a layer a bug
    changed but left most of the signal of: an epsilon), then the rest in order by
    shape (a dropped bias can leave less agreement than chance).  Values are compared on
    a fixed sample of each tensor's elements; among candidates the best agreement wins,
    then the nearest place in execution order (:func:`_by_values`).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..inputs.tensor import Tensor
from ..numerics.bits import to_float64
from .layer_names import pair_names

AGREE = 0.5  # relative error below which two same-shape tensors may be the same layer (chance: about 1)
CLOSE = 1e-2  # relative error below which they are: rounding, or a cast to a narrower float
SURE = 1e-4  # relative error below which a pair by values is sure: a layer adding a small term stays above it
SAMPLE = 512  # elements of each tensor compared when pairing by values
LOOKBACK = 4  # earlier tensors an output is checked against for being a copy of one (an identity module)

Info = Mapping[str, Mapping[str, object]]
_CALL = re.compile(r"^(?P<path>[^:@]*)(?:@(?P<call>\d+))?(?P<suffix>(?::[^:]+)*)$")


@dataclass(frozen=True)
class Pairing:
    pairs: list[tuple[int, int, str]]  # (index in A, index in B, reason), in A's order
    only_a: list[int]
    only_b: list[int]
    # Per index in A: what the pair stands on, and how sure it is ("high", "medium", "low").
    evidence: dict[int, str] = field(default_factory=dict)
    confidence: dict[int, str] = field(default_factory=dict)
    # Tensors left unpaired because they repeat an earlier tensor of their side bit for bit
    # (eval-mode Dropout, Identity): index → index of the tensor repeated, per side.
    repeats_a: dict[int, int] = field(default_factory=dict)
    repeats_b: dict[int, int] = field(default_factory=dict)


def split_name(name: str) -> tuple[str, int, str]:
    """``(module path, call number, output suffix)`` of a PyTorch capture name (``relu@1:0``)."""
    m = _CALL.match(name)
    if m is None:
        return name, 0, ""
    return m["path"], int(m["call"] or 0), m["suffix"]


def _scopes(info: Mapping[str, object]) -> list[str]:
    """The modules a value was made in, outermost first: the name scopes between the root and the op.

    A capture or model described before scopes were kept records only the deepest one.
    """
    scopes = info.get("scopes")
    if isinstance(scopes, list) and len(scopes) >= 3:
        return [str(s) for s in scopes[1:-1] if s]
    module = info.get("module")
    return [module] if isinstance(module, str) and module else []


def module_calls(names: Sequence[str], info: Info) -> dict[tuple[str, int], list[int]]:
    """``(module, call number) → indices of the values of that call that leave it``, for an ONNX capture.

    A module's call is a run of consecutive values made in its scope or in any scope
    nested in it (a transformer layer holds its attention, its norms and the residual
    adds of its own ``forward``).  Its values that leave it are those read outside the
    run, or by nobody (a graph output); the last of them is the module's output, so a
    layer pairs with what it hands on, never with the first residual add inside it.
    """
    runs: list[tuple[str, list[int]]] = []
    open_runs: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        described = info.get(name) or {}
        inside = [] if described.get("op_type") == "input" else _scopes(described)
        for module in [m for m in open_runs if m not in inside]:
            del open_runs[module]  # a value made outside a module ends its current call
        for module in inside:
            if module not in open_runs:
                open_runs[module] = []
                runs.append((module, open_runs[module]))
            open_runs[module].append(i)
    readers: dict[str, set[int]] = {}
    for i, name in enumerate(names):
        for source in (info.get(name) or {}).get("inputs") or []:
            readers.setdefault(str(source), set()).add(i)
    calls: dict[tuple[str, int], list[int]] = {}
    seen: dict[str, int] = {}
    for module, members in runs:
        inside = set(members)
        leaving = [i for i in members if not readers.get(names[i]) or readers[names[i]] - inside]
        k = seen.get(module, 0)
        seen[module] = k + 1
        calls[(module, k)] = leaving or members[-1:]
    return calls


def _by_metadata(
    torch_names: Sequence[str], onnx_names: Sequence[str], onnx_info: Info, free_t: set[int], free_o: set[int]
) -> list[tuple[int, int]]:
    calls = module_calls(onnx_names, onnx_info)
    out = []
    taken: set[int] = set()  # a layer and its last child hand on one value: both pair with it
    for i in sorted(free_t):
        path, call, suffix = split_name(torch_names[i])
        leaving = calls.get((path, call))
        if not leaving:
            continue
        if suffix:
            index = suffix.split(":")[1]
            j = leaving[int(index)] if index.isdigit() and int(index) < len(leaving) else None
        else:
            j = leaving[-1]
        if j is not None and (j in free_o or j in taken):
            out.append((i, j))
            free_o.discard(j)
            taken.add(j)
    return out


def _carries_metadata(info: Info) -> bool:
    return any(_scopes(v) and v.get("op_type") not in (None, "input") for v in info.values())


def _sample(t: Tensor) -> tuple[tuple[int, ...], np.ndarray]:
    """The shape without unit axes, and the same fixed sample of elements for every tensor of that size."""
    flat = t.array.reshape(-1)
    picks = np.unique(np.linspace(0, flat.size - 1, min(flat.size, SAMPLE)).astype(np.intp)) if flat.size else []
    values = to_float64(flat[picks], t.fmt) if flat.size else np.zeros(0)
    return tuple(d for d in t.shape if d != 1), np.where(np.isfinite(values), values, 0.0)


def relative_error(a: np.ndarray, b: np.ndarray) -> float:
    """``|a - b| / |b|`` in the 2-norm; 0 for two zero tensors, inf against a zero one."""
    nb = float(np.linalg.norm(b))
    diff = float(np.linalg.norm(a - b))
    if nb == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / nb


def _by_values(
    a_load: Sequence[Callable[[], Tensor]],
    b_load: Sequence[Callable[[], Tensor]],
    free_a: set[int],
    free_b: set[int],
    fixed: Sequence[tuple[int, int]] = (),
) -> list[tuple[int, int, float]]:
    """Pairs whose values agree, then pairs by order and shape between them.

    First the landmarks: pairs agreeing to ``CLOSE`` (rounding, or a cast to a narrower
    float), which nothing but the same layer does.  Between two landmarks in both
    orders, a layer a bug has changed still agrees with its partner far better than
    with anything else there (``AGREE``); what is left between them is aligned in order,
    by shape (a bias dropped can leave less agreement than chance).  A tensor whose
    values repeat one already paired (an identity such as dropout in eval mode) has no
    partner of its own and is left out.  Each pair comes with its sampled relative error.
    """
    ta = {i: a_load[i]() for i in sorted(free_a)}
    tb = {j: b_load[j]() for j in sorted(free_b)}
    sa = {i: _sample(t) for i, t in ta.items()}
    sb = {j: _sample(t) for j, t in tb.items()}
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for j, (shape, _) in sb.items():
        by_shape.setdefault(shape, []).append(j)
    rank_a = {i: k / max(1, len(sa) - 1) for k, i in enumerate(sa)}
    rank_b = {j: k / max(1, len(sb) - 1) for k, j in enumerate(sb)}
    candidates = []
    for i, (shape, values) in sa.items():
        for j in by_shape.get(shape, []):
            r = relative_error(values, sb[j][1])
            if r <= AGREE:
                # Half-decades of agreement first (rounding against rounding ties), then the same
                # shape with its unit axes (a pooled map, not its flattened copy), then place in order.
                decades = round(2 * -math.log10(max(r, 1e-12))) / 2
                reshaped = ta[i].shape != tb[j].shape
                candidates.append((-decades, reshaped, abs(rank_a[i] - rank_b[j]), i, j, r))
    candidates.sort()
    close = {c[3] for c in candidates if c[5] <= CLOSE}
    pairs = _greedy([c for c in candidates if c[5] <= CLOSE], free_a, free_b)
    # Within each gap between landmarks (and the pairs other rules made), pairs that still agree
    # far better than chance; then the rest by order and shape, never across a pair already made.
    for lo, hi in _gaps(_in_order([*pairs, *fixed])):
        inside = [c for c in candidates if c[3] not in close and _within(c[3], c[4], lo, hi)]
        pairs += _greedy(inside, free_a, free_b)
    for lo, hi in _gaps(_in_order([*pairs, *fixed])):
        left_a = [i for i in sorted(free_a) if lo[0] < i < hi[0] and i not in close]
        left_b = [j for j in sorted(free_b) if lo[1] < j < hi[1]]
        # Aligned from the end of the gap: among same-shape values, a module's output is the last
        # one its computation makes, the nearest to the next landmark.
        shapes_a, shapes_b = [sa[i][0] for i in left_a][::-1], [sb[j][0] for j in left_b][::-1]
        for i, j in _align(shapes_a, shapes_b, left_a[::-1], left_b[::-1]):
            pairs.append((i, j))
            free_a.discard(i)
            free_b.discard(j)
    return [(i, j, relative_error(sa[i][1], sb[j][1])) for i, j in pairs]


def _greedy(candidates: list[tuple], free_a: set[int], free_b: set[int]) -> list[tuple[int, int]]:
    out = []
    for c in candidates:
        i, j = c[3], c[4]
        if i in free_a and j in free_b:
            out.append((i, j))
            free_a.discard(i)
            free_b.discard(j)
    return out


def _gaps(landmarks: list[tuple[int, int]]) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The spans before, between and after landmarks; none when there is no landmark at all
    (with nothing to stand on, order and shape alone say nothing)."""
    if not landmarks:
        return []
    ends = [(-1, -1), *landmarks, (math.inf, math.inf)]
    return list(itertools.pairwise(ends))


def _within(i: int, j: int, lo: tuple[float, float], hi: tuple[float, float]) -> bool:
    return lo[0] < i < hi[0] and lo[1] < j < hi[1]


def _in_order(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of pairs in the same order on both sides (a crossing pair is no landmark)."""
    pairs = sorted(pairs)
    best: list[list[tuple[int, int]]] = []
    for p in pairs:
        chain = max((c for c in best if c[-1][1] < p[1]), key=len, default=[])
        best.append([*chain, p])
    return max(best, key=len, default=[])


def _align(shapes_a: list, shapes_b: list, ids_a: list[int], ids_b: list[int]) -> list[tuple[int, int]]:
    """The most pairs of equal shapes keeping both orders (a longest common subsequence)."""
    n, m = len(shapes_a), len(shapes_b)
    if not n or not m:
        return []
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for x in range(n - 1, -1, -1):
        for y in range(m - 1, -1, -1):
            same = best[x + 1][y + 1] + 1 if shapes_a[x] == shapes_b[y] else 0
            best[x][y] = max(best[x + 1][y], best[x][y + 1], same)
    out, x, y = [], 0, 0
    while x < n and y < m:
        if shapes_a[x] == shapes_b[y] and best[x][y] == best[x + 1][y + 1] + 1:
            out.append((ids_a[x], ids_b[y]))
            x, y = x + 1, y + 1
        elif best[x + 1][y] >= best[x][y + 1]:
            x += 1
        else:
            y += 1
    return out


def pair(
    a_names: Sequence[str],
    b_names: Sequence[str],
    *,
    mapping: Mapping[str, str] | None = None,
    info_a: Info | None = None,
    info_b: Info | None = None,
    load_a: Sequence[Callable[[], Tensor]] | None = None,
    load_b: Sequence[Callable[[], Tensor]] | None = None,
) -> Pairing:
    """Pair A's tensors with B's by the rules above; ``load_*`` enable pairing by values."""
    if len(set(a_names)) != len(a_names) or len(set(b_names)) != len(b_names):
        side, names = ("a", a_names) if len(set(a_names)) != len(a_names) else ("b", b_names)
        twice = sorted({n for n in names if list(names).count(n) > 1})
        raise InputError(
            f"the capture names {twice[0]!r} more than once; each tensor of a capture needs its own name",
            side=side,
            where=twice[0],
        )
    info_a, info_b = info_a or {}, info_b or {}
    named, _, _ = pair_names(a_names, b_names, mapping)
    pairs: dict[int, tuple[int, str]] = {i: (j, "mapping") for i, j, how in named if how == "mapping"}
    free_a = set(range(len(a_names))) - set(pairs)
    free_b = set(range(len(b_names))) - {j for j, _ in pairs.values()}

    evidence: dict[int, str] = {i: "the user's mapping" for i in pairs}
    if _carries_metadata(info_b) and not _carries_metadata(info_a):
        for i, j in _by_metadata(a_names, b_names, info_b, free_a, free_b):
            pairs[i] = (j, "metadata")
            evidence[i] = f"{b_names[j]} leaves the exporter's scope {split_name(a_names[i])[0]}"
    elif _carries_metadata(info_a) and not _carries_metadata(info_b):
        for j, i in _by_metadata(b_names, a_names, info_a, free_b, free_a):
            pairs[i] = (j, "metadata")
            evidence[i] = f"{a_names[i]} leaves the exporter's scope {split_name(b_names[j])[0]}"
    free_a -= set(pairs)

    left_a, left_b = sorted(free_a), sorted(free_b)
    by_name, _, _ = pair_names([a_names[i] for i in left_a], [b_names[j] for j in left_b])
    for i, j, _ in by_name:
        i, j = left_a[i], left_b[j]
        if _by_chance(a_names[i], b_names[j]):
            continue
        pairs[i] = (j, "name")
        evidence[i] = "the names agree"
        free_a.discard(i)
        free_b.discard(j)
    confidence = dict.fromkeys(pairs, "high")

    repeats_a: dict[int, int] = {}
    repeats_b: dict[int, int] = {}
    if load_a is not None and load_b is not None and free_a and free_b:
        # Identity modules are PyTorch's: an ONNX value that copies the one before it is a node's
        # own output (Identity, or a bug bypassing a node), which must stay comparable.
        # A value the ONNX run copies on (an Identity, a node a bug bypassed) ties with its copy;
        # the later one is what leaves the computation, so the earlier is not offered.
        onnx_b = _is_onnx(info_b, info_a, len(b_names), len(a_names))
        if onnx_b:
            repeats_a, copied = repeats(load_a, free_a), set(repeats(load_b, free_b).values())
        else:
            repeats_b, copied = repeats(load_b, free_b), set(repeats(load_a, free_a).values())
        free_a -= set(repeats_a)
        free_b -= set(repeats_b)
        offered_a, offered_b = (free_a, free_b - copied) if onnx_b else (free_a - copied, free_b)
        made = [(i, j) for i, (j, _) in pairs.items()]
        for i, j, r in _by_values(load_a, load_b, offered_a, offered_b, made):
            pairs[i] = (j, "order and shape")
            confidence[i] = "high" if r <= SURE else "medium" if r <= AGREE else "low"
            evidence[i] = (
                f"same shape, values agree to {r:.1e} (relative)"
                if r <= AGREE
                else f"same shape, in order between agreeing pairs; values differ by {r:.2g} (relative)"
            )

    used_b = {j for j, _ in pairs.values()}
    return Pairing(
        pairs=[(i, j, how) for i, (j, how) in sorted(pairs.items())],
        only_a=[i for i in range(len(a_names)) if i not in pairs],
        only_b=[j for j in range(len(b_names)) if j not in used_b],
        evidence=evidence,
        confidence=confidence,
        repeats_a=repeats_a,
        repeats_b=repeats_b,
    )


def _by_chance(a: str, b: str) -> bool:
    """Names alike only once a shared prefix is dropped, one of them a bare word: the dynamo exporter
    names values after the op (``layer_norm``, ``linear_3``), which a module path such as
    ``model.layer_norm`` (the final norm, not the first one) then reads like.  Values decide those."""
    return a != b and any("." not in n and "/" not in n for n in (a, b))


def _is_onnx(info: Info, other: Info, size: int, other_size: int) -> bool:
    """Whether a side is the ONNX run: the one recording op types, else the one holding more values
    (ONNX Runtime captures every node's output, PyTorch hooks one per module)."""
    mine = any(v.get("op_type") for v in info.values())
    theirs = any(v.get("op_type") for v in other.values())
    return mine if mine != theirs else size >= other_size


def repeats(load: Sequence[Callable[[], Tensor]], free: set[int]) -> dict[int, int]:
    """Free tensors that repeat one of the ``LOOKBACK`` tensors before them bit for bit → that tensor.

    A module whose output is its input (eval-mode Dropout, Identity) has no value of its
    own in an export: ONNX drops it.  Paired by order and shape it would take an unrelated
    value of the same shape (the query slice of an attention projection), and report a
    layer that does nothing as the first failing one.  Its copy is left unpaired instead:
    the tensor it repeats is compared already.
    """
    found: dict[int, int] = {}
    cache: dict[int, tuple[tuple[int, ...], str, bytes]] = {}

    def key(k: int) -> tuple[tuple[int, ...], str, bytes]:
        if k not in cache:
            t = load[k]()
            cache[k] = (tuple(t.shape), str(t.array.dtype), t.array.tobytes())
        return cache[k]

    for i in sorted(free):
        mine = key(i)
        source = next((k for k in range(i - 1, max(-1, i - 1 - LOOKBACK), -1) if key(k) == mine), None)
        if source is not None:
            found[i] = found.get(source, source)
        for k in [k for k in cache if k < i - LOOKBACK]:
            del cache[k]
    return found
