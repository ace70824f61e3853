"""Running the command line in-process, as the tests that read its output do."""

from __future__ import annotations

from perpendis.cli.main import main


def run_main(capsys, *argv) -> tuple[int, str, str]:
    """``perpendis ARGV``'s exit code, stdout and stderr (``capsys``: pytest's capture)."""
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err
