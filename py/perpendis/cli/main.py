"""``python -m perpendis A B``: argument parsing and exit codes only.

Exit 0 when the inputs are identical or differ by rounding, 1 when they must be
investigated, 2 when an input cannot be read (one line on stderr, no traceback), 3 when
Perpendis itself failed (one line; the traceback only with ``--debug``), for every command.
``python -m perpendis bisect ...`` compares two captures layer by layer, with the same
tolerance options and exit codes (1: some layer must be investigated).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..engine import stream
from ..errors import InputError, blame
from ..inputs.formats.buffer import Reader
from ..inputs.load import load_path, only_tensor
from ..inputs.tensor import Tensor
from ..layers.bisect import model_values, one_file_sides, path_entries, path_info, path_records_order
from ..layers.bisect_order import arrange
from ..report.model import Report
from ..service import planner
from ..service.boundary import raised
from ..service.handle import serve
from ..service.requests import BisectRequest, CompareRequest
from ..service.session import Session
from . import exits, routes
from .options import add_pair_options, add_tolerance_options, comparison_options

SIDES = {"a": "A", "b": "B"}
"""The request's sides as the CLI names them in its messages."""

# Every command: its usage and what it does, for the main --help ("": the plain comparison).
COMMANDS = {
    "": ("A [B]", "compare two tensors (this command); --open shows them in the page"),
    "bisect": ("A B", "compare two captures layer by layer and name the first layer that departs"),
    "capture": ("MODEL.onnx --input X.npy -o OUT.safetensors", "run an ONNX model and keep every layer's output"),
    "check-export": ("MODEL.onnx --module FILE.py:NAME --input X.npy",
                     "run an export and its PyTorch model on one input and name the layer that departs"),
    "checkpoints": ("A_DIR B_DIR", "compare two (sharded) checkpoints tensor by tensor"),
}

# The extra of py/pyproject.toml that brings each optional module (tests/test_install.py checks them).
EXTRAS = {"onnx": "onnx", "onnxruntime": "onnx", "onnxscript": "onnx", "safetensors": "onnx", "torch": "torch",
          "dask": "dask", "distributed": "dask", "tqdm": "dask"}


def _commands_text() -> str:
    rows = [(f"perpendis {name} {usage}".replace("  ", " "), what) for name, (usage, what) in COMMANDS.items()]
    lines = ["commands (each has its own --help):"]
    for usage, what in rows:
        lines += [f"  {usage}", f"      {what}"]
    lines.append("\n--debug (any command): print the traceback when Perpendis itself fails (exit 3)")
    return "\n".join(lines)


def _version() -> str:
    from .. import __version__

    return f"perpendis {__version__}"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="perpendis",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Tell whether two tensors that should be equal differ by rounding or by a bug. "
        "Inputs are tensor files (.npy, .npz, safetensors, ...) or text files of pasted REPL output; "
        "'-' reads standard input. Use 'perpendis bisect A B' to compare captures layer by layer, "
        "'perpendis A B --open' to see them in the page, served on this machine.",
        epilog=_commands_text(),
    )
    p.add_argument("--version", action="version", version=_version())
    p.add_argument("a", metavar="A", help="the tensor under test (or a text holding both tensors when B is left out)")
    p.add_argument("b", metavar="B", nargs="?", help="the reference tensor: the tolerance scales with |B|")
    p.add_argument("--ref", metavar="R", help="a higher-precision run (e.g. float64) to judge A and B against")
    add_tolerance_options(p)
    p.add_argument(
        "--stream",
        action="store_true",
        help="read two .npy files chunk by chunk through memory maps, never whole (automatic when "
        f"together they reach {stream.STREAM_MIN_BYTES // 2**20} MiB); needs equal shapes, no --ref",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--markdown", action="store_true", help="print the report as Markdown for an issue")
    add_pair_options(p)
    return p


def _tagged(path: str, side: str) -> list[Tensor]:
    with blame(side):
        return load_path(path)


def _inputs(args: argparse.Namespace) -> tuple[Tensor, Tensor, Tensor | None]:
    """A, B and the reference of ``args.a``, ``args.b`` and ``args.ref`` (paths or '-')."""
    a_list = _tagged(args.a, "A")
    if args.b is None:
        if len(a_list) != 2:
            more = routes.for_many(args.a, None, (len(a_list), None)) if len(a_list) > 2 else ""
            raise InputError(f"{args.a} holds {len(a_list)} tensor(s); give B, or a text holding exactly two{more}",
                             side="A")
        a, b = a_list
    else:
        b_list = _tagged(args.b, "B")
        counts = (len(a_list), len(b_list))
        more = routes.for_many(args.a, args.b, counts) if max(counts) > 1 else ""
        a, b = (only_tensor(tensors, path, "give one tensor per input" + (more if len(tensors) > 1 else ""), side=side)
                for side, tensors, path in (("A", a_list, args.a), ("B", b_list, args.b)))
    ref = None
    if args.ref is not None:
        ref = only_tensor(_tagged(args.ref, "ref"), args.ref, "give one reference tensor", side="ref")
    return a, b, ref


def _streamed(args: argparse.Namespace) -> CompareRequest | None:
    """The request of two .npy files read chunk by chunk through memory maps, or None when
    they are compared in memory: the service's planner decides
    (:func:`perpendis.service.planner.streams`), unless ``--stream`` forces it."""
    if args.stream and (args.b is None or args.ref is not None):
        raise InputError("--stream compares two .npy files A and B, without --ref; leave it out to load them whole")
    if args.b is None or args.ref is not None or "-" in (args.a, args.b):
        return None
    sized = [_sized(path) for path in (args.a, args.b)]
    if args.stream and not planner.npy_files(sized):
        raise InputError("--stream compares two .npy files; leave it out to compare other inputs in memory")
    if not (args.stream or planner.streams(sized)):
        return None
    inputs = {side: {"name": Path(path).name, "data": side} for side, path in (("a", args.a), ("b", args.b))}
    return CompareRequest(inputs, comparison_options(args), {}, text=True, stream=args.stream)


def _sized(path: str) -> tuple[Reader, int]:
    """A reader over a memory map of ``path`` and its size; a file that cannot be read is
    left for the in-memory path to report, as it reports every input."""
    try:
        return stream.map_reader(path)
    except InputError:
        return (lambda offset, length: b""), 0


def answer_of(args: argparse.Namespace) -> tuple[dict[str, Any], Session]:
    """The service's answer to the plain command (the text report asked for), and the session
    that holds its report: the CLI builds the typed request and the service answers it as it
    answers the page, streaming big files by the planner's rule.  Bad input is raised again
    from the answer, for :func:`main` to say."""
    hint = routes.for_paths(args.a, args.b)
    if hint is not None:
        raise InputError(hint)
    request, files = _streamed(args), {}
    if request is not None:
        files = {side: _sized(path) for side, path in (("a", args.a), ("b", args.b))}
    else:
        a, b, ref = _inputs(args)
        inputs = {"a": a, "b": b, **({} if ref is None else {"ref": ref})}
        request = CompareRequest(inputs, comparison_options(args), {}, text=True)
    session = Session()
    return raised(serve(request, {}, files, session=session), SIDES), session


def report_of(args: argparse.Namespace) -> Report:
    """The report the plain command prints, from its parsed options (``--open`` shows it,
    when no built page is at hand)."""
    answer, session = answer_of(args)
    return session.report() if session.pair is not None else Report.from_dict(answer["report"])


def main(argv: Sequence[str] | None = None) -> int:
    """Every command's entry: exit 3 with one line when Perpendis itself fails (the traceback
    with ``--debug``), and quiet when the reader of its output goes away (``| head``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [arg for arg in argv if arg != "--debug"]
    try:
        code = _dispatch(argv)
        sys.stdout.flush()  # here, so that a closed pipe is met inside the try
        return code
    except InputError as err:  # the one place bad input becomes exit 2, for every command
        return exits.bad_input(err, argv[0] if argv[:1] and argv[0] in COMMANDS else "")
    except BrokenPipeError:
        # Python's own advice: point stdout at devnull, so its flush at exit raises nothing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exits.BROKEN_PIPE
    except KeyboardInterrupt:
        return exits.INTERRUPTED
    except Exception as exc:
        return _failed(exc, debug)


def _failed(exc: Exception, debug: bool) -> int:
    """Exit 2 naming the extra for an optional module that is missing; else 3, Perpendis' own bug."""
    missing = exc.name.partition(".")[0] if isinstance(exc, ModuleNotFoundError) and exc.name else ""
    if missing in EXTRAS:
        print(f"perpendis: this needs {missing}, which the [{EXTRAS[missing]}] extra installs: "
              f"pip install 'perpendis[{EXTRAS[missing]}]'", file=sys.stderr)
        return exits.BAD_INPUT
    if debug:
        traceback.print_exc()
    hint = "" if debug else "; rerun with --debug for the traceback"
    print(f"perpendis: internal error, please report it: {type(exc).__name__}: {exc}{hint}", file=sys.stderr)
    return exits.INTERNAL


def _dispatch(argv: list[str]) -> int:
    if argv[:1] == ["bisect"]:
        return _bisect(argv[1:])
    if argv[:1] == ["checkpoints"]:
        from .checkpoints import main as checkpoints_main

        return checkpoints_main(argv[1:])
    if argv[:1] in (["capture"], ["check-export"]):
        from . import capture as cli_capture

        return cli_capture.main(argv)
    if "--open" in argv and "--version" not in argv:
        from .open_page import main as open_main  # here: it imports this module's options

        return open_main(argv, report_of)
    args = _parser().parse_args(argv)
    if args.json and args.markdown:
        raise InputError("--json and --markdown are two forms of the same report: give one of them")
    answer, _ = answer_of(args)
    if args.json:
        print(json.dumps(answer["report"], allow_nan=False))
    else:
        print(answer["markdown"] if args.markdown else answer["text"], end="")
    return exits.of_verdict(answer["report"]["verdict"])


def _bisect_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m perpendis bisect",
        description="Compare two captures layer by layer and name the first layer that departs. "
        "Each capture is an archive (.npz, .safetensors, torch.save, Polygraphy JSON) or a folder of .npy files.",
    )
    p.add_argument("a", type=Path, help="capture taken as reference for the order of layers")
    p.add_argument(
        "b", type=Path, nargs="?",
        help="capture to check against it; left out when A is a torch.save'd torch.ao numeric suite result "
        "(extract_logger_info, extract_weights, compare_model_outputs), which holds both models: its first "
        "model is A, the other B; or ExecuTorch's calculate_numeric_gap(...).to_dict('list') saved with "
        "torch.save: AOT is A, the runtime B",
    )
    p.add_argument("--json", action="store_true", help="print the bisect report as JSON")
    add_tolerance_options(p)
    p.add_argument(
        "--map", action="append", default=[], metavar="A_NAME=B_NAME",
        help="pair these two names explicitly (repeatable)",
    )
    p.add_argument(
        "--model", type=Path, metavar="MODEL.onnx",
        help="the ONNX model one capture was run from: its exporter metadata pairs values with PyTorch modules, "
        "and its graph orders a capture whose file keeps no order (safetensors without metadata 'order')",
    )
    p.add_argument(
        "--isolate", action="store_true",
        help="run each paired layer alone in ONNX Runtime on A's captured inputs, to tell its own error "
        "from the one it inherits (needs --model and onnxruntime)",
    )
    p.add_argument(
        "--model-explorer", type=Path, metavar="OUT.json",
        help="write Google Model Explorer node data for the --model graph: OUT.json colours each node by its "
        "verdict (0 identical, 1 rounding, 2 investigate, 3 likely mispaired); OUT.max_ulp.json, OUT.cosine.json "
        "and OUT.sqnr_db.json hold those figures, and with --isolate OUT.own_verdict.json, OUT.own_max_ulp.json "
        "and OUT.own_sqnr_db.json the layer's own error (one figure per file: the format holds one per node)",
    )
    p.add_argument(
        "-v", "--verbose", action="store_true",
        help="add shape, dtype, max abs, failing fraction, pairing evidence and finding to the table",
    )
    p.add_argument(
        "--only", action="append", default=[], metavar="PATTERN",
        help="compare only the layers whose A name matches this shell-style pattern, e.g. 'layer3.*' (repeatable)",
    )
    return p


def _mapping(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        a_name, sep, b_name = item.partition("=")
        if not sep or not a_name or not b_name:
            raise InputError(f"--map takes A_NAME=B_NAME, got {item!r}", where="--map")
        out[a_name] = b_name
    return out


def _workers() -> int:
    """Threads to compare layers on: the cores this process may use, at most 4 (memory: one pair each)."""
    try:
        return max(1, min(4, len(os.sched_getaffinity(0))))
    except AttributeError:
        return max(1, min(4, os.cpu_count() or 1))


def bisect_main(argv: Sequence[str]) -> int:
    """``perpendis bisect ARGV``, exit code and all: 0 when every paired layer agrees up to
    rounding, 1 when one must be investigated, 2 on bad input."""
    return main(["bisect", *argv])


def _bisect(argv: Sequence[str]) -> int:
    """The captures read here (paths, an ONNX model's pairing records) and bisected by the
    service's ``bisect`` op, as the page's are; ``--isolate`` then runs layers in ONNX
    Runtime, which the service never imports, so it stays in the CLI."""
    args = _bisect_parser().parse_args(argv)
    if args.verbose and args.json:
        raise InputError("--verbose adds columns to the table, and --json prints every field already: give one of them")
    if args.isolate and args.model is None:
        raise InputError("--isolate runs layers of the ONNX model: give it with --model MODEL.onnx")
    if args.model_explorer is not None and args.model is None:
        raise InputError("--model-explorer colours the ONNX model's nodes: give it with --model MODEL.onnx")
    if args.b is None:
        (model_a, a), (model_b, b) = one_file_sides(args.a)
        print(f"one file, both sides: A is {model_a!r}, B is {model_b!r}", file=sys.stderr)
    else:
        a = path_entries(args.a)
        b = path_entries(args.b)
    recorded = ({}, {}) if args.b is None else (path_info(args.a), path_info(args.b))
    kept = (True, True) if args.b is None else (path_records_order(args.a), path_records_order(args.b))
    values = None if args.model is None else model_values(args.model)
    a, b, read = arrange(a, b, kept, values, (str(args.a), str(args.b)), recorded)
    options = comparison_options(args)
    request = BisectRequest({"a": a, "b": b}, options, {}, _mapping(args.map), args.only, read=read,
                            threads=_workers(), allow_unpaired=False)
    session = Session()
    raised(serve(request, {}, session=session))
    result = session.bisect().result
    if args.isolate:
        from ..layers.capture.isolate import isolate

        isolate(result, args.model, a, b, options)
    if args.model_explorer is not None:
        from ..layers.model_explorer import write_model_explorer

        written = write_model_explorer(result, args.model, args.model_explorer)
        print(f"Model Explorer node data: {', '.join(str(p) for p in written.values())}", file=sys.stderr)
    first = result.first_failing
    if args.json:
        print(result.to_json(indent=1))
        if first is not None:  # stdout holds JSON only; the answer still reaches a terminal
            print(f"first failing layer: {first.a_name}", file=sys.stderr)
    else:
        print(result.to_text(verbose=args.verbose), end="")
    return exits.judged(result.must_investigate)
