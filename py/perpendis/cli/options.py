"""Command-line options shared by every subcommand (``cli``, ``cli``'s bisect, ``open_page``),
in a module of their own so that the subcommands' modules import them without importing
each other."""

from __future__ import annotations

import argparse

from ..engine.options import ComparisonOptions
from ..numerics.tolerance import PRESETS


def add_tolerance_options(p: argparse.ArgumentParser) -> None:
    """``--preset``, ``--atol``, ``--rtol`` and ``--depth``, the same for every command.

    The preset is checked where it is resolved, so a bad name is an :class:`InputError`
    (exit 2, one line) like any other bad input.
    """
    p.add_argument(
        "--preset", help=f"tolerance preset, one of {', '.join(sorted(PRESETS))} (default: chosen from the dtypes)"
    )
    p.add_argument("--atol", type=float, help="absolute tolerance (overrides the preset's)")
    p.add_argument("--rtol", type=float, help="relative tolerance (overrides the preset's)")
    p.add_argument("--depth", type=float, default=1.0, help="roughly how many roundings separate A and B (default 1)")


def add_pair_options(p: argparse.ArgumentParser) -> None:
    """The options of a comparison of one pair (the plain command and ``--open``): whether a
    dtype mismatch is judged, and the task check."""
    p.add_argument("--no-check-dtype", dest="check_dtype", action="store_false",
                   help="judge two float dtypes as rounding in the narrower one, not as a mismatch (as torch's "
                   "check_dtype=False)")
    add_task_options(p)


def add_task_options(p: argparse.ArgumentParser) -> None:
    """``--classes-axis`` and ``--top-k``: ask whether the difference changes the prediction."""
    p.add_argument(
        "--classes-axis", type=int, metavar="N",
        help="the axis holding classes or vocabulary (-1: the last): report whether the top-1 and top-k classes "
        "change, KL per row, and flips rounding cannot explain",
    )
    p.add_argument(
        "--top-k", type=int, metavar="K", help="the k of the top-k overlap, beside 5 (implies --classes-axis -1)"
    )


def comparison_options(args: argparse.Namespace) -> ComparisonOptions:
    """The typed options of every command's parsed arguments, checked once (a bad value: exit 2).

    Commands without the pair options (``bisect``, ``check-export``) have no task check and
    always check dtypes."""
    task = task_option(args) if hasattr(args, "classes_axis") else None
    return ComparisonOptions(args.preset, args.atol, args.rtol, args.depth, getattr(args, "check_dtype", True), task)


def task_option(args: argparse.Namespace) -> dict[str, int] | None:
    """The ``task=`` of :func:`perpendis.engine.compare.compare` the task options ask for, or None."""
    if args.classes_axis is None and args.top_k is None:
        return None
    out = {"axis": -1 if args.classes_axis is None else args.classes_axis}
    if args.top_k is not None:
        out["k"] = args.top_k
    return out
