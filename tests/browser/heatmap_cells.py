"""What the heat map's canvas shows, read back the way a person sees it: the colour of each
cell's pixels, and the value the page names for the cell under the pointer.

The map is painted on one ``<canvas>`` (no node per cell), so the tests read its pixels:
each cell's centre pixel is matched to the nearest of the page's three cell colours
(``--heat`` for a difference, ``--bg`` for none, ``--diff`` for NaN/inf), and its alpha is the
opacity that encodes the value on the scale (to 1/255: the canvas stores 8 bits).
"""

from __future__ import annotations

from dataclasses import dataclass

CANVAS = "[data-testid=heatmap] canvas"
OPACITY_STEP = 0.5 / 255 + 1e-9  # the rounding of an opacity to the canvas's 8-bit alpha

CELLS_JS = """canvas => {
  const rgb = (colour) => {  // a CSS colour as the canvas paints it
    const probe = document.createElement("canvas").getContext("2d");
    probe.fillStyle = colour;
    probe.fillRect(0, 0, 1, 1);
    return [...probe.getImageData(0, 0, 1, 1).data.slice(0, 3)];
  };
  const style = getComputedStyle(canvas);
  const kinds = Object.entries({ heat: "--heat", zero: "--bg", nonfinite: "--diff" })
    .map(([kind, name]) => [kind, rgb(style.getPropertyValue(name).trim())]);
  const [rows, cols] = [Number(canvas.dataset.rows), Number(canvas.dataset.cols)];
  const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  const cells = [];
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const x = Math.floor(((c + 0.5) * canvas.width) / cols);
      const y = Math.floor(((r + 0.5) * canvas.height) / rows);
      const p = pixels.slice((y * canvas.width + x) * 4, (y * canvas.width + x) * 4 + 4);
      const far = (k) => k[1].reduce((sum, v, i) => sum + (v - p[i]) ** 2, 0);
      const [kind] = kinds.reduce((best, k) => (far(k) < far(best) ? k : best));
      cells.push([r, c, p[3] ? kind : "blank", p[3] / 255]);
    }
  }
  return cells;
}"""


# A click at the centre of cell [row, col] of a canvas, for drivers without pointer positions
# (WebDriver's element click lands on the element's centre).
CLICK_CELL_JS = """(canvas, row, col) => {
  const box = canvas.getBoundingClientRect();
  const [rows, cols] = [Number(canvas.dataset.rows), Number(canvas.dataset.cols)];
  canvas.dispatchEvent(new MouseEvent("click", { bubbles: true,
    clientX: box.left + ((col + 0.5) * box.width) / cols, clientY: box.top + ((row + 0.5) * box.height) / rows }));
}"""


@dataclass(frozen=True)
class Cell:
    row: int
    col: int
    kind: str  # heat (a difference), zero (none), nonfinite (NaN/inf), blank (nothing painted)
    opacity: float


def cells(page) -> list[Cell]:
    """Every cell of the map on screen, row by row."""
    return [Cell(*cell) for cell in page.eval_on_selector(CANVAS, CELLS_JS)]


def cell(page, row: int, col: int) -> Cell:
    (found,) = [c for c in cells(page) if (c.row, c.col) == (row, col)]
    return found


def centre(page, row: int, col: int) -> dict[str, float]:
    """Where the centre of a cell is, relative to the canvas."""
    size = float(page.locator(CANVAS).get_attribute("data-size"))
    return {"x": (col + 0.5) * size, "y": (row + 0.5) * size}


def click_cell(page, row: int, col: int) -> None:
    page.locator(CANVAS).click(position=centre(page, row, col))


def hovered_value(page, row: int, col: int) -> float:
    """The value the page names for the cell under the pointer (its hint: "— row r, col c: v")."""
    page.locator(CANVAS).hover(position=centre(page, row, col))
    hint = page.get_by_test_id("heatmap-hover")
    page.wait_for_function("hint => hint.textContent.includes(':')", arg=hint.element_handle())
    return float(hint.text_content().rsplit(":", 1)[1].replace(",", ""))


def wait_slice(page, words: str, timeout: float) -> None:
    """Wait until the map on screen is the slice its label describes with ``words``
    (e.g. "axis 0 index 2")."""
    page.wait_for_function(
        "([sel, words]) => (document.querySelector(sel)?.getAttribute('aria-label') || '').includes(words)",
        arg=[CANVAS, words], timeout=timeout)
