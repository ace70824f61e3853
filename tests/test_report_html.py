"""The report as HTML: the notebook fragment and the self-contained page, on real model outputs."""

import re
from html import escape
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import perpendis
from hypothesis import given, settings
from hypothesis import strategies as st
from perpendis.report.explain import explain
from perpendis.report.html import _VERDICT_WORD, PAGE_CSP, histogram_bins, render_fragment, render_page
from perpendis.report.model import Finding

MODELS = Path(__file__).parent / "fixtures" / "models"
VOID = {"meta", "br", "img", "input", "link", "hr", "line", "rect"}


def signflip_report():
    """ONNX Runtime against the same transformer with one LayerNorm feature's weight and bias negated."""
    return perpendis.compare(np.load(MODELS / "transformer.ort.npy"), np.load(MODELS / "transformer.signflip.npy"))


class Tree(HTMLParser):
    """Checks the tags balance and collects text, tags and attributes."""

    def __init__(self):
        super().__init__()
        self.stack, self.tags, self.attrs, self.text = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in VOID and (not self.stack or self.stack[-1] != tag):
            return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parsed(markup):
    tree = Tree()
    tree.feed(markup)
    tree.close()
    assert tree.stack in ([], ["html"]) or not tree.stack, f"unclosed tags: {tree.stack}"
    return tree


def test_fragment_shows_verdict_findings_bits_worst_and_histogram():
    r = signflip_report()
    tree = parsed(r._repr_html_())
    text = " ".join(tree.text)
    assert "INVESTIGATE" in text
    for f in r.findings:
        assert f.message in text
    assert "axis 2 index 3" in text  # where the sign flip is
    # the first difference's bits, exactly the bits that differ marked, in both rows
    e = r.first_diff
    html = render_fragment(r)
    differing = sum(x != y for x, y in zip(e.a_bits.replace(" ", ""), e.b_bits.replace(" ", ""), strict=True))
    assert differing > 0 and html.count('<span class="diff">') == 2 * differing
    assert f"First difference at ({e.index[0]}, {e.index[1]}, {e.index[2]})" in text
    assert e.a_hex in text and e.b_hex in text
    worst = r.worst["abs"]
    assert "Worst elements" in text and worst.a in text and worst.b in text
    # the ULP histogram: one bar per bin up to the last non-empty one, heights on the page's log scale
    bars = re.findall(r'<rect class="bar[^"]*"[^>]*data-edge="([^"]*)" data-count="(\d+)"', html)
    assert [(edge, int(count)) for edge, count in bars] == histogram_bins(r.ulp_histogram)
    assert sum(int(c) for _, c in bars) == r.n_elements
    assert "svg" in tree.tags


def test_identical_report_has_no_empty_sections():
    x = np.load(MODELS / "transformer.ort.npy")
    html = render_fragment(perpendis.compare(x, x.copy()))
    assert "IDENTICAL" in html
    assert "<svg" not in html and "First difference" not in html


def test_structured_where_and_causes_are_shown():
    r = signflip_report()
    (flip,) = [f for f in r.findings if f.kind == "sign_flip"]
    assert flip.where["indices"] == [3] and len(flip.causes) >= 2
    text = " ".join(parsed(render_fragment(r)).text)
    assert flip.message in text and flip.where_text in text
    assert "likely causes: " + "; ".join(flip.causes) in text
    assert r.headline.removeprefix("Investigate: ") in text


def test_everything_from_the_inputs_is_escaped():
    r = signflip_report()
    r.findings = [Finding("x", "error", "<script>alert(1)</script>", where={"text": '"><img src=x onerror=alert(1)>'},
                          causes=["<b>bold</b>"])]
    r.notes = ["</style><script>alert(2)</script>"]
    r.a = {**r.a, "dtype": "<b>float32</b>"}
    html = render_page(r, title="<i>t</i>")
    tree = parsed(html)
    assert "script" not in tree.tags and "img" not in tree.tags and "b" not in tree.tags and "i" not in tree.tags
    assert "<script>alert(1)</script>" in " ".join(tree.text)


def test_page_is_self_contained_and_makes_no_request():
    html = render_page(signflip_report(), title="tests/test_x.py::test_y")
    tree = parsed(html)
    assert f'content="{PAGE_CSP}"' in html and "default-src 'none'" in PAGE_CSP
    # nothing that could be fetched: no URL of any scheme, no resource attribute, no CSS import
    assert not re.search(r"(https?:|//|url\(|@import)", html)
    assert not {name for name, _ in tree.attrs} & {"src", "href", "srcset", "action", "data", "poster"}
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(tree.tags)


DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int32, np.bool_]


@st.composite
def pairs(draw):
    """Two arrays of small shapes and any of the dtypes, equal, perturbed, NaN-laced or unrelated."""
    shape_a = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    shape_b = shape_a if draw(st.booleans()) else tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    da, db = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shape_a) * 10).astype(da)
    b = a.astype(db) if shape_b == shape_a and draw(st.booleans()) else (rng.standard_normal(shape_b) * 10).astype(db)
    if b.size and np.issubdtype(b.dtype, np.floating) and draw(st.booleans()):
        b.flat[0] = np.nan
    return a, b


@settings(max_examples=60, deadline=None)
@given(pairs())
def test_any_report_renders_to_balanced_escaped_html(pair):
    r = perpendis.compare(*pair)
    html = render_fragment(r)
    text = " ".join(parsed(html).text)
    assert _VERDICT_WORD[r.verdict] in text
    for f in r.findings:
        assert escape(f.message) in html and all(escape(c) in html for c in f.causes)
    assert ("<svg" in html) == (any(r.ulp_histogram.counts[1:]) or r.ulp_histogram.nonfinite > 0)
    assert len(explain(r).splitlines()) <= 14
