"""``python -m perpendis checkpoints A B``: compare two whole checkpoints tensor by tensor.

Exit 0 when every tensor is identical or rounding-equivalent (an exact conversion to a
narrower dtype, or differences within rounding), 1 when some tensor must be
investigated (it differs, cannot be read, or is on one side only), 2 when a
checkpoint cannot be compared at all.  Tensors are folded as dask.distributed tasks
when Dask is installed (a LocalCluster with one worker per core, or ``--scheduler``)
and the checkpoints are big enough for the cluster to win back its start, else in this
process, which the command says, with why.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from ..checkpoints import Resume, folder, local_runner, parse_rule
from ..checkpoints.distributed import (
    MIN_LOCAL_BYTES,
    MIN_SCHEDULER_BYTES,
    available,
    checkpoint_bytes,
    dask_runner,
    reason_for_single,
    warm,
)
from ..checkpoints.rename import PRESETS, preset
from ..errors import InputError
from ..service.boundary import raised
from ..service.handle import serve
from ..service.requests import CheckpointsRequest, OpenedCheckpoints
from ..service.session import Session
from . import exits
from .options import add_tolerance_options, comparison_options


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m perpendis checkpoints",
        description="Compare two checkpoints tensor by tensor: folders of safetensors shards (with or without "
        "model.safetensors.index.json), torch.save shards (pytorch_model.bin.index.json), .npz/.npy files, "
        "GGUF files (F32/F16/BF16, and Q8_0/Q4_0/Q4_1/Q5_0/Q5_1 judged against their block grids), or a "
        "torch.distributed.checkpoint folder (.metadata and .distcp files).",
    )
    p.add_argument("a", metavar="A_DIR", help="the checkpoint under test: a folder, or a single file")
    p.add_argument("b", metavar="B_DIR", help="the reference checkpoint")
    p.add_argument(
        "--rename", action="append", default=[], metavar="PAT=REPL",
        help=r"rename tensors of both sides by this regex substitution before pairing, e.g. "
        r"'^model\.layers\.(\d+)\.=layers.\1.' (repeatable, applied in order)",
    )  # fmt: skip
    p.add_argument(
        "--rename-preset", choices=sorted(PRESETS), action="append", default=[],
        help="a built-in list of rename rules, applied before --rename: gguf-llama brings llama.cpp's GGUF names "
        "(blk.0.attn_q.weight) to Hugging Face's (model.layers.0.self_attn.q_proj.weight)",
    )  # fmt: skip
    add_tolerance_options(p)
    p.add_argument("--workers", type=int, help="Dask workers of the LocalCluster (default: one per core)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="the address of an existing Dask scheduler to use")
    p.add_argument("--single", action="store_true", help="fold in this process, without Dask")
    p.add_argument(
        "--min-cluster-bytes", type=int, metavar="N",
        help=f"fold on Dask only when both checkpoints together hold at least N bytes (default "
        f"{MIN_LOCAL_BYTES} for a LocalCluster, {MIN_SCHEDULER_BYTES} with --scheduler; 0: always)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--resume", metavar="FILE", help="JSON lines of finished tensors: skipped when rerun, appended to")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def _single(why: str) -> None:
    print(f"perpendis checkpoints: one process does the work: {why}", file=sys.stderr)


@contextlib.contextmanager
def _runner(args: argparse.Namespace, nbytes: int) -> Iterator[Any]:
    """The runner the options ask for, with its cluster open while the comparison runs;
    this process when a cluster cannot fold ``nbytes`` faster (said on stderr)."""
    if args.single:
        yield local_runner
        return
    if not available():
        if args.scheduler or args.workers:
            raise InputError("--scheduler and --workers need Dask: pip install './py[dask]'")
        _single("Dask is not installed")
        yield local_runner
        return
    workers = args.workers or os.cpu_count() or 1
    if workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}")
    floor = args.min_cluster_bytes
    if floor is None:
        floor = MIN_SCHEDULER_BYTES if args.scheduler else MIN_LOCAL_BYTES
    why = reason_for_single(nbytes, None if args.scheduler else workers, floor)  # a scheduler's: asked below
    if why is not None:
        _single(why)
        yield local_runner
        return
    import logging

    from distributed import Client, LocalCluster

    logging.getLogger("distributed").setLevel(logging.ERROR)
    if args.scheduler:
        with Client(args.scheduler) as client:
            threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
            why = reason_for_single(nbytes, threads, floor)
            if why is not None:
                _single(why)
                yield local_runner
            else:
                client.run(warm, wait=False)
                yield dask_runner(client)
        return
    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        client.run(warm, wait=False)
        yield dask_runner(client)


class _Bar:
    """A tqdm bar of bytes compared, on stderr, once the total is known."""

    def __init__(self, shown: bool):
        self.shown, self.bar = shown, None

    def planned(self, tasks: int, nbytes: int) -> None:
        if not self.shown:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        self.bar = tqdm(total=nbytes, unit="B", unit_scale=True, desc=f"{tasks} tensors", file=sys.stderr)

    def done(self, nbytes: int) -> None:
        if self.bar is not None:
            self.bar.update(nbytes)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def main(argv: Sequence[str] | None = None) -> int:
    """The checkpoints opened here (folders or files through memory maps) and compared by
    the service's ``checkpoints`` op, the page's, with this command's runner, resume file
    and progress bar."""
    args = _parser().parse_args(argv)
    bar = _Bar(not args.no_progress)
    resume = None
    try:
        asked = comparison_options(args)
        rules = [rule for name in args.rename_preset for rule in preset(name)] + [parse_rule(r) for r in args.rename]
        a, b = folder(args.a), folder(args.b)
        resume = Resume(args.resume) if args.resume else None
        sizes = checkpoint_bytes(path for c in (a, b) for path in (c.paths or {}).values())
        with _runner(args, sizes) as runner:
            opened = OpenedCheckpoints(a, b, tuple(rules), runner, resume, bar.planned, bar.done)
            answer = raised(serve(CheckpointsRequest({}, asked, [], opened), {}, session=Session()))
    finally:
        bar.close()
        if resume is not None:
            resume.close()
    if args.json:
        print(json.dumps(answer["checkpoints"], allow_nan=False, indent=1))
    else:
        print(answer["text"], end="")
    return exits.judged(answer["must_investigate"])
