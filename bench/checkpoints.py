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
``--keep``; with ``--dir`` holding checkpoints already (``big/``, ``tiny/``), they are reused.
The machine's page cache holds what fits of the files just written, as it would on a
machine that has just written or read them.

To tell where a slower mode loses its time, each row also says how much of both
checkpoints was in the page cache when it started (``fincore``), how many bytes the
disk read meanwhile (``/proc/diskstats``, the whole machine's), how many tasks the
cluster ran and how many bytes of partials came back to the client; the load average
is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py"))

from perpendis.checkpoints import compare_checkpoints, distributed, folder
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


def disk_read_bytes() -> int:
    """Bytes read by the machine's whole disks so far (sectors of 512 bytes, /proc/diskstats)."""
    disks = {d.name for d in Path("/sys/block").iterdir() if not d.name.startswith(("loop", "ram", "zram"))}
    rows = map(str.split, Path("/proc/diskstats").read_text().splitlines())
    return sum(int(f[5]) * 512 for f in rows if f[2] in disks)


def cached_fraction(*folders: Path) -> float | None:
    """How much of the files under ``folders`` is in the page cache (``fincore``), or None without it."""
    files = [str(f) for d in folders for f in sorted(d.rglob("*")) if f.is_file()]
    try:
        command = ["fincore", "-b", "-n", "-o", "RES,SIZE", *files]
        out = subprocess.run(command, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    pairs = [tuple(map(int, line.split())) for line in out.stdout.splitlines() if line.strip()]
    return min(1.0, sum(r for r, _ in pairs) / max(1, sum(n for _, n in pairs)))


class Received:
    """Counts the tasks whose partials the client reads, and their bytes."""

    def __init__(self) -> None:
        self.tasks = self.bytes = 0
        self._read = distributed.partial_from_bytes

    def __enter__(self) -> Received:
        def counted(data):
            self.tasks += 1
            self.bytes += len(data)
            return self._read(data)

        distributed.partial_from_bytes = counted
        return self

    def __exit__(self, *exc: object) -> None:
        distributed.partial_from_bytes = self._read


COLD = False
"""``--cold``: each mode starts with both checkpoints out of the page cache (:func:`evict`)."""


def evict(*folders: Path) -> None:
    """Drop the files under ``folders`` from the page cache (``POSIX_FADV_DONTNEED``; only these files)."""
    for f in (f for d in folders for f in d.rglob("*") if f.is_file()):
        fd = os.open(f, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def run(a: Path, b: Path, runner=None, pids: list[int] | None = None) -> dict:
    pids = pids or []
    if COLD:
        evict(a, b)
    cached = cached_fraction(a, b)
    disk = disk_read_bytes()
    with Peak([os.getpid(), *pids]) as peak, Received() as received:
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
        "cached_before": None if cached is None else round(cached, 3),
        "disk_read_GB": round((disk_read_bytes() - disk) / 1e9, 2),
        "tasks": received.tasks,
        "partials_MB": round(received.bytes / 1e6, 1),
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
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


def show(mode: str, r: dict, reference: str) -> None:
    """One mode's row, printed as soon as it is measured."""
    print(f"{mode:<50} {r['wall_s']:>8} {r['MB_per_s']:>8}  {r['peak_rss_anon_MB']}  {r['json'] == reference}")
    print(
        f"{'':<50} cached before {r['cached_before']}, disk read {r['disk_read_GB']} GB, "
        f"{r['tasks']} tasks, {r['partials_MB']} MB of partials, load {r['load']}",
        flush=True,
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="8G", help="bytes of each checkpoint (8G, 256M, ...)")
    p.add_argument("--dir", default=None, help="where to write them (default: a temporary folder in /tmp)")
    p.add_argument("--keep", action="store_true", help="keep the files")
    p.add_argument("--cold", action="store_true", help="start each mode with the checkpoints out of the page cache")
    p.add_argument("--two-only", action="store_true", help="one process and 2 workers only (no multi-host run)")
    args = p.parse_args()
    global COLD
    COLD = args.cold
    root = Path(args.dir or tempfile.mkdtemp(prefix="perpendis-ckpt-", dir="/tmp"))
    try:
        t = time.perf_counter()
        big, small = root / "big", root / "tiny"
        a, b = (big / "a", big / "b") if (big / "b").is_dir() else write(big, parse_size(args.size))
        tiny = (small / "a", small / "b") if (small / "b").is_dir() else write_tiny(small)
        print(f"checkpoints ready in {time.perf_counter() - t:.1f} s under {root}", flush=True)
        print(f"\n{'mode':<50} {'wall s':>8} {'MB/s':>8}  peak RssAnon MB  same report", flush=True)
        results = {"single process": run(a, b)}
        reference = results["single process"]["json"]
        show("single process", results["single process"], reference)
        results["Dask, 2 workers x 1 thread"], _ = cluster_run(a, b, 2)
        show("Dask, 2 workers x 1 thread", results["Dask, 2 workers x 1 thread"], reference)
        single, dask2 = results["single process"], results["Dask, 2 workers x 1 thread"]
        print(f"Dask 2 workers / single process throughput: {dask2['MB_per_s'] / single['MB_per_s']:.2f}", flush=True)
        if args.two_only:
            return
        multi = "Dask, 4 workers x 1 thread (multi-host stand-in)"
        results[multi], tiny_dask = cluster_run(a, b, 4, tiny)
        show(multi, results[multi], reference)
        tiny_single = run(*tiny)
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
