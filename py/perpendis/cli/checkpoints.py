"""``python -m perpendis checkpoints A B``: compare two whole checkpoints tensor by tensor.

Exit 0 when every tensor is identical or rounding-equivalent (an exact conversion to a
narrower dtype, or differences within rounding), 1 when some tensor must be
investigated (it differs, cannot be read, or is on one side only) or was not compared
(a file changed while it was read, a Dask worker died with its task: the report then
lists them and ends ``INCOMPLETE``, its JSON says ``"complete": false``, and a rerun
with ``--resume`` compares only them), 2 when a checkpoint cannot be compared at all.
Tensors are folded as dask.distributed tasks on ``--scheduler`` whenever it is given (an
address that does not answer is exit 2), or on a LocalCluster with one worker per core
when Dask is installed and the checkpoints are big enough for the cluster to win back its
start, else in this process, which the command says, with why.
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
from ..checkpoints.contents import contents
from ..checkpoints.distributed import (
    MIN_LOCAL_BYTES,
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

CONNECT_TIMEOUT = 10.0
"""Seconds to wait for ``--scheduler``'s address to answer before refusing it: a typo or a
stopped scheduler is said in seconds, not after distributed's default 30 s of retries."""


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
    p.add_argument(
        "--scheduler", metavar="ADDRESS",
        help="the address of an existing Dask scheduler to fold on, whatever the checkpoints' size "
        f"(exit 2 when it does not answer within {CONNECT_TIMEOUT:g} s)",
    )  # fmt: skip
    p.add_argument("--single", action="store_true", help="fold in this process, without Dask")
    p.add_argument(
        "--min-cluster-bytes", type=int, metavar="N",
        help=f"start a LocalCluster only when both checkpoints together hold at least N bytes (default "
        f"{MIN_LOCAL_BYTES}; 0: always); not with --scheduler, which is always used",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--resume", metavar="FILE", help="JSON lines of finished tensors: skipped when rerun, appended to")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def _single(why: str) -> None:
    print(f"perpendis checkpoints: one process does the work: {why}", file=sys.stderr)


def _refuse_conflicts(args: argparse.Namespace) -> None:
    """Refuse an option the others make meaningless, rather than drop it: ``--single`` folds
    here, ``--scheduler`` runs on that scheduler whatever the size, so neither takes
    ``--workers`` or ``--min-cluster-bytes``, and they exclude each other."""
    if args.single and args.scheduler:
        raise InputError("--single folds in this process and --scheduler on that scheduler: give one of them")
    for flag, given in (("--single", args.single), ("--scheduler", args.scheduler)):
        if not given:
            continue
        for other, value in (("--workers", args.workers), ("--min-cluster-bytes", args.min_cluster_bytes)):
            if value is not None:
                raise InputError(f"{other} is for the LocalCluster this command starts; {flag} starts none")
    if args.workers is not None and args.workers < 1:
        raise InputError(f"--workers must be at least 1, got {args.workers}")
    if args.min_cluster_bytes is not None and args.min_cluster_bytes < 0:
        raise InputError(f"--min-cluster-bytes must be 0 or more, got {args.min_cluster_bytes}")


@contextlib.contextmanager
def _scheduler(address: str) -> Iterator[Any]:
    """A client of the scheduler at ``address``; an address that does not answer within
    :data:`CONNECT_TIMEOUT` seconds, or is not one, is bad input naming it."""
    from distributed import Client
    from distributed.comm import resolve_address

    try:
        resolve_address(address)  # a malformed address or an unknown host, said at once
    except (OSError, ValueError) as err:
        raise InputError(f"--scheduler {address} is not a reachable scheduler address: {_why(err)}") from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as err:
        raise InputError(
            f"cannot connect to the Dask scheduler at {address}: nothing answered within {CONNECT_TIMEOUT:g} s "
            f"({_why(err)})"
        ) from None
    with client:
        yield client


@contextlib.contextmanager
def _runner(args: argparse.Namespace, nbytes: int) -> Iterator[Any]:
    """The runner the options ask for, with its cluster open while the comparison runs.
    ``--scheduler`` is always honoured, whatever the size; without it, this process when a
    LocalCluster cannot fold ``nbytes`` faster (said on stderr, with why)."""
    _refuse_conflicts(args)
    if args.single:
        yield local_runner
        return
    if not available():
        if args.scheduler or args.workers or args.min_cluster_bytes is not None:
            raise InputError("--scheduler, --workers and --min-cluster-bytes need Dask: pip install './py[dask]'")
        _single("Dask is not installed")
        yield local_runner
        return
    import logging

    logging.getLogger("distributed").setLevel(logging.ERROR)
    if args.scheduler:
        with _scheduler(args.scheduler) as client:
            threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
            _where(f"the Dask scheduler at {args.scheduler} ({threads} worker thread(s))")
            client.run(warm, wait=False)
            yield dask_runner(client)
        return
    workers = args.workers or os.cpu_count() or 1
    floor = MIN_LOCAL_BYTES if args.min_cluster_bytes is None else args.min_cluster_bytes
    why = reason_for_single(nbytes, workers, floor)
    if why is not None:
        _single(why)
        yield local_runner
        return
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        _where(f"a LocalCluster of {workers} worker(s)")
        client.run(warm, wait=False)
        yield dask_runner(client)


def _why(err: BaseException) -> str:
    """An exception's message on one short line."""
    return " ".join(str(err).split())[:200] or type(err).__name__


def _where(place: str) -> None:
    print(f"perpendis checkpoints: folded on {place}", file=sys.stderr)


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
        for side, path, checkpoint in (("A", args.a, a), ("B", args.b, b)):
            refusal = contents(checkpoint.names).refusal(path)  # named by its path, as typed
            if refusal is not None:
                raise InputError(refusal, side=side)
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
    if not answer["checkpoints"]["complete"]:
        _say_incomplete(answer["checkpoints"], args.resume)
    return exits.judged(answer["must_investigate"])


def _say_incomplete(report: dict[str, Any], resume: str | None) -> None:
    """Say on stderr that the report is not the whole comparison, and how to finish it."""
    missed = len(report["not_compared"])
    if not missed:
        return  # bad input the scan found: said in the report, and a rerun finds it again
    how = (
        f"run the same command again (--resume {resume}) to compare only those"
        if resume
        else "rerun with --resume FILE to keep what each run compares, so that the next one compares only the rest"
    )
    print(
        f"perpendis checkpoints: {missed} of {report['summary']['tensors']} tensors were not compared; {how}",
        file=sys.stderr,
    )
