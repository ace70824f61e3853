"""Write ``docs/real-cases.md``: every real case of ``tests/fixtures/models`` through the CLI.

Run from anywhere: ``python docs/make_real_cases.py``.  Each case is run exactly as a
user would, ``python -m perpendis A B [--ref R] --json``, and the table shows the
verdict, the main finding and whether both match what the fixture's ``manifest.json``
says the case is (``legit``: rounding only; ``bug``: a known fault).  The cases are
the manifest's pairs, its bugs again against the float64 run where there is one for
their input, the same pairs with A pasted as PyTorch printed it (each ``repr`` file
stands in for the ``.npy`` it was printed from), and the layer-by-layer captures
through ``python -m perpendis bisect``.  A row marked ✗ is a bug in Perpendis.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "fixtures" / "models"
OUT = ROOT / "docs" / "real-cases.md"
sys.path.insert(0, str(ROOT / "py"))  # findings are ranked by the package's own rule, not a copy of it

from perpendis.report.headline import main_finding  # noqa: E402
from perpendis.report.model import Finding  # noqa: E402

# The finding that names each injected bug; None where no single finding is specific to it.
BUG_FINDING: dict[str, str | None] = {
    "nan": "nan",
    "offset": "offset",
    "transposed": "layout",
    "sign_flip": "sign_flip",
    "dropout": None,
    "layernorm_eps": None,
}


@dataclass
class Case:
    """One CLI run: file names relative to the fixtures, and what the manifest says it is."""

    a: str
    b: str
    ref: str | None
    expect: str  # "legit" or "bug"
    bug: str | None = None


def _cases(manifest: dict) -> list[Case]:
    pairs = [Case(p["a"], p["b"], p.get("ref"), p["expect"], p.get("bug")) for p in manifest["pairs"]]
    # ``{model}.ref64.npy`` is the model in float64 on the input of ``{model}.torch.npy`` and
    # ``{model}.ort.npy``, so it can judge every bug made from those outputs too.
    judged = []
    for c in pairs:
        model, _, run = c.a.partition(".")
        if c.ref is None and run in ("torch.npy", "ort.npy") and (MODELS / f"{model}.ref64.npy").exists():
            judged.append(Case(c.a, c.b, f"{model}.ref64.npy", c.expect, c.bug))
    pasted = []
    for text in manifest["repr"]:
        printed_from = re.sub(r"(\.fixed)?\.repr\d*\.txt$", ".npy", text)
        pasted += [Case(text, c.b, c.ref, c.expect, c.bug) for c in pairs + judged if c.a == printed_from]
    return pairs + judged + pasted


def _cli(*args: str) -> tuple[int, dict | None, str]:
    """Exit code, parsed JSON (None on exit 2) and stderr of one CLI run in the fixtures folder."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "py")}
    done = subprocess.run(
        [sys.executable, "-m", "perpendis", *args, "--json"], cwd=MODELS, env=env, capture_output=True, text=True
    )
    return done.returncode, (json.loads(done.stdout) if done.returncode != 2 else None), done.stderr.strip()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _judge(case: Case, verdict: str, findings: list[Finding]) -> str:
    if case.expect == "legit":
        return "✓" if verdict in ("identical", "rounding") else "✗"
    if verdict != "investigate":
        return "✗"
    wanted = BUG_FINDING.get(case.bug or "")
    if wanted is None:
        return "✓"
    named = any(f.kind == wanted and f.severity == "error" for f in findings)
    return "✓" if named else f"✗ (no `{wanted}` error)"


def _pair_row(case: Case) -> str:
    args = [case.a, case.b] + (["--ref", case.ref] if case.ref else [])
    code, report, err = _cli(*args)
    command = "`" + " ".join(args) + "`"
    expected = case.expect if case.bug is None else f"bug: {case.bug}"
    if report is None:
        return f"| {command} | {expected} | error (exit {code}) | {_cell(err)} | — | ✗ |"
    findings = [Finding(**f) for f in report["findings"]]
    main = main_finding(findings)
    finding = "—" if main is None else f"**{main.kind}** ({main.severity}): {main.message}"
    if main is not None and main.where:
        finding += f" at `{main.where}`"
    others = ", ".join(f"{f.kind} ({f.severity})" for f in findings if f is not main) or "—"
    ok = _judge(case, report["verdict"], findings)
    return f"| {command} | {expected} | {report['verdict']} | {_cell(finding)} | {_cell(others)} | {ok} |"


def _capture_rows(manifest: dict) -> list[str]:
    rows = []
    for cap in manifest["captures"]:
        maps = [f"--map={a}={b}" for a, b in cap["mapping"].items()]
        for other, bug_layer in ((cap["ort"], None), (cap["ort_bug"], cap["bug_layer"])):
            # One row per container both captures were saved in, each side in that container.
            by_container = {_container(f): f for f in other}
            for torch_file in cap["torch"]:
                if _container(torch_file) in by_container:
                    rows.append(_bisect_row(torch_file, by_container[_container(torch_file)], maps, bug_layer))
    return rows


def _container(name: str) -> str:
    return name.rsplit(".", 1)[1]


def _bisect_row(a: str, b: str, maps: list[str], bug_layer: str | None) -> str:
    code, report, err = _cli("bisect", a, b, *maps)
    command = "`bisect " + " ".join([a, b, *maps]) + "`"
    expected = "legit" if bug_layer is None else f"bug: epsilon in {bug_layer}"
    if report is None:
        return f"| {command} | {expected} | error (exit {code}) | {_cell(err)} | ✗ |"
    failing = report["first_failing"]
    first = None if failing is None else failing["a_name"]
    pairs = report["pairs"]
    verdicts = sorted({p["verdict"] for p in pairs})
    shown = f"{len(pairs)} layers paired ({', '.join(verdicts)}); first failing: {first or 'none'}"
    ok = "✓" if first == bug_layer else "✗"
    verdict = "investigate" if first else max(verdicts, key=["identical", "rounding"].index)
    return f"| {command} | {expected} | {verdict} | {_cell(shown)} | {ok} |"


def main() -> None:
    manifest = json.loads((MODELS / "manifest.json").read_text())
    versions = ", ".join(f"{k} {v}" for k, v in manifest["versions"].items())
    pair_rows = [_pair_row(c) for c in _cases(manifest)]
    capture_rows = _capture_rows(manifest)
    wrong = sum("✗" in row.rsplit("|", 2)[1] for row in pair_rows + capture_rows)
    lines = [
        "# Real cases",
        "",
        "Every case in `tests/fixtures/models/` run through the command line, as a user would run it",
        "from that folder (`python -m perpendis A B [--ref R]`, and `python -m perpendis bisect` for",
        f"the layer captures). Fixtures made with {versions}. Regenerate with",
        "`python docs/make_real_cases.py`; do not edit by hand.",
        "",
        "*Main finding* is the first finding of the highest severity. *OK* says whether the verdict",
        "(and, for a bug, the finding that names it) matches the fixture's `manifest.json`.",
        "",
        f"**{len(pair_rows) + len(capture_rows) - wrong} of {len(pair_rows) + len(capture_rows)} cases right; "
        f"{wrong} marked ✗.**",
        "",
        "## Pairs of outputs",
        "",
        "| command | case | verdict | main finding | other findings | OK |",
        "|---|---|---|---|---|---|",
        *pair_rows,
        "",
        "## Layer captures",
        "",
        "| command | case | verdict | what bisect found | OK |",
        "|---|---|---|---|---|",
        *capture_rows,
        "",
    ]
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
