"""What refusing a huge file that is no tensor file costs: wall time and peak memory, per format family.

    python bench/refusal.py              # 3 GB files
    python bench/refusal.py --size 1G    # smaller, quicker

For each family the command line reads, a file is written with the first bytes of that
family (its magic, or what its reader tests first) followed by garbage, then made
``--size`` bytes long with ``os.truncate`` (sparse: no disk is written, and reading the
holes costs what reading a real file from the page cache costs).  The command that reads
that family is run on it in a fresh process; the table prints its exit code, wall time,
peak RSS (``ru_maxrss`` of that child alone, from ``os.wait4``) and the first words of
its message.  A refusal decided from the file's first bytes costs the interpreter's start
and its imports (about 0.3-1 s, 60-150 MB with numpy); one that reads the file whole
costs seconds and the file's size in memory.
"""

from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GARBAGE = bytes(range(256)) * 16  # 4 KiB of every byte value: not text, no valid structure


def _size(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


# The first bytes of each family's bad file: its magic, or what its reader tests first,
# then garbage (tests/formats/test_refusal_prefix.py refuses the same files).
BAD_PREFIXES = {
    "npy": b"\x93NUMPY\x01\x00\x76\x00{'descr': garbage" + GARBAGE,
    "npz": b"PK\x03\x04" + GARBAGE,
    "safetensors": struct.pack("<Q", 200) + b'{"w": garbage' + GARBAGE,
    "torchsave": b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19." + GARBAGE,
    "onnx_pb": b"\xff\xff" + GARBAGE,
    "polygraphy": b'{"outputs": {"polygraphy_class": ' + GARBAGE,
    "pickle": b"\x80\x04\x95" + GARBAGE,
    "gguf": b"GGUF\x07\x00\x00\x00" + GARBAGE,
    "distcp": b"\x80\x04garbage" + GARBAGE,
}


def sparse(path: Path, head: bytes, size: int) -> Path:
    """``head``, then holes up to ``size`` bytes: a huge file that costs no disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(head)
    os.truncate(path, size)
    return path


def cases(root: Path, size: int) -> list[tuple[str, list[str]]]:
    """(family, argv) for every family: the huge bad file, and the small good files beside it."""
    good = root / "good.npy"
    np.save(good, np.arange(8, dtype=np.float32))
    np.savez(root / "capa.npz", l1=np.ones(4, np.float32))
    ok_dir = root / "ok"
    ok_dir.mkdir(exist_ok=True)
    np.save(ok_dir / "w.npy", np.ones(4, np.float32))
    files = {
        "npy": (BAD_PREFIXES["npy"], "plain"),
        "npz": (BAD_PREFIXES["npz"], "plain"),
        "safetensors": (BAD_PREFIXES["safetensors"], "plain"),
        "torchsave": (BAD_PREFIXES["torchsave"], "plain"),
        "onnx_pb": (BAD_PREFIXES["onnx_pb"], "plain"),
        "polygraphy json": (BAD_PREFIXES["polygraphy"], "plain"),
        "onnx_model": (BAD_PREFIXES["onnx_pb"], "model"),
        "gguf": (BAD_PREFIXES["gguf"], "checkpoint"),
        "distcp": (BAD_PREFIXES["distcp"], "distcp"),
    }
    out = []
    for family, (head, how) in files.items():
        slug = family.replace(" ", "_")
        if how == "plain":
            bad = sparse(root / f"{slug}.bin", head, size)
            out.append((family, [str(bad), str(good)]))
        elif how == "model":
            bad = sparse(root / f"{slug}.onnx", head, size)
            out.append((family, ["bisect", str(root / "capa.npz"), str(root / "capa.npz"), "--model", str(bad)]))
        elif how == "checkpoint":
            bad = sparse(root / slug / "model.gguf", head, size)
            out.append((family, ["checkpoints", str(bad.parent), str(ok_dir), "--single", "--no-progress"]))
        else:
            bad = sparse(root / slug / ".metadata", head, size)
            (bad.parent / "__0_0.distcp").write_bytes(GARBAGE)
            out.append((family, ["checkpoints", str(bad.parent), str(ok_dir), "--single", "--no-progress"]))
    return out


def run(argv: list[str]) -> tuple[int, float, float, str]:
    """Exit code, wall seconds, peak RSS in MB and the message of ``perpendis ARGV`` in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "py")}
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen([sys.executable, "-m", "perpendis", *argv], env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        out.seek(0)
        message = err.read().decode("utf-8", "replace").strip().splitlines()
        # checkpoints reports an unreadable file as a problem of its report (exit 1), on stdout
        problems = [line.strip() for line in out.read().decode("utf-8", "replace").splitlines()
                    if "gguf" in line.lower() or ".metadata" in line]
    said = message[-1] if message else (problems[0] if problems else "")
    return process.returncode, wall, usage.ru_maxrss / 1024, said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="3G", help="size of each bad file (default 3G)")
    parser.add_argument("--width", type=int, default=90, help="characters of each message shown")
    args = parser.parse_args()
    size = _size(args.size)
    with tempfile.TemporaryDirectory(prefix="perpendis-refusal-") as tmp:
        rows = cases(Path(tmp), size)
        print(f"{'family':<16} {'exit':>4} {'wall s':>7} {'peak MB':>8}  message ({size / 1e9:.2f} GB files)")
        for family, argv in rows:
            code, wall, peak, message = run(argv)
            message = message.replace(tmp, "<tmp>")
            print(f"{family:<16} {code:>4} {wall:>7.2f} {peak:>8.0f}  {message[: args.width]}")


if __name__ == "__main__":
    main()
