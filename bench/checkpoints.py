"""Throughput of ``perpendis checkpoints`` on two generated checkpoints: one process against Dask.

    python bench/checkpoints.py                # two 8 GB checkpoints (16 GB of disk in --dir)
    python bench/checkpoints.py --size 256M    # a quick run

Writes checkpoint A (float32 safetensors shards of 1 GB, with an index) and B (the same
tensors re-sharded in 1.5 GB shards, a quarter of them moved by one ulp in an eighth of
their elements, one corrupted), both from a seeded normal generator, so neither is
sparse nor compresses.  Then compares them:

- in one process (``local_runner``);
- on a LocalCluster of 2 worker processes with one thread each (one per core);
- on a LocalCluster of 4 worker processes with one thread each, standing in for several
  hosts: the scheduler's cost per tensor is measured on 2000 tiny tensor pairs, compared
  in one process and on that cluster;

and prints wall time, throughput (bytes of both checkpoints read per second), the peak
anonymous memory (RssAnon, sampled every 20 ms; the mapped shards' page cache is not
counted) of this process and of each worker, and whether every mode's report is the
single-process one, figure for figure.  The files are deleted afterwards unless
``--keep``.  The machine's page cache holds what fits of the files just written, as it
would on a machine that has just written or read them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py"))

from perpendis.checkpoints import compare_checkpoints, folder
from perpendis.checkpoints.distributed import dask_runner

TENSOR_ELEMENTS = 16 * 2**20  # 64 MB float32 tensors


def parse_size(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def tensor(i: int, n: int) -> np.ndarray:
    return np.random.default_rng(i).standard_normal(n, dtype=np.float32)


def write(root: Path, size: int) -> tuple[Path, Path]:
    """Checkpoints A and B of ``size`` bytes each under ``root``."""
    count = max(1, size // (TENSOR_ELEMENTS * 4))
    n = min(TENSOR_ELEMENTS, size // 4)
    names = [f"model.layers.{i // 4}.w{i % 4}" for i in range(count)]
    for side, per_shard in (("a", 2**30), ("b", 3 * 2**29)):
        out = root / side
        out.mkdir(parents=True)
        weight_map, shard, filled, k = {}, {}, 0, 1

        def flush(shard: dict, k: int, out: Path = out, weight_map: dict = weight_map) -> None:
            file = f"model-{k:05d}.safetensors"
            save_file(shard, str(out / file))
            weight_map.update(dict.fromkeys(shard, file))

        for i, name in enumerate(names):
            x = tensor(i, n)
            if side == "b" and i % 4 == 1:
                moved = np.random.default_rng(10_000 + i).random(n) < 0.125
                x[moved] = np.nextafter(x[moved], np.float32(np.inf))
            if side == "b" and i == min(7, count - 1):
                x[n // 2 : n // 2 + 4096] = 0.0
            shard[name] = x
            filled += x.nbytes
            if filled >= per_shard:
                flush(shard, k)
                shard, filled, k = {}, 0, k + 1
        if shard:
            flush(shard, k)
        (out / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return root / "a", root / "b"


def write_tiny(root: Path, count: int = 2000) -> tuple[Path, Path]:
    """Two checkpoints of ``count`` tensors of 1024 float32 each, for the per-tensor overhead."""
    for side in ("a", "b"):
        (root / side).mkdir(parents=True)
        save_file({f"t{i}": tensor(i, 1024) for i in range(count)}, str(root / side / "model.safetensors"))
    return root / "a", root / "b"


class Peak:
    """The peak RssAnon of some processes, sampled in a thread."""

    def __init__(self, pids: list[int]):
        self.pids, self.peak = pids, dict.fromkeys(pids, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for pid in self.pids:
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                line = next((x for x in status.splitlines() if x.startswith("RssAnon:")), None)
                if line:
                    self.peak[pid] = max(self.peak[pid], int(line.split()[1]) * 1024)
            time.sleep(0.02)

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run(a: Path, b: Path, runner=None, pids: list[int] | None = None) -> dict:
    pids = pids or []
    with Peak([os.getpid(), *pids]) as peak:
        t = time.perf_counter()
        report = compare_checkpoints(folder(a), folder(b), **({"runner": runner} if runner else {}))
        wall = time.perf_counter() - t
    s = report.summary
    return {
        "wall_s": round(wall, 2),
        "tensors": s["tensors"],
        "bytes": s["bytes_compared"],
        "MB_per_s": round(s["bytes_compared"] / wall / 1e6, 1),
        "peak_rss_anon_MB": {
            ("client" if p == os.getpid() else f"worker {p}"): round(v / 1e6) for p, v in peak.peak.items()
        },
        "json": report.to_json(),
    }


def cluster_run(a: Path, b: Path, workers: int, tiny: tuple[Path, Path] | None = None) -> tuple[dict, dict | None]:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None, silence_logs=50) as cluster,
        Client(cluster) as client,
    ):
        pids = list(client.run(os.getpid).values())
        big = run(a, b, dask_runner(client), pids)
        small = run(*tiny, dask_runner(client), pids) if tiny else None
    return big, small


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="8G", help="bytes of each checkpoint (8G, 256M, ...)")
    p.add_argument("--dir", default=None, help="where to write them (default: a temporary folder in /tmp)")
    p.add_argument("--keep", action="store_true", help="keep the files")
    args = p.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="perpendis-ckpt-", dir="/tmp"))
    try:
        t = time.perf_counter()
        a, b = write(root / "big", parse_size(args.size))
        tiny = write_tiny(root / "tiny")
        print(f"wrote {args.size} x 2 in {time.perf_counter() - t:.1f} s under {root}", flush=True)
        results = {"single process": run(a, b)}
        print("single process done", flush=True)
        results["Dask, 2 workers x 1 thread"], _ = cluster_run(a, b, 2)
        print("2 workers done", flush=True)
        results["Dask, 4 workers x 1 thread (multi-host stand-in)"], tiny_dask = cluster_run(a, b, 4, tiny)
        tiny_single = run(*tiny)
        reference = results["single process"]["json"]
        print(f"\n{'mode':<50} {'wall s':>8} {'MB/s':>8}  peak RssAnon MB  same report")
        for mode, r in results.items():
            print(f"{mode:<50} {r['wall_s']:>8} {r['MB_per_s']:>8}  {r['peak_rss_anon_MB']}  {r['json'] == reference}")
        single, dask2 = results["single process"], results["Dask, 2 workers x 1 thread"]
        print(f"\nDask 2 workers / single process throughput: {dask2['MB_per_s'] / single['MB_per_s']:.2f}")
        per = (tiny_dask["wall_s"] - tiny_single["wall_s"]) / tiny_single["tensors"]
        print(
            f"{tiny_single['tensors']} tiny tensors: {tiny_single['wall_s']} s in one process, {tiny_dask['wall_s']} s "
            f"on 4 workers: scheduler overhead {per * 1e3:.2f} ms per tensor; same report: "
            f"{tiny_single['json'] == tiny_dask['json']}"
        )
        summary = json.loads(reference)["summary"]
        print(f"report summary: {summary}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
