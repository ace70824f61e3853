"""Do two checkouts write the same reports?  For a restructure that must change nothing.

    python bench/report_identity.py OTHER_PY_DIR [NEW_PY_DIR] [--seed 2 3] [--paths 250]

``OTHER_PY_DIR`` is the ``py`` folder of the checkout to compare against (for example one
made with ``git worktree add /tmp/base main``); ``NEW_PY_DIR`` defaults to this checkout's.
Each runs in a fresh process with its ``py`` first on the path and writes
``to_dict()`` of the report of:

- every case of each corpus seed, in memory (``compare_values(a, b, preset=...)``, as
  ``bench/corpus/score.py`` judges them; the corpus is read from this checkout's
  ``bench/corpus/.cache``, which ``bench/corpus/generate.py --seed N`` writes);
- the first ``--paths`` cases of the first seed streamed from ``.npy`` files (no layout:
  the members that need the aligned arrays do not run) and pasted as 4-digit prints (a
  lossy print: only the scale-free members run);
- synthetic pairs that make each member of the relation grammar hold (reorderings,
  dropout, clips, grids, elementwise maps, a softmax, scales, offsets, per-slice maps, a
  rotary rotation, bfloat16 storage, a bias and dependences no member fits), with the
  default preset and ``exact``.

It prints, per set, how many cases were compared and how many reports differ (with the
first few ids).  Reports are compared as JSON text, so "0 differ" is byte for byte.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PRINT_CAP = 4096  # elements of the largest pair pasted as a print


def _text(report: Any) -> str:
    return json.dumps(report.to_dict(), sort_keys=True, default=str)


def corpus(seed: int) -> tuple[list[dict[str, Any]], Path]:
    """The manifest's cases of a corpus seed and the folder they are in."""
    from bench.corpus import models

    models.use_seed(seed)
    folder = models.CACHE / "cases"
    return json.loads((folder / "manifest.json").read_text())["cases"], folder


def in_memory(seed: int) -> dict[str, str]:
    from perpendis.engine.compare import compare_values

    from bench.corpus import cases

    entries, folder = corpus(seed)
    out = {}
    for entry in entries:
        a, b = cases.load(entry, folder)
        out[f"{seed}/{entry['id']}"] = _text(compare_values(a, b, preset=entry["preset"]))
    return out


def other_paths(seed: int, limit: int) -> dict[str, str]:
    """Streamed and printed reports of the first ``limit`` cases (same shapes only for the stream)."""
    from perpendis.engine import stream
    from perpendis.engine.compare import compare
    from perpendis.engine.options import ComparisonOptions
    from perpendis.inputs.parse import parse_text

    from bench.corpus import cases

    entries, folder = corpus(seed)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        pa, pb = Path(tmp) / "a.npy", Path(tmp) / "b.npy"
        for entry in entries[:limit]:
            a, b = cases.load(entry, folder)
            options = ComparisonOptions(preset=entry["preset"])
            if a.shape == b.shape:
                np.save(pa, a)
                np.save(pb, b)
                report = stream.compare_sources(stream.map_file(pa, "a"), stream.map_file(pb, "b"), options)
                out[f"streamed {seed}/{entry['id']}"] = _text(report)
            if a.size <= PRINT_CAP and a.dtype.kind == "f":
                with np.printoptions(precision=4, threshold=PRINT_CAP + 1):
                    [x], [y] = parse_text(repr(a)), parse_text(repr(b))
                out[f"printed {seed}/{entry['id']}"] = _text(compare(x, y, options))
    return out


def _rotated(b: np.ndarray) -> np.ndarray:
    """Feature pairs (i, i + d/2) along the last axis turned by an angle growing with the position."""
    d = b.shape[-1] // 2
    theta = np.linspace(0, 0.1, b.shape[0] * b.shape[1]).reshape(b.shape[0], b.shape[1], 1)
    x1, x2 = b[..., :d], b[..., d:]
    turned = [x1 * np.cos(theta) - x2 * np.sin(theta), x1 * np.sin(theta) + x2 * np.cos(theta)]
    return np.concatenate(turned, -1).astype(np.float32)


def synthetic(seed: int) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """(name, A, B) pairs, each made so that one member holds or none does."""
    rng = np.random.default_rng(seed)
    b = rng.standard_normal((4, 16, 16)).astype(np.float32)
    f32 = np.float32
    yield "transposed", b.transpose(0, 2, 1).copy(), b
    yield "reversed", b[:, ::-1].copy(), b
    yield "shifted", np.roll(b, 1, axis=1), b
    yield "permuted", b[rng.permutation(4)], b
    kept = np.where(rng.random(b.shape) > 0.1, b / f32(0.9), 0).astype(np.float32)
    yield "dropout", kept, b
    yield "clipped", np.clip(b, -1, 1), b
    yield "relu6", np.clip(b * 4, 0, 6), np.maximum(b * 4, 0)
    yield "grid", (np.round(b * 16) / 16).astype(np.float32), b
    yield "exp", np.exp(b), b
    yield "gelu_tanh", (0.5 * b * (1 + np.tanh(0.7978845608 * (b + 0.044715 * b**3)))).astype(np.float32), b
    yield "softmax", (np.exp(b) / np.exp(b).sum(-1, keepdims=True)).astype(np.float32), b
    yield "scale", b * f32(1.01), b
    yield "offset", b + f32(0.05), b
    channel, row = b.copy(), b.copy()
    channel[:, 3] *= 2
    row[1] = row[1] * f32(1.3) + f32(0.2)
    yield "slice_scale", channel, b
    yield "slice_affine", row, b
    yield "rotation", _rotated(b), b
    yield "bfloat16", (b.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32), b
    yield "value", (b * (1 + 1e-4 * b)).astype(np.float32), b
    yield "position", (b * (1 + 1e-4 * np.arange(16))).astype(np.float32), b
    yield "sign_bias", b + np.abs(b) * f32(3e-6), b
    yield "rounding", (b * (1 + 2 * 2.0**-24 * rng.standard_normal(b.shape))).astype(np.float32), b
    ints = rng.integers(-100, 100, (8, 8)).astype(np.int32)
    one_row = ints.copy()
    one_row[2] += 1
    yield "integers", one_row, ints
    yield "integers_transposed", ints.T.copy(), ints


def synthetic_reports(seeds: int = 6) -> dict[str, str]:
    from perpendis.engine.compare import compare_values

    out = {}
    for seed in range(seeds):
        for name, a, b in synthetic(seed):
            for preset in (None, "exact"):
                keywords = {} if preset is None else {"preset": preset}
                out[f"synthetic {name} {seed} {preset}"] = _text(compare_values(a, b, **keywords))
    return out


def dump(py: Path, out: Path, seeds: list[int], paths: int) -> None:
    """Every report, in this process, of the checkout whose ``py`` folder is ``py`` (the
    functions above import perpendis when called, so it is that checkout's)."""
    sys.path[:0] = [str(py), str(ROOT)]
    sets: dict[str, dict[str, str]] = {f"seed {s} in memory": in_memory(s) for s in seeds}
    sets[f"seed {seeds[0]} streamed and printed"] = other_paths(seeds[0], paths)
    sets["synthetic"] = synthetic_reports()
    out.write_text(json.dumps(sets))


def run(py: Path, seeds: list[int], paths: int) -> dict[str, dict[str, str]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "reports.json"
        seed_args = ["--seed", *map(str, seeds), "--paths", str(paths)]
        subprocess.run([sys.executable, __file__, "--dump", str(py), str(out), *seed_args], check=True)
        return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, nargs="?")
    parser.add_argument("new", type=Path, nargs="?", default=ROOT / "py")
    parser.add_argument("--seed", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--paths", type=int, default=250, help="cases streamed and printed")
    parser.add_argument("--dump", nargs=2, type=Path, metavar=("PY_DIR", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.dump:
        dump(args.dump[0], args.dump[1], args.seed, args.paths)
        return 0
    if args.old is None:
        parser.error("give the py folder of the checkout to compare against")
    old, new = run(args.old.resolve(), args.seed, args.paths), run(args.new.resolve(), args.seed, args.paths)
    differ_total = 0
    for name in old:
        keys = sorted(set(old[name]) | set(new.get(name, {})))
        differ = [k for k in keys if old[name].get(k) != new.get(name, {}).get(k)]
        differ_total += len(differ)
        print(f"{name}: {len(keys)} compared, {len(differ)} differ" + (f" ({', '.join(differ[:5])})" if differ else ""))
    return 1 if differ_total else 0


if __name__ == "__main__":
    raise SystemExit(main())
