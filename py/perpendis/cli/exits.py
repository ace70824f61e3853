"""The one map from what a command found to its exit code, for every command.

0 the inputs are identical or differ by rounding (every layer, every tensor), 1 something
must be investigated, 2 bad input (one line on stderr, no traceback), 3 Perpendis itself
failed; 141 and 130 are what a shell reports for a closed pipe and for Ctrl-C.  Commands
return :func:`judged` of their finding and raise :class:`~perpendis.errors.InputError`
for bad input; :func:`perpendis.cli.main.main` turns that into :func:`bad_input`, once.
"""

from __future__ import annotations

import sys

from ..errors import InputError

SAME, INVESTIGATE, BAD_INPUT, INTERNAL = 0, 1, 2, 3
BROKEN_PIPE, INTERRUPTED = 141, 130
PASSING_VERDICTS = ("identical", "rounding")


def judged(must_investigate: bool) -> int:
    """The exit code of a command that ran: 1 when something must be investigated, else 0."""
    return INVESTIGATE if must_investigate else SAME


def of_verdict(verdict: str) -> int:
    """The exit code of one comparison's verdict."""
    return judged(verdict not in PASSING_VERDICTS)


def bad_input(err: InputError, command: str = "") -> int:
    """Say what was wrong with the input on one line of stderr, named by the command, and exit 2."""
    name = f"perpendis {command}" if command else "perpendis"
    print(f"{name}: " + " ".join(str(err).split()), file=sys.stderr)
    return BAD_INPUT
