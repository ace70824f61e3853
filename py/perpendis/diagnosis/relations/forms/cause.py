"""One cause a fitted form can imply: what it needs the form's parameters to show, the
test of them, and its text (:mod:`.implies` holds the table)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Cause:
    kind: str
    implies: str  # what the form's parameters must show for this cause
    test: Callable[[dict], bool]
    text: Callable[[dict], str]
