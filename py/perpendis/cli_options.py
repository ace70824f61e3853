"""Command-line options shared by every subcommand (``cli``, ``cli``'s bisect, ``open_page``),
in a module of their own so that the subcommands' modules import them without importing
each other."""

from __future__ import annotations

import argparse

from .tolerance import PRESETS


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
