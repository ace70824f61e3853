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
    then the nearest place in execution order (:func:`.pairing_values.by_values`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import InputError
from ..inputs.tensor import Tensor
from .layer_names import pair_names
from .pairing_values import AGREE, SURE, by_values, repeats

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


def module_runs(names: Sequence[str], info: Info) -> dict[tuple[str, int], list[int]]:
    """``(module, call number) → indices of the values made in that call``, in the order of ``names``.

    A module's call is a run of consecutive values made in its scope or in any scope
    nested in it (a transformer layer holds its attention, its norms and the residual
    adds of its own ``forward``); its k-th run is its k-th call.
    """
    runs: dict[tuple[str, int], list[int]] = {}
    open_runs: dict[str, list[int]] = {}
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        described = info.get(name) or {}
        inside = [] if described.get("op_type") == "input" else _scopes(described)
        for module in [m for m in open_runs if m not in inside]:
            del open_runs[module]  # a value made outside a module ends its current call
        for module in inside:
            if module not in open_runs:
                open_runs[module] = runs[(module, seen.get(module, 0))] = []
                seen[module] = seen.get(module, 0) + 1
            open_runs[module].append(i)
    return runs


def module_calls(names: Sequence[str], info: Info) -> dict[tuple[str, int], list[int]]:
    """``(module, call number) → indices of the values of that call that leave it``, for an ONNX capture.

    Of a call's values (:func:`module_runs`), those that leave it are those read outside
    the run, or by nobody (a graph output); the last of them is the module's output, so a
    layer pairs with what it hands on, never with the first residual add inside it.
    """
    readers: dict[str, set[int]] = {}
    for i, name in enumerate(names):
        for source in (info.get(name) or {}).get("inputs") or []:
            readers.setdefault(str(source), set()).add(i)
    calls: dict[tuple[str, int], list[int]] = {}
    for call, members in module_runs(names, info).items():
        inside = set(members)
        leaving = [i for i in members if not readers.get(names[i]) or readers[names[i]] - inside]
        calls[call] = leaving or members[-1:]
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


def carries_metadata(info: Info) -> bool:
    """Whether a side's descriptions hold the exporter's scopes: an ONNX capture or model's."""
    return any(_scopes(v) and v.get("op_type") not in (None, "input") for v in info.values())


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
    _refuse_repeated_names(a_names, b_names)
    info_a, info_b = info_a or {}, info_b or {}
    named, _, _ = pair_names(a_names, b_names, mapping)
    pairs: dict[int, tuple[int, str]] = {i: (j, "mapping") for i, j, how in named if how == "mapping"}
    free_a = set(range(len(a_names))) - set(pairs)
    free_b = set(range(len(b_names))) - {j for j, _ in pairs.values()}
    evidence: dict[int, str] = {i: "the user's mapping" for i in pairs}
    _pair_by_metadata(a_names, b_names, info_a, info_b, free_a, free_b, pairs, evidence)
    free_a -= set(pairs)
    _pair_by_name(a_names, b_names, free_a, free_b, pairs, evidence)
    _pair_shared_names(a_names, b_names, info_b, free_a, pairs, evidence)
    confidence = dict.fromkeys(pairs, "high")
    repeats_a: dict[int, int] = {}
    repeats_b: dict[int, int] = {}
    if load_a is not None and load_b is not None and free_a and free_b:
        onnx_b = _is_onnx(info_b, info_a, len(b_names), len(a_names))
        repeats_a, repeats_b = _pair_by_values(load_a, load_b, onnx_b, free_a, free_b, pairs, evidence, confidence)
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


def _refuse_repeated_names(a_names: Sequence[str], b_names: Sequence[str]) -> None:
    """A capture naming one tensor twice cannot be paired by name: say which name, on which side."""
    if len(set(a_names)) != len(a_names) or len(set(b_names)) != len(b_names):
        side, names = ("a", a_names) if len(set(a_names)) != len(a_names) else ("b", b_names)
        twice = sorted({n for n in names if list(names).count(n) > 1})
        raise InputError(
            f"the capture names {twice[0]!r} more than once; each tensor of a capture needs its own name",
            side=side,
            where=twice[0],
        )


def _pair_by_metadata(a_names: Sequence[str], b_names: Sequence[str], info_a: Info, info_b: Info, free_a: set[int],
                      free_b: set[int], pairs: dict[int, tuple[int, str]], evidence: dict[int, str]) -> None:
    """The ``metadata`` rule, into ``pairs``: when one side alone records the exporter's scopes."""
    if carries_metadata(info_b) and not carries_metadata(info_a):
        for i, j in _by_metadata(a_names, b_names, info_b, free_a, free_b):
            pairs[i] = (j, "metadata")
            evidence[i] = f"{b_names[j]} leaves the exporter's scope {split_name(a_names[i])[0]}"
    elif carries_metadata(info_a) and not carries_metadata(info_b):
        for j, i in _by_metadata(b_names, a_names, info_a, free_b, free_a):
            pairs[i] = (j, "metadata")
            evidence[i] = f"{a_names[i]} leaves the exporter's scope {split_name(b_names[j])[0]}"


def _pair_by_name(a_names: Sequence[str], b_names: Sequence[str], free_a: set[int], free_b: set[int],
                  pairs: dict[int, tuple[int, str]], evidence: dict[int, str]) -> None:
    """The ``name`` rule, into ``pairs``, over what is still free; names alike only by chance are left to values."""
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


def _pair_shared_names(a_names: Sequence[str], b_names: Sequence[str], info_b: Info, free_a: set[int],
                       pairs: dict[int, tuple[int, str]], evidence: dict[int, str]) -> None:
    """A tensor of A named as an output of B's graph (a value no node reads) that the exporter's
    scopes gave to a module: the model's output saved as ``logits`` beside its last layer ``fc``,
    both the graph output ``logits``.  Both pair with it, as a layer and its last child do
    (``metadata``), rather than one being left out.  Other values are left alone: the dynamo
    exporter names them after the op (``relu``), which a module path may read like."""
    read = {str(source) for described in info_b.values() for source in described.get("inputs") or []}
    b_index = {name: j for j, name in enumerate(b_names) if name not in read}
    by_scope = {j for j, how in pairs.values() if how == "metadata"}
    for i in sorted(free_a):
        j = b_index.get(a_names[i])
        if j in by_scope:
            pairs[i] = (j, "name")
            evidence[i] = f"the names agree; {b_names[j]} is a graph output, also the output of a layer"
            free_a.discard(i)


def _pair_by_values(load_a: Sequence[Callable[[], Tensor]], load_b: Sequence[Callable[[], Tensor]], onnx_b: bool,
                    free_a: set[int], free_b: set[int], pairs: dict[int, tuple[int, str]], evidence: dict[int, str],
                    confidence: dict[int, str]) -> tuple[dict[int, int], dict[int, int]]:
    """The ``order and shape`` rule, into ``pairs``; returns the copies set aside on each side."""
    # Identity modules are PyTorch's: an ONNX value that copies the one before it is a node's
    # own output (Identity, or a bug bypassing a node), which must stay comparable.
    # A value the ONNX run copies on (an Identity, a node a bug bypassed) ties with its copy;
    # the later one is what leaves the computation, so the earlier is not offered.
    repeats_a: dict[int, int] = {}
    repeats_b: dict[int, int] = {}
    if onnx_b:
        repeats_a, copied = repeats(load_a, free_a), set(repeats(load_b, free_b).values())
    else:
        repeats_b, copied = repeats(load_b, free_b), set(repeats(load_a, free_a).values())
    free_a -= set(repeats_a)
    free_b -= set(repeats_b)
    offered_a, offered_b = (free_a, free_b - copied) if onnx_b else (free_a - copied, free_b)
    made = [(i, j) for i, (j, _) in pairs.items()]
    for i, j, r in by_values(load_a, load_b, offered_a, offered_b, made):
        pairs[i] = (j, "order and shape")
        confidence[i] = "high" if r <= SURE else "medium" if r <= AGREE else "low"
        evidence[i] = (
            f"same shape, values agree to {r:.1e} (relative)"
            if r <= AGREE
            else f"same shape, in order between agreeing pairs; values differ by {r:.2g} (relative)"
        )
    return repeats_a, repeats_b


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
