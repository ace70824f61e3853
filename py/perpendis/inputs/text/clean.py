"""Make pasted text plain: one kind of space, one kind of minus, no REPL prompts.

Text copied from terminals, notebooks, chat apps and PDFs picks up look-alike
characters (U+2212 minus, no-break and thin spaces, a typographic ellipsis) and the
prompts of the session it came from.  Everything after this step may assume ASCII,
``\\n`` line ends and output lines only.
"""

from __future__ import annotations

import re

from ...errors import InputError

_SPACE_LIKE = "\t\v\f\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
_LOOK_ALIKES = {
    **dict.fromkeys(map(ord, _SPACE_LIKE), " "),
    **dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"), None),  # zero-width characters
    0x2212: "-",  # minus sign
    0x2012: "-",  # figure dash
    0x2026: "...",  # an ellipsis typeset as one character is still a summarised print
    0xFF0E: ".",
}

# Input lines (code typed at a prompt) are dropped; output prompts are cut off their line.
_INPUT_LINE = re.compile(r"^(?:>>>(?: .*)?|\.\.\.(?: .*)?|In \[\d*\]:.*| +\.\.\.:.*)$", re.MULTILINE)
_OUTPUT_PROMPT = re.compile(r"^Out\[\d*\]: ?", re.MULTILINE)


def clean(text: str) -> str:
    """The text with look-alike characters replaced, ``\\n`` line ends and prompts removed."""
    # Each test below is one scan of a paste that may be 20 MB.  Single characters are found
    # by memchr at memory speed, longer needles an order of magnitude slower, so a rare
    # character gates each longer search, and the usual ASCII paste skips the translation.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.isascii() or any(c in text for c in "\t\v\f"):
        text = text.translate(_LOOK_ALIKES)
    if not text.isascii() and (bad := re.search(r"[^\x00-\x7f]", text)):
        char = bad.group()
        raise InputError(
            f"unexpected character {char!r} (U+{ord(char):04X}) in the pasted text; "
            "paste the printed tensor as plain text",
            where=f"line {line_of(text, bad.start())}",
        )
    # Continuation lines ("... ", "   ...:") only follow a prompt line.
    if ("I" in text and "In [" in text) or (">" in text and ">>>" in text):
        text = _INPUT_LINE.sub("", text)
    if "O" in text and "Out[" in text:
        text = _OUTPUT_PROMPT.sub("", text)
    if not text or text.isspace():
        raise InputError("nothing to compare: the text is empty; paste a printed tensor or a list of numbers")
    return text


def line_of(text: str, pos: int) -> int:
    """1-based line number of character ``pos``."""
    return text.count("\n", 0, pos) + 1
