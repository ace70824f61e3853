"""The pytest plugin, run inside real pytest sessions (``pytester``) on real model outputs."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import perpendis
import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow  # every test runs pytest inside pytest; assert_same's explanation is test_testing's

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "fixtures" / "models"

FAILING = f'''
import numpy as np
from perpendis import assert_same

MODELS = {str(MODELS)!r}

def test_export_matches():
    # ONNX Runtime against the transformer with one LayerNorm feature's weight and bias negated
    assert_same(np.load(MODELS + "/transformer.signflip.npy"), np.load(MODELS + "/transformer.ort.npy"))

def test_rounding_passes():
    assert_same(np.load(MODELS + "/linear.ort.npy"), np.load(MODELS + "/linear.torch.npy"))

def test_other_failure():
    assert 1 == 2
'''


def run(pytester, *args):
    pytester.makepyfile(test_model=FAILING)
    return pytester.runpytest("-p", "perpendis.pytest_plugin", *args)


def test_failing_comparison_explains_itself_on_one_screen(pytester):
    result = run(pytester, "-k", "export")
    result.assert_outcomes(failed=1, deselected=2)
    explanation = [line for line in result.outlines if line.startswith("E ")]
    assert len(explanation) <= 14
    text = "\n".join(explanation)
    assert "ComparisonError: Perpendis: INVESTIGATE" in text
    assert "top finding [error] sign_flip at feature 3 (axis 2)" in text and "likely causes: " in text
    assert "first difference at (0, 0, 0) (flat 0)" in text and "A bits " in text and "B bits " in text
    # the failure points at the test's own line, not into perpendis
    assert any(line.startswith(">       assert_same(") for line in result.outlines)
    assert not any("testing.py" in line for line in result.outlines)


def test_report_dir_gets_markdown_json_and_html_of_each_failing_comparison(pytester):
    out = pytester.path / "reports"
    result = run(pytester, "--perpendis-report", str(out))
    result.assert_outcomes(failed=2, passed=1)
    stem = "test_model.py__test_export_matches"
    assert sorted(p.name for p in out.glob("[!.]*")) == [f"{stem}.html", f"{stem}.json", f"{stem}.md"]
    expected = perpendis.compare(
        np.load(MODELS / "transformer.signflip.npy"), np.load(MODELS / "transformer.ort.npy"),
        sources=("actual", "expected"),
    )
    assert json.loads((out / f"{stem}.json").read_text()) == expected.to_dict()
    assert (out / f"{stem}.md").read_text() == expected.to_markdown()
    html = (out / f"{stem}.html").read_text()
    assert html.startswith("<!doctype html>") and "test_model.py::test_export_matches" in html
    assert "http:" not in html and "https:" not in html and "src=" not in html
    result.stdout.fnmatch_lines([
        "*- perpendis report -*",
        f"*reports/{stem}.md",
        "*1 failing comparison(s): Markdown, JSON and HTML reports in *reports",
    ])


def test_without_the_option_nothing_is_written(pytester):
    result = run(pytester)
    result.assert_outcomes(failed=2, passed=1)
    assert not list(pytester.path.rglob("*.html")) and "perpendis report" not in result.stdout.str()


def test_a_comparison_behind_another_error_is_kept(pytester):
    pytester.makepyfile(test_wrapped=f'''
import numpy as np
from perpendis import assert_same

def test_wrapped():
    try:
        assert_same(np.load({str(MODELS / "cnn.offset.npy")!r}), np.load({str(MODELS / "cnn.ort.npy")!r}))
    except AssertionError as exc:
        raise RuntimeError("output check failed") from exc
''')
    out = pytester.path / "reports"
    pytester.runpytest("-p", "perpendis.pytest_plugin", f"--perpendis-report={out}").assert_outcomes(failed=1)
    assert len(list(out.glob("*.json"))) == 1


def test_option_is_in_help(pytester):
    pytester.runpytest("-p", "perpendis.pytest_plugin", "--help").stdout.fnmatch_lines(["*--perpendis-report=DIR*"])


def test_test_ids_that_differ_only_in_unsafe_characters_keep_both_reports(pytester):
    pytester.makepyfile(test_ids=f'''
import numpy as np
import pytest
from perpendis import assert_same

@pytest.mark.parametrize("name", ["a/b", "a:b"])
def test_export(name):
    assert_same(np.load({str(MODELS / "cnn.offset.npy")!r}), np.load({str(MODELS / "cnn.ort.npy")!r}))
''')
    out = pytester.path / "reports"
    pytester.runpytest("-p", "perpendis.pytest_plugin", f"--perpendis-report={out}").assert_outcomes(failed=2)
    assert sorted(p.name for p in out.glob("*.json")) == [
        "test_ids.py__test_export_a_b-2.json", "test_ids.py__test_export_a_b.json",
    ]


def test_junit_xml_names_the_html_page(pytester):
    out, xml = pytester.path / "reports", pytester.path / "junit.xml"
    run(pytester, "--perpendis-report", str(out), f"--junitxml={xml}", "-k", "export")
    (prop,) = ET.parse(xml).getroot().iter("property")
    assert prop.get("name") == "perpendis_report"
    assert Path(prop.get("value")) == out / "test_model.py__test_export_matches.html"


def test_the_failure_leads_with_verdict_top_finding_and_worst_element(pytester):
    """In this order, then the first difference; the worst element is the failing one of
    greatest |A - B|, found here with NumPy alone."""
    result = run(pytester, "-k", "export")
    text = "\n".join(line[2:] for line in result.outlines if line.startswith("E "))
    a = np.load(MODELS / "transformer.signflip.npy").astype(np.float64)
    b = np.load(MODELS / "transformer.ort.npy").astype(np.float64)
    err = np.abs(a - b)
    failing = err > 1e-5 + 1e-3 * np.abs(b)  # fp32-cpu, the preset for float32
    worst = np.unravel_index(np.argmax(np.where(failing, err, -1)), a.shape)
    expected = f"greatest failing difference: {err[worst]:.4g} at index {tuple(int(i) for i in worst)}: "
    assert expected in text, text
    order = [text.index(s) for s in ("INVESTIGATE", "top finding", "greatest failing difference", "first difference")]
    assert order == sorted(order)
    line = next(x.strip() for x in text.splitlines() if x.strip().startswith("greatest"))
    assert f"B = {np.format_float_positional(np.float32(b[worst]))}" in line and line.endswith("ulp apart"), line


# a pytest run in a subprocess: 5 s
def test_importing_the_plugin_imports_neither_numpy_nor_the_engine(pytester, monkeypatch):
    """In a fresh interpreter, and in a whole pytest run whose tests never compare."""
    probe = ("import json, sys, pytest, perpendis.pytest_plugin; "
             "print(json.dumps([m for m in ('numpy', 'perpendis.engine.compare', 'perpendis.testing', "
             "'perpendis.report.html') if m in sys.modules]))")
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT / "py"), "PATH": "/usr/bin:/bin"})
    assert json.loads(done.stdout) == []
    pytester.makepyfile(test_plain='''
import sys

def test_nothing_heavy_loaded():
    assert "numpy" not in sys.modules and "perpendis.engine.compare" not in sys.modules
''')
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "py"))
    result = pytester.runpytest_subprocess("-p", "perpendis.pytest_plugin", "--perpendis-report", "out")
    result.assert_outcomes(passed=1)


# two xdist workers start: 17 s on this 2-core machine
def test_under_xdist_the_summary_names_the_reports(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "py"))
    out = pytester.path / "reports"
    pytester.makepyfile(test_model=FAILING)
    result = pytester.runpytest_subprocess("-p", "perpendis.pytest_plugin", "-n", "2", "--perpendis-report", str(out))
    result.assert_outcomes(failed=2, passed=1)
    result.stdout.fnmatch_lines(["*1 failing comparison(s): Markdown, JSON and HTML reports in *reports"])
    assert len(list(out.glob("*.html"))) == 1


def test_a_run_clears_the_reports_it_replaces(pytester):
    """The second run fails on another comparison: only its report is left, beside the
    file someone else put in the folder."""
    out = pytester.path / "reports"
    run(pytester, "--perpendis-report", str(out), "-k", "export")
    first = {p.name for p in out.glob("[!.]*")}
    assert len(first) == 3
    (out / "notes.md").write_text("kept")
    pytester.makepyfile(test_other=f'''
import numpy as np
from perpendis import assert_same

def test_cnn():
    assert_same(np.load({str(MODELS / "cnn.offset.npy")!r}), np.load({str(MODELS / "cnn.ort.npy")!r}))
''')
    pytester.runpytest("-p", "perpendis.pytest_plugin", "--perpendis-report", str(out), "test_other.py")
    left = {p.name for p in out.glob("[!.]*")}
    assert left == {"notes.md", "test_other.py__test_cnn.md", "test_other.py__test_cnn.json",
                    "test_other.py__test_cnn.html"}
