"""``--open``'s server without a browser: what it serves, to whom, and its errors.

The site is the repository's real ``index.html`` (its CSP is what the server must send)
with an empty ``pyodide/``; the page itself opened this way is tested in
``tests/browser/test_page_open.py``.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from urllib.error import HTTPError
from urllib.request import urlopen

import pytest
from perpendis.cli import main as cli
from perpendis.cli import open_page

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "fixtures" / "models"
A, B = MODELS / "cnn.ort.npy", MODELS / "cnn.offset.npy"


@pytest.fixture
def site(tmp_path):
    out = tmp_path / "site"
    (out / "pyodide").mkdir(parents=True)
    shutil.copyfile(ROOT / "index.html", out / "index.html")
    return out


@pytest.fixture
def serving(site):
    server, url = open_page.make_server(site, {"a": A, "b": B}, {"atol": 0.1})
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield url
    server.shutdown()
    server.server_close()


def test_serves_the_page_and_the_two_files_under_the_token(serving):
    base, _, token = serving.partition("/?open=")
    assert base.startswith("http://127.0.0.1:") and len(token) >= 32
    page = urlopen(serving)
    assert page.headers["Content-Security-Policy"] == open_page.page_csp(Path(ROOT))
    assert json.load(urlopen(f"{base}/open/{token}/manifest.json")) == {
        "inputs": {"a": A.name, "b": B.name}, "options": {"atol": 0.1},
    }
    response = urlopen(f"{base}/open/{token}/a")
    assert response.read() == A.read_bytes() and response.headers["Cache-Control"] == "no-store"
    for path in (f"/open/{token}x/a", f"/open/{token}/ref", f"/open/{token}/%2e%2e/index.html", "/open/x/a"):
        with pytest.raises(HTTPError) as info:
            urlopen(base + path)
        assert info.value.code == 404


def test_csp_comes_from_the_built_page(site):
    assert "connect-src 'self'" in open_page.page_csp(site)
    (site / "index.html").write_text("<!doctype html><title>no policy</title>")
    with pytest.raises(open_page.InputError, match="no Content-Security-Policy"):
        open_page.page_csp(site)


def test_without_a_built_site_it_opens_the_report_as_one_page(tmp_path, monkeypatch, capsys):
    """An installed package has no dist/: the report is made here and written as the
    self-contained page, with the options given (a preset wide enough passes the offset)."""
    monkeypatch.delenv(open_page.SITE_ENV, raising=False)
    monkeypatch.setattr(open_page, "CHECKOUT_SITE", tmp_path / "dist")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert cli.main([str(A), str(B), "--open", "--no-browser"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("Perpendis: INVESTIGATE") and "python build.py" in out
    (page,) = tmp_path.glob("perpendis-*.html")
    html = page.read_text()
    assert page.as_uri() in out and html.startswith("<!doctype html>") and "offset" in html
    assert "src=" not in html and "http:" not in html and page.stat().st_mode & 0o777 == 0o600
    page.unlink()
    assert cli.main([str(A), str(B), "--open", "--no-browser", "--atol", "1"]) == 1  # an offset, within atol
    assert "(atol 1," in next(tmp_path.glob("perpendis-*.html")).read_text()
    monkeypatch.setenv(open_page.SITE_ENV, str(tmp_path))
    assert cli.main([str(A), str(B), "--open"]) == 2
    assert f"{tmp_path} is not a site built by build.py" in capsys.readouterr().err


def test_every_option_given_reaches_the_page():
    """The manifest's options are what the page's core parses into the engine's arguments
    (the page hands them over as its tolerance state)."""
    from perpendis.cli.options import comparison_options
    from perpendis.service import requests

    parse = open_page._parser().parse_args
    args = parse([str(A), str(B), "--open", "--preset", "fp16", "--atol", "0.5", "--rtol", "0.25", "--depth", "3"])
    options = open_page.page_options(args)
    assert options == {"preset": "fp16", "atol": 0.5, "rtol": 0.25, "depth": 3.0}
    request = requests.parse({"op": "compare", "inputs": {}, "options": options})
    assert request.options == comparison_options(args)  # what the command line itself compares with
    assert open_page.page_options(parse([str(A), str(B), "--open"])) == {}


def test_site_is_found_from_the_option_the_environment_or_the_checkout(site, tmp_path, monkeypatch):
    monkeypatch.setattr(open_page, "CHECKOUT_SITE", site)
    monkeypatch.delenv(open_page.SITE_ENV, raising=False)
    assert open_page.built_site(None) == site
    other = tmp_path / "other"
    shutil.copytree(site, other)
    monkeypatch.setenv(open_page.SITE_ENV, str(other))
    assert open_page.built_site(None) == other
    assert open_page.built_site(site) == site


def test_a_missing_input_is_named(site, capsys):
    assert cli.main([str(A), "missing.npy", "--open", "--site", str(site), "--no-browser"]) == 2
    assert capsys.readouterr().err == "perpendis: B: missing.npy: no such file\n"


# A shell starts a background job with SIGINT ignored, and Python then installs no handler
# for it: a CI that runs the suite that way would make Ctrl-C a no-op in the child.  A user's
# terminal delivers it with its default action, so the child starts from that.
AT_A_TERMINAL = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                 "sys.argv[0] = 'perpendis'; runpy.run_module('perpendis', run_name='__main__')")


def test_ctrl_c_stops_it_quietly(site):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "py")}
    command = [sys.executable, "-c", AT_A_TERMINAL, str(A), str(B), "--open", "--site", str(site), "--no-browser"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith(f"Perpendis with {A.name} and {B.name} preloaded: http://127.0.0.1:")
        assert urlopen(line.split(": ", 1)[1].strip()).status == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0 and process.stderr.read() == ""
    finally:
        process.kill()


def test_a_tab_closed_mid_download_prints_no_traceback(site, capsys):
    server, _ = open_page.make_server(site, {"a": A, "b": B}, {})
    try:
        for error in (ConnectionResetError(104, "Connection reset by peer"), BrokenPipeError(32, "Broken pipe")):
            try:
                raise error
            except OSError:
                server.handle_error(None, ("127.0.0.1", 1))
        assert capsys.readouterr().err == ""
        try:
            raise ValueError("a real bug")
        except ValueError:
            server.handle_error(None, ("127.0.0.1", 1))
        assert "ValueError: a real bug" in capsys.readouterr().err
    finally:
        server.server_close()
