"""Labelled cases: (A = the mutated or other run's output, B = the reference output, label).

Bug cases: A is ONNX Runtime's output of a mutated graph (:mod:`bench.corpus.mutate`), B
is PyTorch eager on the clean module, judged under the ``fp32-cpu`` preset.  Legitimate
pairs: A is another faithful run of the same clean model (ONNX Runtime at each graph
optimisation level and thread count, other batch sizes, ``.half()``/``.bfloat16()``
and autocast runs judged under ``fp16``/``bf16``, ``torch.compile``, a float64 run),
B is PyTorch eager float32.  Low-precision sides are handed over as float32 (the user's
``.float()``), so the pair is judged at the preset, not stopped by a dtype mismatch.

Split rule: a case belongs to the *held-back* half when the first byte of
``sha256(case_id)`` is odd, to the *tuning* half when it is even (:func:`half_of`).
Thresholds are tuned on the tuning half only; the figures that count are the held-back
half's.

Family: the cause family of what was done (``mutate.label``), except that a scale or
offset applied mid-graph whose output is not A = s·B or B plus constants
(:func:`output_relation`), or a slice, sign or region change whose output differences
are not confined to part of one axis (:func:`location_of`), is labelled ``propagated``
(the original kept as ``done``): later layers turned it into something no report could
name from the output.

Location: where A and B differ beyond the clean export's own error only on some indices
of one axis (a channel, a class, a row), the label records that axis and those indices
(:func:`location_of`), computed from the arrays; otherwise it has none.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from . import models
from .mutate import OPERATORS, NotApplicable, Operator, apply, label, targets

PER_OPERATOR = 3  # targets drawn per (architecture, operator)


def case_id(*parts: str) -> str:
    return ".".join(re.sub(r"[^A-Za-z0-9_]+", "_", p) for p in parts)


def half_of(cid: str) -> str:
    """``"held-back"`` when sha256(case id)'s first byte is odd, else ``"tuning"``."""
    return "held-back" if hashlib.sha256(cid.encode()).digest()[0] % 2 else "tuning"


def location_of(a: np.ndarray, b: np.ndarray, noise: float) -> dict[str, Any] | None:
    """The axis and indices that hold every element where A and B differ by more than
    four times ``noise`` (the clean export's largest error against B), when they are a
    strict subset (at most half) of that axis: everywhere else the mutant agrees with B as
    closely as the clean export does.  The narrowest such axis wins.  None when the shapes
    differ, nothing differs, or the differences spread over every axis."""
    if a.shape != b.shape or a.ndim == 0:
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        fail = ~(np.abs(a.astype(np.float64) - b) <= 4 * noise)
    if not fail.any():
        return None
    best = None
    for axis in range(a.ndim):
        hit = np.flatnonzero(fail.any(axis=tuple(i for i in range(a.ndim) if i != axis)))
        if a.shape[axis] > 1 and hit.size <= a.shape[axis] // 2 and (best is None or hit.size < len(best[1])):
            best = (axis, hit.tolist())
    return None if best is None else {"axis": best[0], "axis_size": int(a.shape[best[0]]), "indices": best[1]}


def output_relation(a: np.ndarray, b: np.ndarray, tol: float = 0.01) -> str | None:
    """``"scale"`` when A = s·B (s fitted), ``"offset"`` when A − B is one constant per
    index of some axis (or everywhere), each to within ``tol`` of |A − B|; else None."""
    if a.shape != b.shape:
        return None
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    d = a64 - b64
    size = np.linalg.norm(d)
    if not np.isfinite(size) or size == 0:
        return None
    s = float(np.vdot(a64, b64) / max(np.vdot(b64, b64), 1e-300))
    if np.linalg.norm(a64 - s * b64) <= tol * size:
        return "scale"
    for axis in (None, *range(d.ndim)):
        keep = () if axis is None else tuple(i for i in range(d.ndim) if i != axis)
        if np.linalg.norm(d - d.mean(axis=keep if axis is not None else None, keepdims=True)) <= tol * size:
            return "offset"
    return None


def carried(lab: dict[str, Any], a: np.ndarray, b: np.ndarray, noise: float) -> dict[str, Any]:
    """The label as A and B carry it, with its location (:func:`location_of`): a scale or
    offset whose arrays are not that relation (:func:`output_relation`), or a slice, sign or
    region change not confined to part of one axis, is ``propagated`` (the mutation's family
    kept as ``done``): what lay between the mutation and these arrays turned it into
    something no report could name from them."""
    location = location_of(a, b, noise)
    if (lab["family"] in ("scale", "offset") and output_relation(a, b) != lab["family"]) or (
        lab["family"] in ("slice", "sign", "region") and location is None
    ):
        lab = {**lab, "done": lab["family"], "family": "propagated"}
    return {**lab, "location": location}


def reference(arch: str) -> tuple[Any, tuple[np.ndarray, ...], np.ndarray]:
    """``(module, inputs, torch eager float32 output)`` of the clean architecture."""
    module, inputs = models.build(arch)
    return module, inputs, models.torch_run(module, inputs)


def mutant_path(arch: str, operator: str, target: str) -> Path:
    return models.CACHE / "mutants" / f"{case_id(arch, operator, target)}.onnx"


def mutant(arch: str, operator: str, target: str | None = None):
    """For a bisect harness: ``(onnx path, module, inputs, label)`` of one mutant (the
    first target of ``operator`` when none is named); the mutated graph is written to
    the cache.  Raises :class:`NotApplicable` when the operator does not suit the target."""
    op = OPERATORS[operator]
    clean_path = models.export(arch)
    model = onnx.load(clean_path)
    target = target or next(iter(targets(model, op)), None)
    if target is None:
        raise NotApplicable(f"{operator} has no target in {arch}")
    mutated = apply(model, op, target)
    path = mutant_path(arch, operator, target)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(mutated, path)
    module, inputs = models.build(arch)
    return path, module, inputs, label(model, op, target)


def new_tally() -> dict[str, Any]:
    """What a run left out: mutants skipped (by operator: not applicable, refused by
    onnx.checker, failed in ONNX Runtime), without effect or within rounding (by case id),
    and legitimate pairs that could not be made (with why)."""
    return {
        "not_applicable": {},
        "invalid": {},
        "failed_run": {},
        "no_effect": [],
        "within_rounding": [],
        "legit_failed": {},
    }


def single_node_mutations(arch: str, manifest: Path | None = None) -> list[dict[str, Any]]:
    """For a bisect harness: the labels of one architecture's bug cases that change one
    node or initializer of the graph (not the pre/post-processing ones), from a generated
    manifest; each names its operator and target, so :func:`mutant` rebuilds the graph."""
    import json

    path = manifest or models.CACHE / "cases" / "manifest.json"
    entries = json.loads(path.read_text())["cases"]
    return [e["label"] for e in entries if e["arch"] == arch and e["class"] == "bug" and e["label"].get("node")]


def pick(all_targets: list[str], arch: str, operator: str, k: int = PER_OPERATOR) -> list[str]:
    """Up to ``k`` targets drawn without replacement, seeded by (architecture, operator)
    and the corpus seed (:func:`models.variant_seed`)."""
    if len(all_targets) <= k:
        return list(all_targets)
    seed = models.variant_seed(f"{arch}/{operator}")
    chosen = np.random.default_rng(seed).choice(len(all_targets), size=k, replace=False)
    return [all_targets[i] for i in sorted(chosen)]


def bug_cases(
    arch: str, tally: dict[str, Any], k: int = PER_OPERATOR, operators: dict[str, Operator] | None = None
) -> Iterator[dict[str, Any]]:
    """Every bug case of one architecture (of ``operators``, all by default); ``tally``
    collects the skipped mutants (by operator and reason) and those with no effect
    (output bit-identical to the clean run)."""
    model = onnx.load(models.export(arch))
    module, inputs, b = reference(arch)
    clean_ort = models.run_ort(model, inputs)
    exact = _torch_f64(module, inputs, rounded=False)
    noise = float(np.abs(clean_ort.astype(np.float64) - b).max())
    for op in (operators or OPERATORS).values():
        for target in pick(targets(model, op), arch, op.name, k):
            cid = case_id(arch, op.name, target)
            try:
                mutated = apply(model, op, target)
            except NotApplicable:
                tally["not_applicable"][op.name] = tally["not_applicable"].get(op.name, 0) + 1
                continue
            except Exception:  # onnx.checker refused the graph
                tally["invalid"][op.name] = tally["invalid"].get(op.name, 0) + 1
                continue
            try:
                a = models.run_ort(mutated, inputs)
            except Exception:  # ONNX Runtime could not load or run it
                tally["failed_run"][op.name] = tally["failed_run"].get(op.name, 0) + 1
                continue
            if a.shape == clean_ort.shape and a.tobytes() == clean_ort.tobytes():
                tally["no_effect"].append(cid)
                continue
            if within_rounding(a, clean_ort, exact):
                tally["within_rounding"].append(cid)
                continue
            lab = carried(label(model, op, target), a, b, noise)
            yield {
                "id": cid,
                "arch": arch,
                "class": lab["kind"],
                "preset": "fp32-cpu",
                "label": lab,
                "a": a,
                "b": b,
            }


def _legit(arch: str, name: str, a: np.ndarray, b: np.ndarray, preset: str, how: str) -> dict[str, Any]:
    cid = case_id(arch, "legit", name)
    return {
        "id": cid,
        "arch": arch,
        "class": "legitimate",
        "preset": preset,
        "label": {"operator": f"legit_{name}", "how": how, "family": None, "location": None},
        "a": np.asarray(a, np.float32),
        "b": np.asarray(b, np.float32),
    }


def _torch_low(module, inputs, dtype_name: str, autocast: bool) -> np.ndarray:
    """The module run in float16 or bfloat16 (cast, or under CPU autocast), as float32."""
    import copy

    import torch

    dtype = getattr(torch, dtype_name)
    xs = [torch.from_numpy(x) for x in inputs]
    with torch.no_grad():
        if autocast:
            with torch.autocast("cpu", dtype=dtype):
                out = module(*xs)
        else:
            low = copy.deepcopy(module).to(dtype)
            out = low(*[x.to(dtype) if x.is_floating_point() else x for x in xs])
    return out.float().numpy()


def _torch_f64(module, inputs, rounded: bool = True) -> np.ndarray:
    """The module run in float64; rounded to float32 unless ``rounded`` is False."""
    import copy

    import torch

    wide = copy.deepcopy(module).double()
    xs = [torch.from_numpy(x) for x in inputs]
    with torch.no_grad():
        out = wide(*[x.double() if x.is_floating_point() else x for x in xs])
    return out.numpy().astype(np.float32) if rounded else out.numpy()


def within_rounding(a: np.ndarray, clean: np.ndarray, exact: np.ndarray, slack: float = 2.0) -> bool:
    """Whether a mutant is no further from the float64 run than the clean export is (its
    largest error at most ``slack`` times the clean one's): a mutation that is an identity
    in exact arithmetic (a bias added to attention keys, which softmax cancels) is then
    neither a bug nor a legitimate pair, and is listed apart."""
    if a.shape != exact.shape:
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(a.astype(np.float64) - exact).max()
        clean_err = np.abs(clean.astype(np.float64) - exact).max()
    return bool(np.isfinite(err) and err <= slack * clean_err)


def _torch_compiled(module, inputs) -> np.ndarray:
    import torch

    compiled = torch.compile(module)
    with torch.no_grad():
        return compiled(*[torch.from_numpy(x) for x in inputs]).float().numpy()


def legitimate_cases(arch: str, tally: dict[str, Any], compile_: bool = True) -> Iterator[dict[str, Any]]:
    """The legitimate pairs of one architecture (see the module docstring)."""
    path = models.export(arch)
    module, inputs, b = reference(arch)
    ort_runs = [
        (f"ort_{level}", {"opt_level": level}, f"graph optimisation {level}")
        for level in ("disable", "basic", "extended", "all")
    ]
    ort_runs += [(f"ort_threads_{n}", {"threads": n}, f"{n} intra-op threads") for n in (2, 4)]
    for name, options, how in ort_runs:
        a = models.run_ort(path, inputs, **options)
        yield _legit(arch, name, a, b, "fp32-cpu", f"ONNX Runtime CPU, {how}, against PyTorch eager")
    _, wide = models.build(arch, 5)
    yield _legit(
        arch,
        "batch_5",
        models.run_ort(path, wide)[: len(b)],
        models.torch_run(module, tuple(x[: len(b)] for x in wide)),
        "fp32-cpu",
        "ONNX Runtime at batch 5 (first rows) against PyTorch at batch 2",
    )
    yield _legit(
        arch,
        "batch_1",
        models.run_ort(path, tuple(x[:1] for x in inputs)),
        b[:1],
        "fp32-cpu",
        "ONNX Runtime at batch 1 against the first row of PyTorch at batch 2",
    )
    for dtype_name, preset in (("float16", "fp16"), ("bfloat16", "bf16")):
        for autocast in (False, True):
            how = "autocast" if autocast else "cast"
            try:
                a = _torch_low(module, inputs, dtype_name, autocast)
            except Exception as e:  # an op without a kernel in this dtype on CPU
                tally["legit_failed"][f"{arch}.{how}_{dtype_name}"] = f"{type(e).__name__}: {str(e)[:120]}"
                continue
            yield _legit(
                arch,
                f"{how}_{dtype_name}",
                a,
                b,
                preset,
                f"PyTorch {'under CPU autocast to' if autocast else 'cast to'} {dtype_name} against float32",
            )
    yield _legit(
        arch,
        "float64_ort",
        models.run_ort(path, inputs),
        _torch_f64(module, inputs),
        "fp32-cpu",
        "ONNX Runtime float32 against a PyTorch float64 run rounded to float32",
    )
    yield _legit(
        arch,
        "float64_torch",
        b,
        _torch_f64(module, inputs),
        "fp32-cpu",
        "PyTorch float32 against a PyTorch float64 run rounded to float32",
    )
    if compile_:
        try:
            a = _torch_compiled(module, inputs)
        except Exception as e:
            tally["legit_failed"][f"{arch}.compile"] = f"{type(e).__name__}: {str(e)[:120]}"
        else:
            yield _legit(arch, "compile", a, b, "fp32-cpu", "torch.compile (inductor, CPU) against eager")


def save(case: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Write the case's arrays to ``folder/<id>.npz``; the manifest entry without them."""
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / f"{case['id']}.npz", a=case["a"], b=case["b"])
    entry = {k: v for k, v in case.items() if k not in ("a", "b")}
    entry["half"] = half_of(case["id"])
    entry["file"] = f"{case['id']}.npz"
    return entry


def load(entry: dict[str, Any], folder: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(folder / entry["file"]) as z:
        return z["a"], z["b"]
