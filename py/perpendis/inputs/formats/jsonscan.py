"""JSON read a window at a time, with the bulky strings left in the file as byte spans.

A Polygraphy outputs file is JSON whose bulk is base64 strings, one per array, up to
hundreds of megabytes in all.  ``json.loads`` needs the whole text as one ``str`` and
returns every string decoded: a file, its text and its strings at once, more than a
32-bit browser heap holds.  :func:`parse` reads the file through ``read(offset,
length)`` one window at a time and returns what ``json.loads`` would, except that a
string value under one of the given keys becomes a :class:`Span` (where its characters
lie in the file) instead of a ``str``.  The document that remains is small, and each
payload is read only when someone decodes it (:func:`span_bytes`, :func:`span_text`).

Strict as ``json.loads`` is, and as every reader here must be: the whole file is
checked once, any malformation (truncation, a stray byte, nesting deeper than
``JSON_MAX_DEPTH``) is an :class:`InputError` naming the byte offset.  Only a span's
characters are left unchecked until it is read.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection
from typing import NamedTuple

from ...errors import InputError
from .buffer import Reader
from .limits import JSON_MAX_DEPTH

WINDOW = 1 << 20
"""Bytes read at a time while scanning: a span is skipped a window at a time, never held."""

_SPACE = re.compile(rb"[ \t\n\r]*")
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
# As json.loads, which also reads the non-standard NaN and infinities Python writes.
_LITERALS = {
    b"true": True,
    b"false": False,
    b"null": None,
    b"NaN": math.nan,
    b"Infinity": math.inf,
    b"-Infinity": -math.inf,
}
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


class Span(NamedTuple):
    """A string's characters in the file: bytes ``start`` to ``stop``, between its quotes."""

    start: int
    stop: int
    escaped: bool  # holds a backslash escape, so its bytes are not its text


class _Cursor:
    """A position in the file and the window of bytes around it."""

    def __init__(self, read: Reader, size: int, what: str, window: int | None = None) -> None:
        self.read, self.size, self.what, self.window = read, size, what, window
        self.buf, self.base, self.pos = b"", 0, 0

    def error(self, problem: str) -> InputError:
        return InputError(f"{self.what} is not valid JSON: {problem} at byte {self.pos}")

    def truncated(self, inside: str) -> InputError:
        return InputError(f"{self.what} ends inside {inside} (at byte {self.size}): it is truncated")

    def fill(self, n: int) -> int:
        """Make the window hold ``n`` bytes from the position (fewer at the end); the position in it."""
        if not (self.base <= self.pos and self.pos + n <= self.base + len(self.buf)):
            length = max(0, min(max(n, self.window or WINDOW), self.size - self.pos))
            self.buf = bytes(self.read(self.pos, length)) if length else b""
            self.base = self.pos
            if len(self.buf) != length:
                raise InputError(
                    f"{self.what} ended early: {length} bytes were expected at offset {self.pos} but "
                    f"{len(self.buf)} were read; was it changed while being read?"
                )
        return self.pos - self.base

    def peek(self) -> int | None:
        """The next byte that is not whitespace (the position moves to it), or None at the end."""
        while True:
            start = self.fill(1)
            rel = _SPACE.match(self.buf, start).end()
            self.pos = self.base + rel
            if rel < len(self.buf):
                return self.buf[rel]
            if self.pos >= self.size:
                return None

    def take(self, byte: int, inside: str, expected: str) -> None:
        """Step over ``byte``, the next non-whitespace one, or fail saying what was ``expected``."""
        found = self.peek()
        if found is None:
            raise self.truncated(inside)
        if found != byte:
            raise self.error(f"expected {expected}, found {chr(found)!r}")
        self.pos += 1

    def string(self) -> Span:
        """The string at the position (its opening quote), skipped a window at a time."""
        self.pos += 1
        start, escaped = self.pos, False
        while True:
            rel = self.fill(1)
            if rel >= len(self.buf):
                raise self.truncated("a string")
            quote = self.buf.find(b'"', rel)
            slash = self.buf.find(b"\\", rel, len(self.buf) if quote < 0 else quote)
            if slash >= 0:
                escaped = True
                self.pos = self.base + slash + 2  # the escaped character is never the closing quote
            elif quote >= 0:
                self.pos = self.base + quote + 1
                return Span(start, self.base + quote, escaped)
            else:
                self.pos = self.base + len(self.buf)

    def token(self, pattern: re.Pattern[bytes]) -> bytes | None:
        """The bytes ``pattern`` matches at the position, read until the match stops short of the window."""
        want = 64
        while True:
            rel = self.fill(want)
            match = pattern.match(self.buf, rel)
            if match is None or match.end() < len(self.buf) or self.base + len(self.buf) >= self.size:
                return None if match is None or match.end() == rel else match.group()
            want = 2 * (match.end() - rel)

    def literal(self) -> object:
        """The number, ``true``, ``false``, ``null`` or non-finite float at the position."""
        rel = self.fill(max(map(len, _LITERALS)))
        for text, value in _LITERALS.items():
            if self.buf.startswith(text, rel):
                self.pos += len(text)
                return value
        number = self.token(_NUMBER)
        if number is None:
            rel = self.fill(1)
            if self.base + len(self.buf) >= self.size and any(t.startswith(self.buf[rel:]) for t in _LITERALS):
                raise self.truncated("a literal")
            raise self.error(f"unexpected {chr(self.buf[rel])!r}")
        try:
            value = json.loads(number)
        except ValueError as err:  # an integer too long for int()
            raise self.error(f"the number {number[:20].decode()}... cannot be read ({err})") from None
        self.pos += len(number)
        return value


def parse(
    read: Reader, size: int, spans: Collection[str], what: str = "the file", window: int | None = None
) -> object:
    """The JSON document in a file of ``size`` bytes, string values under ``spans`` keys as :class:`Span`.

    ``what`` names the file in error messages (``"the Polygraphy file"``); ``window``: bytes
    read at a time (small, to check a file's first bytes without reading further; None:
    :data:`WINDOW`).
    """
    cursor = _Cursor(read, size, what, window)
    doc = _value(cursor, spans, 0, None)
    if cursor.peek() is not None:
        raise cursor.error("extra data after the document")
    return doc


def span_bytes(read: Reader, span: Span) -> memoryview:
    """A span's raw bytes, read from the file (escapes not undone: see :func:`span_text`)."""
    data = memoryview(read(span.start, span.stop - span.start)).cast("B")
    if len(data) != span.stop - span.start:
        raise InputError(f"the file ended before byte {span.stop}; was it changed while being read?")
    return data


def span_text(read: Reader, span: Span) -> str:
    """A span's string as ``json.loads`` would give it: escapes undone, characters checked."""
    return _text(bytes(span_bytes(read, span)), span.start)


def _text(raw: bytes, at: int) -> str:
    try:
        # raw has no unescaped quote (it ended at the first one), so quoting it again is safe.
        return json.loads('"' + raw.decode("utf-8") + '"')
    except (UnicodeDecodeError, ValueError) as err:
        raise InputError(f"a JSON string starting at byte {at} is not valid ({err})") from None


def _value(cursor: _Cursor, spans: Collection[str], depth: int, key: str | None) -> object:
    first = cursor.peek()
    if first is None:
        raise cursor.truncated("the document" if depth == 0 else "an array or object")
    if first in (ord("{"), ord("[")) and depth >= JSON_MAX_DEPTH:
        raise InputError(
            f"{cursor.what} nests arrays and objects deeper than the limit JSON_MAX_DEPTH = {JSON_MAX_DEPTH} "
            f"(at byte {cursor.pos})"
        )
    if first == ord("{"):
        return _object(cursor, spans, depth + 1)
    if first == ord("["):
        return _array(cursor, spans, depth + 1)
    if first == _QUOTE:
        span = cursor.string()
        return span if key in spans else _string(cursor, span)
    return cursor.literal()


def _string(cursor: _Cursor, span: Span) -> str:
    lo, hi = span.start - cursor.base, span.stop - cursor.base
    raw = cursor.buf[lo:hi] if lo >= 0 else bytes(span_bytes(cursor.read, span))
    return _text(raw, span.start)


def _object(cursor: _Cursor, spans: Collection[str], depth: int) -> dict[str, object]:
    cursor.pos += 1
    obj: dict[str, object] = {}
    if cursor.peek() == ord("}"):
        cursor.pos += 1
        return obj
    while True:
        if cursor.peek() != _QUOTE:
            cursor.take(_QUOTE, "an object", "a quoted key")
        key = _string(cursor, cursor.string())
        cursor.take(ord(":"), "an object", "':' after a key")
        obj[key] = _value(cursor, spans, depth, key)
        if cursor.peek() == ord("}"):
            cursor.pos += 1
            return obj
        cursor.take(ord(","), "an object", "',' or '}'")


def _array(cursor: _Cursor, spans: Collection[str], depth: int) -> list[object]:
    cursor.pos += 1
    items: list[object] = []
    if cursor.peek() == ord("]"):
        cursor.pos += 1
        return items
    while True:
        items.append(_value(cursor, spans, depth, None))
        if cursor.peek() == ord("]"):
            cursor.pos += 1
            return items
        cursor.take(ord(","), "an array", "',' or ']'")
