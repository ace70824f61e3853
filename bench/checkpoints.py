"""Throughput of ``perpendis checkpoints``: a plain NumPy loop, one process, and Dask clusters, on the same files.

    python bench/checkpoints.py                      # 2 GB and 8 GB pairs, and fp32 vs bf16 (1.5 GB)
    python bench/checkpoints.py --sizes 256M --quick # a quick run: no 4-worker or external-scheduler rows
    python bench/checkpoints.py --sizes 2G --bf16 0 --single-only  # the NumPy loop and --single only

For each size, writes checkpoint A (float32 safetensors shards of 1 GB, with a
``model.safetensors.index.json`` as Hugging Face writes) and B (the same tensors
re-sharded in 1.5 GB shards, a quarter of them moved by one ulp in an eighth of their
elements, one corrupted), from a seeded normal generator, so neither is sparse nor
compresses; and a float32 / bfloat16 pair (B the same tensors rounded to bfloat16).
Then compares each pair, every mode on the same files:

- a plain NumPy loop: both sides' tensors memory-mapped (``np.memmap`` at the offsets
  of the safetensors header), ``np.allclose`` per tensor; the floor a tool must reach;
- ``--single``: :func:`local_runner` in this process;
- a LocalCluster of 2 worker processes with one thread each (one per core);
- a LocalCluster of 4 worker processes with one thread each, standing in for a
  4-host cluster on one machine; its scaling per worker is its throughput over 4 times
  ``--single``'s;
- an external scheduler: ``dask scheduler`` and ``dask worker`` (2 processes, one
  thread each) started as separate processes on loopback, given absolute paths, then
  relative ones from the checkpoints' parent folder (the runner makes them absolute).

Each row prints wall time, throughput (bytes of both checkpoints read per second), the
CPU seconds of this process and the workers (``/proc/<pid>/stat``: a fairer figure than
wall time on a shared machine), the peak anonymous memory (RssAnon, the mapped shards'
page cache not counted), how much of the files was in the page cache at the start
(``fincore``), the bytes the disk read meanwhile, the Dask tasks and bytes of partials
that came back, the load average, and whether its report is ``--single``'s, figure for
figure.  The files are deleted afterwards unless ``--keep``.
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

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py"))

from perpendis.checkpoints import compare_checkpoints, folder
from perpendis.checkpoints.distributed import dask_runner, warm
from perpendis.checkpoints.shared import CheckpointFold

TENSOR_ELEMENTS = 16 * 2**20  # 64 MB float32 tensors


def parse_size(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def tensor(i: int, n: int) -> np.ndarray:
    return np.random.default_rng(i).standard_normal(n, dtype=np.float32)


def write(root: Path, size: int, bf16: bool = False) -> tuple[Path, Path]:
    """Checkpoints A and B of ``size`` bytes each under ``root`` (B in bfloat16 with ``bf16``)."""
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
            if side == "b" and bf16:
                shard[name] = x.astype(ml_dtypes.bfloat16)
                filled += x.nbytes // 2
                if filled >= per_shard:
                    flush(shard, k)
                    shard, filled, k = {}, 0, k + 1
                continue
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
    """Counts the units the client takes in from Dask workers (as partials, with their bytes, or as rows)."""

    def __init__(self) -> None:
        self.tasks = self.rows = self.bytes = 0
        self._take, self._rows = CheckpointFold.take_unit, CheckpointFold.take_rows

    def __enter__(self) -> Received:
        take, rows = self._take, self._rows

        def counted(fold, index, data):
            self.tasks += 1
            self.bytes += len(data)
            return take(fold, index, data)

        def counted_rows(fold, index, made):
            self.tasks += 1
            self.rows += 1
            return rows(fold, index, made)

        CheckpointFold.take_unit, CheckpointFold.take_rows = counted, counted_rows
        return self

    def __exit__(self, *exc: object) -> None:
        CheckpointFold.take_unit, CheckpointFold.take_rows = self._take, self._rows


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds of the processes ``pids`` so far (``/proc/<pid>/stat``)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def safetensors_entries(path: Path) -> list[tuple[str, str, tuple[int, ...], int]]:
    """(name, dtype, shape, data offset) of each tensor of a safetensors file, from its header."""
    with path.open("rb") as f:
        length = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(length))
    return [
        (k, v["dtype"], tuple(v["shape"]), 8 + length + v["data_offsets"][0])
        for k, v in header.items()
        if k != "__metadata__"
    ]


def numpy_loop(a: Path, b: Path) -> dict:
    """The floor: every tensor of both sides memory-mapped and compared with np.allclose."""
    dtypes = {"F32": np.float32, "BF16": np.uint16}

    def tensors(folder_: Path) -> dict[str, tuple[Path, str, tuple[int, ...], int]]:
        out = {}
        for f in sorted(folder_.glob("*.safetensors")):
            for name, dtype, shape, offset in safetensors_entries(f):
                out[name] = (f, dtype, shape, offset)
        return out

    def array(where: tuple[Path, str, tuple[int, ...], int]) -> np.ndarray:
        f, dtype, shape, offset = where
        x = np.memmap(f, dtype=dtypes[dtype], mode="r", offset=offset, shape=shape)
        return (x.astype(np.uint32) << 16).view(np.float32) if dtype == "BF16" else x

    if COLD:
        evict(a, b)
    cached = cached_fraction(a, b)
    cpu = cpu_seconds([os.getpid()])
    t = time.perf_counter()
    ta, tb = tensors(a), tensors(b)
    nbytes, close = 0, 0
    for name in sorted(ta.keys() & tb.keys()):
        x, y = array(ta[name]), array(tb[name])
        close += bool(np.allclose(x, y))
        nbytes += x.nbytes + (y.nbytes // 2 if tb[name][1] == "BF16" else y.nbytes)
    wall = time.perf_counter() - t
    return {
        "wall_s": round(wall, 2),
        "MB_per_s": round(nbytes / wall / 1e6, 1),
        "cpu_s": round(cpu_seconds([os.getpid()]) - cpu, 2),
        "cached_before": None if cached is None else round(cached, 3),
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "allclose": f"{close} of {len(ta.keys() & tb.keys())} tensors allclose",
    }


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
    cpu = cpu_seconds([os.getpid(), *pids])
    with Peak([os.getpid(), *pids]) as peak, Received() as received:
        t = time.perf_counter()
        report = compare_checkpoints(folder(a), folder(b), **({"runner": runner} if runner else {}))
        wall = time.perf_counter() - t
    cpu = cpu_seconds([os.getpid(), *pids]) - cpu
    s = report.summary
    return {
        "wall_s": round(wall, 2),
        "tensors": s["tensors"],
        "bytes": s["bytes_compared"],
        "MB_per_s": round(s["bytes_compared"] / wall / 1e6, 1),
        "cpu_s": round(cpu, 2),
        "peak_rss_anon_MB": {
            ("client" if p == os.getpid() else f"worker {p}"): round(v / 1e6) for p, v in peak.peak.items()
        },
        "cached_before": None if cached is None else round(cached, 3),
        "disk_read_GB": round((disk_read_bytes() - disk) / 1e9, 2),
        "tasks": received.tasks,
        "row_tasks": received.rows,
        "partials_MB": round(received.bytes / 1e6, 1),
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "json": report.to_json(),
    }


def cluster_run(a: Path, b: Path, workers: int) -> dict:
    """One comparison on a fresh LocalCluster of ``workers`` processes of one thread (its start not timed)."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=":0", silence_logs=50) as cluster,
        Client(cluster) as client,
    ):
        pids = list(client.run(os.getpid).values())
        client.run(warm)  # as the CLI does while it scans
        return run(a, b, dask_runner(client), pids)


def external_run(root: Path, a: Path, b: Path) -> tuple[dict, dict]:
    """``dask scheduler`` and 2 ``dask worker`` processes started apart on loopback: one run
    given absolute paths, one given paths relative to ``root`` (this process's folder then)."""
    from distributed import Client

    file = root / "scheduler.json"
    log = (root / "dask.log").open("w")
    env = os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parent.parent / "py")}  # as if installed
    scheduler = subprocess.Popen(
        ["dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(file)],
        stdout=log, stderr=log, env=env,
    )  # fmt: skip
    workers = None
    try:
        for _ in range(300):
            if file.exists() and file.stat().st_size:
                break
            time.sleep(0.1)
        workers = subprocess.Popen(
            ["dask", "worker", "--scheduler-file", str(file), "--nworkers", "2", "--nthreads", "1", "--no-dashboard"],
            stdout=log, stderr=log, env=env,
        )  # fmt: skip
        with Client(scheduler_file=str(file)) as client:
            client.wait_for_workers(2, timeout=120)
            pids = list(client.run(os.getpid).values())
            client.run(warm)
            absolute = run(a.resolve(), b.resolve(), dask_runner(client), pids)
            here = os.getcwd()
            os.chdir(root)
            try:
                relative = run(a.resolve().relative_to(root), b.resolve().relative_to(root), dask_runner(client), pids)
            finally:
                os.chdir(here)
        return absolute, relative
    finally:
        for process in (workers, scheduler):
            if process is not None:
                process.terminate()
                process.wait(timeout=60)
        log.close()


def show(
    mode: str, r: dict, reference: str | None, single: dict | None = None, workers: int = 0, versus: str = "single"
) -> None:
    """One mode's row, printed as soon as it is measured (its throughput over ``single``'s, called ``versus``)."""
    same = "" if reference is None else f"  same report: {r['json'] == reference}"
    ratio = "" if single is None else f"  {r['MB_per_s'] / single['MB_per_s']:.2f}x {versus}"
    per = "" if not workers or single is None else f", {r['MB_per_s'] / single['MB_per_s'] / workers:.2f} per worker"
    print(f"  {mode:<44} {r['wall_s']:>7} s {r['MB_per_s']:>8} MB/s {r['cpu_s']:>7} cpu s{ratio}{per}{same}")
    extra = r.get("allclose") or (
        f"peak RssAnon MB {r['peak_rss_anon_MB']}, disk read {r['disk_read_GB']} GB, "
        f"{r['tasks']} tasks ({r['row_tasks']} came back as rows), {r['partials_MB']} MB of partials"
    )
    print(f"  {'':<44} cached before {r['cached_before']}, load {r['load']}; {extra}", flush=True)


def bench_pair(root: Path, a: Path, b: Path, quick: bool, single_only: bool = False) -> None:
    """Every mode on one pair of checkpoints (the NumPy loop and ``--single`` only with ``single_only``)."""
    loop = numpy_loop(a, b)
    show("NumPy loop (memmap + np.allclose)", loop, None)
    single = run(a, b)
    reference = single["json"]
    show("--single (one process)", single, reference, loop, versus="the NumPy loop")
    if single_only:
        return
    dask2 = cluster_run(a, b, 2)
    show("LocalCluster, 2 workers x 1 thread", dask2, reference, single, 2)
    if quick:
        return
    dask4 = cluster_run(a, b, 4)
    show("LocalCluster, 4 workers x 1 thread (4 hosts)", dask4, reference, single, 4)
    absolute, relative = external_run(root, a, b)
    show("external scheduler, 2 workers, absolute paths", absolute, reference, single, 2)
    show("external scheduler, 2 workers, relative paths", relative, reference, single, 2)
    print(f"  report summary: {json.loads(reference)['summary']}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="2G,8G", help="bytes of each float32 checkpoint, comma-separated (2G, 256M, ...)")
    p.add_argument("--bf16", default="1G", help="bytes of the float32 side of the fp32/bf16 pair (0: none)")
    p.add_argument("--dir", default=None, help="where to write them (default: a temporary folder in /tmp)")
    p.add_argument("--keep", action="store_true", help="keep the files")
    p.add_argument("--cold", action="store_true", help="start each mode with the checkpoints out of the page cache")
    p.add_argument("--quick", action="store_true", help="NumPy loop, --single and 2 workers only")
    p.add_argument("--single-only", action="store_true", help="NumPy loop and --single only, no cluster nor tiny pair")
    args = p.parse_args()
    global COLD
    COLD = args.cold
    root = Path(args.dir or tempfile.mkdtemp(prefix="perpendis-ckpt-", dir="/tmp"))
    print(f"{os.cpu_count()} cores; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    pairs = [(f"float32 vs float32, {text} each", text, False) for text in args.sizes.split(",") if text]
    if parse_size(args.bf16):
        pairs.append((f"float32 ({args.bf16}) vs bfloat16", args.bf16, True))
    try:
        for title, text, bf16 in pairs:
            where = root / f"{text}{'-bf16' if bf16 else ''}"
            t = time.perf_counter()
            a, b = (where / "a", where / "b") if (where / "b").is_dir() else write(where, parse_size(text), bf16)
            print(f"\n{title}: written in {time.perf_counter() - t:.1f} s", flush=True)
            bench_pair(where, a, b, args.quick, args.single_only)
            if not args.keep:
                shutil.rmtree(where, ignore_errors=True)
        if not (args.quick or args.single_only):
            tiny = write_tiny(root / "tiny")
            alone, spread = run(*tiny), cluster_run(*tiny, 2)
            per = (spread["wall_s"] - alone["wall_s"]) / alone["tensors"]
            print(
                f"\n{alone['tensors']} tiny tensors: {alone['wall_s']} s in one process, {spread['wall_s']} s on "
                f"2 workers ({spread['tasks']} tasks): {per * 1e3:.2f} ms more per tensor; same report: "
                f"{alone['json'] == spread['json']}"
            )
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
