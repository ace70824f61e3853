"""Compare two captures of a network layer by layer and find the first layer that departs.

A capture is an ordered set of named tensors: PyTorch forward-hook outputs, ONNX Runtime
or Polygraphy runs with every node output marked, a folder of ``.npy`` files.  The two
sides name the same layer differently (``layer1.0.conv1`` against
``/layer1/layer1.0/conv1/Conv_output_0``), so tensors are paired by a normalised name,
in the order of side A (the execution order of the run taken as reference).  Each pair
goes through the same :func:`~perpendis.compare.compare` and
:func:`~perpendis.diagnose.diagnose` as a single comparison: bisect adds no numerics of
its own.  Tensors are decoded when their pair comes up, so a folder of files is never
held in memory at once, nor a Polygraphy file (read through an index of its arrays),
and only each pair's report is kept.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .compare import compare
from .errors import InputError, blame
from .formats import polygraphy
from .formats.buffer import BytesLike, Reader
from .layer_names import _keys, normalise_name, pair_names  # noqa: F401  (re-exported)
from .load import load_bytes, load_path
from .report import Report, main_finding, number_text, plain, shape_text
from .stream import map_reader
from .tensor import Tensor
from .text_table import table_lines

# ---------------------------------------------------------------------------------------
# Inputs


@dataclass(frozen=True)
class Entry:
    """A named tensor that is decoded only when it is compared."""

    name: str
    load: Callable[[], Tensor]


def as_entries(items: Iterable[Tensor | Entry]) -> list[Entry]:
    """Entries for tensors already decoded (named by ``Tensor.name``) or lazy ones, in order."""
    out = []
    for i, item in enumerate(items):
        if isinstance(item, Entry):
            out.append(item)
            continue
        name = item.name if item.name is not None else str(i)
        out.append(Entry(name, lambda t=item: t))
    return out


def read_single(data: BytesLike, name: str) -> Tensor:
    """The one tensor a file holds, for captures given as one file per layer."""
    return _only(load_bytes(data, name), name)


def _only(tensors: list[Tensor], name: str) -> Tensor:
    if len(tensors) != 1:
        raise InputError(
            f"{name} holds {len(tensors)} tensors; a list of files must give one tensor per file "
            "(pass an archive on its own to compare its members)",
            where=name,
        )
    return tensors[0]


def file_entries(paths: Sequence[Path]) -> list[Entry]:
    """One entry per file, named by the file name without its extension, read when compared."""
    return [Entry(p.name.rsplit(".", 1)[0], lambda p=p: _only(load_path(p), p.name)) for p in paths]


def polygraphy_entries(read: Reader, size: int, void_format: str | None = None) -> list[Entry]:
    """A Polygraphy JSON file's arrays, indexed now and each decoded when its pair comes up.

    Such a file can be hundreds of megabytes of base64, more than a browser heap holds
    next to what it encodes, so it is read through ``read`` and never held whole.
    """
    return [Entry(r.name, lambda r=r: polygraphy.decode(r, read, void_format)) for r in polygraphy.index(read, size)]


def path_info(path: Path) -> dict[str, dict[str, Any]]:
    """What a capture file records of each tensor (module, op type), or ``{}``: see :mod:`.capture.store`."""
    from .capture.store import read_info

    if path.is_dir() or str(path) == "-":
        return {}
    try:
        with path.open("rb") as file:
            head = file.read(8)
            if len(head) < 8:
                return {}
            length = int.from_bytes(head, "little")
            return read_info(head + file.read(min(length, 2**27)))
    except OSError:
        return {}


def model_info(
    model: Path | None, a_names: Sequence[str], b_names: Sequence[str], info_a: dict, info_b: dict
) -> tuple[dict, dict]:
    """Each side's descriptions, the ONNX model's (``--model``) given to the side that holds its values.

    What the model says of a value takes the place of what the capture recorded; the side
    is the one naming more of the model's values (the other is the PyTorch run).
    """
    if model is None:
        return info_a, info_b
    from .formats.onnx_model import describe, read_graph

    try:
        data = model.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read {model}: {err.strerror or err}", where=str(model)) from None
    with blame("model", model.name):
        values = describe(read_graph(data))
    return described_by(values, a_names, b_names, info_a, info_b)


def described_by(
    values: Mapping[str, Any], a_names: Sequence[str], b_names: Sequence[str], info_a: dict, info_b: dict
) -> tuple[dict, dict]:
    """Put a model's value descriptions on the side whose names they are; an error when neither side's are."""
    in_a, in_b = sum(n in values for n in a_names), sum(n in values for n in b_names)
    if not in_a and not in_b:
        raise InputError(
            f"the ONNX model computes none of the tensors of either capture (its values: {_few(values)}); "
            "give the model the ONNX capture was run from",
            where="model",
        )
    if in_b >= in_a:
        return info_a, {**info_b, **{n: values[n] for n in b_names if n in values}}
    return {**info_a, **{n: values[n] for n in a_names if n in values}}, info_b


def path_entries(path: Path) -> list[Entry]:
    """A capture on disk: an archive (``.npz``, safetensors, torch.save, Polygraphy JSON, ...) or a folder of files."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not files:
            raise InputError(
                f"folder {path} holds no files; give a folder of .npy files or an archive", where=str(path)
            )
        return file_entries(files)
    if str(path) != "-":
        read, size = map_reader(path)
        if polygraphy.recognised(read, size):
            return polygraphy_entries(read, size)
    return as_entries(load_path(path))


@dataclass
class Pair:
    """One paired layer: its names, how they were paired, and its full report."""

    a_name: str
    b_name: str
    paired_by: str  # "mapping", "metadata", "name" or "order and shape"
    report: Report
    op_type: str | None = None  # of the ONNX value, when a side records it
    module: str | None = None  # the PyTorch module the tensor is the output of
    isolated: dict[str, Any] | None = None  # the layer run alone on A's inputs: see capture.isolate
    evidence: str | None = None  # what the pairing stands on (a scope, the names, agreeing values)
    confidence: str = "high"  # "high", "medium" or "low": see pairing.pair
    likely_mispaired: bool = False  # failing, paired by order and shape alone, between agreeing layers
    figures: dict[str, float | None] = field(default_factory=dict)  # cosine, sqnr_db: see similarity

    @property
    def verdict(self) -> str:
        return self.report.verdict

    @property
    def fails(self) -> bool:
        return self.report.verdict == "investigate" and not self.likely_mispaired

    @property
    def sure(self) -> bool:
        """Paired by a rule that names the layer (mapping, scope, name), or by values that agree surely."""
        return self.paired_by != "order and shape" or self.confidence == "high"

    def summary(self) -> dict[str, Any]:
        r = self.report
        t = r.tolerance
        return {
            "shape_match": r.shape_match,
            "dtype_match": r.dtype_match,
            "shape_a": list(r.a["shape"]),
            "shape_b": list(r.b["shape"]),
            "dtype_a": r.a["dtype"],
            "dtype_b": r.b["dtype"],
            "max_ulp": r.max_ulp,
            "max_abs_diff": r.max_abs_diff,
            "max_rel_diff": r.max_rel_diff,
            "fraction_fail": t.fraction_fail if t is not None else None,
            "verdict": r.verdict,
            "finding": plain(main_finding(r.findings)),
            "cosine": self.figures.get("cosine"),
            "sqnr_db": self.figures.get("sqnr_db"),
        }

    def to_dict(self) -> dict[str, Any]:
        full = self.report.to_dict()
        summary = {k: full.get(k, v) for k, v in self.summary().items()}  # JSON-safe floats
        return {
            "a_name": self.a_name,
            "b_name": self.b_name,
            "paired_by": self.paired_by,
            "op_type": self.op_type,
            "module": self.module,
            "isolated": self.isolated,
            "evidence": self.evidence,
            "confidence": self.confidence,
            "likely_mispaired": self.likely_mispaired,
            **summary,
            "report": full,
        }


@dataclass
class BisectReport:
    """Every paired layer in A's order, the tensors left unpaired, and the first failure."""

    pairs: list[Pair]
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    only: list[str] = field(default_factory=list)  # name patterns the compared layers were picked by
    n_skipped: int = 0  # paired layers whose A name matched none of them, not compared
    repeats: dict[str, str] = field(default_factory=dict)  # unpaired name → the earlier tensor it copies
    nan_origin: dict[str, Any] | None = None  # the first op making NaN/Inf from finite inputs: see nan_origin

    @property
    def first_nonfinite(self) -> Pair | None:
        """The first layer holding a NaN or an infinity on either side (those before it are finite)."""
        return next((p for p in self.pairs if p.figures.get("nonfinite_a") or p.figures.get("nonfinite_b")), None)

    @property
    def first_failing(self) -> Pair | None:
        return next((p for p in self.pairs if p.fails), None)

    @property
    def first_sure_failing(self) -> Pair | None:
        """The first failing layer whose pair is sure (not made by values without sure agreement):
        where the first failing one is unsure, the first place the failure is certainly seen."""
        return next((p for p in self.pairs if p.fails and p.sure), None)

    @property
    def must_investigate(self) -> bool:
        return self.first_failing is not None

    @property
    def culprit(self) -> Pair | None:
        """The first layer whose own error fails when run alone (None until layers are isolated)."""
        return next(
            (
                p
                for p in self.pairs
                if p.isolated and p.isolated.get("verdict") == "investigate" and not p.likely_mispaired
            ),
            None,
        )

    def to_dict(self) -> dict[str, Any]:
        first = self.first_failing
        return {
            "pairs": [p.to_dict() for p in self.pairs],
            "only_a": list(self.only_a),
            "only_b": list(self.only_b),
            "only": list(self.only),
            "n_skipped": self.n_skipped,
            "repeats": dict(self.repeats),
            "pairing": self.pairing(),
            "first_nonfinite": None
            if (bad := self.first_nonfinite) is None
            else {
                "a_name": bad.a_name, "b_name": bad.b_name, "index": self.pairs.index(bad),
                "nonfinite_a": bad.figures.get("nonfinite_a", 0), "nonfinite_b": bad.figures.get("nonfinite_b", 0),
            },
            "nan_origin": self.nan_origin,
            "likely_mispaired": [p.a_name for p in self.pairs if p.likely_mispaired],
            "first_failing": None
            if first is None
            else {"a_name": first.a_name, "b_name": first.b_name, "index": self.pairs.index(first)},
            "isolated": any(p.isolated is not None for p in self.pairs),
            "first_sure_failing": None
            if (sure := self.first_sure_failing) is None or sure is first
            else {"a_name": sure.a_name, "b_name": sure.b_name, "index": self.pairs.index(sure)},
            "culprit": None
            if (culprit := self.culprit) is None
            else {"a_name": culprit.a_name, "b_name": culprit.b_name, "index": self.pairs.index(culprit)},
        }

    def pairing(self) -> dict[str, int]:
        """How the pairs were made, for the page's chip: a count per rule, and how many are unsure
        (made by values with less than sure agreement) or likely mispaired."""
        counts: dict[str, int] = {}
        for p in self.pairs:
            counts[p.paired_by] = counts.get(p.paired_by, 0) + 1
        counts["unsure"] = sum(p.confidence != "high" for p in self.pairs)
        counts["likely_mispaired"] = sum(p.likely_mispaired for p in self.pairs)
        counts["copies"] = len(self.repeats)
        return counts

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def _repr_html_(self) -> str:
        """A notebook shows the table as the page does (:mod:`.bisect_html`), not the dataclass repr."""
        from .bisect_html import bisect_html

        return bisect_html(self)

    def __repr__(self) -> str:
        first = self.first_failing
        return (
            f"<BisectReport: {len(self.pairs)} pairs, "
            + ("no layer fails" if first is None else f"first failing {first.a_name}")
            + ">"
        )

    def to_text(self, verbose: bool = False) -> str:
        """A table of layers that fits 120 columns; ``>>`` marks the first failing row, ``?`` a likely
        mispairing.  ``verbose`` adds shape, dtype, max abs, the failing fraction, how each pair
        was made and the main finding, at full name length."""
        first = self.first_failing
        isolated = any(p.isolated is not None for p in self.pairs)
        header = ["", "A", "B", "by", "op", "max ulp", "max rel", "cosine", "SQNR dB", "verdict"]
        header += ["alone"] if isolated else []
        if verbose:
            header += ["shape", "dtype", "max abs", "fail", "evidence", "finding"]
        rows = []
        for p in self.pairs:
            s = p.summary()
            finding = s["finding"]
            cosine, sqnr = s["cosine"], s["sqnr_db"]
            row = [
                ">>" if p is first else "?" if p.likely_mispaired else "",
                p.a_name if verbose else _elide(p.a_name, 34),
                "=" if p.b_name == p.a_name else p.b_name if verbose else _elide(p.b_name, 18),
                {"order and shape": "values", "metadata": "scope"}.get(p.paired_by, p.paired_by)
                + ("" if p.confidence == "high" else f" ({p.confidence})"),
                p.op_type or "",
                number_text(s["max_ulp"], 3),
                number_text(s["max_rel_diff"], 3),
                "" if cosine is None else f"{cosine:.6f}",
                "∞" if sqnr is None and cosine is not None else number_text(sqnr, 3),
                s["verdict"],
                *([_alone_text(p.isolated)] if isolated else []),
            ]
            if verbose:
                row += [
                    "=" if s["shape_match"] else f"{shape_text(s['shape_a'], ',')}≠{shape_text(s['shape_b'], ',')}",
                    "=" if s["dtype_match"] else f"{s['dtype_a']}≠{s['dtype_b']}",
                    number_text(s["max_abs_diff"], 3),
                    "n/a" if s["fraction_fail"] is None else f"{s['fraction_fail']:.2%}",
                    p.evidence or "",
                    "" if finding is None else finding["message"],
                ]
            rows.append(row)
        lines = table_lines(header, rows)
        for side, unpaired in (("A", self.only_a), ("B", self.only_b)):
            if unpaired:
                lines.append(f"only in {side} ({len(unpaired)}): {_few(unpaired, 10)}")
        if self.repeats:
            copies = [f"{name} (= {source})" for name, source in self.repeats.items()]
            lines.append(f"not compared, copies of the tensor before them (eval Dropout, Identity): {_few(copies, 6)}")
        doubtful = [p.a_name for p in self.pairs if p.likely_mispaired]
        if doubtful:
            lines.append(
                f"likely mispaired (paired by order and shape alone, failing between agreeing layers; "
                f"give --map to pair them): {_few(doubtful, 6)}"
            )
        if self.only:
            lines.append(f"layers named {' or '.join(self.only)} only: {self.n_skipped} other paired layer(s) skipped")
        if first is None:
            doubtful = sum(p.likely_mispaired for p in self.pairs)
            lines.append(
                f"no layer fails: all {len(self.pairs) - doubtful} paired layers agree up to rounding"
                + (f" ({doubtful} likely mispaired, above, set aside)" if doubtful else "")
            )
        else:
            names = first.a_name if first.b_name == first.a_name else f"{first.a_name} (B: {first.b_name})"
            lines.append(f"first failing layer: {names}")
            sure = self.first_sure_failing
            if sure is not first:
                lines.append(
                    f"unsure: that pair rests on order and shape ({first.evidence or 'no agreeing values'}); "
                    + (
                        "no surely paired layer fails"
                        if sure is None
                        else f"the first surely paired failing layer is {sure.a_name} (B: {sure.b_name})"
                    )
                )
        bad = self.first_nonfinite
        if bad is not None:
            sides = " and ".join(
                f"{side} holds {bad.figures.get('nonfinite_' + side.lower(), 0)}"
                for side in ("A", "B") if bad.figures.get("nonfinite_" + side.lower())
            )
            lines.append(f"first layer with NaN or Inf: {bad.a_name} (B: {bad.b_name}); {sides}")
        if self.nan_origin is not None:
            o = self.nan_origin
            lines.append(
                f"first op making NaN or Inf from finite inputs: {o['value']} ({o.get('op_type') or 'op'}"
                f"{', in ' + o['module'] if o.get('module') else ''}) on side {o['side']}"
            )
        culprit = self.culprit
        if isolated:
            lines.append(
                "no layer fails on its own: each one run alone on A's inputs agrees up to rounding"
                if culprit is None
                else "culprit (first layer whose own error fails when run alone): "
                f"{culprit.a_name} (B: {culprit.b_name})"
            )
        return "\n".join(lines) + "\n"


def _elide(name: str, width: int) -> str:
    """``name`` cut in its middle to ``width`` characters: a module path's start and its leaf say the most."""
    if len(name) <= width:
        return name
    head = (width - 1) // 2
    return name[:head] + "…" + name[-(width - 1 - head):]


def _alone_text(isolated: dict[str, Any] | None) -> str:
    """The own-error cell: the layer run alone, or why it could not be."""
    if isolated is None:
        return ""
    if isolated.get("verdict") is None:
        return "—"
    own = "OWN" if isolated["verdict"] == "investigate" else "ok"
    return f"{own} {number_text(isolated.get('max_ulp'), 3)} ulp"


def _compare_pair(a: Entry, b: Entry, options: Mapping[str, Any]) -> tuple[Report, dict[str, float | None]]:
    with blame("a", a.name):
        ta = a.load()
    with blame("b", b.name):
        tb = b.load()
    # Every pair's report is kept: holding its aligned tensors too would keep every layer decoded.
    return compare(ta, tb, **options, keep_aligned=False), similarity(ta, tb)


def similarity(a: Tensor, b: Tensor) -> dict[str, float | None]:
    """Cosine similarity and SQNR (dB, A the signal, A − B the noise) of two tensors of one size.

    The figures ML engineers compare layers by (Polygraphy, msprobe, quantisation tools); next to
    the ULP counts they say how much of the signal a layer kept.  None where they do not apply:
    sizes that differ, non-finite values, a zero tensor; an SQNR of None for identical tensors
    stands for infinity.
    """
    from .bits import to_float64

    empty: dict[str, float | None] = {"cosine": None, "sqnr_db": None}
    if a.array.size != b.array.size or a.array.size == 0 or a.is_complex or b.is_complex:
        return empty
    try:
        x = to_float64(a.array, a.fmt).reshape(-1)
        y = to_float64(b.array, b.fmt).reshape(-1)
    except (TypeError, ValueError):
        return empty
    bad_x, bad_y = int(x.size - np.isfinite(x).sum()), int(y.size - np.isfinite(y).sum())
    if bad_x or bad_y:
        return {**empty, "nonfinite_a": bad_x, "nonfinite_b": bad_y}
    nx, ny = float(np.linalg.norm(x)), float(np.linalg.norm(y))
    noise = float(np.sum((x - y) ** 2))
    signal = float(np.sum(x**2))
    return {
        "cosine": float(np.dot(x, y) / (nx * ny)) if nx and ny else None,
        "sqnr_db": None if noise == 0 or signal == 0 else 10 * math.log10(signal / noise),
    }


def bisect(
    a: Iterable[Tensor | Entry],
    b: Iterable[Tensor | Entry],
    *,
    mapping: Mapping[str, str] | None = None,
    preset: str | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    depth: float = 1.0,
    only: Sequence[str] = (),
    info_a: Mapping[str, Mapping[str, Any]] | None = None,
    info_b: Mapping[str, Mapping[str, Any]] | None = None,
    by_values: bool = True,
    allow_unpaired: bool = False,
    workers: int = 1,
) -> BisectReport:
    """Compare every layer A and B both hold, in A's order.

    ``mapping`` (A name → B name) overrides the pairing for names no rule can match,
    such as a graph output renamed to ``output``.  ``only`` keeps the pairs whose A name
    matches one of these shell-style patterns (``layer3.*``, ``*.conv?``): a capture of
    thousands of tensors is narrowed to the part under suspicion, the others neither
    decoded nor compared.  The tolerance options are resolved per pair by
    :func:`~perpendis.compare.compare`, since layers may differ in format.  ``info_a``
    and ``info_b`` describe each side's tensors (module path, op type: what a capture
    file or an ONNX model records) for pairing by the exporter's metadata; ``by_values``
    lets tensors no rule pairs be paired by shape and agreeing values (:mod:`.pairing`).
    """
    from .pairing import pair

    ea, eb = as_entries(a), as_entries(b)
    info_a, info_b = dict(info_a or {}), dict(info_b or {})
    found = pair(
        [e.name for e in ea],
        [e.name for e in eb],
        mapping=mapping,
        info_a=info_a,
        info_b=info_b,
        load_a=[e.load for e in ea] if by_values else None,
        load_b=[e.load for e in eb] if by_values else None,
    )
    pairs, only_a, only_b = found.pairs, found.only_a, found.only_b
    if not pairs and allow_unpaired:
        return BisectReport([], [e.name for e in ea], [e.name for e in eb], _patterns(only))
    if not pairs:
        raise InputError(
            f"no tensor of A pairs with one of B (A holds {_few(e.name for e in ea)}; B holds "
            f"{_few(e.name for e in eb)}); give a mapping of A names to B names"
        )
    patterns = _patterns(only)
    picked = [(i, j, how) for i, j, how in pairs if _picked(ea[i].name, patterns)]
    if not picked:
        raise InputError(
            f"no paired layer is named like {' or '.join(patterns)} (A holds {_few(ea[i].name for i, _, _ in pairs)})",
            where="only",
        )
    options = {"preset": preset, "atol": atol, "rtol": rtol, "depth": depth}
    compared = [
        Pair(
            ea[i].name, eb[j].name, how, report, *_described(ea[i].name, eb[j].name, info_a, info_b),
            evidence=found.evidence.get(i), confidence=found.confidence.get(i, "high"), figures=figures,
        )
        for (i, j, how), (report, figures) in zip(picked, _reports(ea, eb, picked, options, workers), strict=True)
    ]
    mark_mispaired(compared)
    origin = None
    if any(p.figures.get("nonfinite_a") or p.figures.get("nonfinite_b") for p in compared):
        origin = nan_origin(eb, info_b, "B") or nan_origin(ea, info_a, "A")
    return BisectReport(
        nan_origin=origin,
        pairs=compared,
        only_a=[ea[i].name for i in only_a if _picked(ea[i].name, patterns)],
        only_b=[eb[j].name for j in only_b],
        only=patterns,
        n_skipped=len(pairs) - len(picked),
        repeats={
            **{ea[i].name: ea[k].name for i, k in found.repeats_a.items()},
            **{eb[j].name: eb[k].name for j, k in found.repeats_b.items()},
        },
    )


def nan_origin(entries: Sequence[Entry], info: Mapping[str, Mapping[str, Any]], side: str) -> dict[str, Any] | None:
    """The first value, in the capture's order, holding a NaN or an infinity while every captured
    value its node read is finite: the op that made the first non-finite value.

    As Polygraphy's and msprobe's overflow checks do, on an ONNX Runtime capture of every
    value (which records what each node read); None for a capture that does not record it.
    """
    if not any((info.get(e.name) or {}).get("inputs") for e in entries):
        return None
    finite: dict[str, bool] = {}
    for e in entries:
        t = e.load()
        from .bits import to_float64

        values = np.asarray(t.array) if t.fmt.native or t.is_complex else to_float64(t.array, t.fmt)
        ok = True if values.dtype.kind not in "fc" else bool(np.isfinite(values).all())
        finite[e.name] = ok
        if ok:
            continue
        described = info.get(e.name) or {}
        if described.get("op_type") in (None, "input"):
            continue
        if all(finite.get(str(source), True) for source in described.get("inputs") or []):
            return {
                "side": side, "value": e.name, "op_type": described.get("op_type"), "node": described.get("node"),
                "module": described.get("module"), "inputs": list(described.get("inputs") or []),
            }
    return None


def mark_mispaired(pairs: list[Pair]) -> None:
    """Flag the failing pairs that order and shape made without sure agreement, when the layers
    paired surely on either side of them agree.

    A bug carries forward: the layers after a wrong one are wrong too.  A failing pair that
    rests on its place and shape alone, followed by a surely paired layer that agrees (and
    after one that agrees, or at the start), is far more likely a value of another layer
    (an embedding ONNX folded into a constant, a module with no node of its own) than a bug
    that vanished at once; it is reported as a likely mispairing, not as the first failing layer.
    """
    sure = [p.sure for p in pairs]
    failing = [p.report.verdict == "investigate" for p in pairs]
    for k, p in enumerate(pairs):
        if sure[k] or not failing[k]:
            continue
        before = next((failing[i] for i in range(k - 1, -1, -1) if sure[i]), False)
        after = next((failing[i] for i in range(k + 1, len(pairs)) if sure[i]), None)
        p.likely_mispaired = not before and after is False


def _reports(
    ea: list[Entry], eb: list[Entry], picked: list, options: Mapping[str, Any], workers: int
) -> list[tuple[Report, dict[str, float | None]]]:
    """Each picked pair's report, in order; ``workers`` threads natively (NumPy lets go of the
    GIL in its loops), one where there are no threads (Pyodide) or progress is reported."""
    if workers <= 1 or len(picked) < 2:
        return [_compare_pair(ea[i], eb[j], options) for i, j, _ in picked]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda p: _compare_pair(ea[p[0]], eb[p[1]], options), picked))


def _described(a_name: str, b_name: str, info_a: Mapping, info_b: Mapping) -> tuple[str | None, str | None]:
    """The pair's ONNX op type and PyTorch module: the side recording an op type is the ONNX one."""
    from .pairing import split_name

    ia, ib = info_a.get(a_name) or {}, info_b.get(b_name) or {}
    op = ib.get("op_type") or ia.get("op_type")
    if "op_type" in ib and "op_type" not in ia:
        module = ia.get("module") or split_name(a_name)[0]
    elif "op_type" in ia and "op_type" not in ib:
        module = ib.get("module") or split_name(b_name)[0]
    else:
        module = ia.get("module") or ib.get("module")
    return (op if isinstance(op, str) else None), (module if isinstance(module, str) else None)


def _patterns(only: Sequence[str]) -> list[str]:
    """The name patterns, stripped; empty ones dropped (an empty field picks every layer)."""
    if isinstance(only, str) or not all(isinstance(p, str) for p in only):
        raise InputError(f"only must be a list of name patterns such as ['layer3.*'], got {only!r}", where="only")
    return [p.strip() for p in only if p.strip()]


def _picked(name: str, patterns: list[str]) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _few(names: Iterable[str], limit: int = 5) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "") if names else "nothing"


# ---------------------------------------------------------------------------------------
# Several runs against one reference


@dataclass
class RunsReport:
    """Runs × layers: each cell the verdict and max ULP of that run's layer against the reference."""

    reference: str
    layers: list[str]
    cells: dict[str, list[dict[str, Any] | None]]
    first_failing: dict[str, str | None]

    @property
    def departs_first(self) -> str | None:
        """The run whose first failing layer comes earliest (the first such run on a tie)."""
        position = {name: i for i, name in enumerate(self.layers)}
        failing = [(position[layer], run) for run, layer in self.first_failing.items() if layer is not None]
        return min(failing, key=lambda t: t[0])[1] if failing else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "layers": list(self.layers),
            "runs": {run: list(cells) for run, cells in self.cells.items()},
            "first_failing": dict(self.first_failing),
            "departs_first": self.departs_first,
        }


def bisect_runs(runs: Mapping[str, Iterable[Tensor | Entry]], reference: str, **options: Any) -> RunsReport:
    """Bisect every run against ``reference``; ``options`` are those of :func:`bisect`."""
    if reference not in runs:
        raise InputError(f"reference run {reference!r} is not among the runs {_few(runs)}")
    ref = as_entries(runs[reference])
    layers = [e.name for e in ref]
    cells: dict[str, list[dict[str, Any] | None]] = {}
    first: dict[str, str | None] = {}
    for run, entries in runs.items():
        if run == reference:
            continue
        result = bisect(ref, entries, **options)
        row: list[dict[str, Any] | None] = [None] * len(layers)
        for p in result.pairs:
            row[layers.index(p.a_name)] = {"name": p.b_name, "verdict": p.verdict, "max_ulp": p.report.max_ulp}
        cells[run] = row
        failing = result.first_failing
        first[run] = None if failing is None else failing.a_name
    return RunsReport(reference, layers, cells, first)
