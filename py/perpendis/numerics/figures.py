"""How every text the core writes shows a count and a share, so the headline, the findings,
the text report and the tables read one way: counts with digit grouping (536,870,912), and
shares as percentages that never round a non-zero count to 0 % nor a partial one to 100 %.
"""

from __future__ import annotations


def count(n: int) -> str:
    """A count with digit grouping: 536870912 → "536,870,912"."""
    return f"{int(n):,}"


def percent(fraction: float, decimals: int = 3) -> str:
    """A share as a percentage with ``decimals`` decimals ("12.500%"); a non-zero share too
    small to show is "< 0.001%" and a share short of all that would round to 100 % is
    "> 99.999%", so a single failing element never reads as none."""
    step = 10.0**-decimals
    shown = fraction * 100
    if 0 < shown < step / 2:
        return f"< {step:.{decimals}f}%"
    if 100 - step / 2 <= shown < 100:
        return f"> {100 - step:.{decimals}f}%"
    return f"{shown:.{decimals}f}%"
