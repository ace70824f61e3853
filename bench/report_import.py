"""What importing the report's model and each of its renderings costs, natively and in Pyodide.

``perpendis.report``'s ``__init__`` imports the text and HTML renderings (and what they
import: ``task_text``, the standard library's ``html``) to fill ``model.RENDERINGS``, the
first time anything imports the package, as the page's worker does for its first report,
which reads the Markdown rendering in every answer but never the HTML one.  This times
each part alone: in a fresh interpreter, with NumPy loaded, the package is entered
without running its ``__init__``, then ``report.model``, ``report.text`` (with
``task_text``, ``paste_back``) and ``report.html`` are imported in that order, each
timed.  Natively each run is a fresh ``python3``; in Pyodide (``--site``, a built site) a
fresh Pyodide under Node.js loading NumPy and perpendis from the site's lock, as the
page's worker does.  Prints the median and the
smallest of ``--repeat`` runs; asserts nothing.

Usage::

    python bench/report_import.py [--repeat 5] [--site DIST]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SNIPPET = """
import importlib.util, json, sys, time, types
import numpy
spec = importlib.util.find_spec("perpendis.report")
package = types.ModuleType("perpendis.report")  # entered without its __init__, which imports the renderings
package.__path__ = list(spec.submodule_search_locations)
sys.modules["perpendis.report"] = package
times, modules = {}, {}
for part in ("model", "text", "html"):
    before, t = set(sys.modules), time.perf_counter()
    importlib.import_module("perpendis.report." + part)
    times[part] = (time.perf_counter() - t) * 1e3
    modules[part] = sorted(set(sys.modules) - before)
result = json.dumps({"ms": times, "modules": modules})
"""

NODE = """
import { loadPyodide } from "pyodide";
const dir = process.argv[1];
const pyodide = await loadPyodide({ indexURL: dir, stdLibURL: dir + "python_stdlib.zip",
                                    lockFileURL: dir + "pyodide-lock.json" });
await pyodide.loadPackage(["numpy", "perpendis"], { messageCallback() {} });
console.log(pyodide.runPython(process.argv[2]));
"""


def native() -> dict:
    got = subprocess.run([sys.executable, "-c", SNIPPET + "print(result)"], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "py"), "PATH": "/usr/bin:/bin"})
    return json.loads(got.stdout)


def pyodide(site: Path) -> dict:
    got = subprocess.run(["node", "--input-type=module", "-e", NODE, f"{site.resolve()}/pyodide/", SNIPPET + "result"],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(got.stdout.strip().splitlines()[-1])


def shown(where: str, runs: list[dict]) -> str:
    parts = []
    for part in runs[0]["ms"]:
        values = [run["ms"][part] for run in runs]
        parts.append(f"{part} median {statistics.median(values):6.1f} ms, least {min(values):6.1f} ms")
    return f"{where:8s} " + "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--site", type=Path, help="a built site, to time the imports in its Pyodide too")
    args = parser.parse_args()
    runs = [native() for _ in range(args.repeat)]
    for part, modules in runs[0]["modules"].items():
        print(f"{part}: imports {', '.join(modules)}")
    print(shown("native", runs), flush=True)
    if args.site:
        print(shown("pyodide", [pyodide(args.site) for _ in range(args.repeat)]))


if __name__ == "__main__":
    main()
