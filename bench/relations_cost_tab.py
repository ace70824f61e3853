"""The cost of the 16 M-element float32 report in the tab, before and after a change.

The page's half of issue 32's cost item ("the 16 M float32 report stays within +15 % of
today in the tab and natively"); ``relations_cost.py`` is the native half and gives the
pairs: rounding (one ULP on a tenth of the elements), a bug everywhere (A = exp(B)) and a
bug in one region (one row of 4,096 scaled by 0.667), each 2 x 16 M float32, written as
``.npy`` files.

Two sites are built in one run: ``BASE_REV`` by its own ``build.py`` from a ``git archive``
of that revision, and this checkout.  Each is served on its own port and opened in its own
Chromium profile, which stays open; every report goes through the page's client
(``app/client.js``: ``core.request("compare", ...)`` with the two files' bytes, as
``bench/run.py``'s ``report_16m_tab_ms``), timed in the page from the request to the answer
(fetching the files into the page is not timed).  One untimed report per site first warms
its core (the first report also imports the diagnosis); then each pair runs ``--repeat``
times on each site, base and head alternating and their order swapped every round, so
both see the same load.  Prints the median and the least milliseconds, their ratios and
the top finding per pair, and the load average before and after; asserts nothing.

With ``--node`` the same pairs are then timed in each site's own Pyodide under Node.js by
``compare_values``, with neither the page nor its workers: the wasm Python's share of the
tab's figure, before and after, and of that the diagnosis's (``diagnose()``, the relation
search included).

Usage::

    python bench/relations_cost_tab.py [BASE_REV] [--repeat 5] [--work DIR] [--node]   # BASE_REV defaults to main

``--work DIR`` keeps the base site (per revision) and the pairs between runs; the head
site is built afresh every run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "py", ROOT / "scripts", ROOT / "tests" / "browser", ROOT / "bench"):
    sys.path.insert(0, str(path))

from playwright.sync_api import sync_playwright  # noqa: E402
from relations_cost import N, pairs  # noqa: E402
from run import TAB_REPORT_JS, Tab  # noqa: E402
from served import served  # noqa: E402

import build  # noqa: E402

READY_MS = 180_000
ANSWER_MS = 600_000


def written_pairs(folder: Path) -> dict[str, tuple[str, str]]:
    """The three pairs as ``.npy`` files in ``folder`` (written once): name -> (A, B) file names."""
    names = {}
    folder.mkdir(parents=True, exist_ok=True)
    made = None
    for index, name in enumerate(("rounding", "exp everywhere", "one row scaled")):
        files = (f"pair{index}a.npy", f"pair{index}b.npy")
        if not all((folder / file).exists() for file in files):
            made = made or pairs(N)
            for file, array in zip(files, made[name], strict=True):
                np.save(folder / file, array)
        names[name] = files
    return names


def base_site(revision: str, work: Path) -> Path:
    """The site ``revision`` builds with its own ``build.py``, in ``work`` (reused when there)."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", revision], capture_output=True,
                            text=True, check=True).stdout.strip()
    site = work / f"site-{commit}"
    if (site / "index.html").exists():
        return site
    source = work / f"src-{commit}"
    shutil.rmtree(source, ignore_errors=True)
    source.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    if (ROOT / "node_modules").exists():  # the bundler, installed once per checkout
        (source / "node_modules").symlink_to((ROOT / "node_modules").resolve())
    subprocess.run([sys.executable, "build.py", "--out", str(site)], cwd=source, check=True,
                   stdout=subprocess.DEVNULL)
    return site


def with_data(site: Path, data: Path) -> Path:
    """``site`` with the pairs' folder linked in as ``bench/`` (same origin, as ``bench/run.py``)."""
    link = site / "bench"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(data.resolve())
    return site


def opened(pw, url: str, profile: Path) -> Tab:
    tab = Tab(pw, profile)
    tab.goto(url)
    tab.page.wait_for_function("() => document.getElementById('status').dataset.state === 'ready'",
                               timeout=READY_MS)
    return tab


def report(tab: Tab, files: tuple[str, str]) -> dict:
    """One report of the pair through the page's client: ms, top finding, cores."""
    tab.page.set_default_timeout(ANSWER_MS)
    return tab.page.evaluate(TAB_REPORT_JS, [f"bench/{files[0]}", f"bench/{files[1]}"])


def alternating(tabs: dict[str, Tab], files: dict[str, tuple[str, str]], repeat: int) -> dict:
    """Every pair ``repeat`` times on each site, the sites alternating: label -> pair -> runs."""
    runs: dict[str, dict[str, list[dict]]] = {label: {name: [] for name in files} for label in tabs}
    order = list(tabs)
    for label in order:  # warm each core: the first report imports what the later ones reuse
        report(tabs[label], files["rounding"])
    for _ in range(repeat):
        for name, pair in files.items():
            for label in order:
                runs[label][name].append(report(tabs[label], pair))
        order.reverse()
    return runs


NODE_JS = """
import { loadPyodide } from "pyodide";
const [dir, pairs, code] = process.argv.slice(1);
const pyodide = await loadPyodide({ indexURL: dir, stdLibURL: dir + "python_stdlib.zip",
                                    lockFileURL: dir + "pyodide-lock.json" });
await pyodide.loadPackage(["numpy", "perpendis"], { messageCallback() {} });
pyodide.FS.mkdirTree("/pairs");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: pairs }, "/pairs");
console.log(pyodide.runPython(code));
"""

NODE_PY = """
import json, time
import numpy as np
try:
    from perpendis.engine.compare import compare_values
    from perpendis.diagnosis import diagnose as diagnosis
except ImportError:  # a revision from before the package was cut into layers
    from perpendis.compare import compare_values
    from perpendis import diagnose as diagnosis
spent = []
whole = diagnosis.diagnose


def timed(*args, **kwargs):  # the engine imports diagnose from its module when it finishes a report
    start = time.perf_counter()
    try:
        return whole(*args, **kwargs)
    finally:
        spent.append(time.perf_counter() - start)


diagnosis.diagnose = timed
out = {}
for name, (a_file, b_file) in json.loads(FILES).items():
    a, b = np.load("/pairs/" + a_file), np.load("/pairs/" + b_file)
    if not out:
        compare_values(a, b)  # the first report imports the diagnosis
    spent.clear()
    t = time.perf_counter()
    report = compare_values(a, b)
    out[name] = {"ms": (time.perf_counter() - t) * 1e3, "diagnose_ms": sum(spent) * 1e3,
                 "top": report.findings[0].kind if report.findings else None}
json.dumps(out)
"""


def in_node(sites: dict[str, Path], pairs: Path, files: dict[str, tuple[str, str]], repeat: int) -> dict:
    """``compare_values`` on every pair in each site's own Pyodide under Node.js, without the
    page or its workers (the wasm Python alone): one fresh Pyodide a round and site, the sites
    alternating and their order swapped every round.  label -> pair -> runs, as :func:`alternating`."""
    code = NODE_PY.replace("FILES", repr(json.dumps(files)))
    runs: dict[str, dict[str, list[dict]]] = {label: {name: [] for name in files} for label in sites}
    order = list(sites)
    for _ in range(repeat):
        for label in order:
            got = subprocess.run(["node", "--input-type=module", "-e", NODE_JS, f"{sites[label].resolve()}/pyodide/",
                                  str(pairs.resolve()), code], capture_output=True, text=True, check=True, cwd=ROOT)
            for name, run in json.loads(got.stdout.strip().splitlines()[-1]).items():
                runs[label][name].append(run)
        order.reverse()
    return runs


def printed(runs: dict, base: str, where: str = "in the tab (wall ms, page client, sites alternating)") -> None:
    """Per pair: the medians and the least of each site's runs, and their ratios (head / base).
    The least is shown beside the median because other work on the machine only ever adds time."""
    print(f"report of 2 x {N // (1024 * 1024)}M float32, {len(runs['head']['rounding'])} runs a site, {where}")
    print(f"{'pair':16s} {base + ' median':>15s} {'this median':>12s} {'ratio':>6s} {'least':>13s} {'ratio':>6s}"
          "  top finding (base -> this); runs base | this")
    sums = {"base": 0.0, "head": 0.0}
    for name in runs["head"]:
        ms = {label: [r["ms"] for r in runs[label][name]] for label in ("base", "head")}
        median = {label: statistics.median(values) for label, values in ms.items()}
        least = {label: min(values) for label, values in ms.items()}
        sums = {label: sums[label] + median[label] for label in sums}
        tops = " -> ".join(str(runs[label][name][-1].get("top")) for label in ("base", "head"))
        each = " | ".join(", ".join(f"{v:.0f}" for v in values) for values in ms.values())
        print(f"{name:16s} {median['base']:15.0f} {median['head']:12.0f} {median['head'] / median['base']:6.3f} "
              f"{least['base']:6.0f}/{least['head']:<6.0f} {least['head'] / least['base']:6.3f}  {tops}; {each}")
    print(f"ratio of the sums of the medians: {sums['head'] / sums['base']:.3f}")
    if "diagnose_ms" in runs["head"]["rounding"][0]:
        for name in runs["head"]:
            spent = {label: [r["diagnose_ms"] for r in runs[label][name]] for label in ("base", "head")}
            print(f"  of which diagnose(), {name}: median (least) "
                  + " -> ".join(f"{statistics.median(v):.0f} ({min(v):.0f}) ms" for v in spent.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?", default="main")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--work", type=Path, help="a folder kept between runs (base site, pairs)")
    parser.add_argument("--node", action="store_true",
                        help="also time compare_values in each site's Pyodide under Node.js, without the page")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name, sync_playwright() as pw, ExitStack() as stack:
        tmp = Path(tmp_name)
        work = args.work or tmp
        work.mkdir(parents=True, exist_ok=True)
        files = written_pairs(work / "pairs")
        sites = {"base": base_site(args.base, work), "head": tmp / "head-site"}
        build.build(sites["head"])
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        tabs = {}
        for label, site in sites.items():
            (tmp / label).mkdir()
            url = stack.enter_context(served(with_data(site, work / "pairs"), tmp / label))
            tabs[label] = opened(pw, url, tmp / label / "profile")
            stack.callback(tabs[label].close)
        runs = alternating(tabs, files, args.repeat)
        printed(runs, args.base)
        if args.node:
            node = in_node(sites, work / "pairs", files, args.repeat)
            printed(node, args.base, "in Pyodide under Node.js (wall ms, compare_values, no page)")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
