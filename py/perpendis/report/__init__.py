"""The typed report (:mod:`.model`) and its renderings: text and Markdown (:mod:`.text`),
HTML (:mod:`.html`), the headline and paste-back lines every rendering leads with, the
one-screen explanation of a failing assertion (:mod:`.explain`).

The model never imports a rendering (each rendering reads the model); importing this
package fills :data:`.model.RENDERINGS`, so a report still shows itself in a notebook or
a terminal with ``to_text()``, ``to_markdown()`` and ``_repr_html_()``.
"""

from __future__ import annotations

from .html import render_fragment
from .model import RENDERINGS
from .text import render_markdown, render_text, verdict_line

RENDERINGS.update(text=render_text, markdown=render_markdown, html=render_fragment, verdict=verdict_line)
