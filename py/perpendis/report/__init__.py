"""The typed report (:mod:`.model`) and its renderings: text and Markdown (:mod:`.text`),
HTML (:mod:`.html`), the headline and paste-back lines every rendering leads with, the
one-screen explanation of a failing assertion (:mod:`.explain`).

The model never imports a rendering (each rendering reads the model); importing this
package fills :data:`.model.RENDERINGS`, so a report still shows itself in a notebook or
a terminal with ``to_text()``, ``to_markdown()`` and ``_repr_html_()``.  The text renderings
are imported here: every answer of the service carries the Markdown, and the engine and
diagnosis import :mod:`.text` for its number and shape wording anyway.  The HTML one is
imported on its first use: only a notebook's display, ``--open`` and the pytest plugin
want it, and importing it (with the standard library's ``html``) took 8–13 ms of the page
worker's first comparison in Pyodide (``bench/report_import.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import RENDERINGS
from .text import render_markdown, render_text, verdict_line

if TYPE_CHECKING:
    from .model import Report


def _html(report: Report) -> str:
    """:func:`.html.render_fragment`, imported on first use; it then takes this entry's place."""
    from .html import render_fragment

    RENDERINGS["html"] = render_fragment
    return render_fragment(report)


RENDERINGS.update(text=render_text, markdown=render_markdown, html=_html, verdict=verdict_line)
