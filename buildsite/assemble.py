"""The build from end to end (``build``) and its command line (``main``, run by ``build.py``)."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import buildsite
from buildsite.common import ROOT, BuildError
from buildsite.compress import precompress
from buildsite.page import SERVICE_WORKER, bundle_page, inline_scripts, write_service_worker
from buildsite.runtime import build_pyodide


def build(out: Path, pyodide_dist: Path | None = None) -> None:
    """Write the whole site to ``out`` (replaced): a half-old dist would hide build bugs."""
    if not (ROOT / "index.html").is_file():
        raise BuildError("index.html is missing from the repository root")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copyfile(ROOT / "index.html", out / "index.html")
    shutil.copytree(ROOT / "app", out / "app", ignore=shutil.ignore_patterns(SERVICE_WORKER.name))
    inline_scripts(out / "app")
    bundle_page(out / "app")
    immutable = build_pyodide(out / "pyodide", pyodide_dist)
    write_service_worker(out, {Path("pyodide", name) for name in immutable})
    packed = precompress(out)
    before, after = sum(size for _, size, _, _ in packed), sum(size for _, _, size, _ in packed)
    print(f"gzip'd copies of {len(packed)} files: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB", file=sys.stderr)
    beaten = [(gz, br) for _, _, gz, br in packed if br]
    print(f"Brotli copies of {len(beaten)} of them: {sum(gz for gz, _ in beaten) / 1e6:.2f} MB gzip'd -> "
          f"{sum(br for _, br in beaten) / 1e6:.2f} MB", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=buildsite.__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="output folder (replaced)")
    parser.add_argument("--pyodide-dist", type=Path, default=None,
                        help="an unpacked official Pyodide distribution to take the pinned wheels from")
    args = parser.parse_args(argv)
    try:
        build(args.out, args.pyodide_dist)
    except BuildError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    print(f"built {args.out}")
    return 0
